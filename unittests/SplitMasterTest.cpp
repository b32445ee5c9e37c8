// Tests of the split f32 master helpers (splitMasterHigh / splitMasterLow /
// joinMaster in weft/Support/FloatBits.h) that --weight-copies=split relies
// on: every non-NaN f32 joins back bit-exactly, the high half is the bf16
// round-to-nearest (ties away) weight, and NaN stays NaN. And the i16 low
// halves in .npz files (numpy '<i2').
#include "weft/Support/FloatBits.h"
#include "weft/Support/Npz.h"

#include "llvm/ADT/bit.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string>

using namespace weft;

namespace {

float fromBits(uint32_t bits) { return llvm::bit_cast<float>(bits); }
uint32_t toBits(float value) { return llvm::bit_cast<uint32_t>(value); }

/// Splits the f32 with bits `bits` and checks the halves against the rule,
/// written out independently of the implementation.
void expectSplit(uint32_t bits, uint16_t high, int16_t low) {
  float master = fromBits(bits);
  EXPECT_EQ(splitMasterHigh(master), high) << std::hex << bits;
  EXPECT_EQ(splitMasterLow(master), low) << std::hex << bits;
  EXPECT_EQ(toBits(joinMaster(high, low)), bits) << std::hex << bits;
}

TEST(SplitMasterTest, EdgeValues) {
  expectSplit(0x00000000, 0x0000, 0);       // +0
  expectSplit(0x80000000, 0x8000, 0);       // -0 keeps its sign
  expectSplit(0x3f800000, 0x3f80, 0);       // 1.0
  expectSplit(0x00000001, 0x0000, 1);       // smallest denormal
  expectSplit(0x807fffff, 0x8080, -1);      // largest negative denormal
  // The largest finite f32 rounds its high half to bf16 infinity; the low
  // half carries it back down, so the master is still exact.
  expectSplit(0x7f7fffff, 0x7f80, -1);
  expectSplit(0xff7fffff, 0xff80, -1);
  expectSplit(0x7f800000, 0x7f80, 0);       // +inf
  expectSplit(0xff800000, 0xff80, 0);       // -inf
  // Low half exactly 0x8000: a tie, rounded away from zero, so the low half is
  // the most negative i16.
  expectSplit(0x3f808000, 0x3f81, -32768);
  expectSplit(0xbf808000, 0xbf81, -32768);
  expectSplit(0x00008000, 0x0001, -32768);
  expectSplit(0x3f807fff, 0x3f80, 0x7fff);  // just below the tie
}

TEST(SplitMasterTest, NaNStaysNaN) {
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,
                        0x7fffffffu, 0x7f80ffffu, 0x7fbf8000u}) {
    float master = fromBits(bits);
    uint16_t high = splitMasterHigh(master);
    EXPECT_EQ(splitMasterLow(master), 0) << std::hex << bits;
    // The high half is a quiet NaN with the sign kept, so the forward's bf16
    // weight is NaN, never a finite number or an infinity.
    EXPECT_EQ(high & 0x7fc0, 0x7fc0) << std::hex << bits;
    EXPECT_EQ(high >> 15, bits >> 31) << std::hex << bits;
    EXPECT_TRUE(std::isnan(bf16Value(high))) << std::hex << bits;
    EXPECT_TRUE(std::isnan(joinMaster(high, 0))) << std::hex << bits;
  }
}

TEST(SplitMasterTest, EveryHighHalfAndLowPatternJoinsBack) {
  // Every high half with low halves around the tie and the extremes: covers
  // all exponents, both signs, and both rounding directions.
  for (uint32_t high = 0; high <= 0xffff; ++high) {
    for (uint32_t lowBits : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u,
                             0xffffu, 0x1234u, 0xbeefu}) {
      uint32_t bits = (high << 16) | lowBits;
      float master = fromBits(bits);
      if (std::isnan(master))
        continue;
      uint16_t hi = splitMasterHigh(master);
      int16_t lo = splitMasterLow(master);
      ASSERT_EQ(toBits(joinMaster(hi, lo)), bits) << std::hex << bits;
      // The high half is the nearest bf16 (ties away from zero): it is the
      // truncation, or one above it when the low bits are at least half.
      uint32_t expectedHigh = lowBits >= 0x8000 ? high + 1 : high;
      ASSERT_EQ(hi, static_cast<uint16_t>(expectedHigh)) << std::hex << bits;
    }
  }
}

TEST(SplitMasterTest, HighHalfIsTheNearestBf16) {
  // Away from ties the high half agrees with round-to-nearest-even bf16.
  for (float value : {0.1f, -0.3f, 3.14159f, 1e-38f, -6.5e4f, 1e30f,
                      std::numeric_limits<float>::denorm_min() * 3}) {
    uint32_t low = toBits(value) & 0xffff;
    if (low == 0x8000)
      continue;
    EXPECT_EQ(splitMasterHigh(value), bf16Bits(static_cast<double>(value)))
        << value;
  }
}

//===----------------------------------------------------------------------===//
// i16 tensors in .npz
//===----------------------------------------------------------------------===//

Tensor i16Tensor(std::vector<int64_t> shape, std::vector<double> data) {
  Tensor tensor;
  tensor.shape = std::move(shape);
  tensor.dtype = DType::I16;
  tensor.data = std::move(data);
  return tensor;
}

std::string npzBytes(const NpzArchive &archive, llvm::Error &err) {
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  err = writeNpz(os, archive);
  return bytes;
}

TEST(NpzI16Test, RoundTripsAsLittleEndianInt16) {
  NpzArchive archive;
  archive.set("arg3", i16Tensor({2, 3}, {0, -1, 32767, -32768, 1234, -32767}));
  archive.set("arg4", i16Tensor({0}, {}));
  llvm::Error err = llvm::Error::success();
  std::string bytes = npzBytes(archive, err);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  // numpy's int16 descr and the raw little-endian values, and the dtype list
  // names it i16.
  EXPECT_NE(bytes.find("'descr': '<i2'"), std::string::npos);
  const char raw[] = {'\x00', '\x00', '\xff', '\xff', '\xff', '\x7f',
                      '\x00', '\x80', '\xd2', '\x04', '\x01', '\x80'};
  EXPECT_NE(bytes.find(std::string(raw, sizeof(raw))), std::string::npos);
  EXPECT_NE(bytes.find(std::string("a\0\0\0r\0\0\0g\0\0\0" "3\0\0\0:\0\0\0"
                                   "i\0\0\0" "1\0\0\0" "6\0\0\0", 32)),
            std::string::npos);
  llvm::Expected<NpzArchive> read = parseNpz(bytes, "mem.npz");
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  for (const char *key : {"arg3", "arg4"}) {
    const Tensor *tensor = read->lookup(key);
    ASSERT_NE(tensor, nullptr) << key;
    EXPECT_EQ(tensor->dtype, DType::I16) << key;
    EXPECT_EQ(tensor->shape, archive.lookup(key)->shape) << key;
    EXPECT_EQ(tensor->data, archive.lookup(key)->data) << key;
  }
}

TEST(NpzI16Test, RefusesValuesOutsideInt16) {
  for (double bad : {32768.0, -32769.0, 0.5, double(NAN)}) {
    NpzArchive archive;
    archive.set("low", i16Tensor({2}, {7, bad}));
    llvm::Error err = llvm::Error::success();
    npzBytes(archive, err);
    ASSERT_TRUE(static_cast<bool>(err)) << bad;
    std::string message = llvm::toString(std::move(err));
    EXPECT_NE(message.find("'low': i16 element 1 is "), std::string::npos) << message;
    EXPECT_NE(message.find("not an integer in [-32768, 32767]"), std::string::npos)
        << message;
  }
}

} // namespace
