// Launch configuration checks that come before any driver call: each bad
// grid, block or size is refused with a message naming it.
#include "RuntimeTestSupport.h"

#include <climits>
#include <gtest/gtest.h>
#include <string>

using namespace weft::runtime::test;

namespace {

std::string lastError() { return weft_last_error(); }

// Never dereferenced: the checks under test fail before any driver call.
CUfunction fakeFunction() { return reinterpret_cast<CUfunction>(uintptr_t{0x1000}); }

TEST(Launch, NullArguments) {
  unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  EXPECT_EQ(weft_launch(nullptr, grid, block, 0, nullptr, nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("fn is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(weft_launch(fakeFunction(), nullptr, block, 0, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("grid is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(weft_function_set_dynamic_smem(nullptr, 1024), WEFT_ERROR_INVALID_ARGUMENT);
}

TEST(Launch, ZeroDimensions) {
  unsigned grid[3] = {4, 0, 1}, block[3] = {128, 1, 1};
  EXPECT_EQ(weft_launch(fakeFunction(), grid, block, 0, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("grid (4, 0, 1)"), std::string::npos) << lastError();
  unsigned grid2[3] = {1, 1, 1}, block2[3] = {0, 1, 1};
  EXPECT_EQ(weft_launch(fakeFunction(), grid2, block2, 0, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("block (0, 1, 1)"), std::string::npos) << lastError();
}

TEST(Launch, BlockLimits) {
  unsigned grid[3] = {1, 1, 1};
  unsigned tooMany[3] = {32, 33, 1}; // 1056 threads
  EXPECT_EQ(weft_launch(fakeFunction(), grid, tooMany, 0, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("1056 threads"), std::string::npos) << lastError();
  unsigned deepZ[3] = {1, 1, 65};
  EXPECT_EQ(weft_launch(fakeFunction(), grid, deepZ, 0, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("block (1, 1, 65)"), std::string::npos) << lastError();
}

TEST(Launch, GridLimitsAndSharedMemorySize) {
  unsigned block[3] = {128, 1, 1};
  unsigned tallGrid[3] = {1, 65536, 1};
  EXPECT_EQ(weft_launch(fakeFunction(), tallGrid, block, 0, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("grid (1, 65536, 1) exceeds"), std::string::npos) << lastError();
  unsigned grid[3] = {1, 1, 1};
  size_t huge = size_t{UINT_MAX} + 1;
  EXPECT_EQ(weft_launch(fakeFunction(), grid, block, huge, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find(std::to_string(huge) + " bytes"), std::string::npos) << lastError();
}

TEST(Launch, ValidShapeReachesTheDriver) {
  if (driverOverridden() || driverLibraryPresent())
    GTEST_SKIP() << "the fake CUfunction must not reach a real driver";
  // Every limit at its maximum: 2^31 - 1 by 65535 by 65535 blocks of 1024.
  unsigned grid[3] = {2147483647u, 65535, 65535}, block[3] = {8, 8, 16};
  EXPECT_EQ(weft_launch(fakeFunction(), grid, block, 48 * 1024, nullptr, nullptr),
            WEFT_ERROR_DRIVER_MISSING);
  EXPECT_EQ(weft_function_set_dynamic_smem(fakeFunction(), 1024), WEFT_ERROR_DRIVER_MISSING);
}

// weft_launch_dependent makes the same checks before its launch, and says
// which call refused.
TEST(Launch, DependentLaunchChecksAlike) {
  unsigned grid[3] = {4, 0, 1}, block[3] = {128, 1, 1};
  EXPECT_EQ(weft_launch_dependent(fakeFunction(), grid, block, 0, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("grid (4, 0, 1)"), std::string::npos) << lastError();
  EXPECT_EQ(weft_launch_dependent(nullptr, grid, block, 0, nullptr, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("fn is NULL"), std::string::npos) << lastError();
  if (driverOverridden() || driverLibraryPresent())
    return;
  unsigned fine[3] = {1, 1, 1};
  EXPECT_EQ(weft_launch_dependent(fakeFunction(), fine, block, 0, nullptr, nullptr),
            WEFT_ERROR_DRIVER_MISSING);
}

} // namespace
