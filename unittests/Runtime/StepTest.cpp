// The package executor up to its first driver call (PreparedStep.cpp and
// weft_step_prepare): argument blobs, arena layout, poison points, arch and
// version refusal, and weft_step_load without a usable driver.
#include "PreparedStep.h"
#include "RuntimeTestSupport.h"

#include "weft/Package/Package.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace {

using namespace weft;
using weft::runtime::test::driverOverridden;

std::string lastError() { return weft_last_error(); }

// A PTX image weft_image_check accepts for sm_90a (never loaded here).
const char *kPtx = ".version 8.0\n.target sm_90a\n.address_size 64\n"
                   ".visible .entry k()\n{\n ret;\n}\n";

// Four schedule indices: x (input, [0, 1]) -> k at 0 -> y ([0, 3], output)
// -> gemm at 1 -> z ([1, 2], temporary) -> k at 2.
pkg::Package makePackage() {
  pkg::Package p;
  p.arch = "sm_90a";
  p.weftVersion = "test";
  p.stepName = "step";
  p.arenaBytes = 3 * 4096;
  p.alignment = 256;
  p.numSteps = 4;
  auto buffer = [&](const char *name, const char *type, uint64_t offset, uint32_t first,
                    uint32_t last, pkg::Role role) {
    pkg::Buffer b;
    b.name = name;
    b.type = type;
    b.offset = offset;
    b.size = 4096;
    b.first = first;
    b.last = last;
    b.role = role;
    p.buffers.push_back(b);
  };
  buffer("x", "tensor<32x64xbf16>", 0, 0, 1, pkg::Role::Input);
  buffer("y", "tensor<32x64xbf16>", 4096, 0, 3, pkg::Role::Output);
  buffer("z", "tensor<32x64xbf16>", 8192, 1, 2, pkg::Role::Temporary);
  p.buffers[0].arg = 0;
  p.buffers[1].result = 0;
  pkg::Kernel k;
  k.name = k.entry = k.imageName = "k";
  k.image = 0;
  k.params = {pkg::ParamKind::Pointer, pkg::ParamKind::I32, pkg::ParamKind::TensorMap,
              pkg::ParamKind::F32, pkg::ParamKind::I64};
  p.kernels.push_back(k);
  pkg::TensorMap map;
  map.buffer = 0;
  map.rank = 2;
  map.dims[0] = 64;
  map.dims[1] = 32;
  map.strides[0] = 128;
  map.box[0] = 64;
  map.box[1] = 16;
  map.swizzle = 128;
  p.tensorMaps.push_back(map);
  auto launch = [&](uint32_t index, uint32_t out) {
    pkg::Launch l;
    l.kernel = 0;
    l.block[0] = 128;
    l.index = index;
    float half = 0.5f;
    uint32_t bits;
    std::memcpy(&bits, &half, 4);
    l.args = {{pkg::ArgKind::Buffer, out},
              {pkg::ArgKind::I32, uint64_t(uint32_t(-3))},
              {pkg::ArgKind::TensorMap, 0},
              {pkg::ArgKind::F32, bits},
              {pkg::ArgKind::I64, 1ull << 40}};
    p.schedule.push_back({pkg::EntryKind::Launch, uint32_t(p.launches.size())});
    p.launches.push_back(l);
  };
  launch(0, 1);
  pkg::Gemm g;
  g.a = 0;
  g.b = 1;
  g.d = 2;
  g.m = 32;
  g.n = 32;
  g.k = 64;
  g.transB = true;
  g.index = 1;
  p.schedule.push_back({pkg::EntryKind::Gemm, 0});
  p.gemms.push_back(g);
  p.tensorMaps[0].buffer = 1; // y is live at index 2, x is not
  launch(2, 2);
  pkg::Image image;
  image.name = "k";
  image.ptx = kPtx;
  p.images.push_back(image);
  return p;
}

weft_status prepare(const pkg::Package &package, int sm, runtime::PreparedStep &plan,
                    bool debug = false) {
  std::string bytes = pkg::writePackage(package);
  weft_step_options options = {};
  options.debug_buffers = debug;
  return runtime::prepareStep(bytes.data(), bytes.size(), sm, options, plan);
}

TEST(PreparedStep, ResolvesArgumentsIntoAlignedBlobs) {
  runtime::PreparedStep plan;
  ASSERT_EQ(prepare(makePackage(), 90, plan), WEFT_OK) << lastError();
  ASSERT_EQ(plan.launches.size(), 2u);
  const runtime::ResolvedLaunch &l = plan.launches[0];
  ASSERT_EQ(l.params.size(), 5u);
  // ptr at 0, i32 at 8, the CUtensorMap 64-byte aligned at 64 (128 bytes),
  // f32 at 192, i64 at 200; the blob a multiple of 64.
  EXPECT_EQ(l.params[0].offset, 0u);
  EXPECT_EQ(l.params[1].offset, 8u);
  EXPECT_EQ(l.params[2].offset, 64u);
  EXPECT_EQ(l.params[3].offset, 192u);
  EXPECT_EQ(l.params[4].offset, 200u);
  EXPECT_EQ(l.blobBytes, 256u);
  EXPECT_EQ(l.params[0].value, 1u); // buffer y
  EXPECT_EQ(l.params[4].value, 1ull << 40);
  ASSERT_EQ(plan.tensorMaps.size(), 1u);
  EXPECT_EQ(plan.tensorMaps[0].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(plan.tensorMaps[0].dtype, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  ASSERT_EQ(plan.gemms.size(), 1u);
  EXPECT_EQ(plan.gemms[0].desc.dtype, WEFT_DTYPE_BF16);
  EXPECT_EQ(plan.gemms[0].desc.trans_b, 1);
  EXPECT_FALSE(plan.gemms[0].algo.valid); // chosen at load
  EXPECT_EQ(plan.arenaBytes, 3u * 4096);
  EXPECT_FALSE(plan.images[0].cubin); // only PTX in the package
  std::string text = runtime::describeStep(plan);
  EXPECT_NE(text.find("+0 ptr 'y'@4096, +8 i32 -3, +64 tensormap 'y'@4096 dims [64, 32] "
                      "strides [128] box [64, 16] swizzle 128B, +192 f32 0.5, +200 i64 "
                      "1099511627776]"),
            std::string::npos)
      << text;
}

// A shard's offset in its global tensor (RANK_ARGS): each rank of a 2 x 3
// grid resolves the immediates from its position along their axes (rank =
// 3 a0 + a1), an i32 one kept to its low 32 bits.
TEST(PreparedStep, ResolvesRankRelativeImmediatesPerRank) {
  pkg::Package p = makePackage();
  p.grid = {2, 3};
  p.launches[0].args[1].rankAxes = 0b10; // i32 -3 + 5 a1
  p.launches[0].args[1].rankScale = 5;
  p.launches[0].args[4].rankAxes = 0b01; // i64 2^40 - 7 a0
  p.launches[0].args[4].rankScale = -7;
  std::string bytes = pkg::writePackage(p);
  for (int rank = 0; rank < 6; ++rank) {
    runtime::PreparedStep plan;
    ASSERT_EQ(runtime::prepareStep(bytes.data(), bytes.size(), 90, weft_step_options{}, plan, 6,
                                   rank),
              WEFT_OK)
        << lastError();
    const runtime::ResolvedLaunch &l = plan.launches[0];
    EXPECT_EQ(l.params[1].value, uint64_t(uint32_t(-3 + 5 * (rank % 3)))) << rank;
    EXPECT_EQ(l.params[4].value, uint64_t((int64_t(1) << 40) - 7 * (rank / 3))) << rank;
    EXPECT_EQ(plan.launches[1].params[1].value, uint64_t(uint32_t(-3))) << rank;
  }
}

TEST(PreparedStep, DebugBuffersPoisonAfterTheLastUse) {
  runtime::PreparedStep plan;
  ASSERT_EQ(prepare(makePackage(), 90, plan, /*debug=*/true), WEFT_OK) << lastError();
  // x dies after the GEMM (index 1), z after the second launch (index 2); y
  // lives to the end of the step and is never poisoned.
  ASSERT_EQ(plan.schedule.size(), 3u);
  EXPECT_TRUE(plan.schedule[0].poison.empty());
  EXPECT_EQ(plan.schedule[1].poison, std::vector<uint32_t>{0});
  EXPECT_EQ(plan.schedule[2].poison, std::vector<uint32_t>{2});
  EXPECT_EQ(plan.arenaBytes, 3u * 4096); // the sum of the buffers
}

TEST(PreparedStep, RefusesAnotherArchNamingBoth) {
  runtime::PreparedStep plan;
  EXPECT_EQ(prepare(makePackage(), 80, plan), WEFT_ERROR_ARCH_MISMATCH);
  EXPECT_NE(lastError().find("the package is built for sm_90a but the device is sm_80 "
                             "(compute capability 8.0)"),
            std::string::npos)
      << lastError();
  pkg::Package plain = makePackage();
  plain.arch = "sm_90";
  EXPECT_EQ(prepare(plain, 100, plan), WEFT_ERROR_ARCH_MISMATCH) << lastError();
}

TEST(PreparedStep, RefusesAnotherFormatVersionNamingBoth) {
  pkg::Package package = makePackage();
  package.formatVersion = 7;
  runtime::PreparedStep plan;
  EXPECT_EQ(prepare(package, 90, plan), WEFT_ERROR_VERSION_MISMATCH);
  EXPECT_NE(lastError().find("package format version 7 is not supported: this reader reads "
                             "format version 2"),
            std::string::npos)
      << lastError();
}

TEST(PreparedStep, RefusesBrokenPlansAndMissingImages) {
  pkg::Package package = makePackage();
  package.buffers[2].offset = 4096; // z onto y while both are live
  runtime::PreparedStep plan;
  EXPECT_EQ(prepare(package, 90, plan), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("overlaps buffer 'y'"), std::string::npos) << lastError();
  package = makePackage();
  package.images[0].ptx.reset();
  EXPECT_EQ(prepare(package, 90, plan), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("its image 'k' holds neither cubin nor PTX"), std::string::npos)
      << lastError();
  EXPECT_EQ(runtime::prepareStep("WEFTPKG", 7, 90, {}, plan), WEFT_ERROR_INVALID_ARGUMENT);
}

TEST(PreparedStep, ParsesBufferTypes) {
  runtime::BufferShape shape;
  std::string error;
  ASSERT_TRUE(runtime::parseTensorType("tensor<2x16x128xbf16>", shape, error));
  EXPECT_EQ(shape.rank, 3);
  EXPECT_EQ(shape.dims, (std::vector<long long>{2, 16, 128}));
  EXPECT_EQ(shape.dtype, "bf16");
  ASSERT_TRUE(runtime::parseTensorType("tensor<i64>", shape, error));
  EXPECT_EQ(shape.rank, 0);
  EXPECT_FALSE(runtime::parseTensorType("tensor<2x?xf32>", shape, error));
  EXPECT_NE(error.find("dimension '?'"), std::string::npos) << error;
  EXPECT_FALSE(runtime::parseTensorType("tensor<2xcomplex>", shape, error));
  EXPECT_FALSE(runtime::parseTensorType("memref<2xf32>", shape, error));
}

TEST(StepApi, PreparedStepsAreInspectedNotRun) {
  std::string bytes = pkg::writePackage(makePackage());
  weft_step *step = nullptr;
  ASSERT_EQ(weft_step_prepare(bytes.data(), bytes.size(), 90, nullptr, &step), WEFT_OK)
      << lastError();
  ASSERT_EQ(weft_step_buffer_count(step), 3u);
  weft_step_buffer info;
  ASSERT_EQ(weft_step_buffer_info(step, 0, &info), WEFT_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.role, WEFT_ROLE_INPUT);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[1], 64);
  EXPECT_STREQ(info.dtype, "bf16");
  size_t index = 0;
  EXPECT_EQ(weft_step_find_buffer(step, "z", &index), WEFT_OK);
  EXPECT_EQ(index, 2u);
  EXPECT_EQ(weft_step_find_buffer(step, "w", &index), WEFT_ERROR_NOT_FOUND);
  EXPECT_EQ(weft_step_buffer_info(step, 3, &info), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(weft_step_run(step), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("prepared for inspection only"), std::string::npos) << lastError();
  char host[4096];
  EXPECT_EQ(weft_step_bind(step, 0, host, 100), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("buffer 'x' has 4096 bytes, got 100"), std::string::npos);
  EXPECT_NE(std::string(weft_step_describe(step)).find("step @step: package for sm_90a"),
            std::string::npos);
  EXPECT_EQ(weft_step_free(step), WEFT_OK);
  EXPECT_EQ(weft_step_free(nullptr), WEFT_OK);
}

// A partitioned package runs on exactly its grid's ranks: without ranks, on
// another number of them, and a one-GPU package on several are refused with
// both sizes named; prepared for a rank, its grid and splits are readable.
TEST(StepApi, PartitionedPackagesNeedTheirRanks) {
  pkg::Package package = makePackage();
  package.grid = {2};
  package.splitAxis = 0;
  package.buffers[0].arg = 0;
  package.splits = {{0, 1}};
  std::string bytes = pkg::writePackage(package);
  weft_step *step = nullptr;
  EXPECT_EQ(weft_step_prepare(bytes.data(), bytes.size(), 90, nullptr, &step),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("the package is a partitioned step for grid 2 (2 ranks) with 0 "
                             "collectives; run it with one process per rank"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(weft_step_prepare_spmd(bytes.data(), bytes.size(), 90, nullptr, 4, 1, &step),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("the package was built for grid 2 of 2 ranks, but this run has 4 "
                             "ranks"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(weft_step_prepare_spmd(bytes.data(), bytes.size(), 90, nullptr, 2, 2, &step),
            WEFT_ERROR_INVALID_ARGUMENT);
  std::string plain = pkg::writePackage(makePackage());
  EXPECT_EQ(weft_step_prepare_spmd(plain.data(), plain.size(), 90, nullptr, 2, 0, &step),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("the package is a one-GPU step but this run has 2 ranks"),
            std::string::npos)
      << lastError();

  ASSERT_EQ(weft_step_prepare_spmd(bytes.data(), bytes.size(), 90, nullptr, 2, 1, &step),
            WEFT_OK)
      << lastError();
  int axes = 0, splitAxis = -1, dim = -2;
  long long dims[WEFT_STEP_MAX_RANK];
  ASSERT_EQ(weft_step_grid(step, &axes, dims, &splitAxis), WEFT_OK);
  EXPECT_EQ(axes, 1);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(splitAxis, 0);
  ASSERT_EQ(weft_step_buffer_split(step, 0, &dim), WEFT_OK);
  EXPECT_EQ(dim, 1);
  ASSERT_EQ(weft_step_buffer_split(step, 1, &dim), WEFT_OK);
  EXPECT_EQ(dim, -1);
  EXPECT_EQ(weft_step_buffer_split(step, 9, &dim), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_step_describe(step)).find("rank 1 of 2, 0 collectives"),
            std::string::npos);
  EXPECT_EQ(weft_step_free(step), WEFT_OK);
}

// Without NCCL, the communicator calls say so; arguments are checked first.
TEST(Comm, ArgumentsAndMissingLibrary) {
  weft_comm *comm = nullptr;
  weft_nccl_id id = {};
  EXPECT_EQ(weft_comm_init(&id, 2, 2, 10.0, &comm), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("rank 2 of 2 ranks"), std::string::npos) << lastError();
  EXPECT_EQ(weft_comm_init(&id, 2, 0, 0.0, &comm), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(weft_comm_init(nullptr, 2, 0, 1.0, &comm), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(weft_comm_free(nullptr), WEFT_OK);
  EXPECT_EQ(weft_comm_collective(nullptr, WEFT_ALL_REDUCE, nullptr, nullptr, 1,
                                 WEFT_DTYPE_BF16, WEFT_REDUCE_SUM, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(weft_comm_collective(nullptr, WEFT_ALL_TO_ALL, nullptr, nullptr, 4,
                                 WEFT_DTYPE_BF16, WEFT_REDUCE_SUM, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("comm is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(weft_comm_shift(nullptr, nullptr, nullptr, 4, WEFT_DTYPE_BF16, 1, 1, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("weft_comm_shift: comm is NULL"), std::string::npos) << lastError();
  EXPECT_STREQ(weft_status_name(WEFT_ERROR_PEER_FAILED), "WEFT_ERROR_PEER_FAILED");
  EXPECT_STREQ(weft_status_name(WEFT_ERROR_TIMEOUT), "WEFT_ERROR_TIMEOUT");
  EXPECT_STREQ(weft_status_name(WEFT_ERROR_NCCL), "WEFT_ERROR_NCCL");
  weft_comm_peer_failed(nullptr, 1, "ignored");
}

// Run by ctest with WEFT_LIBNCCL naming no file, then a library that is no
// NCCL: the calls that need NCCL name the paths tried or the missing entry.
TEST(NoNccl, StatusNamesThePath) {
  const char *override = std::getenv("WEFT_LIBNCCL");
  if (!override)
    GTEST_SKIP() << "needs WEFT_LIBNCCL";
  int version = 0;
  EXPECT_EQ(weft_nccl_version(&version), WEFT_ERROR_LIBRARY_MISSING);
  EXPECT_NE(lastError().find(override), std::string::npos) << lastError();
  weft_nccl_id id;
  EXPECT_EQ(weft_nccl_unique_id(&id), WEFT_ERROR_LIBRARY_MISSING);
}

// Run by ctest with WEFT_LIBCUDA=libm.so.6 / the toolkit's stub: loading a
// step reports the driver's problem, and nothing is left allocated.
TEST(NotADriver, StepLoadSaysWhy) {
  if (!driverOverridden())
    GTEST_SKIP() << "set WEFT_LIBCUDA to a library that is not the CUDA driver";
  std::string bytes = pkg::writePackage(makePackage());
  weft_step *step = reinterpret_cast<weft_step *>(&bytes);
  EXPECT_EQ(weft_step_load(bytes.data(), bytes.size(), nullptr, &step),
            WEFT_ERROR_DRIVER_MISSING);
  EXPECT_EQ(step, nullptr);
  EXPECT_NE(lastError().find("has no entry point cuInit"), std::string::npos) << lastError();
}

TEST(StubDriver, StepLoadSaysWhy) {
  if (!driverOverridden())
    GTEST_SKIP() << "set WEFT_LIBCUDA to the toolkit's stubs/libcuda.so";
  std::string bytes = pkg::writePackage(makePackage());
  weft_step *step = nullptr;
  EXPECT_EQ(weft_step_load(bytes.data(), bytes.size(), nullptr, &step), WEFT_ERROR_CUDA);
  EXPECT_EQ(step, nullptr);
  EXPECT_EQ(weft_last_cu_result(), CUDA_ERROR_STUB_LIBRARY);
  EXPECT_NE(lastError().find("CUDA_ERROR_STUB_LIBRARY"), std::string::npos) << lastError();
}

} // namespace
