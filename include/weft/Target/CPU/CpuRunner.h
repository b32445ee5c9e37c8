// Runs weft functions whose body is tiled attention (weft-tile-attention's
// nests: scf, tensor, linalg, arith, math) on the host CPU: bufferize, lower
// to the LLVM dialect, JIT-compile with mlir::ExecutionEngine and call the
// entry through its C interface on weft::Tensor arguments.
#ifndef WEFT_TARGET_CPU_CPURUNNER_H
#define WEFT_TARGET_CPU_CPURUNNER_H

#include "weft/Support/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LLVM.h"

#include <vector>

namespace weft::cpu {

/// The interfaces the lowering needs (bufferization models of the dialects in
/// the tiled nests, LLVM IR translation); add to a context's registry before
/// lowering.
void registerCpuLoweringInterfaces(mlir::DialectRegistry &registry);

/// Fails, with an error at the op, on the first weft op left in `module`:
/// the CPU path runs tiled nests only.
llvm::LogicalResult verifyNoWeftOps(mlir::ModuleOp module);

/// Lowers `module` in place to the LLVM dialect: one-shot bufferization with
/// function boundaries (identity layouts, copies as linalg.copy), the
/// ownership-based deallocation pipeline, linalg to loops, then scf, cf,
/// math, arith, memref and func to LLVM. `entry` gets llvm.emit_c_interface.
llvm::LogicalResult lowerToLLVM(mlir::ModuleOp module, llvm::StringRef entry);

struct CpuRunOptions {
  /// LLVM optimisation level of the JIT (0-3).
  unsigned optLevel = 2;
};

/// Lowers (a clone of) `module` and runs `entry` on `args`, which must match
/// its signature (ranked tensors of f64, f32, f16, bf16, i64 or i1); returns
/// its results, read back from the buffers the compiled code returned (and
/// freed). Errors are reported as diagnostics on the context.
mlir::FailureOr<std::vector<Tensor>> runOnCpu(mlir::ModuleOp module,
                                              llvm::StringRef entry,
                                              llvm::ArrayRef<Tensor> args,
                                              CpuRunOptions options = {});

} // namespace weft::cpu

#endif // WEFT_TARGET_CPU_CPURUNNER_H
