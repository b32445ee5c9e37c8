// The bodies of the attention kernels, one function per kernel role; each
// fills an empty gpu.func whose arguments follow KernelSpec::params.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KERNELBODIES_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KERNELBODIES_H

#include "weft/Conversion/AttentionKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <algorithm>

namespace weft::gpu {

/// Shared-memory row pitch in bytes of a [rows, headDim] 16-bit tile: eight
/// elements of padding so ldmatrix's eight row addresses hit distinct banks.
/// Rows (one per thread) of the backward's delta kernel per CTA.
inline constexpr int64_t kPreprocessRows = 128;
/// The keep-mask kernel (KeepMask.h): query rows per CTA and threads.
inline constexpr int64_t kKeepMaskRows = 64;
inline constexpr int64_t kKeepMaskThreads = 128;
/// The atomic-dQ backward's last kernel: query rows per CTA and threads.
inline constexpr int64_t kDqConvertRows = 64;
inline constexpr int64_t kDqConvertThreads = 128;

inline int64_t tilePitch(int64_t headDim) { return (headDim + 8) * 2; }

/// Query rows per inner step of the dK/dV kernel and key rows per inner step
/// of the dQ kernel: the tile sizes, halved at head_dim 128 so the register
/// file holds the accumulators without spilling.
int64_t dkdvInnerRows(const AttentionKernelConfig &config);
int64_t dqInnerRows(const AttentionKernelConfig &config);
/// The Hopper dK/dV kernel's consumer warpgroups: one per 64 keys of its
/// block, times its column groups: at head_dim 256 two warpgroups share 64
/// keys (both compute their S^T and dP^T) and each accumulates half of dK's
/// and dV's columns (64 x 256 of each would not fit one warpgroup's
/// registers).
int64_t dkdvColumnGroups(const AttentionKernelConfig &config);
int64_t dkdvConsumers(const AttentionKernelConfig &config);
/// The atomic-dQ dK/dV kernel's scratch (BackwardAtomicDq.cpp): two dS
/// tiles and each consumer's f32 staging rows.
int64_t atomicDqScratchBytes(const AttentionKernelConfig &config);

/// Byte offsets in the warpgroup forward's dynamic shared memory: Q (head_dim
/// / 64 slabs of [blockQ][64]), the K/V ring (per slot K then V, slabs of
/// [blockK][64]; every slab 1024-byte aligned for the 128-byte swizzle), then
/// the mbarriers (1 + 3 * stages of 8 bytes; 1 + 4 * stages when the
/// schedule releases K and V of a slot apart).
struct TmaForwardLayout {
  int64_t q, kv, barriers, total;
};
inline TmaForwardLayout tmaForwardLayout(const AttentionKernelConfig &config) {
  int64_t qBytes = config.blockQ * config.headDim * 2;
  int64_t ringBytes = config.stages * 2 * config.blockK * config.headDim * 2;
  int64_t perSlot =
      config.schedule == AttentionKernelConfig::ForwardSchedule::Serial ? 3 : 4;
  return {0, qBytes, qBytes + ringBytes,
          qBytes + ringBytes + (1 + perSlot * config.stages) * 8};
}

void emitForwardBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
/// The split-KV decode kernels (DecodeKernels.cpp). The split kernel's CTA
/// has decodeRows / 16 row groups of decodeKeyColumns warps each; the warps
/// of a row group take the key columns of every block and merge their
/// softmax states at the end in decodeMergeBytes of shared memory (0 when
/// there is one column).
int64_t decodeKeyColumns(const AttentionKernelConfig &config);
int64_t decodeSplitThreads(const AttentionKernelConfig &config);
int64_t decodeMergeBytes(const AttentionKernelConfig &config);
/// Q's padded rows and `stages` K + V slots.
int64_t decodeSplitSmemBytes(const AttentionKernelConfig &config);
void emitDecodeSplitBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
/// The combine kernel (DecodeCombine.cpp): its threads and the shared
/// memory its lanes merge through.
int64_t decodeCombineThreads(const AttentionKernelConfig &config);
int64_t decodeCombineSmemBytes(const AttentionKernelConfig &config);
void emitDecodeCombineBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
void emitWarpgroupForwardBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
void emitPreprocessBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
/// The dropout keep mask of a Hopper forward or backward (KeepMask.h); the
/// backward's follows delta in its workspace.
void emitKeepMaskBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config,
                      bool afterDelta);
void emitDkDvBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
void emitDqBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
void emitWarpgroupDkDvBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
void emitWarpgroupDqBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);
/// The atomic-dQ backward (BackwardAtomicDq.cpp): dq = scale * the f32
/// accumulator.
void emitDqConvertBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config);

} // namespace weft::gpu

#endif

#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KERNELSCALARS
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KERNELSCALARS
#include "WarpEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace weft::gpu {
/// The scalar tail every kernel takes (see attentionKernelSpecs).
struct KernelScalars {
  mlir::Value batch, qHeads, kvHeads, qLen, kLen, scale;
  static KernelScalars of(mlir::gpu::GPUFuncOp func, unsigned first) {
    return {func.getArgument(first), func.getArgument(first + 1),
            func.getArgument(first + 2), func.getArgument(first + 3),
            func.getArgument(first + 4), func.getArgument(first + 5)};
  }
};

/// The thread's warp, lane, accumulator row g = lane / 4 and column pair t.
struct LaneIds {
  mlir::Value tid, warp, lane, g, t;
  explicit LaneIds(WarpEmitter &e) {
    tid = e.threadIdX();
    warp = e.divu(tid, e.i32c(32));
    lane = mlir::arith::RemUIOp::create(e.b, tid, e.i32c(32));
    g = e.divu(lane, e.i32c(4));
    t = mlir::arith::RemUIOp::create(e.b, lane, e.i32c(4));
  }
};

/// The bf16 / f16 tensors of the kernels (see attentionKernelSpecs).
enum class AttentionOperand { Q, K, V, Out, DOut, DQ, DK, DV };

/// Where one tensor's rows lie for the configuration's layout, the one place
/// the kernels turn (batch, head, row) into an address. HeadMajor: the rows
/// of a head are contiguous, row r of head h of batch b at ((b * heads + h)
/// * len + r) * d elements, pitch d. SeqMajor: (b * len + r) * pitch +
/// (headOffset + h) * d with pitch = heads * d, where a packed tensor has
/// q_heads + 2 kv_heads heads and k / v (dk / dv) start at head q_heads /
/// q_heads + kv_heads, or, grouped, kv head j's k / v at j (g + 2) + g / + g
/// + 1 and q head h at h + 2 (h / g) (g = q_heads / kv_heads). In-tile offsets (row * pitch, rows < 256) stay i32:
/// pitches up to 8 MiB.
struct TensorRows {
  TensorRows(WarpEmitter &e, const AttentionKernelConfig &config, const KernelScalars &s,
             AttentionOperand operand);
  /// The i64 byte offset of row `row` of head `head` of batch `batch` (i32s).
  mlir::Value at(WarpEmitter &e, mlir::Value batch, mlir::Value head, mlir::Value row) const;
  /// The same for `plane` = batch * heads + head (the tensor's own heads):
  /// one value live instead of two where registers are tight.
  mlir::Value atPlane(WarpEmitter &e, mlir::Value plane, mlir::Value row) const;
  /// The head coordinate of the tensor's TMA view (attentionTensorMap).
  mlir::Value mapHead(WarpEmitter &e, mlir::Value head) const;

  /// From one row of a head to its next (i32): in bytes, in elements.
  mlir::Value pitch, pitchElements;

private:
  bool seqMajor;
  int64_t headDim;
  mlir::Value len, heads, ownHeads, headOffset;
  /// Grouped packing: kv heads `headStride` (g + 2) apart; q head h at
  /// h + 2 (h / g) (`groupGap`).
  mlir::Value group, headStride;
  bool groupGap = false;
};

/// The CTA's block of `blockQ` query rows of one (batch, q head) (grid x =
/// query block, y = q head, z = batch), its kv head, and where its rows
/// start in the flattened [b * q_heads * q_len] rows of lse and delta
/// (`statsRow0`; those are [batch, q_heads, q_len] in every layout).
struct QueryBlock {
  mlir::Value head, batch, kvHead, q0, qValid, statsRow0;
  QueryBlock(WarpEmitter &e, const KernelScalars &s, int64_t blockQ) {
    head = e.blockId(1);
    batch = e.blockId(2);
    kvHead = e.divu(head, e.divu(s.qHeads, s.kvHeads));
    q0 = e.mul(e.blockId(0), e.i32c(blockQ));
    qValid = e.minsi(e.i32c(blockQ), e.sub(s.qLen, q0));
    statsRow0 = e.add(e.mul(e.add(e.mul(batch, s.qHeads), head), s.qLen), q0);
  }
};

/// A flat accumulator list as quads (4 values each) and back.
llvm::SmallVector<Quad> toQuads(mlir::ValueRange values);
llvm::SmallVector<mlir::Value> flattenQuads(llvm::ArrayRef<Quad> quads);

/// Stores a warp's 16 x (8 * tiles) accumulator times `factor` to rows
/// [0, validRows) of a global tile (rows `pitchElements` elements apart,
/// i32) whose row 0 is at `tile`; the warp's first row is `localRow0`.
void storeAccumulatorRows(WarpEmitter &e, const LaneIds &ids, llvm::ArrayRef<Quad> acc,
                          mlir::Value factor, mlir::Value tile, mlir::Value pitchElements,
                          mlir::Value localRow0, mlir::Value validRows);

/// Stores the dK/dV kernels' state (dK's columns / 2 values per lane, then
/// dV's) to rows [0, validRows) of the key block starting at key `k0` of
/// `kvPlane` = batch * kv_heads + kv head of dk and dv, columns `column0` ..
/// (every column when null): dK times the softmax scale (dS was left
/// unscaled), dV as is.
void storeDkDv(WarpEmitter &e, const LaneIds &ids, const AttentionKernelConfig &config,
               const KernelScalars &s, mlir::ValueRange state, mlir::Value dk, mlir::Value dv,
               mlir::Value kvPlane, mlir::Value k0, mlir::Value localRow0,
               mlir::Value validRows, mlir::Value column0 = {});
} // namespace weft::gpu
#endif
