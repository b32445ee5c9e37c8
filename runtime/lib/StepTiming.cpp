// StepTiming.cpp: weft_step_entry_* and weft_step_run_timed.
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

weft_status weft_step_run_timed(weft_step *step, float *entry_ms, size_t count,
                                float *total_ms) {
  return apiCall("weft_step_run_timed", [&]() -> weft_status {
    if (!step || !entry_ms)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_run_timed: %s is NULL", !step ? "step" : "entry_ms"));
    size_t entries = step->prepared.schedule.size();
    if (count != entries)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_run_timed: count %zu, but the schedule has %zu entries",
                         count, entries));
    if (weft_status status = makeCurrent(*step, "weft_step_run_timed"))
      return status;
    if (weft_status status = requireBound(*step, "weft_step_run_timed"))
      return status;
    const DriverApi &api = *step->api;
    if (!api.cuEventSynchronize || !api.cuEventElapsedTime_v2)
      return fail(WEFT_ERROR_DRIVER_MISSING,
                  "weft_step_run_timed: the driver lacks cuEventElapsedTime_v2 (CUDA 12.8+)");
    if (step->timing.size() != entries + 1) {
      for (CUevent event : step->timing)
        if (event)
          api.cuEventDestroy_v2(event);
      step->timing.assign(entries + 1, nullptr);
      for (CUevent &event : step->timing)
        if (CUresult result = api.cuEventCreate(&event, CU_EVENT_DEFAULT))
          return failCuda(result, "cuEventCreate (timing)");
    }
    CUstream main = step->streams[0];
    // Stream 0 waits for the others, so its event marks the end of all work
    // issued so far.
    auto mark = [&](size_t at) -> weft_status {
      for (size_t s = 1; s < step->streams.size(); ++s) {
        if (CUresult result = api.cuEventRecord(step->joins[s], step->streams[s]))
          return failCuda(result, "cuEventRecord (timing join)");
        if (CUresult result = api.cuStreamWaitEvent(main, step->joins[s], 0))
          return failCuda(result, "cuStreamWaitEvent (timing join)");
      }
      if (CUresult result = api.cuEventRecord(step->timing[at], main))
        return failCuda(result, "cuEventRecord (timing)");
      return WEFT_OK;
    };
    if (weft_status status = followCaller(*step))
      return status;
    if (weft_status status = mark(0))
      return status;
    if (weft_status status =
            issue(*step, [&](size_t position) { return mark(position + 1); }))
      return status;
    ++step->runs;
    if (weft_status status = rejoinCaller(*step))
      return status;
    if (weft_status status = waitForStep(*step, step->timing[entries], "the timed step"))
      return status;
    for (size_t i = 0; i < entries; ++i)
      if (CUresult result =
              api.cuEventElapsedTime_v2(&entry_ms[i], step->timing[i], step->timing[i + 1]))
        return failCuda(result, format("cuEventElapsedTime (entry %zu)", i));
    if (total_ms)
      if (CUresult result =
              api.cuEventElapsedTime_v2(total_ms, step->timing[0], step->timing[entries]))
        return failCuda(result, "cuEventElapsedTime (whole step)");
    if (CUresult result = api.cuStreamSynchronize(main))
      return failCuda(result, "cuStreamSynchronize after the timed step");
    size_t used = 0;
    return readMemory(*step, used);
  });
}

} // extern "C"
