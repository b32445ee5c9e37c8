// A tensor as the reference interpreter, the tools and .npz files exchange it:
// a shape, an element type and float64 storage (integers and i1 exact).
#ifndef WEFT_SUPPORT_TENSOR_H
#define WEFT_SUPPORT_TENSOR_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft {

enum class DType { F64, F32, F16, BF16, I64, I1, I16 };

/// "f64", "f32", "f16", "bf16", "i64", "i1", "i16": the names tools print
/// and the .npz `__weft_dtypes__` entry stores.
const char *dtypeName(DType dtype);
std::optional<DType> parseDType(const std::string &name);
/// Bytes of one element as .npy files and the lowered code store it (bf16
/// and f16 as 16-bit words, i1 as a byte).
uint64_t elementBytes(DType dtype);

struct Tensor {
  std::vector<int64_t> shape;
  DType dtype = DType::F64;
  std::vector<double> data; // row-major, size == numElements()

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

} // namespace weft

#endif // WEFT_SUPPORT_TENSOR_H
