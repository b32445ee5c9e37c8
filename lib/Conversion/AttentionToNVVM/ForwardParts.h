// What the two attention forward kernels (mma.sync and warpgroup MMA) share:
// the masked online-softmax step of one key block and the final store of O
// and the row log-sum-exp.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_FORWARDPARTS_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_FORWARDPARTS_H

#include "AttentionDropout.h"
#include "KeepMask.h"
#include "KernelBodies.h"
#include "WarpEmitter.h"

#include <optional>

namespace weft::gpu {

/// Per-thread values both forward kernels compute once, outside the key loop.
struct ForwardRows {
  const AttentionKernelConfig *config;
  KernelScalars s;
  LaneIds ids;
  QueryBlock block;
  /// softmax scale * log2(e), -inf and 0 as f32, and the query index of this
  /// lane's two accumulator rows (g and g + 8 of its warp's 16).
  mlir::Value scaleLog2, minusInf, zeroF;
  std::array<mlir::Value, 2> rows;
  /// With dropout: the kernel's `seed` parameter (set before
  /// initSoftmaxConstants), then the mask's draws and the global index of
  /// element (row, key 0) of this lane's first row (i64).
  mlir::Value seedPointer;
  std::optional<AttentionDropout> dropout;
  mlir::Value rowIndex;
  /// The Hopper forward's keep mask (its `mask` parameter, set before
  /// initSoftmaxConstants), read instead of drawing; the plane (batch *
  /// q_heads + head) and the first row of this lane's warp.
  mlir::Value maskPointer;
  std::optional<KeepMask> keepMask;
  mlir::Value plane, warpRow0;

  /// Fills scaleLog2, minusInf, zeroF and rows, and the dropout state (the
  /// ops go where `e` inserts).
  void initSoftmaxConstants(WarpEmitter &e);
  /// The key loop's initial state: m[2] = -inf, l[2] = 0, O (dTiles quads) = 0.
  llvm::SmallVector<mlir::Value> initialLoopState(int64_t dTiles) const;
};

/// Scales one key block's scores (keys k0 .. k0 + block_k) to log2 units and
/// masks keys at or past k_len (and above the diagonal when causal) to -inf,
/// then advances the online softmax of this thread's two rows: the scores
/// become P = exp2(s - m_new), next[h] = m_new, next[2 + h] = l * alpha + the
/// row's partial sum. With dropout the scores then become P times the keep
/// factors (the row sum l stays that of the undropped P, as FlashAttention
/// normalises before dropout). Returns alpha = exp2(m_old - m_new) per row (a row that
/// has seen no key keeps m = -inf and uses 0 in place of m).
/// When `maskNeeded` (i1, uniform over the CTA) is given, the mask is only
/// applied where it holds: blocks wholly inside k_len and below the diagonal
/// are only scaled. Without it `mask` says whether to mask (false: the
/// caller knows the block needs none; no branch is emitted either way).
std::array<mlir::Value, 2> onlineSoftmaxStep(WarpEmitter &w, const ForwardRows &r,
                                             llvm::MutableArrayRef<Quad> scores,
                                             mlir::Value k0, mlir::ValueRange mAndL,
                                             llvm::MutableArrayRef<mlir::Value> next,
                                             mlir::Value maskNeeded = {}, bool mask = true);

/// Finishes the row sums across the quad, normalises O (state[4 ..], dTiles
/// quads) and stores it and the row log-sum-exp (natural log) to `out`, `lse`.
void storeForwardOutput(WarpEmitter &e, const ForwardRows &r, mlir::ValueRange state,
                        mlir::Value out, mlir::Value lse);

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_FORWARDPARTS_H
