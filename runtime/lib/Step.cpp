// weft_step_*: the device half of running a package. Load allocates the one
// arena (or, in debug mode, one allocation per buffer), loads the modules,
// encodes tensor maps and fills every launch's argument blob, so a run only
// issues launches, GEMMs, events (and poison memsets) -- or one graph launch.
#include "Driver.h"
#include "GemmLibrary.h"
#include "PreparedStep.h"
#include "Status.h"
#include "StepState.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

using namespace weft;
using namespace weft::runtime;

weft_status weft::runtime::readMemory(weft_step &step, size_t &used) {
  size_t freeBytes = 0, totalBytes = 0;
  if (CUresult result = step.api->cuMemGetInfo_v2(&freeBytes, &totalBytes))
    return failCuda(result, "cuMemGetInfo");
  step.memory.total_bytes = totalBytes;
  used = totalBytes - freeBytes;
  step.memory.used_peak = std::max(step.memory.used_peak, used);
  return WEFT_OK;
}

namespace {

// Releases what load made; errors are ignored (the step is going away), the
// context is made current for the frees.
void release(weft_step &step) {
  if (!step.loaded)
    return;
  const DriverApi &api = *step.api;
  CUcontext current = nullptr;
  api.cuCtxGetCurrent(&current);
  bool pushed = step.context && current != step.context &&
                api.cuCtxPushCurrent_v2(step.context) == CUDA_SUCCESS;
  // After an abort, copy-engine collectives may wait for flags a failed peer
  // never writes: released first, so the synchronisation ends.
  if (step.comm && step.comm->aborted)
    unblockPeerWaits(api, step.peers);
  if (!step.streams.empty())
    api.cuStreamSynchronize(step.streams[0]);
  if (step.graphExec)
    api.cuGraphExecDestroy(step.graphExec);
  if (step.graph)
    api.cuGraphDestroy(step.graph);
  for (std::vector<CUevent> *list :
       {&step.events, &step.forks, &step.joins, &step.timing, &step.collectiveDone})
    for (CUevent event : *list)
      if (event)
        api.cuEventDestroy_v2(event);
  for (CUevent event : {step.callerReady, step.stepDone})
    if (event)
      api.cuEventDestroy_v2(event);
  for (CUstream stream : step.streams)
    if (stream)
      api.cuStreamDestroy_v2(stream);
  for (weft_module *module : step.modules)
    weft_module_unload(module);
  for (CUdeviceptr pointer : step.debugAllocations)
    if (pointer)
      api.cuMemFree_v2(pointer);
  releasePeerArenas(api, step.peers);
  if (step.arena)
    api.cuMemFree_v2(step.arena);
  if (pushed) {
    CUcontext popped = nullptr;
    api.cuCtxPopCurrent_v2(&popped);
  }
  step.loaded = false;
}

} // namespace

weft_status weft::runtime::allocateBuffers(weft_step &step) {
  const DriverApi &api = *step.api;
  const pkg::Package &package = step.prepared.package;
  step.address.assign(package.buffers.size(), 0);
  if (step.prepared.options.debug_buffers) {
    step.debugAllocations.assign(package.buffers.size(), 0);
    for (size_t i = 0; i < package.buffers.size(); ++i) {
      const pkg::Buffer &buffer = package.buffers[i];
      if (buffer.size == 0 || buffer.bound)
        continue;
      if (CUresult result = api.cuMemAlloc_v2(&step.debugAllocations[i], buffer.size))
        return failCuda(result, format("cuMemAlloc of %llu bytes for buffer '%s' (debug "
                                       "buffers)",
                                       (unsigned long long)buffer.size, buffer.name.c_str()));
      step.address[i] = step.debugAllocations[i];
      // Poisoned from the start: a read before the first write shows too.
      if (CUresult result = api.cuMemsetD8_v2(step.address[i], 0xFF, buffer.size))
        return failCuda(result, "cuMemsetD8 (poisoning a debug buffer)");
    }
    return WEFT_OK;
  }
  // The caller's arena: prepareStep checked its size and alignment; it is
  // never freed here (step.arena stays 0).
  CUdeviceptr base = step.prepared.options.arena;
  if (!base) {
    if (package.arenaBytes == 0)
      return WEFT_OK;
    if (CUresult result = api.cuMemAlloc_v2(&step.arena, package.arenaBytes))
      return failCuda(result, format("cuMemAlloc of the %llu-byte arena",
                                     (unsigned long long)package.arenaBytes));
    base = step.arena;
  }
  // A bound buffer has no address until the caller binds it.
  for (size_t i = 0; i < package.buffers.size(); ++i)
    step.address[i] = package.buffers[i].bound ? 0 : base + package.buffers[i].offset;
  return WEFT_OK;
}

namespace {

weft_status loadModules(weft_step &step) {
  const pkg::Package &package = step.prepared.package;
  step.modules.assign(package.images.size(), nullptr);
  for (size_t i = 0; i < package.images.size(); ++i) {
    const ImageChoice &choice = step.prepared.images[i];
    if (choice.image == pkg::kNone)
      continue;
    const pkg::Image &image = package.images[i];
    std::string bytes = choice.cubin ? *image.cubin : *image.ptx;
    if (!choice.cubin && (bytes.empty() || bytes.back() != '\0'))
      bytes.push_back('\0');
    if (weft_status status = weft_module_load(bytes.data(), bytes.size(), &step.modules[i]))
      return fail(status, format("image '%s' (%s): %s", image.name.c_str(),
                                 choice.cubin ? "cubin" : "PTX", weft_last_error()));
  }
  step.functions.assign(package.kernels.size(), nullptr);
  std::vector<uint32_t> maxSmem(package.kernels.size(), 0);
  for (const ResolvedLaunch &launch : step.prepared.launches)
    maxSmem[launch.kernel] = std::max(maxSmem[launch.kernel], launch.smem);
  for (size_t k = 0; k < package.kernels.size(); ++k) {
    const pkg::Kernel &kernel = package.kernels[k];
    if (weft_status status = weft_module_function(step.modules[kernel.image],
                                                  kernel.entry.c_str(), &step.functions[k]))
      return status;
    if (maxSmem[k] > 0)
      if (weft_status status = weft_function_set_dynamic_smem(step.functions[k], maxSmem[k]))
        return fail(status, format("kernel '%s': %s", kernel.name.c_str(), weft_last_error()));
  }
  // What weft_launch checks per call, checked once here instead.
  for (size_t i = 0; i < step.prepared.launches.size(); ++i) {
    const ResolvedLaunch &launch = step.prepared.launches[i];
    int maxThreads = 0;
    if (CUresult result = step.api->cuFuncGetAttribute(
            &maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, step.functions[launch.kernel]))
      return failCuda(result, "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)");
    unsigned threads = launch.block[0] * launch.block[1] * launch.block[2];
    if (threads > unsigned(maxThreads))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("launch %zu of '%s': %u threads per block but the kernel allows at "
                         "most %d",
                         i, package.kernels[launch.kernel].name.c_str(), threads, maxThreads));
  }
  return WEFT_OK;
}

weft_status prepareGemms(weft_step &step) {
  PreparedStep &prepared = step.prepared;
  step.gemmWorkspace.assign(prepared.gemms.size(), 0);
  step.gemmSms.assign(prepared.gemms.size(), 0);
  int deviceSms = 0;
  if (prepared.gemmSmMargin > 0) {
    CUdevice device = 0;
    if (weft_status status = currentDevice(*step.api, device, "weft_step_load"))
      return status;
    if (weft_status status =
            deviceAttribute(*step.api, device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                            "MULTIPROCESSOR_COUNT", deviceSms))
      return status;
    if (prepared.gemmSmMargin >= deviceSms)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("gemm_sm_margin %d leaves no SM of the device's %d to a GEMM",
                         prepared.gemmSmMargin, deviceSms));
  }
  for (size_t i = 0; i < prepared.gemms.size(); ++i) {
    ResolvedGemm &gemm = prepared.gemms[i];
    size_t limit = gemm.workspace == pkg::kNone ? 0 : prepared.package.buffers[gemm.workspace].size;
    step.gemmWorkspace[i] = limit;
    size_t needed = 0;
    if (deviceSms > 0 && prepared.gemmBesideCollective[i]) {
      // Chosen again for the SMs the collective leaves, over a package's choice.
      step.gemmSms[i] = deviceSms - prepared.gemmSmMargin;
      if (weft_status status = selectGemmOnSms(gemm.desc, gemm.auxLd, step.gemmSms[i], limit,
                                               gemm.algo, needed))
        return fail(status, format("gemm %zu (m %d, n %d, k %d) on %d SMs: choosing its "
                                   "algorithm: %s",
                                   i, gemm.desc.m, gemm.desc.n, gemm.desc.k, step.gemmSms[i],
                                   weft_last_error()));
      continue;
    }
    if (gemm.algo.valid)
      continue;
    // An aux epilogue's algorithm is chosen for the planned aux pitch.
    weft_status status =
        gemm.aux == pkg::kNone
            ? weft_gemm_select(&gemm.desc, limit, &gemm.algo, &needed)
            : weft_gemm_select_aux(&gemm.desc, gemm.auxLd, limit, &gemm.algo, &needed);
    if (status)
      return fail(status, format("gemm %zu (m %d, n %d, k %d): choosing its algorithm: %s", i,
                                 gemm.desc.m, gemm.desc.n, gemm.desc.k, weft_last_error()));
  }
  return WEFT_OK;
}

} // namespace

weft_status weft::runtime::createStreams(weft_step &step) {
  const DriverApi &api = *step.api;
  // Debug mode runs everything on one stream: poisoning must follow every use.
  unsigned count = step.prepared.options.debug_buffers ? 1 : step.prepared.package.numStreams;
  step.streams.assign(count, nullptr);
  // A collective's stream at the greatest priority when asked for
  // (weft_step_options.comm_priority).
  int least = 0, greatest = 0; // least: the default priority
  bool high = count > 1 && step.prepared.commPriority == WEFT_COMM_PRIORITY_HIGH;
  if (high)
    if (CUresult result = api.cuCtxGetStreamPriorityRange(&least, &greatest))
      return failCuda(result, "cuCtxGetStreamPriorityRange");
  for (unsigned i = 0; i < count; ++i) {
    bool comm = high && i < step.prepared.commStreams.size() && step.prepared.commStreams[i];
    // Blocking streams: they wait for the synchronous copies of weft_step_bind.
    if (comm) {
      if (CUresult result =
              api.cuStreamCreateWithPriority(&step.streams[i], CU_STREAM_DEFAULT, greatest))
        return failCuda(result, "cuStreamCreateWithPriority");
    } else if (CUresult result = api.cuStreamCreate(&step.streams[i], CU_STREAM_DEFAULT)) {
      return failCuda(result, "cuStreamCreate");
    }
  }
  auto create = [&](std::vector<CUevent> &list, size_t n) -> weft_status {
    list.assign(n, nullptr);
    for (CUevent &event : list)
      if (CUresult result = api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING))
        return failCuda(result, "cuEventCreate");
    return WEFT_OK;
  };
  if (weft_status status = create(step.events, step.prepared.numEvents))
    return status;
  if (weft_status status = create(step.forks, count))
    return status;
  if (weft_status status = create(step.joins, count))
    return status;
  if (step.prepared.options.stream) {
    std::vector<CUevent> bridge;
    weft_status status = create(bridge, 2);
    // Kept even on failure, so release() destroys what was created.
    step.callerReady = bridge[0];
    step.stepDone = bridge[1];
    if (status)
      return status;
  }
  return WEFT_OK;
}

// Issues the schedule on the step's streams: stream 0 forks to the others
// first and joins them at the end, so a capture on stream 0 sees all work.
// `afterEntry` (weft_step_run_timed) runs after each entry with its position.
weft_status weft::runtime::issue(weft_step &step,
                                 const std::function<weft_status(size_t)> &afterEntry) {
  const DriverApi &api = *step.api;
  const PreparedStep &prepared = step.prepared;
  bool debug = prepared.options.debug_buffers;
  CUstream main = step.streams[0];
  for (size_t s = 1; s < step.streams.size(); ++s) {
    if (CUresult result = api.cuEventRecord(step.forks[s], main))
      return failCuda(result, "cuEventRecord (fork)");
    if (CUresult result = api.cuStreamWaitEvent(step.streams[s], step.forks[s], 0))
      return failCuda(result, "cuStreamWaitEvent (fork)");
  }
  for (size_t position = 0; position < prepared.schedule.size(); ++position) {
    const ScheduleStep &entry = prepared.schedule[position];
    switch (entry.kind) {
    case pkg::EntryKind::Launch: {
      const ResolvedLaunch &l = prepared.launches[entry.item];
      CUstream stream = step.streams[debug ? 0 : l.stream];
      if (CUresult result = api.cuLaunchKernel(
              step.functions[l.kernel], l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
              l.block[2], l.smem, stream, step.params[entry.item].data(), nullptr))
        return failCuda(result,
                        format("cuLaunchKernel of '%s' (launch %u, schedule index %u)",
                               prepared.package.kernels[l.kernel].name.c_str(), entry.item, l.index));
      break;
    }
    case pkg::EntryKind::Gemm: {
      const ResolvedGemm &g = prepared.gemms[entry.item];
      auto at = [&](uint32_t buffer, unsigned long long offset = 0) -> void * {
        return buffer == pkg::kNone
                   ? nullptr
                   : reinterpret_cast<void *>(uintptr_t(step.address[buffer] + offset));
      };
      void *a = at(g.a, g.offsets[0]), *b = at(g.b, g.offsets[1]), *c = at(g.c, g.offsets[2]),
           *d = at(g.d, g.offsets[3]);
      CUstream stream = step.streams[debug ? 0 : g.stream];
      weft_status status =
          step.gemmSms[entry.item] > 0
              ? runGemmOnSms(g.desc, g.algo, a, b, c, d, at(g.bias), at(g.aux, g.offsets[4]),
                             g.auxLd, step.gemmSms[entry.item], at(g.workspace),
                             step.gemmWorkspace[entry.item], stream)
          : g.aux == pkg::kNone
              ? weft_gemm_run(&g.desc, &g.algo, a, b, c, d, at(g.bias), at(g.workspace),
                              step.gemmWorkspace[entry.item], stream)
              : weft_gemm_run_aux(&g.desc, &g.algo, a, b, c, d, at(g.bias),
                                  at(g.aux, g.offsets[4]), g.auxLd, at(g.workspace),
                                  step.gemmWorkspace[entry.item], stream);
      if (status)
        return fail(status, format("gemm %u (schedule index %u): %s", entry.item, g.index,
                                   weft_last_error()));
      break;
    }
    case pkg::EntryKind::Event: {
      if (debug)
        break; // one stream: already ordered
      const pkg::Event &e = prepared.package.events[entry.item];
      CUresult result = e.record ? api.cuEventRecord(step.events[e.event], step.streams[e.stream])
                                 : api.cuStreamWaitEvent(step.streams[e.stream],
                                                         step.events[e.event], 0);
      if (result)
        return failCuda(result, format("%s of event %u", e.record ? "cuEventRecord"
                                                                  : "cuStreamWaitEvent",
                                       e.event));
      break;
    }
    case pkg::EntryKind::Collective: {
      const pkg::Collective &c = prepared.package.collectives[entry.item];
      if (weft_status status =
              issueCollective(step, entry.item, step.streams[debug ? 0 : c.stream]))
        return status;
      break;
    }
    }
    for (uint32_t buffer : entry.poison)
      if (CUresult result = api.cuMemsetD8Async(step.address[buffer], 0xFF,
                                                prepared.package.buffers[buffer].size, main))
        return failCuda(result, "cuMemsetD8Async (poisoning a dead buffer)");
    if (afterEntry)
      if (weft_status status = afterEntry(position))
        return status;
  }
  for (size_t s = 1; s < step.streams.size(); ++s) {
    if (CUresult result = api.cuEventRecord(step.joins[s], step.streams[s]))
      return failCuda(result, "cuEventRecord (join)");
    if (CUresult result = api.cuStreamWaitEvent(main, step.joins[s], 0))
      return failCuda(result, "cuStreamWaitEvent (join)");
  }
  return WEFT_OK;
}

namespace {

weft_status captureGraph(weft_step &step) {
  const DriverApi &api = *step.api;
  CUstream main = step.streams[0];
  if (CUresult result = api.cuStreamBeginCapture_v2(main, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
    return failCuda(result, "cuStreamBeginCapture");
  weft_status issued = issue(step);
  CUgraph graph = nullptr;
  CUresult ended = api.cuStreamEndCapture(main, &graph);
  if (issued) {
    if (graph)
      api.cuGraphDestroy(graph);
    return fail(issued, format("while capturing the CUDA graph: %s", weft_last_error()));
  }
  if (ended)
    return failCuda(ended, "cuStreamEndCapture");
  step.graph = graph;
  if (CUresult result = api.cuGraphInstantiateWithFlags(&step.graphExec, graph, 0))
    return failCuda(result, "cuGraphInstantiate");
  return WEFT_OK;
}

} // namespace

weft_status weft::runtime::makeCurrent(weft_step &step, const char *caller) {
  if (!step.loaded)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: the step was prepared for inspection only (weft_step_prepare); "
                       "load it with weft_step_load to use the device",
                       caller));
  CUcontext current = nullptr;
  if (CUresult result = step.api->cuCtxGetCurrent(&current))
    return failCuda(result, format("%s: cuCtxGetCurrent", caller));
  if (current != step.context)
    if (CUresult result = step.api->cuCtxSetCurrent(step.context))
      return failCuda(result, format("%s: cuCtxSetCurrent", caller));
  return WEFT_OK;
}

namespace {

weft_status loadStep(weft_step &step, const void *bytes, size_t size,
                     const weft_step_options &options, weft_comm *comm) {
  const DriverApi *api = nullptr;
  if (weft_status status = requireDriver(api))
    return status;
  step.api = api;
  if (weft_status status = weft_context_ensure(options.device))
    return status;
  int sm = 0;
  if (weft_status status = weft_device_arch(&sm))
    return status;
  if (weft_status status =
          prepareStep(bytes, size, sm, options, step.prepared, comm ? comm->worldSize : 0,
                      comm ? comm->rank : 0))
    return status;
  step.comm = comm;
  if (CUresult result = api->cuCtxGetCurrent(&step.context))
    return failCuda(result, "cuCtxGetCurrent");
  step.loaded = true; // from here on, release() undoes what exists
  if (weft_status status = readMemory(step, step.memory.used_before_load))
    return status;
  step.memory.planned_bytes = step.prepared.arenaBytes;
  if (weft_status status = allocateBuffers(step))
    return status;
  if (weft_status status = readMemory(step, step.memory.used_after_arena))
    return status;
  const pkg::Package &package = step.prepared.package;
  for (const pkg::InitData &data : package.initData)
    if (!data.bytes.empty())
      if (CUresult result = api->cuMemcpyHtoD_v2(step.address[data.buffer], data.bytes.data(),
                                                 data.bytes.size()))
        return failCuda(result, format("cuMemcpyHtoD (initial data of buffer '%s')",
                                       package.buffers[data.buffer].name.c_str()));
  if (weft_status status = loadModules(step))
    return status;
  if (weft_status status = bindArguments(step))
    return status;
  if (weft_status status = prepareGemms(step))
    return status;
  if (weft_status status = createStreams(step))
    return status;
  if (comm)
    if (weft_status status = prepareCollectives(step))
      return status;
  return readMemory(step, step.memory.used_after_load);
}

} // namespace

// options.stream: stream 0 starts after the work the caller queued so far.
weft_status weft::runtime::followCaller(weft_step &step) {
  CUstream caller = step.prepared.options.stream;
  if (!caller)
    return WEFT_OK;
  const DriverApi &api = *step.api;
  if (CUresult result = api.cuEventRecord(step.callerReady, caller))
    return failCuda(result, "cuEventRecord on the caller's stream");
  if (CUresult result = api.cuStreamWaitEvent(step.streams[0], step.callerReady, 0))
    return failCuda(result, "cuStreamWaitEvent (stream 0 after the caller's stream)");
  return WEFT_OK;
}

// options.stream: the caller's later work starts after the whole step (every
// stream has joined stream 0 by the end of issue()).
weft_status weft::runtime::rejoinCaller(weft_step &step) {
  CUstream caller = step.prepared.options.stream;
  if (!caller)
    return WEFT_OK;
  const DriverApi &api = *step.api;
  if (CUresult result = api.cuEventRecord(step.stepDone, step.streams[0]))
    return failCuda(result, "cuEventRecord at the end of the step");
  if (CUresult result = api.cuStreamWaitEvent(caller, step.stepDone, 0))
    return failCuda(result, "cuStreamWaitEvent (the caller's stream after the step)");
  return WEFT_OK;
}

namespace {

// One run queued (issued, or the graph launched) between the caller's work
// before and after it; nothing waits.
weft_status enqueueRun(weft_step &step) {
  if (weft_status status = requireBound(step, "the run"))
    return status;
  if (weft_status status = followCaller(step))
    return status;
  if (step.prepared.options.graph) {
    if (!step.graphExec)
      if (weft_status status = captureGraph(step))
        return status;
    if (CUresult result = step.api->cuGraphLaunch(step.graphExec, step.streams[0]))
      return failCuda(result, "cuGraphLaunch");
  } else if (weft_status status = issue(step)) {
    return status;
  }
  ++step.runs;
  return rejoinCaller(step);
}

// weft_step_bind / weft_step_read are synchronous: with options.stream they
// first wait for the caller's stream (device copies queued there).
weft_status waitForCaller(weft_step &step, const char *caller) {
  if (!step.prepared.options.stream)
    return WEFT_OK;
  if (CUresult result = step.api->cuStreamSynchronize(step.prepared.options.stream))
    return failCuda(result, format("cuStreamSynchronize of the caller's stream (%s)", caller));
  return WEFT_OK;
}

// A bound buffer the caller has not bound yet has no memory to copy.
weft_status requireAddress(const weft_step &step, size_t index, const char *caller) {
  if (step.address[index])
    return WEFT_OK;
  return fail(WEFT_ERROR_INVALID_ARGUMENT,
              format("%s: buffer '%s' is bound by the caller and has no memory yet "
                     "(weft_step_bind_device)",
                     caller, step.prepared.package.buffers[index].name.c_str()));
}

weft_step_options optionsOrDefault(const weft_step_options *options) {
  return options ? *options : weft_step_options{};
}


} // namespace

extern "C" {

weft_status weft_step_prepare(const void *package, size_t size, int device_sm,
                              const weft_step_options *options, weft_step **out) {
  return apiCall("weft_step_prepare", [&]() -> weft_status {
    if (!out)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_prepare: out is NULL");
    *out = nullptr;
    auto step = std::make_unique<weft_step>();
    if (weft_status status =
            prepareStep(package, size, device_sm, optionsOrDefault(options), step->prepared))
      return status;
    *out = step.release();
    return WEFT_OK;
  });
}

weft_status weft_step_load(const void *package, size_t size, const weft_step_options *options,
                           weft_step **out) {
  return weft_step_load_spmd(package, size, options, nullptr, out);
}

weft_status weft_step_load_spmd(const void *package, size_t size,
                                const weft_step_options *options, weft_comm *comm,
                                weft_step **out) {
  return apiCall("weft_step_load", [&]() -> weft_status {
    if (!out)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_load: out is NULL");
    *out = nullptr;
    if (!package)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_load: package is NULL");
    auto step = std::make_unique<weft_step>();
    if (weft_status status = loadStep(*step, package, size, optionsOrDefault(options), comm)) {
      std::string message = weft_last_error();
      int cuResult = weft_last_cu_result();
      release(*step);
      // Releasing may have run API calls that cleared the error.
      return cuResult ? failCudaMessage(CUresult(cuResult), message) : fail(status, message);
    }
    *out = step.release();
    return WEFT_OK;
  });
}

weft_status weft_step_load_file(const char *path, const weft_step_options *options,
                                weft_step **out) {
  if (!path || !out) {
    clearError();
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_step_load_file: %s is NULL", !path ? "path" : "out"));
  }
  std::string bytes;
  {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      clearError();
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_load_file: cannot open '%s'", path));
    }
    bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }
  weft_status status = weft_step_load(bytes.data(), bytes.size(), options, out);
  if (status)
    return fail(status, format("%s: %s", path, weft_last_error()));
  return status;
}

weft_status weft_step_free(weft_step *step) {
  return apiCall("weft_step_free", [&]() -> weft_status {
    if (!step)
      return WEFT_OK;
    release(*step);
    delete step;
    return WEFT_OK;
  });
}

size_t weft_step_buffer_count(const weft_step *step) {
  return step ? step->prepared.package.buffers.size() : 0;
}

weft_status weft_step_buffer_info(const weft_step *step, size_t index, weft_step_buffer *info) {
  return apiCall("weft_step_buffer_info", [&]() -> weft_status {
    if (weft_status status = checkBuffer(step, index, "weft_step_buffer_info"))
      return status;
    if (!info)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_buffer_info: info is NULL");
    const pkg::Buffer &b = step->prepared.package.buffers[index];
    const BufferShape &shape = step->prepared.shapes[index];
    *info = weft_step_buffer{};
    info->name = b.name.c_str();
    info->type = b.type.c_str();
    info->role = weft_step_role(uint32_t(b.role));
    info->offset = b.offset;
    info->size = b.size;
    info->first = b.first;
    info->last = b.last;
    info->arg = b.arg;
    info->result = b.result;
    info->copy_of = b.copyOf;
    info->rank = shape.rank;
    for (int d = 0; d < shape.rank; ++d)
      info->shape[d] = shape.dims[size_t(d)];
    info->dtype = shape.dtype.c_str();
    for (const pkg::InitData &data : step->prepared.package.initData)
      info->has_initial_data |= data.buffer == index;
    return WEFT_OK;
  });
}

weft_status weft_step_find_buffer(const weft_step *step, const char *name, size_t *index) {
  return apiCall("weft_step_find_buffer", [&]() -> weft_status {
    if (!step || !name || !index)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_find_buffer: %s is NULL",
                         !step ? "step" : !name ? "name" : "index"));
    const std::vector<pkg::Buffer> &buffers = step->prepared.package.buffers;
    for (size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].name == name) {
        *index = i;
        return WEFT_OK;
      }
    return fail(WEFT_ERROR_NOT_FOUND,
                format("the step has no buffer '%s' (%zu buffers)", name, buffers.size()));
  });
}

weft_status weft_step_bind(weft_step *step, size_t index, const void *host, size_t bytes) {
  return apiCall("weft_step_bind", [&]() -> weft_status {
    if (weft_status status = checkBuffer(step, index, "weft_step_bind"))
      return status;
    const pkg::Buffer &b = step->prepared.package.buffers[index];
    if (!host || bytes != b.size)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_bind: buffer '%s' has %llu bytes, got %zu%s", b.name.c_str(),
                         (unsigned long long)b.size, bytes, host ? "" : " from NULL"));
    if (weft_status status = makeCurrent(*step, "weft_step_bind"))
      return status;
    if (weft_status status = waitForCaller(*step, "weft_step_bind"))
      return status;
    if (bytes == 0)
      return WEFT_OK;
    if (weft_status status = requireAddress(*step, index, "weft_step_bind"))
      return status;
    if (CUresult result = step->api->cuMemcpyHtoD_v2(step->address[index], host, bytes))
      return failCuda(result, format("cuMemcpyHtoD into buffer '%s'", b.name.c_str()));
    return WEFT_OK;
  });
}

weft_status weft_step_read(weft_step *step, size_t index, void *host, size_t bytes) {
  return apiCall("weft_step_read", [&]() -> weft_status {
    if (weft_status status = checkBuffer(step, index, "weft_step_read"))
      return status;
    const pkg::Buffer &b = step->prepared.package.buffers[index];
    if (!host || bytes != b.size)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_read: buffer '%s' has %llu bytes, got %zu%s", b.name.c_str(),
                         (unsigned long long)b.size, bytes, host ? "" : " into NULL"));
    if (weft_status status = makeCurrent(*step, "weft_step_read"))
      return status;
    if (weft_status status = waitForCaller(*step, "weft_step_read"))
      return status;
    if (CUresult result = step->api->cuStreamSynchronize(step->streams[0]))
      return failCuda(result, "cuStreamSynchronize (weft_step_read)");
    if (bytes == 0)
      return WEFT_OK;
    if (weft_status status = requireAddress(*step, index, "weft_step_read"))
      return status;
    if (CUresult result = step->api->cuMemcpyDtoH_v2(host, step->address[index], bytes))
      return failCuda(result, format("cuMemcpyDtoH from buffer '%s'", b.name.c_str()));
    return WEFT_OK;
  });
}

weft_status weft_step_enqueue(weft_step *step) {
  return apiCall("weft_step_enqueue", [&]() -> weft_status {
    if (!step)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_enqueue: step is NULL");
    if (weft_status status = makeCurrent(*step, "weft_step_enqueue"))
      return status;
    return enqueueRun(*step);
  });
}

size_t weft_step_options_size(void) { return sizeof(weft_step_options); }

weft_status weft_step_device_pointer(const weft_step *step, size_t index, CUdeviceptr *pointer) {
  return apiCall("weft_step_device_pointer", [&]() -> weft_status {
    if (weft_status status = checkBuffer(step, index, "weft_step_device_pointer"))
      return status;
    if (!pointer)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_device_pointer: pointer is NULL");
    if (!step->loaded)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  "weft_step_device_pointer: the step was only prepared, it has no memory");
    *pointer = step->address[index];
    return WEFT_OK;
  });
}

weft_status weft_step_run(weft_step *step) {
  return apiCall("weft_step_run", [&]() -> weft_status {
    if (!step)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_run: step is NULL");
    if (weft_status status = makeCurrent(*step, "weft_step_run"))
      return status;
    if (weft_status status = enqueueRun(*step))
      return status;
    if (weft_status status = waitForStep(*step, nullptr, "the step"))
      return status;
    size_t used = 0;
    return readMemory(*step, used);
  });
}

weft_status weft_step_memory_info(weft_step *step, weft_step_memory *memory) {
  return apiCall("weft_step_memory_info", [&]() -> weft_status {
    if (!step || !memory)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_memory_info: %s is NULL", !step ? "step" : "memory"));
    if (step->loaded) {
      if (weft_status status = makeCurrent(*step, "weft_step_memory_info"))
        return status;
      size_t used = 0;
      if (weft_status status = readMemory(*step, used))
        return status;
    } else {
      step->memory.planned_bytes = step->prepared.arenaBytes;
    }
    *memory = step->memory;
    return WEFT_OK;
  });
}

const char *weft_step_describe(weft_step *step) {
  if (!step)
    return "";
  step->description = describeStep(step->prepared);
  return step->description.c_str();
}

} // extern "C"

// A step and buffer index a buffer call may use (StepState.h).
weft_status weft::runtime::checkBuffer(const weft_step *step, size_t index, const char *caller) {
  if (!step)
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: step is NULL", caller));
  if (index >= step->prepared.package.buffers.size())
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: buffer %zu, but the step has %zu", caller, index,
                       step->prepared.package.buffers.size()));
  return WEFT_OK;
}
