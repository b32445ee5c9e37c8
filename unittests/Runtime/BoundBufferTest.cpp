// Buffers bound by the caller (weft_step_bind_device), without a GPU: the
// package's BOUND section read back, the checks that refuse a bind (naming
// the buffer and both values), a run refused until every bound buffer has
// memory, the launch arguments re-filled on a new address and a captured
// graph dropped, over a recording driver table as in CallerStreamTest.
#include "PreparedStep.h"
#include "StepState.h"

#include "weft/Package/Package.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace weft;

std::string lastError() { return weft_last_error(); }

const char *kPtx = ".version 8.0\n.target sm_90a\n.address_size 64\n"
                   ".visible .entry k(.param .u64 w, .param .u64 y)\n{\n ret;\n}\n";

// w (a bound bf16 parameter, argument 0) and y (an output in the arena):
// one launch k(w, y).
pkg::Package makeBoundPackage() {
  pkg::Package p;
  p.arch = "sm_90a";
  p.weftVersion = "test";
  p.stepName = "step";
  p.arenaBytes = 4096;
  p.alignment = 256;
  p.numSteps = 1;
  pkg::Buffer w;
  w.name = "arg0";
  w.type = "tensor<32x64xbf16>";
  w.size = 4096;
  w.role = pkg::Role::Parameter;
  w.arg = 0;
  w.bound = true;
  pkg::Buffer y = w;
  y.name = "y";
  y.role = pkg::Role::Output;
  y.arg = -1;
  y.result = 0;
  y.bound = false;
  p.buffers = {w, y};
  pkg::Kernel k;
  k.name = k.entry = k.imageName = "k";
  k.image = 0;
  k.params = {pkg::ParamKind::Pointer, pkg::ParamKind::Pointer};
  p.kernels.push_back(k);
  pkg::Launch l;
  l.block[0] = 128;
  l.args = {{pkg::ArgKind::Buffer, 0}, {pkg::ArgKind::Buffer, 1}};
  p.launches.push_back(l);
  p.schedule = {{pkg::EntryKind::Launch, 0}};
  pkg::Image image;
  image.name = "k";
  image.ptx = kPtx;
  p.images.push_back(image);
  return p;
}

std::vector<std::string> calls;
CUresult fakeAlloc(CUdeviceptr *pointer, size_t bytes) {
  *pointer = 0x100000;
  calls.push_back("alloc " + std::to_string(bytes));
  return CUDA_SUCCESS;
}
CUresult fakeStreamCreate(CUstream *stream, unsigned) {
  *stream = reinterpret_cast<CUstream>(uintptr_t{0x10});
  return CUDA_SUCCESS;
}
CUresult fakeEventCreate(CUevent *event, unsigned) {
  *event = reinterpret_cast<CUevent>(uintptr_t{0x20});
  return CUDA_SUCCESS;
}
CUresult fakeLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned, CUstream, void **params, void **) {
  uint64_t w = 0, y = 0;
  std::memcpy(&w, params[0], 8);
  std::memcpy(&y, params[1], 8);
  calls.push_back("launch w " + std::to_string(w) + " y " + std::to_string(y));
  return CUDA_SUCCESS;
}
CUresult fakeGetCurrent(CUcontext *context) {
  *context = reinterpret_cast<CUcontext>(uintptr_t{0x9000});
  return CUDA_SUCCESS;
}
CUresult fakeOk(CUstream) { return CUDA_SUCCESS; }
CUresult fakeSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult fakeFree(CUdeviceptr) { return CUDA_SUCCESS; }
CUresult fakeEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult fakeSynchronize(CUstream) {
  calls.push_back("sync");
  return CUDA_SUCCESS;
}
CUresult fakeExecDestroy(CUgraphExec) {
  calls.push_back("destroy graph exec");
  return CUDA_SUCCESS;
}
CUresult fakeGraphDestroy(CUgraph) {
  calls.push_back("destroy graph");
  return CUDA_SUCCESS;
}

struct FakeStep {
  runtime::DriverApi api;
  weft_step *step = new weft_step;
  FakeStep() {
    api.cuMemAlloc_v2 = fakeAlloc;
    api.cuMemFree_v2 = fakeFree;
    api.cuStreamCreate = fakeStreamCreate;
    api.cuEventCreate = fakeEventCreate;
    api.cuLaunchKernel = fakeLaunch;
    api.cuCtxGetCurrent = fakeGetCurrent;
    api.cuCtxSetCurrent = fakeSetCurrent;
    api.cuStreamSynchronize = fakeSynchronize;
    api.cuStreamDestroy_v2 = fakeOk;
    api.cuEventDestroy_v2 = fakeEventDestroy;
    api.cuGraphExecDestroy = fakeExecDestroy;
    api.cuGraphDestroy = fakeGraphDestroy;
    calls.clear();
    std::string bytes = pkg::writePackage(makeBoundPackage());
    EXPECT_EQ(runtime::prepareStep(bytes.data(), bytes.size(), 90, weft_step_options{},
                                   step->prepared),
              WEFT_OK)
        << lastError();
    step->api = &api;
    step->context = reinterpret_cast<CUcontext>(uintptr_t{0x9000});
    step->loaded = true;
    EXPECT_EQ(runtime::allocateBuffers(*step), WEFT_OK) << lastError();
    EXPECT_EQ(runtime::createStreams(*step), WEFT_OK) << lastError();
    step->functions.assign(1, reinterpret_cast<CUfunction>(uintptr_t{0x8000}));
    EXPECT_EQ(runtime::bindArguments(*step), WEFT_OK) << lastError();
  }
  ~FakeStep() {
    // Not created by a graph capture: nothing for release() to destroy.
    step->graph = nullptr;
    step->graphExec = nullptr;
    weft_step_free(step);
  }
};

std::string trace() {
  std::string text;
  for (const std::string &call : calls)
    text += call + "; ";
  calls.clear();
  return text;
}

TEST(BoundBuffer, PackageRecordsOnlyBoundBuffers) {
  pkg::Package plain = makeBoundPackage();
  plain.buffers[0].bound = false;
  plain.buffers[0].offset = 0;
  plain.buffers[1].offset = 4096;
  plain.arenaBytes = 8192;
  std::string plainBytes = pkg::writePackage(plain);
  std::string boundBytes = pkg::writePackage(makeBoundPackage());
  // The header's section count (u32 at byte 24): BOUND is the one more.
  auto sections = [](const std::string &bytes) {
    uint32_t count = 0;
    std::memcpy(&count, bytes.data() + 24, 4);
    return count;
  };
  EXPECT_EQ(sections(boundBytes), sections(plainBytes) + 1);
  pkg::Package read;
  std::string error;
  ASSERT_TRUE(pkg::readPackage(boundBytes.data(), boundBytes.size(), read, error)) << error;
  EXPECT_TRUE(read.buffers[0].bound);
  EXPECT_FALSE(read.buffers[1].bound);
  EXPECT_TRUE(pkg::checkPackage(read).empty());
  ASSERT_TRUE(pkg::readPackage(plainBytes.data(), plainBytes.size(), read, error)) << error;
  EXPECT_FALSE(read.buffers[0].bound);
  // The checks: a bound buffer holds an argument, at offset 0.
  pkg::Package bad = makeBoundPackage();
  bad.buffers[0].arg = -1;
  bad.buffers[0].offset = 256;
  std::vector<pkg::Problem> problems = pkg::checkPackage(bad);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].message, "bound buffer 'arg0' holds no step argument; only arguments "
                                 "are bound");
  EXPECT_EQ(problems[1].message, "bound buffer 'arg0' has arena offset 256; a bound buffer has 0");
}

TEST(BoundBuffer, RunsOnlyWithTheCallersMemory) {
  FakeStep fake;
  weft_step *step = fake.step;
  EXPECT_EQ(trace(), "alloc 4096; "); // the arena holds y only
  EXPECT_EQ(step->address[0], 0u);
  EXPECT_EQ(step->address[1], 0x100000u);
  int bound = 0;
  ASSERT_EQ(weft_step_buffer_bound(step, 0, &bound), WEFT_OK);
  EXPECT_EQ(bound, 1);
  ASSERT_EQ(weft_step_buffer_bound(step, 1, &bound), WEFT_OK);
  EXPECT_EQ(bound, 0);

  EXPECT_EQ(weft_step_enqueue(step), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("the run: buffer 0 'arg0' (argument 0, 4096 bytes) is bound by the "
                             "caller but has no memory yet (1 of the step's bound buffers lack "
                             "one)"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(weft_step_copy_in_device(step, 0, 0x300000, 4096), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("buffer 'arg0' is bound by the caller and has no memory yet"),
            std::string::npos)
      << lastError();

  // Refusals name the buffer and both values; nothing changes.
  EXPECT_EQ(weft_step_bind_device(step, 0, 0x300000, 2048, "bf16"), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("buffer 'arg0' (tensor<32x64xbf16>) has 4096 bytes, got 2048"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(weft_step_bind_device(step, 0, 0x300000, 4096, "f32"), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("buffer 'arg0' holds bf16 elements (tensor<32x64xbf16>), got f32"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(weft_step_bind_device(step, 0, 0x300008, 4096, nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("buffer 'arg0' at 0x300008 is not 16-byte aligned"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(weft_step_bind_device(step, 0, 0, 4096, nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("at a null device pointer"), std::string::npos) << lastError();
  EXPECT_EQ(weft_step_bind_device(step, 1, 0x300000, 4096, nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("buffer 'y' (output) lives in the step's arena at offset 0"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(weft_step_bind_device(step, 2, 0x300000, 4096, nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(step->address[0], 0u);

  ASSERT_EQ(weft_step_bind_device(step, 0, 0x300000, 4096, "bf16"), WEFT_OK) << lastError();
  ASSERT_EQ(weft_step_enqueue(step), WEFT_OK) << lastError();
  EXPECT_EQ(trace(), "launch w 3145728 y 1048576; ");

  // A captured graph bakes the address: a new one drops it (after the
  // replays queued so far), the same one keeps it.
  step->graph = reinterpret_cast<CUgraph>(uintptr_t{0x40});
  step->graphExec = reinterpret_cast<CUgraphExec>(uintptr_t{0x41});
  ASSERT_EQ(weft_step_bind_device(step, 0, 0x300000, 4096, "bf16"), WEFT_OK) << lastError();
  EXPECT_EQ(trace(), "");
  ASSERT_EQ(weft_step_bind_device(step, 0, 0x400000, 4096, "bf16"), WEFT_OK) << lastError();
  EXPECT_EQ(trace(), "sync; destroy graph exec; destroy graph; ");
  EXPECT_EQ(step->graph, nullptr);
  EXPECT_EQ(step->graphExec, nullptr);
  ASSERT_EQ(weft_step_enqueue(step), WEFT_OK) << lastError();
  EXPECT_EQ(trace(), "launch w 4194304 y 1048576; ");
}

TEST(BoundBuffer, DescribeAndDebugArena) {
  std::string bytes = pkg::writePackage(makeBoundPackage());
  weft_step *step = nullptr;
  weft_step_options options = {};
  options.debug_buffers = 1;
  ASSERT_EQ(weft_step_prepare(bytes.data(), bytes.size(), 90, &options, &step), WEFT_OK)
      << lastError();
  std::string text = weft_step_describe(step);
  EXPECT_NE(text.find("arena 4096 bytes"), std::string::npos) << text; // y only
  EXPECT_NE(text.find("arg 0 bound by the caller"), std::string::npos) << text;
  EXPECT_NE(text.find("'arg0'@bound"), std::string::npos) << text;
  // Prepared only: no memory to bind.
  EXPECT_EQ(weft_step_bind_device(step, 0, 0x300000, 4096, nullptr), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("prepared for inspection only"), std::string::npos) << lastError();
  weft_step_free(step);
}

} // namespace
