// float64 <-> f16 / bf16 bit conversions, written out rather than taken from
// compiler extensions (_Float16, __bf16) so they behave the same everywhere.
#include "weft/Support/FloatBits.h"

#include "llvm/ADT/bit.h"

#include <cmath>

namespace weft {
namespace {

/// Encodes `value` in an IEEE-style binary format with `expBits` exponent and
/// `mantBits` stored mantissa bits, rounding to nearest even.
uint32_t encodeBinary(double value, unsigned expBits, unsigned mantBits) {
  uint64_t bits = llvm::bit_cast<uint64_t>(value);
  uint32_t sign = static_cast<uint32_t>(bits >> 63) << (expBits + mantBits);
  uint32_t expMax = (1u << expBits) - 1;
  int64_t exp64 = static_cast<int64_t>((bits >> 52) & 0x7ff);
  uint64_t mant64 = bits & ((uint64_t(1) << 52) - 1);
  if (exp64 == 0x7ff) {
    if (mant64 == 0)
      return sign | (expMax << mantBits);
    // Keep the top payload bits and force the quiet bit so a NaN never turns
    // into an infinity.
    uint32_t payload = static_cast<uint32_t>(mant64 >> (52 - mantBits));
    return sign | (expMax << mantBits) | (1u << (mantBits - 1)) | payload;
  }
  if (exp64 == 0 && mant64 == 0)
    return sign;

  // value = significand * 2^(exponent - 52) with the implicit bit in place.
  uint64_t significand = exp64 == 0 ? mant64 : (mant64 | (uint64_t(1) << 52));
  int64_t exponent = (exp64 == 0 ? 1 : exp64) - 1023;
  int64_t bias = (int64_t(1) << (expBits - 1)) - 1;
  int64_t targetExp = exponent + bias;
  int64_t shift = 52 - static_cast<int64_t>(mantBits);
  if (targetExp <= 0) {
    // Subnormal in the target: the significand loses 1 - targetExp more bits.
    shift += 1 - targetExp;
    targetExp = 0;
  }
  if (shift >= 64)
    return sign; // below half the smallest subnormal

  uint64_t rounded = significand >> shift;
  uint64_t rest = significand & ((uint64_t(1) << shift) - 1);
  uint64_t half = uint64_t(1) << (shift - 1);
  if (rest > half || (rest == half && (rounded & 1)))
    ++rounded;
  // For normals `rounded` still carries the implicit bit, so adding it onto
  // (targetExp - 1) sets the exponent; a carry out of the mantissa (and a
  // subnormal rounding up to the smallest normal) bumps the exponent for free.
  uint64_t magnitude =
      (static_cast<uint64_t>(targetExp > 0 ? targetExp - 1 : 0) << mantBits) +
      rounded;
  if (magnitude >= (uint64_t(expMax) << mantBits))
    return sign | (expMax << mantBits);
  return sign | static_cast<uint32_t>(magnitude);
}

double decodeBinary(uint32_t bits, unsigned expBits, unsigned mantBits) {
  bool negative = (bits >> (expBits + mantBits)) & 1;
  uint32_t expMax = (1u << expBits) - 1;
  uint32_t exp = (bits >> mantBits) & expMax;
  uint32_t mant = bits & ((1u << mantBits) - 1);
  int bias = (1 << (expBits - 1)) - 1;
  double magnitude;
  if (exp == expMax)
    magnitude = mant == 0 ? INFINITY : NAN;
  else if (exp == 0)
    magnitude = std::ldexp(static_cast<double>(mant), 1 - bias - int(mantBits));
  else
    magnitude = std::ldexp(static_cast<double>(mant | (1u << mantBits)),
                           int(exp) - bias - int(mantBits));
  return negative ? -magnitude : magnitude;
}

} // namespace

uint16_t f16Bits(double value) {
  return static_cast<uint16_t>(encodeBinary(value, 5, 10));
}
double f16Value(uint16_t bits) { return decodeBinary(bits, 5, 10); }

uint16_t bf16Bits(double value) {
  // Values that stay normal in bf16 (its exponents 1-254, float64's 897-1150)
  // round in place: rebase the exponent field and round the 52 mantissa bits
  // to 7, nearest even; a carry moves into the exponent as encodeBinary's,
  // and one out of exponent 254 is infinity. The same bits as encodeBinary
  // (FloatBitsTest), about ten times faster: weft-run --init-state draws
  // every parameter of a step through it.
  uint64_t bits = llvm::bit_cast<uint64_t>(value);
  uint64_t exponent = (bits >> 52) & 0x7ff;
  if (exponent < 897 || exponent > 1150)
    return static_cast<uint16_t>(encodeBinary(value, 8, 7));
  uint64_t sign = bits >> 63;
  uint64_t magnitude = (bits & ~(uint64_t(1) << 63)) - (uint64_t(896) << 52);
  uint64_t rounded = magnitude >> 45, rest = magnitude & ((uint64_t(1) << 45) - 1);
  uint64_t half = uint64_t(1) << 44;
  if (rest > half || (rest == half && (rounded & 1)))
    ++rounded;
  if (rounded >= 0x7f80)
    rounded = 0x7f80;
  return static_cast<uint16_t>((sign << 15) | rounded);
}
double bf16Value(uint16_t bits) { return decodeBinary(bits, 8, 7); }

uint16_t splitMasterHigh(float master) {
  uint32_t bits = llvm::bit_cast<uint32_t>(master);
  if (std::isnan(master))
    return static_cast<uint16_t>((bits >> 16) | 0x0040);
  // No wrap: the largest non-NaN pattern is -inf (0xff800000).
  return static_cast<uint16_t>((bits + 0x8000u) >> 16);
}

int16_t splitMasterLow(float master) {
  if (std::isnan(master))
    return 0;
  // When the high half rounded up, the low bits read as signed are exactly
  // the (negative) remainder below it.
  return static_cast<int16_t>(llvm::bit_cast<uint32_t>(master) & 0xffffu);
}

float joinMaster(uint16_t high, int16_t low) {
  uint32_t bits = (static_cast<uint32_t>(high) << 16) +
                  static_cast<uint32_t>(static_cast<int32_t>(low));
  return llvm::bit_cast<float>(bits);
}

double roundToDType(double value, DType dtype) {
  switch (dtype) {
  case DType::F64:
    return value;
  case DType::F32:
    return static_cast<double>(static_cast<float>(value));
  case DType::F16:
    return f16Value(f16Bits(value));
  case DType::BF16:
    return bf16Value(bf16Bits(value));
  case DType::I64:
    return std::round(value);
  case DType::I16:
    return double(int16_t(uint16_t(int64_t(std::fmod(std::round(value), 65536.0)))));
  case DType::I1:
    return value != 0 ? 1.0 : 0.0;
  }
  return value;
}

} // namespace weft
