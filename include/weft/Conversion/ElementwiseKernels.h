// The GPU kernels of every weft op that is neither a GEMM nor attention: a
// weft.fused group or a single pointwise / norm / softmax / cross-entropy /
// AdamW / shape op, built as gpu.funcs for sm_90 (ElementwiseToNVVM).
#ifndef WEFT_CONVERSION_ELEMENTWISEKERNELS_H
#define WEFT_CONVERSION_ELEMENTWISEKERNELS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace weft::gpu {

/// One launch of an op's kernels. Every kernel of an op takes the same
/// parameters: a global pointer per tensor operand, then per result (the
/// order weft-build-plan passes them); shapes are compiled in. A fill kernel
/// (arith.constant) takes (ptr, i64 elements, f32 value) instead.
struct ElementwiseLaunch {
  std::string kernel;
  int64_t gridX = 1;
  int64_t threads = 256;
};

/// The kernels `op` runs, in launch order, named `<name>` plus a suffix for
/// the extra kernels of a group with column sums. Fails with the reason in
/// `message` (naming the op and the values) when no GPU kernel implements the
/// op: dropout with p > 0, f64 tensors, a reduction over non-leading dims.
mlir::FailureOr<llvm::SmallVector<ElementwiseLaunch>>
planElementwiseKernels(mlir::Operation *op, llvm::StringRef name,
                       std::string &message);

/// Appends `gpu.module @name` holding the kernels planElementwiseKernels
/// lists for `op` to `module` (gpu / nvvm / llvm / scf / arith ops).
mlir::LogicalResult buildElementwiseKernels(mlir::ModuleOp module,
                                            llvm::StringRef name,
                                            mlir::Operation *op);

/// weft-compile --emit=elementwise-kernels: for every weft op and weft.fused
/// group of the functions in `module` that is not a GEMM, attention or a
/// reshape, writes `<dir>/<name>.ptx`, `.cubin` and `.json` (launches,
/// parameters with shapes and dtypes, the op's text) where name is
/// `<function>_<index>`, and prints ptxas's resources per kernel to `report`.
/// With `printIr`, prints the gpu.modules before lowering instead.
mlir::LogicalResult emitElementwiseKernelUnits(mlir::ModuleOp module,
                                               llvm::StringRef dir,
                                               llvm::StringRef chip,
                                               bool printIr,
                                               llvm::raw_ostream &report);

} // namespace weft::gpu

#endif // WEFT_CONVERSION_ELEMENTWISEKERNELS_H
