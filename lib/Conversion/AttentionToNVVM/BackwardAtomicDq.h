// The atomic-dQ parts of the Hopper backward (BackwardAtomicDq.cpp): where
// the f32 dQ accumulator lies in the workspace, its zeroing by the delta
// kernel, and the dK/dV kernel's dS tile and dQ accumulation.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_BACKWARDATOMICDQ_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_BACKWARDATOMICDQ_H

#include "KernelBodies.h"
#include "TmaPipeline.h"

namespace weft::gpu {

/// The named barrier the dK/dV consumers meet at once the dS tile is full;
/// consumer c's warpgroup meets at kAtomicDqBarrier + 1 + c once its staging
/// rows are.
inline constexpr int64_t kAtomicDqBarrier = 1;

/// The global pointer to the f32 accumulator [batch * q_heads, q_len,
/// head_dim] behind the workspace's start `delta`
/// (attentionDqAccumOffset, computed from the run-time shapes).
mlir::Value dqAccumulator(WarpEmitter &e, const AttentionKernelConfig &config,
                          const KernelScalars &s, mlir::Value delta);

/// Zeroes rows row0 .. row0 + validRows - 1 (validRows <= kPreprocessRows)
/// of `plane`'s accumulator rows with `threads` threads.
void zeroDqAccumulatorRows(WarpEmitter &e, const AttentionKernelConfig &config,
                           const KernelScalars &s, mlir::Value accumulator, mlir::Value plane,
                           mlir::Value row0, mlir::Value validRows, mlir::Value tid,
                           int64_t threads);

/// Query rows of the atomic-dQ dK/dV kernel's inner step (dkdvInnerRows):
/// one m64 block of dQ.
inline constexpr int64_t kAtomicDqQueryRows = 64;

/// One dK/dV consumer's side of the atomic dQ. storeDsT puts its 64 keys'
/// dS^T (unscaled, as dK uses it; the A fragments dK's wgmma reads) into
/// iteration `it`'s tile and waits for the other consumers; accumulate then
/// adds its share of dS K (dQ / scale) for the streamed query rows q0 .. of
/// `plane` into the accumulator through its staging rows; finish waits for
/// the last additions.
struct AtomicDqTile {
  AtomicDqTile(const AttentionKernelConfig &config, const TmaRing &ring, int64_t consumers);
  void storeDsT(WarpEmitter &w, mlir::Value it, llvm::ArrayRef<Quad> dsA, mlir::Value keyRow0,
                const LaneIds &ids, mlir::Value warpInGroup) const;
  void accumulate(WarpEmitter &w, mlir::Value it, mlir::Value accumulator, mlir::Value plane,
                  mlir::Value q0, mlir::Value qLen, const LaneIds &ids,
                  mlir::Value warpInGroup) const;
  void finish(WarpEmitter &w, mlir::Value warpInGroup) const;

private:
  mlir::Value tile(WarpEmitter &w, mlir::Value it) const;

  /// This consumer's share (keys key0 .. + keys, columns column0 .. +
  /// columns), its staging rows and its warpgroup's barrier.
  struct Place {
    mlir::Value key0, column0, staging, groupBarrier;
  };
  Place place(WarpEmitter &w) const;

  const AttentionKernelConfig &config;
  const TmaRing &ring;
  int64_t consumers, keyRows;
  bool splitKeys;
  int64_t keys, columns;
};

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_BACKWARDATOMICDQ_H
