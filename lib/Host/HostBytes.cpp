// Conversions between float64 values and a buffer's bytes (HostBytes.h).
#include "weft/Host/HostBytes.h"

#include "weft/Support/FloatBits.h"

#include <cstring>

namespace weft {

std::string describe(const std::vector<int64_t> &shape, const std::string &dtype) {
  std::string text = "tensor<";
  for (int64_t d : shape)
    text += std::to_string(d) + "x";
  return text + dtype + ">";
}

std::optional<DType> tensorDType(const std::string &name) {
  if (name == "i32")
    return DType::I64; // exact in float64 as well
  return parseDType(name);
}

size_t elementBytes(const std::string &dtype) {
  if (dtype == "f64" || dtype == "i64")
    return 8;
  if (dtype == "f32" || dtype == "i32")
    return 4;
  if (dtype == "bf16" || dtype == "f16" || dtype == "i16")
    return 2;
  return 1; // i1
}

std::string toBytes(const std::vector<double> &data, size_t start, size_t count,
                    const std::string &dtype) {
  std::string bytes(count * elementBytes(dtype), '\0');
  char *out = bytes.data();
  for (size_t i = 0; i < count; ++i) {
    double v = data[start + i];
    if (dtype == "bf16" || dtype == "f16") {
      uint16_t bits = dtype == "bf16" ? bf16Bits(v) : f16Bits(v);
      std::memcpy(out + 2 * i, &bits, 2);
    } else if (dtype == "f32") {
      float f = float(v);
      std::memcpy(out + 4 * i, &f, 4);
    } else if (dtype == "f64") {
      std::memcpy(out + 8 * i, &v, 8);
    } else if (dtype == "i64") {
      int64_t n = int64_t(roundToDType(v, DType::I64));
      std::memcpy(out + 8 * i, &n, 8);
    } else if (dtype == "i32") {
      int32_t n = int32_t(roundToDType(v, DType::I64));
      std::memcpy(out + 4 * i, &n, 4);
    } else if (dtype == "i16") {
      int16_t n = int16_t(int64_t(roundToDType(v, DType::I64)));
      std::memcpy(out + 2 * i, &n, 2);
    } else {
      out[i] = v != 0;
    }
  }
  return bytes;
}

std::vector<double> fromBytes(const std::string &bytes, const std::string &dtype) {
  size_t width = elementBytes(dtype), count = bytes.size() / width;
  std::vector<double> data(count);
  const char *in = bytes.data();
  for (size_t i = 0; i < count; ++i) {
    if (dtype == "bf16" || dtype == "f16") {
      uint16_t bits;
      std::memcpy(&bits, in + 2 * i, 2);
      data[i] = dtype == "bf16" ? bf16Value(bits) : f16Value(bits);
    } else if (dtype == "f32") {
      float f;
      std::memcpy(&f, in + 4 * i, 4);
      data[i] = f;
    } else if (dtype == "f64") {
      std::memcpy(&data[i], in + 8 * i, 8);
    } else if (dtype == "i64") {
      int64_t n;
      std::memcpy(&n, in + 8 * i, 8);
      data[i] = double(n);
    } else if (dtype == "i32") {
      int32_t n;
      std::memcpy(&n, in + 4 * i, 4);
      data[i] = n;
    } else if (dtype == "i16") {
      int16_t n;
      std::memcpy(&n, in + 2 * i, 2);
      data[i] = n;
    } else {
      data[i] = in[i] != 0;
    }
  }
  return data;
}

} // namespace weft
