// Lowers a module holding gpu.modules (gpu/nvvm/llvm ops) to PTX through
// MLIR's NVVM target and LLVM's NVPTX backend, and assembles PTX to cubin
// with ptxas, reading ptxas -v's resource usage.
#ifndef WEFT_TARGET_GPU_SERIALIZE_H
#define WEFT_TARGET_GPU_SERIALIZE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace weft::gpu {

/// Registers what lowering gpu.modules to PTX needs (NVVM target, LLVM IR
/// translations, ConvertToLLVM interfaces) in `registry`.
void registerGpuTargetDialects(mlir::DialectRegistry &registry);

/// One kernel's resources as ptxas -v reports them.
struct KernelResources {
  int64_t registers = 0;
  int64_t spillStoreBytes = 0, spillLoadBytes = 0;
  int64_t stackBytes = 0;
  int64_t sharedBytes = 0;
};

struct GpuBinary {
  std::string ptx;
  std::vector<char> cubin;
  llvm::StringMap<KernelResources> resources;
  /// ptxas's full -v output, for messages.
  std::string ptxasLog;
};

/// Lowers `gpu.module @moduleName` in `module` (in place) to PTX for `chip`
/// (e.g. "sm_90a").
mlir::FailureOr<std::string> lowerToPtx(mlir::ModuleOp module,
                                        llvm::StringRef moduleName,
                                        llvm::StringRef chip);

/// Where ptxas is: $WEFT_PTXAS, else $CUDA_HOME/bin/ptxas, else
/// /usr/local/cuda/bin/ptxas, else PATH. Empty when none is found.
std::string findPtxas();

/// Assembles `ptx` for `chip` with `ptxas -v`; fills cubin and resources.
/// Fails with the ptxas log in `message`.
mlir::LogicalResult assemblePtx(llvm::StringRef ptx, llvm::StringRef chip,
                                GpuBinary &binary, std::string &message);

/// Reads `ptxas -v` output into per-entry resources (registers, stack,
/// spill store/load bytes, shared memory), keyed by the entry's name.
void parsePtxasLog(llvm::StringRef log,
                   llvm::StringMap<KernelResources> &resources);

} // namespace weft::gpu

#endif // WEFT_TARGET_GPU_SERIALIZE_H
