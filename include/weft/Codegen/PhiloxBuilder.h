// Philox4x32-10 written with arith ops, so the CPU attention tiles
// (weft-tile-attention) and the GPU elementwise kernels (ElementwiseToNVVM)
// draw the dropout mask of the reference interpreter bit for bit (the rule is in
// weft/Reference/Numerics.h): key (uint32(seed), uint32(rng_id)), counter
// (uint32(i/4), uint32((i/4) >> 32), 0, 0), lane i % 4, kept iff
// draw >= uint64(p * 2^32).
#ifndef WEFT_CODEGEN_PHILOXBUILDER_H
#define WEFT_CODEGEN_PHILOXBUILDER_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>

namespace weft::codegen {

/// How a Philox round's 32 x 32 -> 64-bit products are built (the draws are
/// the same either way).
enum class PhiloxMultiply {
  /// arith.mului_extended: any target (the CPU attention tiles).
  Portable,
  /// The NVPTX kernels: the low half arith.muli, the high half PTX's
  /// mul.hi.u32 (inline assembly). From mului_extended's halves LLVM makes
  /// 64-bit xors and then 64-bit multiplications (mul.lo.s64 of a masked
  /// value): about three times a round's instructions.
  Nvptx,
};

/// The four 32-bit (i32) draws of Philox block `block` (i64: the elements
/// 4 * block .. 4 * block + 3, lane k drawing word k) for an op with `seed`
/// (i64) and `rngId`: one Philox call serves four consecutive elements.
std::array<mlir::Value, 4>
buildPhiloxBlock(mlir::ImplicitLocOpBuilder &b, mlir::Value seed, int64_t rngId,
                 mlir::Value block, PhiloxMultiply multiply = PhiloxMultiply::Portable);

/// The 32-bit (i32) draw of element `index` (i64, the row-major index into the
/// op's global logical tensor) for an op with `seed` (i64) and `rngId`.
mlir::Value buildPhiloxDraw(mlir::ImplicitLocOpBuilder &b, mlir::Value seed,
                            int64_t rngId, mlir::Value index,
                            PhiloxMultiply multiply = PhiloxMultiply::Portable);

/// Whether a draw (i32) keeps its element under dropout probability `p`
/// (an i1): draw >= uint64(p * 2^32), compared unsigned.
mlir::Value buildDrawKept(mlir::ImplicitLocOpBuilder &b, mlir::Value draw,
                          double p);

/// Whether element `index` survives dropout with probability `p` (an i1).
mlir::Value buildDropoutKeep(mlir::ImplicitLocOpBuilder &b, mlir::Value seed,
                             int64_t rngId, mlir::Value index, double p,
                             PhiloxMultiply multiply = PhiloxMultiply::Portable);

} // namespace weft::codegen

#endif // WEFT_CODEGEN_PHILOXBUILDER_H
