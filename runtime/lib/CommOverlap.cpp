// The collectives of a schedule and the GEMMs beside them (CommOverlap.h).
#include "CommOverlap.h"

#include "Status.h"

#include <cstdlib>
#include <map>
#include <string>

namespace weft::runtime {

CommOverlap findCommOverlap(const pkg::Package &package) {
  uint32_t streams = std::max<uint32_t>(package.numStreams, 1);
  CommOverlap overlap;
  overlap.commStreams.assign(streams, false);
  overlap.gemmBeside.assign(package.gemms.size(), false);
  // Per stream, the schedule positions of its collectives; per event, the
  // stream and position it was last recorded at; per (waiting stream,
  // recording stream), the last position of the latter the former waited
  // for.
  std::vector<std::vector<size_t>> collectives(streams);
  std::map<uint32_t, std::pair<uint32_t, size_t>> recorded;
  std::vector<std::vector<long long>> waited(streams, std::vector<long long>(streams, -1));
  for (size_t position = 0; position < package.schedule.size(); ++position) {
    const pkg::Entry &entry = package.schedule[position];
    switch (entry.kind) {
    case pkg::EntryKind::Collective: {
      uint32_t stream = package.collectives[entry.item].stream;
      if (stream < streams) {
        collectives[stream].push_back(position);
        overlap.commStreams[stream] = true;
      }
      break;
    }
    case pkg::EntryKind::Event: {
      const pkg::Event &event = package.events[entry.item];
      if (event.stream >= streams)
        break;
      if (event.record) {
        recorded[event.event] = {event.stream, position};
        break;
      }
      auto it = recorded.find(event.event);
      if (it != recorded.end()) {
        long long &mark = waited[event.stream][it->second.first];
        mark = std::max(mark, (long long)it->second.second);
      }
      break;
    }
    case pkg::EntryKind::Gemm: {
      uint32_t stream = package.gemms[entry.item].stream;
      if (stream >= streams)
        break;
      for (uint32_t other = 0; other < streams; ++other)
        if (other != stream && !collectives[other].empty() &&
            (long long)collectives[other].back() > waited[stream][other])
          overlap.gemmBeside[entry.item] = true;
      break;
    }
    case pkg::EntryKind::Launch:
      break;
    }
  }
  return overlap;
}

weft_status resolveCommOptions(const weft_step_options &options, int &priority, int &margin) {
  priority = options.comm_priority;
  if (priority < WEFT_COMM_PRIORITY_DEFAULT || priority > WEFT_COMM_PRIORITY_HIGH)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_step_options: comm_priority is %d, not one of 0-2 "
                       "(weft_comm_priority)",
                       priority));
  if (priority == WEFT_COMM_PRIORITY_DEFAULT) {
    priority = WEFT_COMM_PRIORITY_NORMAL;
    const char *text = std::getenv("WEFT_COMM_PRIORITY");
    std::string value = text ? text : "";
    if (value == "high")
      priority = WEFT_COMM_PRIORITY_HIGH;
    else if (!value.empty() && value != "normal")
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("$WEFT_COMM_PRIORITY is '%s', not one of normal, high", text));
  }
  margin = options.gemm_sm_margin;
  if (margin < 0) {
    margin = 0;
  } else if (margin == 0) {
    const char *text = std::getenv("WEFT_GEMM_SM_MARGIN");
    if (text && *text) {
      char *end = nullptr;
      long value = std::strtol(text, &end, 10);
      if (*end || value < 0 || value > 1024)
        return fail(WEFT_ERROR_INVALID_ARGUMENT,
                    format("$WEFT_GEMM_SM_MARGIN is '%s', not a number of SMs from 0 to 1024",
                           text));
      margin = int(value);
    }
  }
  return WEFT_OK;
}

} // namespace weft::runtime
