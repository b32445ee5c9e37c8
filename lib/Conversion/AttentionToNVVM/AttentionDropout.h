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

  /// The factors of elements `index` and `index + 1` (i64 global indices,
  /// two consecutive keys of one query row, as an accumulator register pair
  /// holds them): one Philox block serves both unless `index` is its last
  /// lane (index % 4 == 3, only when k_len is not a multiple of 4).
  std::array<mlir::Value, 2> pairFactors(WarpEmitter &w, mlir::Value index) const;
  /// The factor of one element (i64 global index).
  mlir::Value factorAt(WarpEmitter &w, mlir::Value index) const;

private:
  mlir::Value factorOf(WarpEmitter &w, mlir::Value draw) const;

  double p;
  int64_t rngId;
  mlir::Value seed;
};

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_ATTENTIONDROPOUT_H
