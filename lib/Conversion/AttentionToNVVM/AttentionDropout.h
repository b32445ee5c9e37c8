// Dropout inside the attention kernels: the keep factors (0 or 1 / (1 - p))
// of the probabilities a thread holds, drawn by the Philox rule at the
// element's index in the global [batch, q_heads, q_len, k_len] probabilities.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_ATTENTIONDROPOUT_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_ATTENTIONDROPOUT_H

#include "WarpEmitter.h"

#include "weft/Conversion/AttentionKernels.h"

#include <array>

namespace weft::gpu {

/// The parameter just before the kernel's `seed` (a block argument of the
/// gpu.func): `head_offset` when the configuration has dropoutHeads.
mlir::Value headOffsetBefore(mlir::Value seedPointer);

class AttentionDropout {
public:
  /// Reads the i64 seed behind `seedPointer` (the kernels' `seed`); `kLen`,
  /// `qHeads` and `qLen` (i32) are the kernel's scalars. With
  /// config.dropoutHeads the parameter before the seed is `head_offset`.
  AttentionDropout(WarpEmitter &e, const AttentionKernelConfig &config, mlir::Value seedPointer,
                   mlir::Value kLen, mlir::Value qHeads, mlir::Value qLen);

  /// The global index (i64) of element (row, key 0) of the probabilities'
  /// flat row `flatRow` (i32: (b * q_heads + h) * q_len + query); a block of
  /// partitioned heads moves it to (b * dropoutHeads + head_offset + h) *
  /// q_len + query.
  mlir::Value rowIndex(WarpEmitter &w, mlir::Value flatRow) const;

  /// The factors of a thread's four accumulator elements of one 8-key tile
  /// of a row-major (query x key) fragment, mma.sync's m16n8 C layout and
  /// each warp's 16 rows of wgmma's m64nN D (c0, c1: row g, keys `key` and
  /// `key` + 1 with `key` = k0 + 8 nt + 2 t; c2, c3: row g + 8), row g at
  /// `rowIndex` (rowIndex()), row g + 8 eight rows on. When k_len % 4 == 0 (uniform over the warp)
  /// lanes t and t ^ 1 share two Philox blocks, one call each: the even
  /// lane draws row g's block, the odd lane row g + 8's, and they trade the
  /// halves the other holds with one shuffle pair. Every lane of the warp
  /// must be active.
  std::array<mlir::Value, 4> tileFactors(WarpEmitter &w, mlir::Value t,
                                         mlir::Value rowIndex,
                                         mlir::Value key) const;

  /// The factors of a thread's four elements of one 8-query tile of a
  /// transposed (key x query) fragment, S^T's in the dK/dV kernels (c0, c1:
  /// key keys[0], the queries whose rows are at `queryIndex`; c2, c3: key
  /// keys[1] = keys[0] + 8). Keys g = 4a + m (m = g % 4, `m`) of one query
  /// are one Philox block when k_len % 4 == 0 and keys[0] - m is a multiple
  /// of 4: each lane draws one block and three xor shuffles hand every lane
  /// its words (quadFactors). Every lane of the warp must be active.
  std::array<mlir::Value, 4> transposedTileFactors(WarpEmitter &w, mlir::Value m,
                                                   const std::array<mlir::Value, 2> &queryIndex,
                                                   const std::array<mlir::Value, 2> &keys) const;

  /// The factor (0 or 1 / (1 - p)) of element j of tile nt of a mask packed
  /// eight tiles to an i32, tile nt's four decisions at bit 4 (nt % 8) of
  /// word nt / 8 (KeepMask's loads).
  mlir::Value factorAt(WarpEmitter &w, llvm::ArrayRef<mlir::Value> words, int64_t nt,
                       int j) const;

private:
  /// The draws (i32) behind tileFactors and transposedTileFactors.
  std::array<mlir::Value, 4> tileDraws(WarpEmitter &w, mlir::Value t,
                                       mlir::Value rowIndex,
                                       mlir::Value key) const;
  std::array<mlir::Value, 4> transposedTileDraws(WarpEmitter &w, mlir::Value m,
                                                 const std::array<mlir::Value, 2> &queryIndex,
                                                 const std::array<mlir::Value, 2> &keys) const;
  /// Lanes that differ only in bits 2..3 of the lane id (m = lane / 4 % 4)
  /// hold four elements at `indices` each, lane m's element j in the same
  /// Philox block as the other three lanes' element j, at lane m of it,
  /// when `aligned`: each lane draws one block (its element m's).
  std::array<mlir::Value, 4> quadDraws(WarpEmitter &w, mlir::Value m,
                                       const std::array<mlir::Value, 4> &indices) const;
  mlir::Value factorOf(WarpEmitter &w, mlir::Value draw) const;
  std::array<mlir::Value, 4> factorsOf(WarpEmitter &w,
                                       const std::array<mlir::Value, 4> &draws) const;
  /// The draws (i32) of elements `index` and `index + 1` (i64 global
  /// indices): one Philox block serves both unless `index` is its last lane
  /// (index % 4 == 3, only when k_len is not a multiple of 4).
  std::array<mlir::Value, 2> pairDraws(WarpEmitter &w, mlir::Value index) const;

  double p;
  int64_t rngId, dropoutHeads;
  /// i32 scalars; headOffset null without dropoutHeads.
  mlir::Value headOffset, qHeads, qLen;
  mlir::Value seed, kLen64;
  /// k_len % 4 == 0 (i1): a row's Philox blocks start at keys 4m.
  mlir::Value aligned;
};

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_ATTENTIONDROPOUT_H
