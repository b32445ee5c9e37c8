// bf16Bits rounds float64 to the nearest bf16, ties to even, whichever of
// its paths (in place for bf16 normals, the generic encoder otherwise) a
// value takes: checked against the definition, not against either path.
#include "weft/Support/FloatBits.h"

#include "llvm/ADT/bit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

namespace {

using weft::bf16Bits;
using weft::bf16Value;

/// Whether `bits` is a nearest bf16 to `value`, an even one on a tie.
void expectNearestEven(double value, uint16_t bits) {
  double got = bf16Value(bits);
  ASSERT_FALSE(std::isnan(got)) << value;
  ASSERT_EQ(std::signbit(got), std::signbit(value)) << value;
  uint16_t magnitude = bits & 0x7fff;
  if (magnitude == 0x7f80) {
    // Infinity: the value is at least halfway past the largest finite bf16.
    double largest = bf16Value(0x7f7f), step = largest - bf16Value(0x7f7e);
    EXPECT_GE(std::fabs(value), largest + step / 2) << value;
    return;
  }
  double error = std::fabs(value - got);
  for (int delta : {-1, 1}) {
    int neighbour = int(magnitude) + delta;
    if (neighbour < 0 || neighbour >= 0x7f80)
      continue;
    double other = bf16Value(uint16_t((bits & 0x8000) | neighbour));
    double otherError = std::fabs(value - other);
    EXPECT_LE(error, otherError) << value << " -> " << got << ", " << other << " is nearer";
    if (error == otherError)
      EXPECT_EQ(magnitude & 1, 0) << value << ": a tie went to the odd " << got;
  }
}

TEST(FloatBitsTest, Bf16RoundsToNearestEven) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-140, 130);
  for (int i = 0; i < 2000000; ++i) {
    double value = std::ldexp(unit(random), exponent(random));
    expectNearestEven(value, bf16Bits(value));
  }
}

TEST(FloatBitsTest, Bf16TiesAndEdges) {
  std::mt19937_64 random(11);
  std::uniform_int_distribution<int> pattern(1, 0x7f7e);
  // Exact halfway points between neighbours (their sum / 2 is exact in
  // float64), both signs, across every bf16 exponent.
  for (int i = 0; i < 200000; ++i) {
    uint16_t low = uint16_t(pattern(random)), high = uint16_t(low + 1);
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      double mid = (bf16Value(uint16_t(sign | low)) + bf16Value(uint16_t(sign | high))) / 2;
      uint16_t bits = bf16Bits(mid);
      expectNearestEven(mid, bits);
      EXPECT_EQ(bits & 1, 0);
    }
  }
  // The smallest normal and the largest finite bf16, their neighbourhoods in
  // float64, the overflow to infinity, zeros, subnormals.
  for (double value :
       {std::ldexp(1.0, -126), std::nextafter(std::ldexp(1.0, -126), 0.0),
        std::ldexp(1.0, -127), std::ldexp(1.5, -133), bf16Value(0x7f7f),
        std::nextafter(bf16Value(0x7f7f), INFINITY), std::ldexp(1.0, 128) * (1 - 0x1p-9),
        std::ldexp(1.0, 128) * (1 - 0x1p-10), std::ldexp(1.0, 200), 0x1p-149, 1.0, 0.5,
        0.0078125})
    for (double signed_ : {value, -value})
      expectNearestEven(signed_, bf16Bits(signed_));
  EXPECT_EQ(bf16Bits(0.0), 0x0000);
  EXPECT_EQ(bf16Bits(-0.0), 0x8000);
  EXPECT_EQ(bf16Bits(INFINITY), 0x7f80);
  EXPECT_EQ(bf16Bits(-INFINITY), 0xff80);
  EXPECT_EQ(bf16Bits(std::ldexp(1.0, 200)), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16Value(bf16Bits(NAN))));
  EXPECT_EQ(bf16Bits(1.0), 0x3f80);
  EXPECT_EQ(bf16Bits(-2.0), 0xc000);
}

} // namespace
