// Tests of .npz reading and writing (weft/Support/Npz.h) and the f16/bf16 bit
// conversions under it. Fixtures in Inputs/ were written by numpy
// (Inputs/make_npz_fixtures.py).
#include "weft/Support/FloatBits.h"
#include "weft/Support/Npz.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <random>

using namespace weft;

namespace {

std::string inputPath(llvm::StringRef name) {
  llvm::SmallString<128> path(WEFT_UNITTEST_INPUTS);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

std::string writeToString(const NpzArchive &archive,
                          NpzWriteOptions options = {}) {
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::Error err = writeNpz(os, archive, options);
  EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  return bytes;
}

/// The error message of `result`, or "" if it succeeded.
template <typename T> std::string errorOf(llvm::Expected<T> result) {
  if (result)
    return "";
  return llvm::toString(result.takeError());
}

Tensor makeTensor(std::vector<int64_t> shape, DType dtype,
                  std::vector<double> data) {
  Tensor tensor;
  tensor.shape = std::move(shape);
  tensor.dtype = dtype;
  tensor.data = std::move(data);
  return tensor;
}

/// Bitwise equality, so NaN equals NaN and -0 differs from +0.
void expectSameTensor(const Tensor &expected, const Tensor *actual,
                      llvm::StringRef key) {
  ASSERT_NE(actual, nullptr) << "missing key " << key.str();
  EXPECT_EQ(actual->shape, expected.shape) << key.str();
  EXPECT_EQ(actual->dtype, expected.dtype) << key.str();
  ASSERT_EQ(actual->data.size(), expected.data.size()) << key.str();
  for (size_t i = 0; i < expected.data.size(); ++i) {
    if (std::isnan(expected.data[i]))
      EXPECT_TRUE(std::isnan(actual->data[i])) << key.str() << "[" << i << "]";
    else
      EXPECT_EQ(llvm::bit_cast<uint64_t>(actual->data[i]),
                llvm::bit_cast<uint64_t>(expected.data[i]))
          << key.str() << "[" << i << "]: " << actual->data[i]
          << " != " << expected.data[i];
  }
}

NpzArchive everyDTypeArchive() {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  NpzArchive archive;
  archive.set("arg0", makeTensor({2, 3}, DType::F64,
                                 {0.1, -0.0, 1e300, -inf, nan, 4.9e-324}));
  archive.set("arg1", makeTensor({4}, DType::F32,
                                 {0.5, -1.25, 3.4028234663852886e38, 0x1p-149}));
  // f16: largest finite, smallest subnormal, and -inf.
  archive.set("arg2", makeTensor({3}, DType::F16, {65504.0, 0x1p-24, -inf}));
  // bf16: values with 8 significant bits, a bf16 subnormal and NaN.
  archive.set("arg3", makeTensor({2, 2}, DType::BF16,
                                 {1.0, -3.140625, 0x1p-133, nan}));
  archive.set("arg4", makeTensor({5}, DType::I64,
                                 {0, -1, 9007199254740992.0, -42, 1e15}));
  archive.set("arg5", makeTensor({2, 1}, DType::I1, {1, 0}));
  archive.set("res0", makeTensor({}, DType::F32, {2.5}));           // 0-d
  archive.set("res1", makeTensor({0, 3}, DType::BF16, {}));         // empty
  archive.set("rank1/res0", makeTensor({1}, DType::F64, {-7.0}));   // SPMD key
  return archive;
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST(NpzTest, RoundTripEveryDType) {
  NpzArchive archive = everyDTypeArchive();
  for (bool forceZip64 : {false, true}) {
    std::string bytes = writeToString(archive, {forceZip64});
    llvm::Expected<NpzArchive> read = parseNpz(bytes, "mem.npz");
    ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
    ASSERT_EQ(read->size(), archive.size());
    for (const auto &[key, tensor] : archive.entries())
      expectSameTensor(tensor, read->lookup(key), key);
    // Order is kept, and __weft_dtypes__ is consumed rather than returned.
    EXPECT_EQ(read->entries().front().first, "arg0");
    EXPECT_EQ(read->lookup(kNpzDTypesKey), nullptr);
  }
}

TEST(NpzTest, WritingIsDeterministic) {
  NpzArchive archive = everyDTypeArchive();
  EXPECT_EQ(writeToString(archive), writeToString(archive));
}

TEST(NpzTest, FileRoundTrip) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("npztest", "npz", path));
  NpzArchive archive = everyDTypeArchive();
  llvm::Error err = writeNpz(path, archive);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  llvm::Expected<NpzArchive> read = readNpz(path);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  expectSameTensor(*archive.lookup("arg3"), read->lookup("arg3"), "arg3");
  llvm::sys::fs::remove(path);
}

TEST(NpzTest, SetReplacesInPlace) {
  NpzArchive archive;
  archive.set("a", makeTensor({1}, DType::F64, {1}));
  archive.set("b", makeTensor({1}, DType::F64, {2}));
  archive.set("a", makeTensor({1}, DType::F32, {3}));
  ASSERT_EQ(archive.size(), 2u);
  EXPECT_EQ(archive.entries()[0].first, "a");
  EXPECT_EQ(archive.lookup("a")->data[0], 3.0);
  EXPECT_EQ(archive.lookup("a")->dtype, DType::F32);
}

TEST(NpzTest, Bf16IsStoredAsUint16BitPatterns) {
  NpzArchive archive;
  // 1.0 = 0x3F80, -2.0 = 0xC000, and 1 + 2^-8 rounds (ties to even) to 1.0.
  archive.set("arg0", makeTensor({3}, DType::BF16, {1.0, -2.0, 1.00390625}));
  std::string bytes = writeToString(archive);
  EXPECT_NE(bytes.find("'descr': '<u2'"), std::string::npos);
  const char bits[] = {'\x80', '\x3f', '\x00', '\xc0', '\x80', '\x3f'};
  EXPECT_NE(bytes.find(std::string(bits, sizeof(bits))), std::string::npos);
  // The dtype list names the key, as a numpy unicode array.
  EXPECT_NE(bytes.find("'descr': '<U9'"), std::string::npos);
  llvm::Expected<NpzArchive> read = parseNpz(bytes, "mem.npz");
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(read->lookup("arg0")->data, (std::vector<double>{1.0, -2.0, 1.0}));
}

//===----------------------------------------------------------------------===//
// Files numpy wrote
//===----------------------------------------------------------------------===//

TEST(NpzTest, ReadsNumpySavezWithZip64Headers) {
  llvm::Expected<NpzArchive> read = readNpz(inputPath("savez_zip64.npz"));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  ASSERT_EQ(read->size(), 3u);
  expectSameTensor(makeTensor({2, 3}, DType::F32,
                              {-1.0, -0.5, 0.0, 0.5, 1.0, 1.5}),
                   read->lookup("arg0"), "arg0");
  expectSameTensor(makeTensor({3}, DType::BF16, {1.0, -2.5, 0.15625}),
                   read->lookup("arg1"), "arg1");
  expectSameTensor(makeTensor({}, DType::I64, {-7}), read->lookup("rank1/res0"),
                   "rank1/res0");
}

TEST(NpzTest, ReadsNumpySavezCompressed) {
  llvm::Expected<NpzArchive> read = readNpz(inputPath("savez_compressed.npz"));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  const Tensor *f64 = read->lookup("f64");
  ASSERT_NE(f64, nullptr);
  EXPECT_EQ(f64->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(f64->dtype, DType::F64);
  EXPECT_DOUBLE_EQ(f64->data.front(), -1.0);
  EXPECT_DOUBLE_EQ(f64->data.back(), 1.0);
  expectSameTensor(makeTensor({3}, DType::I1, {1, 0, 1}), read->lookup("b1"),
                   "b1");
  // int32 widens to i64; uint8 reads as i1.
  expectSameTensor(makeTensor({2}, DType::I64, {-2, 5}), read->lookup("i4"),
                   "i4");
  expectSameTensor(makeTensor({2}, DType::F16, {0.5, -65504.0}),
                   read->lookup("f2"), "f2");
  expectSameTensor(makeTensor({1, 2}, DType::I1, {0, 1}), read->lookup("u1"),
                   "u1");
}

TEST(NpzTest, ReadsNpyVersions2And3) {
  llvm::Expected<NpzArchive> read = readNpz(inputPath("npy_versions.npz"));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  for (const char *key : {"v2", "v3"})
    expectSameTensor(makeTensor({2}, DType::F64, {1.5, 2.5}),
                     read->lookup(key), key);
}

TEST(NpzTest, RejectsUnsupportedEncodingsWithClearMessages) {
  std::string message = errorOf(readNpz(inputPath("big_endian.npz")));
  EXPECT_NE(message.find("big_endian.npz: 'arg0': big-endian dtype '>f8'"),
            std::string::npos)
      << message;
  message = errorOf(readNpz(inputPath("fortran_order.npz")));
  EXPECT_NE(message.find("'arg0': Fortran-order arrays are not supported"),
            std::string::npos)
      << message;
  message = errorOf(readNpz(inputPath("unnamed_uint16.npz")));
  EXPECT_NE(message.find("'arg0': uint16 array ('<u2') without a "
                         "__weft_dtypes__ entry"),
            std::string::npos)
      << message;
  message = errorOf(readNpz(inputPath("does_not_exist.npz")));
  EXPECT_NE(message.find("does_not_exist.npz: cannot open"), std::string::npos)
      << message;
}

//===----------------------------------------------------------------------===//
// Malformed input: an error, never a crash
//===----------------------------------------------------------------------===//

TEST(NpzTest, EveryTruncationIsAnError) {
  for (llvm::StringRef file : {"", "savez_zip64.npz", "savez_compressed.npz"}) {
    std::string bytes;
    if (file.empty()) {
      bytes = writeToString(everyDTypeArchive(), {/*forceZip64=*/true});
    } else {
      auto buffer = llvm::MemoryBuffer::getFile(inputPath(file));
      ASSERT_TRUE(static_cast<bool>(buffer));
      bytes = (*buffer)->getBuffer().str();
    }
    for (size_t size = 0; size < bytes.size(); ++size) {
      // Copy, so reading past the truncated end is a sanitizer-visible bug.
      std::string truncated = bytes.substr(0, size);
      std::string message = errorOf(parseNpz(truncated, "cut.npz"));
      EXPECT_FALSE(message.empty()) << file.str() << " cut at " << size;
      EXPECT_TRUE(llvm::StringRef(message).starts_with("cut.npz: "))
          << message;
    }
  }
}

TEST(NpzTest, CorruptedBytesNeverCrash) {
  for (llvm::StringRef file : {"", "savez_compressed.npz"}) {
    std::string bytes;
    if (file.empty()) {
      bytes = writeToString(everyDTypeArchive(), {/*forceZip64=*/true});
    } else {
      auto buffer = llvm::MemoryBuffer::getFile(inputPath(file));
      ASSERT_TRUE(static_cast<bool>(buffer));
      bytes = (*buffer)->getBuffer().str();
    }
    size_t errors = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (unsigned char flip : {0x01, 0x80, 0xff}) {
        std::string corrupted = bytes;
        corrupted[i] = static_cast<char>(corrupted[i] ^ flip);
        llvm::Expected<NpzArchive> read = parseNpz(corrupted, "bad.npz");
        if (!read) {
          ++errors;
          llvm::consumeError(read.takeError());
        }
      }
    }
    // Data and headers are CRC-checked; only bytes no reader depends on
    // (timestamps, attributes, padding of the central records) may change
    // without an error.
    EXPECT_GT(errors, bytes.size() * 3 / 2) << file.str();
  }
}

TEST(NpzTest, MalformedArchivesNameTheProblem) {
  NpzArchive archive;
  archive.set("arg0", makeTensor({2}, DType::F64, {1, 2}));
  std::string bytes = writeToString(archive);

  EXPECT_NE(errorOf(parseNpz("", "empty.npz")).find("not a zip archive"),
            std::string::npos);
  EXPECT_NE(errorOf(parseNpz("PK\x05\x06 not really", "x.npz"))
                .find("not a zip archive"),
            std::string::npos);

  // A changed data byte fails the CRC check, naming the key.
  std::string corrupted = bytes;
  size_t data = corrupted.find(std::string("\x00\x00\x00\x00\x00\x00\xf0\x3f", 8));
  ASSERT_NE(data, std::string::npos);
  corrupted[data + 7] = '\x40';
  std::string message = errorOf(parseNpz(corrupted, "x.npz"));
  EXPECT_NE(message.find("x.npz: 'arg0.npy': corrupt zip entry (CRC-32"),
            std::string::npos)
      << message;
}

TEST(NpzTest, RejectsInvalidTensorsOnWrite) {
  NpzArchive archive;
  archive.set("arg0", makeTensor({2, 2}, DType::F32, {1, 2, 3}));
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::Error err = writeNpz(os, archive);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "'arg0': shape holds 4 elements but data 3");

  NpzArchive fractional;
  fractional.set("ids", makeTensor({2}, DType::I64, {1, 2.5}));
  err = writeNpz(os, fractional);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "'ids': i64 element 1 is 2.5, not an integer in range");

  NpzArchive nonAscii;
  nonAscii.set("caf\xc3\xa9", makeTensor({}, DType::F64, {0}));
  err = writeNpz(os, nonAscii);
  ASSERT_TRUE(static_cast<bool>(err));
  llvm::consumeError(std::move(err));

  NpzArchive reserved;
  reserved.set(kNpzDTypesKey, makeTensor({}, DType::F64, {0}));
  err = writeNpz(os, reserved);
  ASSERT_TRUE(static_cast<bool>(err));
  llvm::consumeError(std::move(err));
}

//===----------------------------------------------------------------------===//
// f16 / bf16 bits
//===----------------------------------------------------------------------===//

/// APFloat's conversion from double, round to nearest even, as the oracle.
uint16_t oracleBits(double value, const llvm::fltSemantics &semantics) {
  llvm::APFloat f(value);
  bool losesInfo;
  f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

TEST(FloatBitsTest, EveryPatternSurvivesARoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    double half = f16Value(static_cast<uint16_t>(bits));
    double brain = bf16Value(static_cast<uint16_t>(bits));
    if (std::isnan(half))
      EXPECT_TRUE(std::isnan(f16Value(f16Bits(half))));
    else
      EXPECT_EQ(f16Bits(half), bits) << std::hex << bits;
    if (std::isnan(brain))
      EXPECT_TRUE(std::isnan(bf16Value(bf16Bits(brain))));
    else
      EXPECT_EQ(bf16Bits(brain), bits) << std::hex << bits;
    // Decoding agrees with APFloat.
    if (!std::isnan(half))
      EXPECT_EQ(half, llvm::APFloat(llvm::APFloat::IEEEhalf(),
                                    llvm::APInt(16, bits))
                          .convertToDouble());
    if (!std::isnan(brain))
      EXPECT_EQ(brain, llvm::APFloat(llvm::APFloat::BFloat(),
                                     llvm::APInt(16, bits))
                           .convertToDouble());
  }
}

TEST(FloatBitsTest, RoundingMatchesAPFloat) {
  std::mt19937_64 gen(1234);
  std::vector<double> values = {0x1p-25,  0x1.8p-25, 0x1p-24, 65504.0,
                                65519.99, 65520.0,   1e-40,   3.4e38,
                                1.00390625, 1.01171875, -0x1p-134, 1e300};
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns over a wide exponent range, and values at and near
    // halfway points between neighbouring f16/bf16 values.
    uint64_t bits = gen();
    int exponent = static_cast<int>(gen() % 320) - 160;
    double value = std::ldexp(1.0 + (bits >> 12) * 0x1p-52, exponent);
    if (bits & 1)
      value = -value;
    values.push_back(value);
    double halfway = f16Value(static_cast<uint16_t>(bits >> 48)) +
                     std::ldexp(1.0, -25 + static_cast<int>(bits % 40));
    values.push_back(halfway);
  }
  for (double value : values) {
    if (std::isnan(value))
      continue;
    EXPECT_EQ(f16Bits(value), oracleBits(value, llvm::APFloat::IEEEhalf()))
        << value;
    EXPECT_EQ(bf16Bits(value), oracleBits(value, llvm::APFloat::BFloat()))
        << value;
  }
}

TEST(FloatBitsTest, RoundToDType) {
  EXPECT_EQ(roundToDType(0.1, DType::F32), static_cast<double>(0.1f));
  EXPECT_EQ(roundToDType(1.00048828125, DType::F16), 1.0); // tie to even
  EXPECT_EQ(roundToDType(65520.0, DType::F16),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(roundToDType(2.5, DType::I64), 3.0);
  EXPECT_EQ(roundToDType(-3.0, DType::I1), 1.0);
  EXPECT_TRUE(std::isnan(roundToDType(NAN, DType::BF16)));
}

} // namespace
