// The offline autotuner's table (bench/attention_tuning.json, written by
// scripts/autotune-attention run): per (arch, dtype, head_dim, causal) the
// tiles of the forward kernel and of the backward kernels, and the forward's
// MMA kind (warp-level mma.sync or Hopper warpgroup wgmma).
#ifndef WEFT_TARGET_GPU_TUNINGTABLE_H
#define WEFT_TARGET_GPU_TUNINGTABLE_H

#include "weft/Conversion/AttentionKernels.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace weft::gpu {

/// The table's format; scripts/autotune-attention writes the same number.
inline constexpr int kTuningTableFormatVersion = 1;

struct AttentionTiles {
  int64_t blockQ = 64, blockK = 64;
  /// "mma": "warpgroup" (Hopper wgmma kernels) or "warp" (mma.sync).
  bool warpgroupMma = false;
  /// The warpgroup kernels' pipeline stages ("stages", default 2).
  int64_t stages = 2;
  /// The warpgroup forward's schedule ("schedule": "serial" (default),
  /// "overlap" or "pingpong"); the backward's is always serial.
  AttentionKernelConfig::ForwardSchedule schedule =
      AttentionKernelConfig::ForwardSchedule::Serial;
};

class AttentionTuningTable {
public:
  /// Reads and checks `path`: every entry names a configuration the kernels
  /// implement and valid tiles, and no configuration appears twice. On
  /// failure `message` names the file and the entry (index and key).
  static mlir::FailureOr<AttentionTuningTable> load(llvm::StringRef path,
                                                    std::string &message);

  /// The tiles (and, forward, the MMA kind) the autotuner chose for one
  /// direction of a configuration, or
  /// nullopt when the table has no entry for it.
  std::optional<AttentionTiles> lookup(llvm::StringRef arch, bool bf16,
                                       int64_t headDim, bool causal,
                                       bool backward) const;

  llvm::StringRef path() const { return filePath; }

private:
  struct Entry {
    AttentionTiles forward, backward;
  };
  std::string filePath;
  /// Keyed by "arch/dtype/d<head_dim>/causal|full".
  llvm::StringMap<Entry> entries;
};

} // namespace weft::gpu

#endif // WEFT_TARGET_GPU_TUNINGTABLE_H
