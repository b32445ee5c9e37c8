// cuTensorMapEncodeTiled's requirements, checked before the driver: each
// broken one gives INVALID_ARGUMENT with the offending value in the message.
#include "RuntimeTestSupport.h"

#include <cstdio>
#include <gtest/gtest.h>
#include <string>

using namespace weft::runtime::test;

namespace {

std::string lastError() { return weft_last_error(); }

// A 2-D row-major bf16 tensor of 128 x 256 (rows of 512 bytes) and a 64 x 64
// box: 128 bytes per box row, exactly the 128-byte swizzle span.
struct TensorMapCase {
  CUtensorMap map; // cuda.h aligns it (128 bytes)
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  unsigned rank = 2;
  void *address = reinterpret_cast<void *>(uintptr_t{0x7f0000001000});
  unsigned long long dims[5] = {256, 128, 1, 1, 1};
  unsigned long long strides[4] = {512, 65536, 65536, 65536};
  unsigned box[5] = {64, 64, 1, 1, 1};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;

  weft_status encode() {
    return weft_tensor_map_encode_tiled(&map, dtype, rank, address, dims, strides, box, swizzle);
  }
};

void expectRefused(TensorMapCase &c, const std::string &fragment) {
  EXPECT_EQ(c.encode(), WEFT_ERROR_INVALID_ARGUMENT) << "expected a message with: " << fragment;
  EXPECT_NE(lastError().find(fragment), std::string::npos) << lastError();
  EXPECT_EQ(lastError().rfind("weft_tensor_map_encode_tiled: ", 0), 0u) << lastError();
}

TEST(TensorMap, ValidArgumentsPassTheChecks) {
  if (driverOverridden() || driverLibraryPresent())
    GTEST_SKIP() << "the fake global address must not reach a real driver";
  TensorMapCase c;
  EXPECT_EQ(c.encode(), WEFT_ERROR_DRIVER_MISSING) << lastError();
}

TEST(TensorMap, MisalignedGlobalAddress) {
  TensorMapCase c;
  c.address = reinterpret_cast<void *>(uintptr_t{0x7f0000001008});
  char printed[32];
  std::snprintf(printed, sizeof(printed), "%p", c.address);
  expectRefused(c, std::string("global address ") + printed + " is not 16-byte aligned");
}

TEST(TensorMap, MisalignedMap) {
  TensorMapCase c;
  auto *shifted = reinterpret_cast<CUtensorMap *>(reinterpret_cast<char *>(&c.map) + 16);
  EXPECT_EQ(weft_tensor_map_encode_tiled(shifted, c.dtype, c.rank, c.address, c.dims, c.strides,
                                         c.box, c.swizzle),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("64-byte aligned"), std::string::npos) << lastError();
}

TEST(TensorMap, StrideNotAMultipleOf16) {
  TensorMapCase c;
  c.strides[0] = 520;
  expectRefused(c, "strides_bytes[0] (stride of dim 1) = 520 is not a positive multiple of 16");
}

TEST(TensorMap, StrideTooLarge) {
  TensorMapCase c;
  c.strides[0] = 1ull << 40;
  expectRefused(c, "= 1099511627776 is not a positive multiple of 16 below 2^40");
}

TEST(TensorMap, OverlappingRows) {
  TensorMapCase c;
  c.strides[0] = 256; // 256 bf16 elements need 512 bytes
  expectRefused(c, "strides_bytes[0] = 256 is smaller than dims[0] = 256 times 2 bytes");
  TensorMapCase d;
  d.rank = 3;
  d.dims[2] = 4;
  d.strides[1] = 512 * 64; // dim 1 has 128 rows of 512 bytes
  expectRefused(d, "strides_bytes[1] = 32768 is smaller than dims[1] = 128 times 512 bytes");
}

// The attention kernels' SeqMajor view: [b=2, s=1000, h=8, d=128] bf16 read
// as dims (d, s, h, b) with strides (h d, d, s h d) * 2: the heads' stride
// sits below the rows', which TMA allows and the check must too.
TensorMapCase seqMajorCase() {
  TensorMapCase c;
  c.rank = 4;
  unsigned long long dims[4] = {128, 1000, 8, 2};
  unsigned long long strides[3] = {8 * 128 * 2, 128 * 2, 1000 * 8 * 128 * 2};
  for (int i = 0; i < 4; ++i)
    c.dims[i] = dims[i];
  for (int i = 0; i < 3; ++i)
    c.strides[i] = strides[i];
  c.box[1] = 128;
  return c;
}

TEST(TensorMap, PermutedStridesPassTheChecks) {
  if (driverOverridden() || driverLibraryPresent())
    GTEST_SKIP() << "the fake global address must not reach a real driver";
  TensorMapCase c = seqMajorCase();
  EXPECT_EQ(c.encode(), WEFT_ERROR_DRIVER_MISSING) << lastError();
}

TEST(TensorMap, OneHeadSharesTheRowStride) {
  // MQA's k as [b=2, s=1000, h=1, d=128]: the heads' stride (256 bytes)
  // equals the rows'; a dim of extent 1 never steps, so nothing overlaps.
  if (driverOverridden() || driverLibraryPresent())
    GTEST_SKIP() << "the fake global address must not reach a real driver";
  TensorMapCase c = seqMajorCase();
  c.dims[2] = 1;
  c.strides[0] = 128 * 2;
  c.strides[2] = 1000 * 128 * 2;
  EXPECT_EQ(c.encode(), WEFT_ERROR_DRIVER_MISSING) << lastError();
}

TEST(TensorMap, PermutedStridesThatOverlap) {
  // Nine heads in a row of eight: head 8 of row r is head 0 of row r + 1.
  TensorMapCase c = seqMajorCase();
  c.dims[2] = 9;
  expectRefused(c, "strides_bytes[0] = 2048 is smaller than dims[2] = 9 times 256 bytes");
}

TEST(TensorMap, BoxTooBig) {
  TensorMapCase c;
  c.box[1] = 300;
  expectRefused(c, "box[1] = 300 is not in 1..256");
  TensorMapCase d;
  d.box[1] = 0;
  expectRefused(d, "box[1] = 0");
}

TEST(TensorMap, BoxRowWiderThanSwizzle) {
  TensorMapCase c;
  c.box[0] = 128; // 256 bytes of bf16
  expectRefused(c, "256 bytes exceeds the 128-byte swizzle span");
  TensorMapCase d;
  d.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
  expectRefused(d, "128 bytes exceeds the 32-byte swizzle span");
  TensorMapCase e;
  e.box[0] = 4; // 8 bytes
  e.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  expectRefused(e, "= 8 bytes is not a multiple of 16");
}

TEST(TensorMap, RankDimsTypeAndSwizzleMode) {
  TensorMapCase c;
  c.rank = 6;
  expectRefused(c, "rank 6 is not in 1..5");
  TensorMapCase d;
  d.rank = 0;
  expectRefused(d, "rank 0");
  TensorMapCase e;
  e.dims[1] = 0;
  expectRefused(e, "dims[1] = 0 is not in 1..2^32");
  TensorMapCase f;
  f.dtype = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B;
  expectRefused(f, "element type 13 is not supported");
  TensorMapCase g;
  g.swizzle = CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B;
  expectRefused(g, "swizzle mode 4 is not supported");
  TensorMapCase h;
  EXPECT_EQ(weft_tensor_map_encode_tiled(&h.map, h.dtype, 2, h.address, h.dims, nullptr, h.box,
                                         h.swizzle),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("strides_bytes is NULL"), std::string::npos) << lastError();
}

} // namespace
