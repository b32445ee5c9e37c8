// The GPU attention kernels (sm_90a): a parameterised builder that emits a
// gpu.module of gpu.func kernels (gpu / nvvm / llvm ops, warp-level mma.sync
// m16n8k16 with ldmatrix) from an attention problem's configuration and
// weft-tile-attention's tile sizes. The kernels take their shapes at run time
// (batch, heads, lengths, scale), so one module serves every shape of a
// configuration; a launcher computes the grid from KernelSpec.
#ifndef WEFT_CONVERSION_ATTENTIONKERNELS_H
#define WEFT_CONVERSION_ATTENTIONKERNELS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <optional>
#include <string>

namespace weft::gpu {

/// What a set of attention kernels is specialised on. Everything else
/// (batch, heads, sequence lengths, scale) is a run-time argument.
struct AttentionKernelConfig {
  /// bf16 or f16 inputs and outputs; accumulation is always f32.
  bool bf16 = true;
  /// Head dimension of q, k and v (value dim == head dim): 64 or 128; 256
  /// with the warpgroup-MMA kernels (backward block_k 64).
  int64_t headDim = 128;
  /// Causal mask: top-left (query i sees keys 0..i) in the training kernels,
  /// which take q_len == k_len only; bottom-right (query i sees keys
  /// 0..i + k_len - q_len, weft.attention's definition) in the decode kernels.
  bool causal = false;
  /// weft-tile-attention's tile sizes: query rows and key rows per tile.
  /// blockQ = 16 x warps of the forward / dQ kernels; blockK a multiple of 16.
  int64_t blockQ = 64, blockK = 64;
  /// The forward as a Hopper kernel: a TMA producer warpgroup and blockQ / 64
  /// consumer warpgroups whose matmuls are wgmma.mma_async (see
  /// ForwardWarpgroup.cpp), instead of warp-level mma.sync; blockQ 64 or 128.
  bool warpgroupMma = false;
  /// Slots of the warpgroup forward's K/V ring in shared memory (2..4).
  int64_t stages = 2;
  /// How the warpgroup forward's consumers order their work (without
  /// dropout; the other kernels are Serial):
  ///   Serial:   per key block S = Q K^T, wait, softmax, O += P V, wait.
  ///   Overlap:  FlashAttention-3's intra-warpgroup pipelining: S of block
  ///             j + 1 is issued, then O += P V of block j, and block j + 1's
  ///             softmax runs while that P V is on the tensor cores (two S
  ///             accumulators live; K and V slots released apart).
  ///   PingPong: Overlap, and the two consumer warpgroups (block_q 128) take
  ///             turns issuing their wgmmas through named barriers, so one's
  ///             softmax runs under the other's matmuls.
  enum class ForwardSchedule { Serial, Overlap, PingPong };
  ForwardSchedule schedule = ForwardSchedule::Serial;
  /// Where the tensors live (see attentionKernelSpecs):
  ///   HeadMajor: PyTorch's contiguous [b, h, s, d] (today's layout).
  ///   SeqMajor:  every bf16/f16 tensor contiguous [b, s, h, d] (row pitch heads * d).
  enum class Layout { HeadMajor, SeqMajor };
  Layout layout = Layout::HeadMajor;
  /// SeqMajor only: q, k and v are one packed tensor [b, s, (q_heads + 2 * kv_heads) * d]
  /// (q's heads, then k's, then v's); the q, k and v parameters all receive its start
  /// and the kernels add the column offsets (k at q_heads * d, v at (q_heads + kv_heads) * d).
  bool packedQkv = false;
  /// SeqMajor backward only: dq, dk and dv are written into one packed tensor of the
  /// same shape; the dq, dk and dv parameters all receive its start.
  bool packedGrads = false;
  /// The packed tensors' head order (SeqMajor, with a packed flag): false,
  /// q's heads, then k's, then v's ([b, s, 3, h, d] at g = 1); true, per kv
  /// head j its g = q_heads / kv_heads q heads, then k, then v (Megatron-LM's
  /// [b, s, kv_heads, g + 2, d]).
  bool groupedQkv = false;
  /// The split-KV decode kernels (flash decoding) instead of the training
  /// forward when non-zero: the query rows one CTA holds, group * q_len
  /// zero-padded to 64 or 128 (4 or 8 warps of 16 rows); head_dim 64, 128 or
  /// 256, blockK = decodeBlockK(headDim), head_major, forward only.
  int64_t decodeRows = 0;
  /// Dropout on the probabilities (training forward and backward, mma.sync
  /// kernels): element P[b, h, i, j] of the [batch, q_heads, q_len, k_len]
  /// probabilities is kept by the Philox rule (ARCHITECTURE.md, Randomness)
  /// at global index ((b * q_heads + h) * q_len + i) * k_len + j, key
  /// (seed, rngId); kept values are scaled by 1 / (1 - p). The seed is a
  /// run-time i64 behind the kernels' last parameter, `seed`.
  double dropoutP = 0.0;
  int64_t rngId = 0;
  /// With dropout, a block of the heads of a partitioned attention
  /// (weft.attention's head offset and dropout_heads): the global index
  /// takes `dropoutHeads` q heads, and the block's first head is the
  /// kernels' i32 `head_offset` parameter (just before `seed`), so each
  /// rank draws its slice of the global mask. 0: the heads are all there.
  int64_t dropoutHeads = 0;
  /// The Hopper backward's non-deterministic dQ (weft.attention_grad's
  /// `atomic_dq`, FlashAttention-3's default): the dK/dV kernel also computes
  /// dQ += dS K per key block and adds it with f32 atomics into the
  /// workspace's accumulator (weft/Dialect/AttentionWorkspace.h), which the
  /// delta kernel zeroed; backward_dq_convert scales it into dq. No dQ
  /// kernel recomputes S and dP. Head dim 64 or 128; summation order varies
  /// from run to run.
  bool atomicDq = false;

  /// A stable name fragment, e.g. "bf16_d128_causal_q64_k64"; the warpgroup
  /// kernels add "_wgmma_s<stages>" and a forward schedule other than Serial
  /// "_ov" (Overlap) or "_pp" (PingPong); SeqMajor adds
  /// "_sm", then "_pqkv" / "_pgrad" for the packed tensors and "_grp" when
  /// they are grouped; the decode kernels "_dec<rows>"; dropout adds
  /// "_drop<floor(p * 2^32)>_r<rng_id>" (what the mask depends on), then
  /// "_dh<dropoutHeads>" for a block of partitioned heads; the
  /// atomic-dQ backward "_adq".
  std::string suffix() const;
  /// "" (Serial), "_ov" or "_pp": the schedule's part of suffix().
  std::string scheduleSuffix() const;
};

/// "serial", "overlap" or "pingpong": how the tuning table, weft-compile
/// --attention-schedule and the AOT units' metadata spell a schedule.
llvm::StringRef scheduleName(AttentionKernelConfig::ForwardSchedule schedule);
/// The schedule a name spells, or nullopt.
std::optional<AttentionKernelConfig::ForwardSchedule> parseSchedule(llvm::StringRef name);

/// The dropout keep threshold floor(p * 2^32): a draw at or above it keeps.
uint64_t dropoutThreshold(double p);

/// The larger of the two key blocks the decode kernels take: 16384 /
/// head_dim, so one K plus V block is 64 KiB whatever the head_dim; 8192 /
/// head_dim (32 KiB) is the other.
inline int64_t decodeBlockK(int64_t headDim) { return 16384 / headDim; }

/// The block a decode configuration (headDim, decodeRows set) takes unless
/// --block-k says: the larger, or the smaller where a warp would hold more
/// than 128 keys' scores of it (at head_dim 64 with 64 or 128 rows ptxas
/// spilled 112-144 bytes).
int64_t defaultDecodeBlockK(const AttentionKernelConfig &config);

/// K + V blocks the decode split kernel keeps in shared memory at once when
/// --attention-stages does not say (its `stages`: a cp.async ring, up to
/// stages - 1 blocks in flight while one is computed on): 3, or 2 where 3
/// would not fit the 227 KiB a CTA may have.
int64_t defaultDecodeStages(const AttentionKernelConfig &config);

/// "head_major", "seq_major", "packed" or "packed_grouped" (SeqMajor with a
/// packed flag, grouped or not): how
/// weft-compile --attention-layout and the AOT units' metadata spell it.
llvm::StringRef layoutName(const AttentionKernelConfig &config);

/// The gpu.func attribute listing the indices of by-value tensor-map
/// parameters (lowerToPtx makes them `.param .align 64 .b8 [128]`).
inline constexpr llvm::StringLiteral kGridConstantArgsAttrName = "weft_grid_constant_args";

/// One kernel argument, in launch order.
struct KernelParam {
  enum class Kind { Pointer, I32, F32, TensorMap };
  std::string name;
  Kind kind;
  /// A TensorMap parameter is the 128-byte CUtensorMap (by value, 64-byte
  /// aligned) of the tensor `name`, viewed as 4-D: dims innermost first
  /// (head_dim, `lenName`, heads, batch), box (64, boxRows, 1, 1), 128-byte
  /// swizzle, out-of-bounds rows read as zeros; the kernels load at
  /// (column, row, head offset + head, batch) in every layout.
  /// attentionTensorMap gives its dims and byte strides.
  std::string lenName, headsName;
  int64_t boxRows = 0;
};

/// How to launch one kernel of the module. Grid: x = ceil(len / rowsPerBlock)
/// where len = k_len and heads = kv_heads when `overKeys`, else q_len and
/// q_heads; y = heads; z = batch. Block: (threads, 1, 1).
struct KernelSpec {
  /// The gpu.func's symbol, which is also the PTX entry name.
  std::string name;
  /// "forward", "backward_preprocess", "keep_mask" (Hopper, with
  /// dropout), "backward_dkdv" or "backward_dq", in
  /// the order a backward runs them; a decode forward is "decode_split" then
  /// "decode_combine" (grids in decodeKernelSpecs' comment).
  std::string role;
  llvm::SmallVector<KernelParam> params;
  int64_t threads = 128;
  int64_t rowsPerBlock = 64;
  bool overKeys = false;
  /// Dynamic shared memory the launch must ask for (bytes).
  int64_t dynamicSmemBytes = 0;
  /// Built to be launched as a programmatic dependent of the kernel before
  /// it (weft_launch_dependent): it runs griddepcontrol.wait before it reads
  /// that kernel's results, which runs griddepcontrol.launch_dependents.
  bool programmatic = false;
};

/// The kernels one configuration needs: {forward} or the three backward
/// kernels {preprocess, dkdv, dq}.
///
/// Tensor arguments (all contiguous, row-major), HeadMajor (PyTorch's [b, h, s, d]):
///   q, out, dout, dq: [batch, q_heads, q_len, d]   (bf16 / f16)
///   k, v, dk, dv:     [batch, kv_heads, k_len, d]  (bf16 / f16)
/// SeqMajor: the same tensors as [batch, len, heads, d]; with packedQkv q, k
/// and v are one [batch, len, q_heads + 2 kv_heads, d] tensor (q_len ==
/// k_len) passed three times, with packedGrads dq, dk, dv likewise.
/// In every layout:
///   lse, delta:       [batch, q_heads, q_len]      (f32; lse is natural-log
///                     log-sum-exp of scale * q k^T, delta = rowsum(dout*out))
/// Scalar tail of every kernel, in order: batch, q_heads, kv_heads, q_len,
/// k_len (i32), scale (f32); with dropout the forward, dK/dV and dQ kernels
/// then take `seed`, a pointer to the 0-d i64 seed. The backward is deterministic: dK/dV per key
/// block and dQ per query block, no atomics, launched in that order. With
/// dropout, delta is the head of the workspace of
/// weft/Dialect/AttentionWorkspace.h: a Hopper (wgmma) backward is {preprocess,
/// keep_mask, dkdv, dq}, keep_mask drawing the mask into the workspace after
/// delta (grid as the rule below, kKeepMaskRows query rows a CTA) and the
/// dK/dV and dQ kernels reading it; the mma.sync kernels draw the mask in
/// their loops.
llvm::SmallVector<KernelSpec> attentionKernelSpecs(const AttentionKernelConfig &config,
                                                   bool backward);

/// The decode kernels (config.decodeRows > 0), in launch order:
///   decode_split(q, k, v, o_partial, lse_partial, <scalars>, num_splits,
///                keys_per_split): grid (num_splits, kv_heads, batch),
///     decodeRows / 16 row groups of 1..4 warps that share each key block
///     (at least 4 warps a CTA when the rows allow); split s takes keys [s *
///     keys_per_split, min((s + 1) * keys_per_split, k_len)) (keys_per_split
///     a multiple of blockK, num_splits = ceil(k_len / keys_per_split)).
///   decode_combine(o_partial, lse_partial, out, lse, <scalars>, num_splits,
///                  keys_per_split): grid (batch * q_heads * q_len, 1, 1),
///     8 lanes of head_dim / 4 threads.
/// q, out [batch, q_heads, q_len, d], k, v [batch, kv_heads, k_len, d]
/// (bf16 / f16, head_major), lse [batch, q_heads, q_len] f32; the workspace
/// o_partial is [num_splits, batch * q_heads * q_len, d] f32, lse_partial
/// [num_splits, batch * q_heads * q_len] f32. group * q_len <= decodeRows.
llvm::SmallVector<KernelSpec> decodeKernelSpecs(const AttentionKernelConfig &config);

/// The decode split rule: keys_per_split (a multiple of blockK) and
/// num_splits for `ctas` = batch * kv_heads CTAs per split over `kLen` keys
/// on `smCount` SMs that hold `ctasPerSm` split CTAs each: one wave that
/// fills the resident slots (every CTA streams for the same time), at least
/// two key blocks a split.
struct DecodeSplits {
  int64_t numSplits = 1, keysPerSplit = 0;
};
DecodeSplits chooseDecodeSplits(const AttentionKernelConfig &config, int64_t ctas,
                                int64_t kLen, int64_t smCount, int64_t ctasPerSm);

/// The TMA view of a TensorMap parameter for one problem (what
/// cuTensorMapEncodeTiled takes): rank 4, dims innermost first (d, len,
/// heads, batch), byte strides of dims 1..3, box (64, boxRows, 1, 1).
///   HeadMajor: heads = the tensor's heads, strides (d, len d, heads len d) * 2.
///   SeqMajor:  heads = the tensor's heads, or q_heads + 2 kv_heads for a
///              packed one, strides (pitch, d, len pitch) * 2 with pitch =
///              heads * d: the heads stride below the rows' (TMA allows it).
struct AttentionTensorMap {
  static constexpr unsigned kRank = 4;
  std::array<int64_t, kRank> dims;
  std::array<int64_t, kRank - 1> strides;
  std::array<int64_t, kRank> box;
};
AttentionTensorMap attentionTensorMap(const AttentionKernelConfig &config,
                                      const KernelParam &param, int64_t batch,
                                      int64_t qHeads, int64_t kvHeads, int64_t qLen,
                                      int64_t kLen);

/// Dropout's adjustment of chosen tiles, where they would spill beside the
/// mask: the mma.sync kernels run 64 x 64 tiles (2 stages), the Hopper
/// backward at least 3 stages (at 2 ptxas spilled 8 bytes of the causal
/// head_dim 128 dK/dV consumer; at 3 no shipped configuration spills).
/// The Hopper kernels keep their tiles; their backward streams 64 rows
/// (dkdvInnerRows, dqInnerRows). The forward with dropout runs the Overlap
/// schedule at head_dim 64 (the mask's Philox rounds under the previous
/// block's P V), else Serial (at 128 the rounds beside O and two S
/// accumulators spill).
void fitDropoutTiles(AttentionKernelConfig &config, bool backward);

/// Checks a configuration for the forward kernel or the backward kernels;
/// on failure returns a message naming the value.
mlir::LogicalResult verifyAttentionKernelConfig(const AttentionKernelConfig &config,
                                                bool backward, std::string &message);

/// Appends to `module` a `gpu.module @<moduleName>` holding the kernels of
/// attentionKernelSpecs(config, backward), with the module marked as a GPU
/// container. The config must verify.
mlir::LogicalResult buildAttentionKernels(mlir::ModuleOp module,
                                          llvm::StringRef moduleName,
                                          const AttentionKernelConfig &config,
                                          bool backward);

} // namespace weft::gpu

#endif // WEFT_CONVERSION_ATTENTIONKERNELS_H
