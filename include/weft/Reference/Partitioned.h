// Partitioned steps (weft-partition's output) on simulated ranks from the
// global tensors: each rank's arguments are its blocks of the global ones
// (weft.split_dim on an argument, along the grid's tensor-parallel axis), and
// the ranks' results are gathered back (split results concatenated,
// replicated ones checked to agree bit for bit on every rank).
#ifndef WEFT_REFERENCE_PARTITIONED_H
#define WEFT_REFERENCE_PARTITIONED_H

#include "weft/Reference/NpzArguments.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace weft::reference {

/// Whether `func` is a partitioned step (it carries weft.grid).
bool isPartitioned(mlir::func::FuncOp func);

/// A copy of `func` whose signature and entry block take the global types:
/// what global inputs are read and drawn against (its body is not run).
mlir::OwningOpRef<mlir::func::FuncOp> globalSignature(mlir::func::FuncOp func);

/// Runs partitioned `func` on every rank from the global arguments and
/// returns the gathered global results; diagnostics say what failed.
mlir::FailureOr<std::vector<Tensor>>
runPartitioned(mlir::func::FuncOp func, const std::vector<Tensor> &globalArgs);

} // namespace weft::reference

#endif // WEFT_REFERENCE_PARTITIONED_H
