// weft_package_gemms.h without a GPU: package GEMM records -> weft_gemm_desc
// (checked by weft_gemm_check), and the package-file update that stores
// algorithm bytes (given here, not selected) with the checksums recomputed.
#include "weft_package_gemms.h"

#include "weft/Package/Package.h"

#include <gtest/gtest.h>

#include <string>

using namespace weft::pkg;

namespace {

/// Three GEMMs of a step: a bf16 linear with bias (y = x w^T + b) and a
/// workspace, a batched f16 q k^T, and an f32 GEMM cuBLASLt cannot run.
Package gemmPackage(bool withF32) {
  Package p;
  p.arch = "sm_90a";
  p.weftVersion = "0.5.0";
  p.stepName = "step";
  p.alignment = 256;
  p.numSteps = 3;
  uint64_t offset = 0;
  auto buffer = [&](const char *name, uint64_t size) {
    Buffer b;
    b.name = name;
    b.offset = offset;
    b.size = size;
    b.first = 0;
    b.last = 2;
    offset += (size + 255) / 256 * 256;
    p.buffers.push_back(b);
    return uint32_t(p.buffers.size() - 1);
  };
  uint32_t x = buffer("x", 32 * 128 * 2), w = buffer("w", 384 * 128 * 2),
           bias = buffer("b", 384 * 2), y = buffer("y", 32 * 384 * 2),
           ws = buffer("ws", 1 << 20), q = buffer("q", 4 * 16 * 64 * 2),
           k = buffer("k", 4 * 16 * 64 * 2), s = buffer("s", 4 * 16 * 16 * 2),
           f = buffer("f", 8 * 8 * 4);
  p.arenaBytes = offset;
  Gemm linear;
  linear.a = x, linear.b = w, linear.d = y, linear.bias = bias, linear.workspace = ws;
  linear.m = 32, linear.n = 384, linear.k = 128;
  linear.transB = true;
  linear.epilogue = Epilogue::Bias;
  linear.index = 0;
  p.gemms.push_back(linear);
  Gemm scores;
  scores.a = q, scores.b = k, scores.d = s;
  scores.m = 16, scores.n = 16, scores.k = 64, scores.batch = 4;
  scores.strides[0] = 1024, scores.strides[1] = 1024;
  scores.strides[2] = 256, scores.strides[3] = 256;
  scores.transB = true;
  scores.dtype = DType::F16;
  scores.alpha = 0.125f;
  scores.index = 1;
  p.gemms.push_back(scores);
  p.schedule = {{EntryKind::Gemm, 0}, {EntryKind::Gemm, 1}};
  if (withF32) {
    Gemm single;
    single.a = single.b = single.d = f;
    single.m = single.n = single.k = 8;
    single.dtype = DType::F32;
    single.index = 2;
    p.gemms.push_back(single);
    p.schedule.push_back({EntryKind::Gemm, 2});
  }
  return p;
}

TEST(PackageGemms, RecordsBecomeCheckedDescriptors) {
  Package p = gemmPackage(/*withF32=*/false);
  ASSERT_TRUE(checkPackage(p, {/*requireImages=*/false}).empty());
  std::string bytes = writePackage(p);
  unsigned count = 0;
  ASSERT_EQ(weft_package_gemms(bytes.data(), bytes.size(), nullptr, 0, &count), WEFT_OK)
      << weft_last_error();
  ASSERT_EQ(count, 2u);
  weft_package_gemm gemms[2];
  ASSERT_EQ(weft_package_gemms(bytes.data(), bytes.size(), gemms, 2, &count), WEFT_OK);
  const weft_gemm_desc &l = gemms[0].desc;
  EXPECT_EQ(l.m, 32);
  EXPECT_EQ(l.n, 384);
  EXPECT_EQ(l.k, 128);
  EXPECT_EQ(l.batch, 1);
  EXPECT_EQ(l.trans_a, 0);
  EXPECT_EQ(l.trans_b, 1);
  EXPECT_EQ(l.dtype, WEFT_DTYPE_BF16);
  EXPECT_EQ(l.epilogue, WEFT_GEMM_EPILOGUE_BIAS);
  EXPECT_EQ(l.alpha, 1.0f);
  EXPECT_EQ(l.beta, 0.0f);
  EXPECT_EQ(gemms[0].workspace_bytes, size_t(1) << 20);
  EXPECT_EQ(gemms[0].algo_chosen, 0);
  EXPECT_EQ(weft_gemm_check(&l), WEFT_OK);
  const weft_gemm_desc &s = gemms[1].desc;
  EXPECT_EQ(s.batch, 4);
  EXPECT_EQ(s.stride_a, 1024);
  EXPECT_EQ(s.stride_b, 1024);
  EXPECT_EQ(s.stride_c, 256);
  EXPECT_EQ(s.stride_d, 256);
  EXPECT_EQ(s.dtype, WEFT_DTYPE_F16);
  EXPECT_EQ(s.epilogue, WEFT_GEMM_EPILOGUE_NONE);
  EXPECT_EQ(s.alpha, 0.125f);
  EXPECT_EQ(gemms[1].workspace_bytes, 0u);
  EXPECT_EQ(weft_gemm_check(&s), WEFT_OK);
}

TEST(PackageGemms, UnrunnableRecordsAreNamed) {
  std::string bytes = writePackage(gemmPackage(/*withF32=*/true));
  unsigned count = 0;
  EXPECT_EQ(weft_package_gemms(bytes.data(), bytes.size(), nullptr, 0, &count),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("weft_package_gemms: gemm 2: weft_gemm_check: "
                                                "dtype f32 (1) is not supported"),
            std::string::npos)
      << weft_last_error();
  Package big = gemmPackage(false);
  big.gemms[1].k = int64_t(1) << 31;
  std::string bigBytes = writePackage(big);
  EXPECT_EQ(weft_package_gemms(bigBytes.data(), bigBytes.size(), nullptr, 0, &count),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(weft_last_error(), "weft_package_gemms: gemm 1: k = 2147483648 is not in "
                                  "[1, 2147483647], which weft_gemm_desc holds");
  std::string cut = writePackage(gemmPackage(false)).substr(0, 100);
  EXPECT_EQ(weft_package_gemms(cut.data(), cut.size(), nullptr, 0, &count),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("truncated"), std::string::npos);
}

// Tests the package-file update only: the algorithm bytes are a pattern given
// here, not a cuBLASLt selection (that needs a GPU: test/gpu).
TEST(PackageGemms, FileUpdateStoresGivenBytesAndChecksums) {
  std::string before = writePackage(gemmPackage(false));
  std::string bytes = before;
  weft_gemm_algo algo;
  for (int i = 0; i < 64; ++i)
    algo.bytes[i] = uint8_t(3 * i + 1);
  algo.valid = 1;
  ASSERT_EQ(weft_package_gemm_set_algo(bytes.data(), bytes.size(), 1, &algo), WEFT_OK)
      << weft_last_error();
  EXPECT_EQ(bytes.size(), before.size());
  EXPECT_NE(bytes, before);
  // The reader accepts the file (every checksum) and reads the bytes back.
  Package read;
  std::string error;
  ASSERT_TRUE(readPackage(bytes.data(), bytes.size(), read, error)) << error;
  EXPECT_FALSE(read.gemms[0].hasAlgo);
  ASSERT_TRUE(read.gemms[1].hasAlgo);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(read.gemms[1].algo[i], uint8_t(3 * i + 1)) << "byte " << i;
  weft_package_gemm gemms[2];
  unsigned count = 0;
  ASSERT_EQ(weft_package_gemms(bytes.data(), bytes.size(), gemms, 2, &count), WEFT_OK);
  EXPECT_EQ(gemms[0].algo_chosen, 0);
  EXPECT_EQ(gemms[1].algo_chosen, 1);
  EXPECT_EQ(gemms[1].algo.valid, 1);
  EXPECT_EQ(gemms[1].algo.bytes[63], uint8_t(3 * 63 + 1));
  // Only that record and the checksums changed: rewriting the package from
  // what was read gives the same bytes.
  EXPECT_EQ(writePackage(read), bytes);

  // A bad index or a corrupted package writes nothing.
  std::string kept = bytes;
  EXPECT_EQ(weft_package_gemm_set_algo(bytes.data(), bytes.size(), 2, &algo),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(weft_last_error(), "weft_package_gemm_set_algo: cannot store a GEMM algorithm "
                                  "for gemm 2: the package has 2 gemms");
  EXPECT_EQ(bytes, kept);
  bytes[bytes.size() - 1] ^= 0x40;
  kept = bytes;
  EXPECT_EQ(weft_package_gemm_set_algo(bytes.data(), bytes.size(), 0, &algo),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("cannot store GEMM algorithms: "),
            std::string::npos)
      << weft_last_error();
  EXPECT_EQ(bytes, kept);
}

// Without a driver (this test's machines), selection fails with the
// runtime's message and leaves the package as it was.
TEST(PackageGemms, SelectionWithoutADeviceChangesNothing) {
  if (weft_init() == WEFT_OK) {
    GTEST_SKIP() << "a CUDA driver is present; selection is tested on the GPU";
  }
  std::string bytes = writePackage(gemmPackage(false));
  std::string kept = bytes;
  unsigned selected = 7;
  EXPECT_NE(weft_package_gemms_select(bytes.data(), bytes.size(), 0, &selected), WEFT_OK);
  EXPECT_EQ(selected, 0u);
  EXPECT_NE(std::string(weft_last_error()).find("weft_package_gemms_select: gemm 0: "),
            std::string::npos)
      << weft_last_error();
  EXPECT_EQ(bytes, kept);
}

} // namespace
