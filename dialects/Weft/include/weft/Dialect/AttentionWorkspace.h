// The workspaces of weft.attention and weft.attention_grad, one formula for
// the ops' MemoryOpInterface, the GPU kernels that use them and the AOT
// units' metadata.
//
// weft.attention with dropout: the keep mask alone (offset 0), drawn by the
// Hopper forward's keep-mask kernel and read by its forward kernel.
// weft.attention_grad: bytes [0, 4 rows) hold delta = rowsum(dO * O) in f32, one per query row
// (rows = batch * q_heads * q_len). With dropout, the keep mask of the
// probabilities follows at keepMaskOffset(rows) (256-byte aligned): the
// Hopper backward's keep-mask kernel draws it, its dK/dV and dQ kernels read
// it instead of running the Philox rounds in their loops (the mma.sync
// kernels draw in their loops and leave both masks unused). With
// `atomic_dq` (the Hopper backward's non-deterministic dQ, as FlashAttention-3
// has it) an f32 dQ accumulator [batch * q_heads, q_len, head_dim] follows at
// the next 256-byte boundary: the delta kernel zeroes it, the dK/dV kernel
// adds dS K into it with atomics, a last kernel scales it into dq. The mask is
// tiled: tile (r, c)
// of flat query-row group r (8 rows of one (batch, head), rows 8r .. 8r + 7)
// and key chunk c (keys 16c .. 16c + 15) is 16 bytes at
// ((plane * ceil(q_len / 8) + r) * ceil(k_len / 16) + c) * 16, 128 bits
// (four little-endian i32 words): element (q, k) is bit
// 4 (4 (k % 8) + (q % 8) / 2) + (q % 2) + 2 ((k % 16) / 8), so lane 4 g + t
// of the dK/dV kernels' transposed S^T fragment (keys g, g + 8 and queries
// 2 t, 2 t + 1 of the tile) finds its four elements in one nibble.
#ifndef WEFT_DIALECT_ATTENTIONWORKSPACE_H
#define WEFT_DIALECT_ATTENTIONWORKSPACE_H

#include <cstdint>

namespace weft {

inline int64_t attentionDeltaBytes(int64_t rows) { return 4 * rows; }

inline int64_t attentionKeepMaskOffset(int64_t rows) {
  return (attentionDeltaBytes(rows) + 255) / 256 * 256;
}

/// planes = batch * q_heads.
inline int64_t attentionKeepMaskBytes(int64_t planes, int64_t qLen, int64_t kLen) {
  return planes * ((qLen + 7) / 8) * ((kLen + 15) / 16) * 16;
}

/// Where the f32 dQ accumulator of the atomic-dQ backward starts: after
/// delta (and the keep mask), at a 256-byte boundary.
inline int64_t attentionDqAccumOffset(int64_t planes, int64_t qLen, int64_t kLen,
                                      bool dropout) {
  int64_t rows = planes * qLen;
  int64_t end = dropout ? attentionKeepMaskOffset(rows) + attentionKeepMaskBytes(planes, qLen, kLen)
                        : attentionDeltaBytes(rows);
  return (end + 255) / 256 * 256;
}

/// `atomicDqHeadDim` > 0: the backward accumulates dQ with atomics
/// (weft.attention_grad's `atomic_dq`) into [planes, q_len, head_dim] f32 at
/// attentionDqAccumOffset.
inline int64_t attentionGradWorkspaceBytes(int64_t planes, int64_t qLen, int64_t kLen,
                                           bool dropout, int64_t atomicDqHeadDim = 0) {
  int64_t rows = planes * qLen;
  if (atomicDqHeadDim > 0)
    return attentionDqAccumOffset(planes, qLen, kLen, dropout) + 4 * rows * atomicDqHeadDim;
  if (!dropout)
    return attentionDeltaBytes(rows);
  return attentionKeepMaskOffset(rows) + attentionKeepMaskBytes(planes, qLen, kLen);
}

} // namespace weft

#endif // WEFT_DIALECT_ATTENTIONWORKSPACE_H
