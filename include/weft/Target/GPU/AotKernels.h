// weft-compile --emit=kernels: one AOT unit (PTX, cubin, C header and source
// with load/unload/launch, JSON metadata) per weft.attention and
// weft.attention_grad op, built from the GPU attention kernel builder.
#ifndef WEFT_TARGET_GPU_AOTKERNELS_H
#define WEFT_TARGET_GPU_AOTKERNELS_H

#include "weft/Conversion/AttentionKernels.h"
#include "weft/Target/GPU/TuningTable.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace weft::gpu {

/// The version written into every unit and checked when a unit is loaded
/// (against weft_runtime_version()).
inline constexpr const char *kWeftVersion = "0.5.0";
/// The layout of the unit files (NAME.json, NAME.h); bumped on a change.
inline constexpr int kAotFormatVersion = 1;

struct KernelEmitOptions {
  /// The directory the units go to; created when missing.
  std::string outputDir;
  std::string chip = "sm_90a";
  /// weft-tile-attention's tile sizes where neither the command line nor the
  /// tuning table gives them.
  int64_t blockQ = 64, blockK = 64;
  /// Tiles fixed on the command line (--block-q / --block-k): they win over
  /// the table, each on its own, for every unit.
  std::optional<int64_t> fixedBlockQ, fixedBlockK;
  /// The autotuner's table: per configuration the forward's and the
  /// backward's tiles (so the two units of one op may differ). Null: none.
  const AttentionTuningTable *tuningTable = nullptr;
  /// The MMA kind fixed on the command line (--attention-mma), forward and
  /// backward: true is Hopper warpgroup MMA (wgmma), false mma.sync. It wins
  /// over the table's "mma"; unset: the table's, else mma.sync.
  std::optional<bool> warpgroupMma;
  /// The warpgroup kernels' pipeline stages fixed on the command line
  /// (--attention-stages); unset: the table's, else 2.
  std::optional<int64_t> fixedStages;
  /// The warpgroup forward's schedule fixed on the command line
  /// (--attention-schedule); unset: the table's, else serial. Forward units
  /// only; with dropout serial, or overlap at head_dim 64 (fitDropoutTiles).
  std::optional<AttentionKernelConfig::ForwardSchedule> fixedSchedule;
  /// When set, only the ops of this function (e.g. the training step).
  std::string function;
  /// --attention-layout: where every unit's tensors live. HeadMajor is
  /// PyTorch's [b, h, s, d]; SeqMajor [b, s, h, d]; `packed` (SeqMajor only)
  /// makes q, k, v one [b, s, (q_heads + 2 kv_heads) * d] tensor and, in the
  /// backward, dq, dk, dv another (the launcher takes qkv / dqkv).
  AttentionKernelConfig::Layout layout = AttentionKernelConfig::Layout::HeadMajor;
  bool packed = false;
  /// `packed_grouped`: the packed tensors' heads grouped per kv head
  /// (AttentionKernelConfig::groupedQkv).
  bool grouped = false;
  /// SMs of the target the decode kernels' split rule fills (132: H100 SXM).
  int64_t smCount = 132;
};

/// Fills `config`'s tiles, MMA kind, stages and (warpgroup forward)
/// schedule for one direction of a training attention (bf16, headDim and
/// causal set): the command line's fixed values, else the tuning table's
/// entry, else the untuned default: `options.blockQ` x `options.blockK`
/// mma.sync, except at head_dim 256, which only the warpgroup kernels
/// implement: forward 128 x 64 and backward 64 x 64 in 2 stages, the
/// tilings that fit 227 KiB of shared memory there.
void chooseAttentionTiles(const KernelEmitOptions &options, AttentionKernelConfig &config,
                          bool backward);

/// When a forward weft.attention takes the split-KV decode kernels: q_len
/// at most kDecodeMaxQueryRows, k_len at least kDecodeMinKeys and above q_len,
/// head_major, group * q_len at most 128 rows.
inline constexpr int64_t kDecodeMaxQueryRows = 16, kDecodeMinKeys = 256;

/// Writes, for each weft.attention / weft.attention_grad op of `module` in
/// walk order (a forward with few query rows over a long cache as the
/// split-KV decode kernels, see kDecodeMinKeys), the unit `<func>_attention_<i>` / `<func>_attention_grad_<i>`
/// (NAME.ptx, .cubin, .h, .c, .json) and `kernels.json` listing the units.
/// Problems (an unsupported dtype, dropout, a head_dim the kernels lack,
/// ptxas failing or missing) are diagnostics at the op or the module.
mlir::LogicalResult emitAttentionKernelUnits(mlir::ModuleOp module,
                                             const KernelEmitOptions &options);

/// Lowers every gpu.module of `module` (hand-written kernels) to PTX and
/// assembles it: writes NAME.ptx and NAME.cubin into `outputDir` and one line
/// per kernel (registers, spills, stack, shared memory) to `report`.
mlir::LogicalResult emitGpuModuleBinaries(mlir::ModuleOp module,
                                          llvm::StringRef outputDir,
                                          llvm::StringRef chip,
                                          llvm::raw_ostream &report);

} // namespace weft::gpu

#endif // WEFT_TARGET_GPU_AOTKERNELS_H
