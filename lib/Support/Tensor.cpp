// Names of Weft's element types, as tools print and .npz metadata stores them.
#include "weft/Support/Tensor.h"

namespace weft {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "f64";
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I64:
    return "i64";
  case DType::I1:
    return "i1";
  case DType::I16:
    return "i16";
  }
  return "unknown";
}

std::optional<DType> parseDType(const std::string &name) {
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16,
                      DType::I64, DType::I1, DType::I16})
    if (name == dtypeName(dtype))
      return dtype;
  return std::nullopt;
}

} // namespace weft
