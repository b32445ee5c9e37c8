// Driver loading and status reporting: without a driver every driver-backed
// call says DRIVER_MISSING; with the toolkit's stub or a library that is no
// driver (own ctest processes, WEFT_LIBCUDA) the failure names the cause.
#include "RuntimeTestSupport.h"

#include <gtest/gtest.h>
#include <string>
#include <thread>

using namespace weft::runtime::test;

namespace {

std::string lastError() { return weft_last_error(); }

TEST(Driver, InitAnswersWithoutCrashing) {
  if (driverOverridden())
    GTEST_SKIP() << "WEFT_LIBCUDA is set; the stub-driver tests cover this process";
  weft_status status = weft_init();
  if (driverLibraryPresent()) {
    // A GPU machine (or a driver without devices): success or a CUDA error.
    ASSERT_TRUE(status == WEFT_OK || status == WEFT_ERROR_CUDA) << lastError();
    if (status == WEFT_ERROR_CUDA)
      EXPECT_NE(weft_last_cu_result(), 0);
    return;
  }
  EXPECT_EQ(status, WEFT_ERROR_DRIVER_MISSING);
  EXPECT_NE(lastError().find("libcuda.so.1"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("cannot open shared object file"), std::string::npos)
      << lastError(); // dlerror()'s text
  EXPECT_EQ(weft_last_cu_result(), 0);
  EXPECT_EQ(weft_status_to_cu_result(status), CUDA_ERROR_NO_DEVICE);
  // Retried, not cached as success.
  EXPECT_EQ(weft_init(), WEFT_ERROR_DRIVER_MISSING);
}

TEST(Driver, CallsNeedingTheDriverReportItMissing) {
  if (driverOverridden() || driverLibraryPresent())
    GTEST_SKIP() << "a driver library is present";
  int sm = 0;
  EXPECT_EQ(weft_device_arch(&sm), WEFT_ERROR_DRIVER_MISSING);
  size_t freeBytes = 0, totalBytes = 0;
  EXPECT_EQ(weft_device_memory(&freeBytes, &totalBytes), WEFT_ERROR_DRIVER_MISSING);
  EXPECT_EQ(weft_context_ensure(0), WEFT_ERROR_DRIVER_MISSING);
  // A valid image gets as far as the driver.
  std::vector<unsigned char> ptx = readPtx("add_one_sm80.ptx");
  weft_module *module = reinterpret_cast<weft_module *>(0x1);
  EXPECT_EQ(weft_module_load(ptx.data(), ptx.size(), &module), WEFT_ERROR_DRIVER_MISSING);
  EXPECT_EQ(module, nullptr);
  EXPECT_NE(lastError().find("libcuda.so.1"), std::string::npos) << lastError();
}

TEST(Driver, ArgumentsCheckedBeforeTheDriver) {
  weft_module *module = nullptr;
  const char junk[] = "not an image";
  EXPECT_EQ(weft_module_load(junk, sizeof(junk) - 1, &module), WEFT_ERROR_INVALID_IMAGE);
  EXPECT_EQ(weft_module_load(junk, sizeof(junk), nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(weft_module_unload(nullptr), WEFT_OK);
  CUfunction function = nullptr;
  EXPECT_EQ(weft_module_function(nullptr, "k", &function), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("module is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(weft_context_ensure(-1), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("ordinal -1"), std::string::npos) << lastError();
  EXPECT_EQ(weft_device_arch(nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  size_t bytes = 0;
  EXPECT_EQ(weft_device_memory(&bytes, nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("total_bytes"), std::string::npos) << lastError();
}

TEST(Status, ToCuResult) {
  EXPECT_EQ(weft_status_to_cu_result(WEFT_OK), CUDA_SUCCESS);
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_DRIVER_MISSING), CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_INVALID_IMAGE), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_ARCH_MISMATCH), CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_NOT_FOUND), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_INVALID_ARGUMENT), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_VERSION_MISMATCH), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(weft_status_to_cu_result(static_cast<weft_status>(42)), CUDA_ERROR_INVALID_VALUE);
  // No driver call failed on this thread after a success: CUDA maps to UNKNOWN.
  EXPECT_EQ(weft_module_unload(nullptr), WEFT_OK);
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_CUDA), CUDA_ERROR_UNKNOWN);
  EXPECT_STREQ(weft_status_name(WEFT_ERROR_ARCH_MISMATCH), "WEFT_ERROR_ARCH_MISMATCH");
  EXPECT_STREQ(weft_status_name(static_cast<weft_status>(42)), "WEFT_STATUS_UNKNOWN");
  EXPECT_STREQ(weft_runtime_version(), WEFT_RUNTIME_VERSION);
  EXPECT_STREQ(WEFT_RUNTIME_VERSION, "0.5.0");
}

TEST(Status, MessagesAreClearedAndPerThread) {
  const char junk[] = "junk";
  weft_image_kind kind;
  int sm;
  ASSERT_EQ(weft_image_check(junk, 4, &kind, &sm), WEFT_ERROR_INVALID_IMAGE);
  ASSERT_NE(lastError(), "");
  std::string other = "unset";
  std::thread([&] { other = weft_last_error(); }).join();
  EXPECT_EQ(other, ""); // another thread does not see this thread's failure
  std::vector<unsigned char> ptx = readPtx("add_one_sm80.ptx");
  ASSERT_EQ(weft_image_check(ptx.data(), ptx.size(), &kind, &sm), WEFT_OK);
  EXPECT_EQ(lastError(), "");
  EXPECT_EQ(weft_last_cu_result(), 0);
}

// Run by ctest with WEFT_LIBCUDA set to the CUDA toolkit's link stub, whose
// every entry point fails with CUDA_ERROR_STUB_LIBRARY: the symbols resolve
// and the driver's own error comes back as WEFT_ERROR_CUDA.
TEST(StubDriver, CudaErrorsCarryTheCuResult) {
  if (!driverOverridden())
    GTEST_SKIP() << "set WEFT_LIBCUDA to the toolkit's stubs/libcuda.so";
  EXPECT_EQ(weft_init(), WEFT_ERROR_CUDA);
  EXPECT_EQ(weft_last_cu_result(), CUDA_ERROR_STUB_LIBRARY);
  EXPECT_NE(lastError().find("cuInit(0) failed: CUDA_ERROR_STUB_LIBRARY (34)"), std::string::npos)
      << lastError();
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_CUDA), CUDA_ERROR_STUB_LIBRARY);
  // Valid tensor-map arguments pass the checks and reach the driver.
  CUtensorMap map; // cuda.h aligns it (128 bytes)
  alignas(16) static float data[64 * 64];
  unsigned long long dims[2] = {64, 64}, strides[1] = {64 * sizeof(float)};
  unsigned box[2] = {32, 8};
  EXPECT_EQ(weft_tensor_map_encode_tiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, data, dims,
                                         strides, box, CU_TENSOR_MAP_SWIZZLE_128B),
            WEFT_ERROR_CUDA);
  EXPECT_EQ(weft_last_cu_result(), CUDA_ERROR_STUB_LIBRARY);
}

// Run by ctest with WEFT_LIBCUDA=libm.so.6: it loads, but has no cuInit.
TEST(NotADriver, MissingEntryPointIsNamed) {
  if (!driverOverridden())
    GTEST_SKIP() << "set WEFT_LIBCUDA to a library that is not the CUDA driver";
  EXPECT_EQ(weft_init(), WEFT_ERROR_DRIVER_MISSING);
  EXPECT_NE(lastError().find("has no entry point cuInit"), std::string::npos) << lastError();
  EXPECT_EQ(weft_status_to_cu_result(WEFT_ERROR_DRIVER_MISSING), CUDA_ERROR_NO_DEVICE);
}

} // namespace
