// Names and element sizes of Weft's element types, as tools print, .npz files
// and the lowered code store them.
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

uint64_t elementBytes(DType dtype) {
  // In DType's order (Tensor.h).
  static constexpr uint64_t kBytes[] = {8, 4, 2, 2, 8, 1, 2};
  return kBytes[static_cast<unsigned>(dtype)];
}

} // namespace weft
