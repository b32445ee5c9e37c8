// One AOT attention unit as weft-compile --emit=kernels writes it, and the
// writers of its text files (NAME.json, NAME.h, NAME.c, kernels.json).
#ifndef WEFT_LIB_TARGET_GPU_AOTUNIT_H
#define WEFT_LIB_TARGET_GPU_AOTUNIT_H

#include "weft/Conversion/AttentionKernels.h"
#include "weft/Target/GPU/Serialize.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace weft::gpu {

/// The problem an attention op solves: what its launch arguments are.
struct AttentionShapes {
  int64_t batch = 0, qHeads = 0, kvHeads = 0, qLen = 0, kLen = 0, headDim = 0;
  double scale = 0.0;
};

struct AotUnit {
  /// `<func>_attention_<i>` / `<func>_attention_grad_<i>`, a C identifier.
  std::string name;
  bool backward = false;
  AttentionKernelConfig config;
  AttentionShapes shapes;
  std::string chip;
  /// In launch order.
  llvm::SmallVector<KernelSpec> kernels;
  /// Shared between units of the same configuration.
  const GpuBinary *binary = nullptr;
  /// The decode kernels' split of the keys (config.decodeRows > 0), the SM
  /// count and resident split CTAs per SM it was chosen for.
  DecodeSplits decode;
  int64_t smCount = 0, ctasPerSm = 0;
};

/// NAME.json: the unit's metadata (version, arch, config, shapes, kernels
/// with their launch geometry and ptxas resources, workspaces).
std::string writeUnitJson(const AotUnit &unit);
/// NAME.h: the C declarations and the metadata macros.
std::string writeUnitHeader(const AotUnit &unit);
/// NAME.c: the embedded cubin, the metadata check, load/unload/launch.
/// Fails (with `message`) when a kernel parameter has no launcher argument.
mlir::LogicalResult writeUnitSource(const AotUnit &unit, std::string &source,
                                    std::string &message);
/// kernels.json: the list of units of one weft-compile run.
std::string writeUnitIndex(llvm::StringRef chip,
                           llvm::ArrayRef<std::string> unitNames);

} // namespace weft::gpu

#endif // WEFT_LIB_TARGET_GPU_AOTUNIT_H
