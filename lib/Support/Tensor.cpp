// Names of Weft's element types, as tools print and .npz metadata stores them.
#include "weft/Support/Tensor.h"

namespace weft {

const char *dtypeName(DType dtype) {
  // In DType's order (Tensor.h).
  static const char *const names[] = {"f64", "f32", "f16", "bf16", "i64", "i1", "i16"};
  unsigned index = unsigned(dtype);
  return index < sizeof(names) / sizeof(names[0]) ? names[index] : "unknown";
}

std::optional<DType> parseDType(const std::string &name) {
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16,
                      DType::I64, DType::I1, DType::I16})
    if (name == dtypeName(dtype))
      return dtype;
  return std::nullopt;
}

} // namespace weft
