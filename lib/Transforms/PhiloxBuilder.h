// Philox4x32-10 written with arith ops, so tiled kernels draw the dropout mask
// of the reference interpreter bit for bit (weft/Reference/Numerics.h states
// the rule): key (uint32(seed), uint32(rng_id)), counter (uint32(i/4),
// uint32((i/4) >> 32), 0, 0), lane i % 4, kept iff draw >= uint64(p * 2^32).
#ifndef WEFT_LIB_TRANSFORMS_PHILOXBUILDER_H
#define WEFT_LIB_TRANSFORMS_PHILOXBUILDER_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace weft::tiling {

/// The 32-bit (i32) draw of element `index` (i64, the row-major index into the
/// op's global logical tensor) for an op with `seed` (i64) and `rngId`.
mlir::Value buildPhiloxDraw(mlir::ImplicitLocOpBuilder &b, mlir::Value seed,
                            int64_t rngId, mlir::Value index);

/// Whether element `index` survives dropout with probability `p` (an i1).
mlir::Value buildDropoutKeep(mlir::ImplicitLocOpBuilder &b, mlir::Value seed,
                             int64_t rngId, mlir::Value index, double p);

} // namespace weft::tiling

#endif // WEFT_LIB_TRANSFORMS_PHILOXBUILDER_H
