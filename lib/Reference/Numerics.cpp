// Rounding from float64 to Weft's element types and the Philox4x32-10
// generator; see weft/Reference/Numerics.h for the rules.
#include "weft/Reference/Numerics.h"

#include <cmath>
#include <limits>

namespace weft {

namespace {

/// Rounds `value` to a binary format with `precision` significand bits
/// (including the implicit one) and exponent range [minExp, maxExp], ties to
/// even, directly from double. Scaling by a power of two is exact, so the only
/// rounding is the nearbyint (the default rounding mode is to nearest even).
double roundToFormat(double value, int precision, int minExp, int maxExp) {
  if (!std::isfinite(value) || value == 0.0)
    return value;
  int exponent = std::max(std::ilogb(value), minExp);
  double quantum = std::ldexp(1.0, exponent - (precision - 1));
  double rounded = std::nearbyint(value / quantum) * quantum;
  double maxFinite =
      std::ldexp(2.0 - std::ldexp(1.0, 1 - precision), maxExp);
  if (std::fabs(rounded) > maxFinite)
    return std::copysign(std::numeric_limits<double>::infinity(), value);
  return rounded;
}

constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;

} // namespace

double roundToBF16(double value) { return roundToFormat(value, 8, -126, 127); }
double roundToF16(double value) { return roundToFormat(value, 11, -14, 15); }
double roundToF32(double value) { return static_cast<float>(value); }

double roundValue(double value, DType dtype) {
  switch (dtype) {
  case DType::F64:
    return value;
  case DType::F32:
    return roundToF32(value);
  case DType::F16:
    return roundToF16(value);
  case DType::BF16:
    return roundToBF16(value);
  case DType::I64: {
    if (std::isnan(value))
      return 0.0;
    // 2^63 is exactly representable; anything at or beyond it saturates.
    constexpr double kLimit = 9223372036854775808.0;
    if (value >= kLimit)
      return static_cast<double>(std::numeric_limits<int64_t>::max());
    if (value < -kLimit)
      return -kLimit;
    return std::trunc(value);
  }
  case DType::I1:
    return value != 0.0 ? 1.0 : 0.0;
  case DType::I16:
    // Two's complement: the low 16 bits of the truncated value.
    if (!std::isfinite(value))
      return 0.0;
    return double(int16_t(uint16_t(int64_t(std::fmod(std::trunc(value), 65536.0)))));
  }
  return value;
}

void roundTensor(Tensor &tensor) {
  if (tensor.dtype == DType::F64)
    return;
  for (double &value : tensor.data)
    value = roundValue(value, tensor.dtype);
}

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    uint64_t product0 = uint64_t(kPhiloxM0) * counter[0];
    uint64_t product1 = uint64_t(kPhiloxM1) * counter[2];
    auto hi0 = uint32_t(product0 >> 32), lo0 = uint32_t(product0);
    auto hi1 = uint32_t(product1 >> 32), lo1 = uint32_t(product1);
    counter = {hi1 ^ counter[1] ^ key[0], lo1, hi0 ^ counter[3] ^ key[1], lo0};
  }
  return counter;
}

uint32_t philoxDraw(int64_t seed, int64_t rngId, uint64_t index) {
  uint64_t block = index / 4;
  PhiloxCounter counter = {uint32_t(block), uint32_t(block >> 32), 0, 0};
  PhiloxKey key = {uint32_t(uint64_t(seed)), uint32_t(uint64_t(rngId))};
  return philox4x32_10(counter, key)[index % 4];
}

uint64_t dropoutThreshold(double p) {
  return static_cast<uint64_t>(std::ldexp(p, 32));
}

} // namespace weft
