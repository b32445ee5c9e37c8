// A step on the caller's stream and in the caller's memory
// (weft_step_options.stream / .arena), without a GPU: the option checks of
// weft_step_prepare, and a loaded step over a recording driver table, whose
// trace shows where the arena comes from, which stream the device copies go
// on and how a two-stream run is ordered between the caller's work before
// and after it. Zero options must issue exactly what they did before.
#include "PreparedStep.h"
#include "StepState.h"

#include "weft/Package/Package.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace {

using namespace weft;

std::string lastError() { return weft_last_error(); }

const char *kPtx = ".version 8.0\n.target sm_90a\n.address_size 64\n"
                   ".visible .entry k(.param .u64 p)\n{\n ret;\n}\n";

// x (input) -> k on stream 0 -> y; stream 1 waits for it and runs k on y.
pkg::Package makeTwoStreamPackage() {
  pkg::Package p;
  p.arch = "sm_90a";
  p.weftVersion = "test";
  p.stepName = "step";
  p.arenaBytes = 2 * 4096;
  p.alignment = 256;
  p.numSteps = 2;
  p.numStreams = 2;
  for (int i = 0; i < 2; ++i) {
    pkg::Buffer b;
    b.name = i ? "y" : "x";
    b.type = "tensor<32x64xbf16>";
    b.offset = uint64_t(i) * 4096;
    b.size = 4096;
    b.first = 0;
    b.last = 1;
    b.role = i ? pkg::Role::Output : pkg::Role::Input;
    p.buffers.push_back(b);
  }
  p.buffers[0].arg = 0;
  p.buffers[1].result = 0;
  pkg::Kernel k;
  k.name = k.entry = k.imageName = "k";
  k.image = 0;
  k.params = {pkg::ParamKind::Pointer};
  p.kernels.push_back(k);
  for (uint32_t s = 0; s < 2; ++s) {
    pkg::Launch l;
    l.kernel = 0;
    l.block[0] = 128;
    l.stream = s;
    l.index = s;
    l.args = {{pkg::ArgKind::Buffer, 1}};
    p.launches.push_back(l);
  }
  p.events = {{true, 0, 0, 0}, {false, 1, 0, 1}};
  p.schedule = {{pkg::EntryKind::Launch, 0},
                {pkg::EntryKind::Event, 0},
                {pkg::EntryKind::Event, 1},
                {pkg::EntryKind::Launch, 1}};
  pkg::Image image;
  image.name = "k";
  image.ptx = kPtx;
  p.images.push_back(image);
  return p;
}

// ---- a recording driver table ---------------------------------------------
std::vector<std::string> calls;
uintptr_t nextHandle = 0;

std::string name(uintptr_t handle) {
  if (handle == 0x7000)
    return "caller";
  return "h" + std::to_string(handle);
}
template <typename T> std::string name(T *handle) { return name(uintptr_t(handle)); }

CUresult fakeStreamCreate(CUstream *stream, unsigned) {
  *stream = reinterpret_cast<CUstream>(++nextHandle);
  calls.push_back("stream " + name(*stream));
  return CUDA_SUCCESS;
}
CUresult fakeEventCreate(CUevent *event, unsigned) {
  *event = reinterpret_cast<CUevent>(++nextHandle);
  return CUDA_SUCCESS;
}
CUresult fakeEventRecord(CUevent event, CUstream stream) {
  calls.push_back("record " + name(event) + " on " + name(stream));
  return CUDA_SUCCESS;
}
CUresult fakeStreamWaitEvent(CUstream stream, CUevent event, unsigned) {
  calls.push_back(name(stream) + " waits " + name(event));
  return CUDA_SUCCESS;
}
CUresult fakeLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned, CUstream stream, void **, void **) {
  calls.push_back("launch on " + name(stream));
  return CUDA_SUCCESS;
}
CUresult fakeAlloc(CUdeviceptr *pointer, size_t bytes) {
  *pointer = 0x100000;
  calls.push_back("alloc " + std::to_string(bytes));
  return CUDA_SUCCESS;
}
CUresult fakeFree(CUdeviceptr pointer) {
  calls.push_back("free " + std::to_string(pointer));
  return CUDA_SUCCESS;
}
CUresult fakeCopy(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream) {
  calls.push_back("copy " + std::to_string(from) + " -> " + std::to_string(to) + " " +
                  std::to_string(bytes) + " on " + name(stream));
  return CUDA_SUCCESS;
}
CUresult fakeGetCurrent(CUcontext *context) {
  *context = reinterpret_cast<CUcontext>(uintptr_t{0x9000});
  return CUDA_SUCCESS;
}
CUresult fakeSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult fakeSynchronize(CUstream stream) {
  calls.push_back("sync " + name(stream));
  return CUDA_SUCCESS;
}
CUresult fakeMemGetInfo(size_t *free, size_t *total) {
  *free = 1 << 20;
  *total = 2 << 20;
  return CUDA_SUCCESS;
}
CUresult fakeStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult fakeEventDestroy(CUevent) { return CUDA_SUCCESS; }

// A step "loaded" over the recording table: prepared for sm_90, then the
// arena, streams and events made through the fakes (no modules: launches
// carry a fake function and no arguments).
struct FakeStep {
  runtime::DriverApi api;
  weft_step *step = new weft_step;
  explicit FakeStep(const weft_step_options &options) {
    api.cuStreamCreate = fakeStreamCreate;
    api.cuEventCreate = fakeEventCreate;
    api.cuEventRecord = fakeEventRecord;
    api.cuStreamWaitEvent = fakeStreamWaitEvent;
    api.cuLaunchKernel = fakeLaunch;
    api.cuMemAlloc_v2 = fakeAlloc;
    api.cuMemFree_v2 = fakeFree;
    api.cuMemcpyDtoDAsync_v2 = fakeCopy;
    api.cuCtxGetCurrent = fakeGetCurrent;
    api.cuCtxSetCurrent = fakeSetCurrent;
    api.cuStreamSynchronize = fakeSynchronize;
    api.cuStreamDestroy_v2 = fakeStreamDestroy;
    api.cuEventDestroy_v2 = fakeEventDestroy;
    api.cuMemGetInfo_v2 = fakeMemGetInfo;
    calls.clear();
    nextHandle = 0;
    std::string bytes = pkg::writePackage(makeTwoStreamPackage());
    EXPECT_EQ(runtime::prepareStep(bytes.data(), bytes.size(), 90, options, step->prepared),
              WEFT_OK)
        << lastError();
    step->api = &api;
    step->context = reinterpret_cast<CUcontext>(uintptr_t{0x9000});
    step->loaded = true;
    EXPECT_EQ(runtime::allocateBuffers(*step), WEFT_OK) << lastError();
    EXPECT_EQ(runtime::createStreams(*step), WEFT_OK) << lastError();
    step->functions.assign(1, reinterpret_cast<CUfunction>(uintptr_t{0x8000}));
    step->params.assign(2, {});
  }
  ~FakeStep() { weft_step_free(step); }
};

std::string trace() {
  std::string text;
  for (const std::string &call : calls)
    text += call + "; ";
  calls.clear();
  return text;
}

weft_step_options callerOptions() {
  weft_step_options options = {};
  options.stream = reinterpret_cast<CUstream>(uintptr_t{0x7000});
  options.arena = 0x200000;
  options.arena_bytes = 3 * 4096;
  return options;
}

TEST(CallerStream, OptionsAreAppendedAndSized) {
  EXPECT_EQ(weft_step_options_size(), sizeof(weft_step_options));
  EXPECT_EQ(offsetof(weft_step_options, stream), 3 * sizeof(int) + 4); // after the 0.5.0 ints
  EXPECT_STREQ(weft_runtime_version(), "0.5.0");
}

TEST(CallerStream, PrepareChecksTheCallersArena) {
  std::string bytes = pkg::writePackage(makeTwoStreamPackage());
  weft_step *step = nullptr;
  weft_step_options options = callerOptions();
  options.arena_bytes = 4096;
  EXPECT_EQ(weft_step_prepare(bytes.data(), bytes.size(), 90, &options, &step),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(step, nullptr);
  EXPECT_NE(lastError().find("the caller's arena has 4096 bytes but the step's planned arena "
                             "needs 8192 bytes"),
            std::string::npos)
      << lastError();
  options = callerOptions();
  options.arena = 0x200080;
  EXPECT_EQ(weft_step_prepare(bytes.data(), bytes.size(), 90, &options, &step),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("at 0x200080 is not aligned to the package's 256-byte"),
            std::string::npos)
      << lastError();
  options = callerOptions();
  options.arena = 0;
  EXPECT_EQ(weft_step_prepare(bytes.data(), bytes.size(), 90, &options, &step),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("arena_bytes is 12288 but arena is 0"), std::string::npos)
      << lastError();
  options = callerOptions();
  options.debug_buffers = 1;
  EXPECT_EQ(weft_step_prepare(bytes.data(), bytes.size(), 90, &options, &step),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("set one of debug_buffers and arena"), std::string::npos)
      << lastError();
  options = callerOptions();
  options.arena_bytes = 8192; // exactly the plan
  ASSERT_EQ(weft_step_prepare(bytes.data(), bytes.size(), 90, &options, &step), WEFT_OK)
      << lastError();
  EXPECT_NE(std::string(weft_step_describe(step)).find("arena 8192 bytes (the caller's memory)"),
            std::string::npos);
  // Prepared only: no device copies.
  EXPECT_EQ(weft_step_copy_in_device(step, 0, 0x300000, 4096), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("prepared for inspection only"), std::string::npos) << lastError();
  EXPECT_EQ(weft_step_enqueue(step), WEFT_ERROR_INVALID_ARGUMENT);
  weft_step_free(step);
  EXPECT_EQ(weft_step_enqueue(nullptr), WEFT_ERROR_INVALID_ARGUMENT);
}

// Zero options: the step's own arena and streams, issued as in 0.5.0.
TEST(CallerStream, ZeroOptionsKeepTheOwnArenaAndStreams) {
  calls.clear();
  {
    FakeStep fake(weft_step_options{});
    EXPECT_EQ(trace(), "alloc 8192; stream h1; stream h2; ");
    EXPECT_EQ(fake.step->address[1], 0x100000u + 4096);
    ASSERT_EQ(weft_step_enqueue(fake.step), WEFT_OK) << lastError();
    // h3 the package's event, h4 and h5 the forks, h6 and h7 the joins.
    EXPECT_EQ(trace(), "record h5 on h1; h2 waits h5; launch on h1; record h3 on h1; "
                       "h2 waits h3; launch on h2; record h7 on h2; h1 waits h7; ");
    ASSERT_EQ(weft_step_copy_out_device(fake.step, 1, 0x500000, 4096), WEFT_OK);
    EXPECT_EQ(trace(), "copy 1052672 -> 5242880 4096 on h1; ");
  }
  EXPECT_EQ(trace(), "sync h1; free 1048576; ");
}

// The caller's stream and arena: no allocation, copies on the caller's
// stream, and a run between two events that tie stream 0 to it.
TEST(CallerStream, RunsBetweenTheCallersWork) {
  calls.clear();
  {
    FakeStep fake(callerOptions());
    EXPECT_EQ(trace(), "stream h1; stream h2; "); // no alloc
    EXPECT_EQ(fake.step->address[0], 0x200000u);
    EXPECT_EQ(fake.step->address[1], 0x200000u + 4096);
    ASSERT_EQ(weft_step_copy_in_device(fake.step, 0, 0x300000, 4096), WEFT_OK) << lastError();
    EXPECT_EQ(trace(), "copy 3145728 -> 2097152 4096 on caller; ");
    ASSERT_EQ(weft_step_enqueue(fake.step), WEFT_OK) << lastError();
    // h8 (callerReady) recorded on the caller's stream first, h9 (stepDone)
    // on stream 0 after every stream joined it.
    EXPECT_EQ(trace(), "record h8 on caller; h1 waits h8; record h5 on h1; h2 waits h5; "
                       "launch on h1; record h3 on h1; h2 waits h3; launch on h2; "
                       "record h7 on h2; h1 waits h7; record h9 on h1; caller waits h9; ");
    // weft_step_run queues the same and waits for stream 0.
    ASSERT_EQ(weft_step_run(fake.step), WEFT_OK) << lastError();
    std::string run = trace();
    EXPECT_NE(run.find("record h9 on h1; caller waits h9; sync h1; "), std::string::npos) << run;
    // Sizes are checked before any copy, naming the buffer and both sizes.
    EXPECT_EQ(weft_step_copy_out_device(fake.step, 1, 0x500000, 4094),
              WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("weft_step_copy_out_device: buffer 'y' has 4096 bytes, got 4094"),
              std::string::npos)
        << lastError();
    EXPECT_EQ(weft_step_copy_in_device(fake.step, 0, 0, 4096), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("the source of buffer 'x' is a null device pointer"),
              std::string::npos)
        << lastError();
    EXPECT_EQ(weft_step_copy_in_device(fake.step, 2, 0x300000, 4096),
              WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("buffer 2, but the step has 2"), std::string::npos)
        << lastError();
    EXPECT_EQ(trace(), "");
  }
  EXPECT_EQ(trace(), "sync h1; "); // the caller's arena is not freed
}

} // namespace
