// The reference interpreter: runs any weft function on the CPU in float64,
// rounding every result to its declared element type. SPMD functions (those
// using shard collectives over a shard.grid) run for every rank in lockstep.
#ifndef WEFT_REFERENCE_INTERPRETER_H
#define WEFT_REFERENCE_INTERPRETER_H

#include "weft/Support/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

#include <vector>

namespace weft::reference {

/// Element type of an MLIR tensor type, or nullopt if Weft cannot hold it.
std::optional<DType> dtypeOf(mlir::Type elementType);

/// Number of ranks `func` runs on: the product of the shape of the shard.grid
/// its collectives name (1 when it uses none). Fails with a diagnostic when it
/// names several grids or a grid with dynamic dimensions.
mlir::FailureOr<int64_t> numRanks(mlir::func::FuncOp func);

/// Runs `func` on the ranks' arguments (perRankArgs.size() == numRanks(func)),
/// returning each rank's results. Checks argument shapes and dtypes against the
/// signature; any failure is reported as a diagnostic at the offending op.
mlir::FailureOr<std::vector<std::vector<Tensor>>>
runSpmd(mlir::func::FuncOp func,
        const std::vector<std::vector<Tensor>> &perRankArgs);

/// Single-rank convenience: runSpmd with one rank.
mlir::FailureOr<std::vector<Tensor>> run(mlir::func::FuncOp func,
                                         const std::vector<Tensor> &args);

} // namespace weft::reference

#endif // WEFT_REFERENCE_INTERPRETER_H
