// StepTiming.cpp: weft_step_entry_*, weft_step_run_timed and weft_step_run_traced.
#include "Driver.h"
#include "PreparedStep.h"
#include "Status.h"
#include "StepState.h"

using namespace weft;
using namespace weft::runtime;

extern "C" {

size_t weft_step_entry_count(const weft_step *step) {
  return step ? step->prepared.schedule.size() : 0;
}

weft_status weft_step_entry_info(const weft_step *step, size_t entry, weft_step_entry *info) {
  return apiCall("weft_step_entry_info", [&]() -> weft_status {
    if (!step || !info)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_entry_info: %s is NULL", !step ? "step" : "info"));
    const PreparedStep &prepared = step->prepared;
    if (entry >= prepared.schedule.size())
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_entry_info: entry %zu, but the schedule has %zu", entry,
                         prepared.schedule.size()));
    const ScheduleStep &e = prepared.schedule[entry];
    *info = weft_step_entry{};
    switch (e.kind) {
    case pkg::EntryKind::Launch: {
      const ResolvedLaunch &l = prepared.launches[e.item];
      info->kind = WEFT_ENTRY_LAUNCH;
      info->name = prepared.package.kernels[l.kernel].name.c_str();
      info->index = l.index;
      info->stream = l.stream;
      break;
    }
    case pkg::EntryKind::Gemm: {
      const ResolvedGemm &g = prepared.gemms[e.item];
      info->kind = WEFT_ENTRY_GEMM;
      info->name = "gemm";
      info->index = g.index;
      info->stream = g.stream;
      info->m = g.desc.m;
      info->n = g.desc.n;
      info->k = g.desc.k;
      info->batch = g.desc.batch;
      break;
    }
    case pkg::EntryKind::Event: {
      const pkg::Event &ev = prepared.package.events[e.item];
      info->kind = WEFT_ENTRY_EVENT;
      info->name = ev.record ? "record_event" : "wait_event";
      info->index = ev.index;
      info->stream = ev.stream;
      break;
    }
    case pkg::EntryKind::Collective: {
      const pkg::Collective &c = prepared.package.collectives[e.item];
      info->kind = WEFT_ENTRY_COLLECTIVE;
      info->name = pkg::collectiveKindName(c.kind);
      info->index = c.index;
      info->stream = c.stream;
      break;
    }
    }
    return WEFT_OK;
  });
}

namespace {

// The stream an entry is issued on.
unsigned entryStream(const weft_step &step, const ScheduleStep &e) {
  const PreparedStep &prepared = step.prepared;
  if (prepared.options.debug_buffers)
    return 0;
  switch (e.kind) {
  case pkg::EntryKind::Launch:
    return prepared.launches[e.item].stream;
  case pkg::EntryKind::Gemm:
    return prepared.gemms[e.item].stream;
  case pkg::EntryKind::Event:
    return prepared.package.events[e.item].stream;
  case pkg::EntryKind::Collective:
    return prepared.package.collectives[e.item].stream;
  }
  return 0;
}

// weft_step_run_timed (`joined`: every stream joins stream 0 at each event,
// ms[i] the time between the events around entry i) and weft_step_run_traced
// (each event on its entry's own stream, ms[i] the time from the step's start
// to entry i's end).
weft_status runWithEvents(weft_step *step, float *ms, size_t count, float *total_ms, bool joined,
                          const char *caller) {
  if (!step || !ms)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: %s is NULL", caller, !step ? "step" : "the times"));
  size_t entries = step->prepared.schedule.size();
  if (count != entries)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: count %zu, but the schedule has %zu entries", caller, count, entries));
  if (weft_status status = makeCurrent(*step, caller))
    return status;
  if (weft_status status = requireBound(*step, caller))
    return status;
  const DriverApi &api = *step->api;
  if (!api.cuEventSynchronize || !api.cuEventElapsedTime_v2)
    return fail(WEFT_ERROR_DRIVER_MISSING,
                format("%s: the driver lacks cuEventElapsedTime_v2 (CUDA 12.8+)", caller));
  // One event before the first entry, one after each, and the end of all.
  if (step->timing.size() != entries + 2) {
    for (CUevent event : step->timing)
      if (event)
        api.cuEventDestroy_v2(event);
    step->timing.assign(entries + 2, nullptr);
    for (CUevent &event : step->timing)
      if (CUresult result = api.cuEventCreate(&event, CU_EVENT_DEFAULT))
        return failCuda(result, "cuEventCreate (timing)");
  }
  CUstream main = step->streams[0];
  // Stream 0 waits for the others, so its event marks the end of all work
  // issued so far.
  auto join = [&](CUevent event) -> weft_status {
    for (size_t s = 1; s < step->streams.size(); ++s) {
      if (CUresult result = api.cuEventRecord(step->joins[s], step->streams[s]))
        return failCuda(result, "cuEventRecord (timing join)");
      if (CUresult result = api.cuStreamWaitEvent(main, step->joins[s], 0))
        return failCuda(result, "cuStreamWaitEvent (timing join)");
    }
    if (CUresult result = api.cuEventRecord(event, main))
      return failCuda(result, "cuEventRecord (timing)");
    return WEFT_OK;
  };
  auto after = [&](size_t position) -> weft_status {
    if (joined)
      return join(step->timing[position + 1]);
    CUstream stream = step->streams[entryStream(*step, step->prepared.schedule[position])];
    if (CUresult result = api.cuEventRecord(step->timing[position + 1], stream))
      return failCuda(result, "cuEventRecord (trace)");
    return WEFT_OK;
  };
  if (weft_status status = followCaller(*step))
    return status;
  if (weft_status status = join(step->timing[0]))
    return status;
  if (weft_status status = issue(*step, after))
    return status;
  if (weft_status status = join(step->timing[entries + 1]))
    return status;
  ++step->runs;
  if (weft_status status = rejoinCaller(*step))
    return status;
  if (weft_status status = waitForStep(*step, step->timing[entries + 1], caller))
    return status;
  for (size_t i = 0; i < entries; ++i)
    if (CUresult result = api.cuEventElapsedTime_v2(
            &ms[i], step->timing[joined ? i : 0], step->timing[i + 1]))
      return failCuda(result, format("cuEventElapsedTime (entry %zu)", i));
  if (total_ms)
    if (CUresult result =
            api.cuEventElapsedTime_v2(total_ms, step->timing[0], step->timing[entries + 1]))
      return failCuda(result, "cuEventElapsedTime (whole step)");
  if (CUresult result = api.cuStreamSynchronize(main))
    return failCuda(result, format("cuStreamSynchronize after %s", caller));
  size_t used = 0;
  return readMemory(*step, used);
}

} // namespace

weft_status weft_step_run_timed(weft_step *step, float *entry_ms, size_t count,
                                float *total_ms) {
  return apiCall("weft_step_run_timed", [&]() -> weft_status {
    return runWithEvents(step, entry_ms, count, total_ms, true, "weft_step_run_timed");
  });
}

weft_status weft_step_run_traced(weft_step *step, float *end_ms, size_t count,
                                 float *total_ms) {
  return apiCall("weft_step_run_traced", [&]() -> weft_status {
    return runWithEvents(step, end_ms, count, total_ms, false, "weft_step_run_traced");
  });
}

} // extern "C"
