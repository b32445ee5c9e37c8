// Dropout inside the attention kernels: the keep factors (0 or 1 / (1 - p))
// of the probabilities a thread holds, drawn by the Philox rule at the
// element's index in the global [batch, q_heads, q_len, k_len] probabilities.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_ATTENTIONDROPOUT_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_ATTENTIONDROPOUT_H

#include "WarpEmitter.h"

#include "weft/Conversion/AttentionKernels.h"

#include <array>

namespace weft::gpu {

class AttentionDropout {
public:
  /// Reads the i64 seed behind `seedPointer` (the kernels' `seed`).
  AttentionDropout(WarpEmitter &e, const AttentionKernelConfig &config, mlir::Value seedPointer);

  /// The factors of a thread's four accumulator elements of one 8-key tile
  /// (c0, c1: row g, keys 2t and 2t + 1, at global indices `row0` and
  /// `row0` + 1; c2, c3: row g + 8 from `row1`). When `aligned` (i1, uniform
  /// over the warp: k_len % 4 == 0, so `row0` of an even t is a block's
  /// lane 0) lanes t and t ^ 1 share two Philox blocks, one call each: the
  /// even lane draws row g's block, the odd lane row g + 8's, and they trade
  /// the halves the other holds with one shuffle pair. Every lane of the
  /// warp must be active.
  std::array<mlir::Value, 4> tileFactors(WarpEmitter &w, mlir::Value t, mlir::Value row0,
                                         mlir::Value row1, mlir::Value aligned) const;

  /// The factors of four elements at global indices `indices` held by
  /// lanes that differ only in bits 2..3 of the lane id (m = lane / 4 % 4),
  /// lane m's element j lying in the same Philox block as the other three
  /// lanes' element j, at lane m of that block, when `aligned` (i1, uniform):
  /// the dK/dV kernel's keys g = 4a + m of one query. Each lane draws one
  /// block (its element m's) and three xor shuffles hand every lane its
  /// words. Every lane of the warp must be active.
  std::array<mlir::Value, 4> quadFactors(WarpEmitter &w, mlir::Value m,
                                         const std::array<mlir::Value, 4> &indices,
                                         mlir::Value aligned) const;

private:
  mlir::Value factorOf(WarpEmitter &w, mlir::Value draw) const;
  /// The draws (i32) of elements `index` and `index + 1` (i64 global
  /// indices): one Philox block serves both unless `index` is its last lane
  /// (index % 4 == 3, only when k_len is not a multiple of 4).
  std::array<mlir::Value, 2> pairDraws(WarpEmitter &w, mlir::Value index) const;

  double p;
  int64_t rngId;
  mlir::Value seed;
};

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_ATTENTIONDROPOUT_H
