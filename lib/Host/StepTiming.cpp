// weft-run --init-state, --time-segments and --print-memory (see StepTiming.h).
#include "weft/Host/StepTiming.h"

#include "weft/Support/ExitCode.h"
#include "weft/Support/ToolError.h"
#include "weft/Support/FloatBits.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

namespace weft {

const char *segmentName(Segment segment) {
  switch (segment) {
  case Segment::Forward:
    return "forward";
  case Segment::Backward:
    return "backward";
  case Segment::Optimizer:
    return "optimizer";
  }
  return "?";
}

std::vector<Segment> classifySegments(const std::vector<std::string> &names,
                                      const std::vector<unsigned> &indices, unsigned lossIndex) {
  size_t n = names.size();
  std::vector<Segment> segments(n, Segment::Backward);
  for (size_t i = 0; i < n; ++i)
    if (indices[i] <= lossIndex)
      segments[i] = Segment::Forward;
  auto contains = [](const std::string &name, const char *part) {
    return name.find(part) != std::string::npos;
  };
  // weft-autodiff runs each update as soon as its gradient is final, so
  // updates sit between backward kernels: each AdamW launch, and the convert
  // launches right before it (a gradient's cast to the master's type), are
  // the optimizer wherever they are.
  for (size_t i = n; i-- > 0;) {
    if (segments[i] == Segment::Forward || !contains(names[i], "adamw"))
      continue;
    segments[i] = Segment::Optimizer;
    for (size_t j = i; j-- > 0 && segments[j] == Segment::Backward &&
                       contains(names[j], "convert") && !contains(names[j], "adamw");)
      segments[j] = Segment::Optimizer;
  }
  return segments;
}

namespace {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0.0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

} // namespace

bool drawStateBytes(const weft_step_buffer &info, uint64_t seed, std::string &bytes,
                    std::string &error, int splitDim, int64_t parts, int64_t part) {
  std::string dtype = info.dtype;
  size_t width = dtype == "f32" ? 4 : (dtype == "bf16" || dtype == "f16") ? 2 : 0;
  if (!width || info.rank < 0) {
    error = std::string("--init-state draws f32, bf16 or f16 tensors; buffer '") + info.name +
            "' is " + (info.type[0] ? info.type : "untyped");
    return false;
  }
  // The block: `outer` runs of `run` elements, `stride` apart from `first`.
  int64_t count = int64_t(info.size / width), outer = 1, run = count, stride = 0, first = 0;
  if (parts > 1 && splitDim >= 0 && splitDim < info.rank) {
    int64_t inner = 1;
    for (int d = 0; d < splitDim; ++d)
      outer *= info.shape[d];
    for (int d = splitDim + 1; d < info.rank; ++d)
      inner *= info.shape[d];
    int64_t size = info.shape[splitDim] / parts;
    stride = info.shape[splitDim] * inner;
    run = size * inner;
    first = part * size * inner;
  }
  bytes.assign(size_t(outer * run) * width, '\0');
  if (info.role == WEFT_ROLE_OPTIMIZER_STATE)
    return true;
  // Uniform in [center - half, center + half].
  double center = 0.5, half = 0.1;
  if (info.rank >= 2) {
    center = 0.0;
    half = std::sqrt(3.0 / double(std::max<long long>(info.shape[info.rank - 1], 1)));
  }
  // Element i of the whole tensor takes the (i + 1)-th draw of splitmix64
  // from `base`, whose state advances by a constant: any block starts there.
  uint64_t base = seed * 0x2545f4914f6cdd1dull + uint64_t(info.arg) + 1;
  char *out = bytes.data();
  size_t i = 0;
  for (int64_t o = 0; o < outer; ++o) {
    uint64_t state = base + uint64_t(first + o * stride) * 0x9e3779b97f4a7c15ull;
    for (int64_t e = 0; e < run; ++e, ++i) {
      double u = double(splitmix64(state) >> 11) * 0x1.0p-53; // [0, 1)
      double v = center + half * (2.0 * u - 1.0);
      if (width == 4) {
        float f = float(v);
        std::memcpy(out + 4 * i, &f, 4);
      } else {
        uint16_t bits = dtype == "bf16" ? bf16Bits(v) : f16Bits(v);
        std::memcpy(out + 2 * i, &bits, 2);
      }
    }
  }
  return true;
}

namespace {

/// A step's schedule entries with their names and segments.
struct ScheduleEntries {
  std::vector<weft_step_entry> entries;
  std::vector<std::string> names;
  std::vector<Segment> segments;
};

/// Reads the entries of `step`; false with the error printed after `flag`.
bool readEntries(weft_step *step, unsigned lossIndex, const char *flag, ScheduleEntries &out) {
  size_t n = weft_step_entry_count(step);
  out.entries.assign(n, weft_step_entry{});
  out.names.assign(n, "");
  std::vector<unsigned> indices(n);
  for (size_t i = 0; i < n; ++i) {
    if (weft_step_entry_info(step, i, &out.entries[i])) {
      printToolError("weft-run", llvm::Twine(flag) + ": " + weft_last_error());
      return false;
    }
    out.names[i] = out.entries[i].name;
    indices[i] = out.entries[i].index;
  }
  out.segments = classifySegments(out.names, indices, lossIndex);
  return true;
}

/// An entry's JSON fields before its times: kind, name, index, (stream,)
/// segment and a GEMM's dimensions.
void writeEntryFields(llvm::raw_ostream &os, const ScheduleEntries &all, size_t i,
                      bool stream) {
  static const char *kinds[] = {"launch", "gemm", "event", "collective"};
  const weft_step_entry &e = all.entries[i];
  os << "{\"kind\": \"" << kinds[int(e.kind) % 4] << "\", \"name\": " << jsonString(all.names[i])
     << ", \"index\": " << e.index;
  if (stream)
    os << ", \"stream\": " << e.stream;
  os << ", \"segment\": \"" << segmentName(all.segments[i]) << "\"";
  if (e.kind == WEFT_ENTRY_GEMM)
    os << ", \"m\": " << e.m << ", \"n\": " << e.n << ", \"k\": " << e.k
       << ", \"batch\": " << e.batch;
}

} // namespace

int timeSegments(weft_step *step, unsigned lossIndex, int64_t runs, const std::string &jsonPath,
                 weft_comm *comm) {
  auto error = [](const llvm::Twine &message) {
    printToolError("weft-run", message);
    return kExitFailed;
  };
  ScheduleEntries all;
  if (!readEntries(step, lossIndex, "--time-segments", all))
    return kExitFailed;
  size_t n = all.entries.size();
  const std::vector<Segment> &segments = all.segments;
  std::vector<std::vector<double>> perEntry(n);
  std::vector<double> totals, perSegment[3];
  std::vector<float> ms(n);
  for (int64_t r = 0; r < runs; ++r) {
    float total = 0;
    if (comm && weft_comm_barrier(comm))
      return error("--time-segments run " + llvm::Twine(r + 1) + ": " + weft_last_error());
    if (weft_step_run_timed(step, ms.data(), n, &total))
      return error("--time-segments run " + llvm::Twine(r + 1) + ": " + weft_last_error());
    double sums[3] = {0, 0, 0};
    for (size_t i = 0; i < n; ++i) {
      perEntry[i].push_back(ms[i]);
      sums[int(segments[i])] += ms[i];
    }
    totals.push_back(total);
    for (int s = 0; s < 3; ++s)
      perSegment[s].push_back(sums[s]);
  }
  double forward = median(perSegment[0]), backward = median(perSegment[1]),
         optimizer = median(perSegment[2]);
  llvm::outs() << llvm::format("segments: forward %.3f ms, backward %.3f ms, optimizer %.3f ms, "
                               "timed step %.3f ms (medians of %lld runs, an event after every "
                               "entry)\n",
                               forward, backward, optimizer, median(totals), (long long)runs);
  if (jsonPath.empty())
    return kExitOk;
  std::ofstream file(jsonPath);
  if (!file)
    return error("--timing-json: cannot write '" + jsonPath + "'");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("{\"runs\": %lld, \"loss_index\": %u, \"total_ms\": %.6f, ",
                     (long long)runs, lossIndex, median(totals))
     << llvm::format("\"segments_ms\": {\"forward\": %.6f, \"backward\": %.6f, "
                     "\"optimizer\": %.6f},\n \"entries\": [",
                     forward, backward, optimizer);
  for (size_t i = 0; i < n; ++i) {
    os << (i ? ",\n  " : "\n  ");
    writeEntryFields(os, all, i, /*stream=*/false);
    os << llvm::format(", \"ms\": %.6f}", median(perEntry[i]));
  }
  os << "]}\n";
  file << os.str();
  return file.good() ? kExitOk : error("--timing-json: writing '" + jsonPath + "' failed");
}

int traceStep(weft_step *step, unsigned lossIndex, int64_t runs, const std::string &jsonPath,
              weft_comm *comm) {
  auto error = [](const llvm::Twine &message) {
    printToolError("weft-run", message);
    return kExitFailed;
  };
  ScheduleEntries all;
  if (!readEntries(step, lossIndex, "--trace-json", all))
    return kExitFailed;
  size_t n = all.entries.size();
  // The run whose step time is the median of `runs`.
  std::vector<std::vector<float>> ends(runs, std::vector<float>(n));
  std::vector<double> totals(runs);
  for (int64_t r = 0; r < runs; ++r) {
    float total = 0;
    if (comm && weft_comm_barrier(comm))
      return error("--trace-json run " + llvm::Twine(r + 1) + ": " + weft_last_error());
    if (weft_step_run_traced(step, ends[r].data(), n, &total))
      return error("--trace-json run " + llvm::Twine(r + 1) + ": " + weft_last_error());
    totals[r] = total;
  }
  std::vector<size_t> order(runs);
  for (int64_t r = 0; r < runs; ++r)
    order[r] = r;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return totals[a] < totals[b]; });
  size_t chosen = order[runs / 2];
  llvm::outs() << llvm::format("trace: step %.3f ms (the median of %lld traced runs, streams "
                               "overlapping)\n",
                               totals[chosen], (long long)runs);
  std::ofstream file(jsonPath);
  if (!file)
    return error("--trace-json: cannot write '" + jsonPath + "'");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("{\"runs\": %lld, \"loss_index\": %u, \"total_ms\": %.6f,\n \"entries\": [",
                     (long long)runs, lossIndex, totals[chosen]);
  std::vector<float> streamEnd;
  for (size_t i = 0; i < n; ++i) {
    const weft_step_entry &e = all.entries[i];
    if (e.stream >= streamEnd.size())
      streamEnd.resize(e.stream + 1, 0.0f);
    float start = streamEnd[e.stream], end = std::max(start, ends[chosen][i]);
    streamEnd[e.stream] = end;
    os << (i ? ",\n  " : "\n  ");
    writeEntryFields(os, all, i, /*stream=*/true);
    os << llvm::format(", \"start_ms\": %.6f, \"end_ms\": %.6f}", start, end);
  }
  os << "]}\n";
  file << os.str();
  return file.good() ? kExitOk : error("--trace-json: writing '" + jsonPath + "' failed");
}

int timeAndTrace(const RunPackageOptions &options, weft_step *step,
                 std::optional<unsigned> lossIndex, std::optional<int> rank, weft_comm *comm) {
  if (!lossIndex) {
    printToolError("weft-run", llvm::Twine(options.timeSegments > 0 ? "--time-segments"
                                                                     : "--trace-json") +
                                   " needs a training step: the package has no scalar loss "
                                   "result to divide forward from backward");
    return kExitUsage;
  }
  auto ranked = [&](const std::string &path) {
    return rank && !path.empty() ? path + ".rank" + std::to_string(*rank) : path;
  };
  if (options.timeSegments > 0)
    if (int code = timeSegments(step, *lossIndex, options.timeSegments,
                                ranked(options.timingJson), comm))
      return code;
  if (!options.traceJson.empty())
    if (int code = traceStep(step, *lossIndex, /*runs=*/5, ranked(options.traceJson), comm))
      return code;
  return kExitOk;
}

/// --print-memory: the planned arena beside what cuMemGetInfo saw.
int printStepMemory(weft_step *step, bool debugBuffers, const std::string &prefix,
                    std::optional<std::pair<size_t, size_t>> commMemory) {
  auto error = [](const llvm::Twine &message) {
    printToolError("weft-run", message);
    return kExitFailed;
  };
  weft_step_memory memory;
  if (weft_step_memory_info(step, &memory))
    return error(llvm::Twine("reading device memory: ") + weft_last_error());
  auto mib = [](size_t bytes) { return double(bytes) / (1 << 20); };
  size_t arena = memory.used_after_arena - memory.used_before_load;
  llvm::outs() << prefix << llvm::format("memory: planned %zu bytes (%.2f MiB)%s\n",
                               memory.planned_bytes, mib(memory.planned_bytes),
                               debugBuffers ? ", one allocation per buffer" : "")
               << prefix << llvm::format("memory: arena allocation used %zu bytes (%.2f MiB, %.3f%% "
                               "of planned)\n",
                               arena, mib(arena),
                               memory.planned_bytes ? 100.0 * arena / memory.planned_bytes : 0.0)
               << prefix << llvm::format("memory: after load +%zu bytes (modules, tensor maps, "
                               "cuBLASLt), peak +%zu bytes over %zu before load (device %zu)\n",
                               memory.used_after_load - memory.used_before_load,
                               memory.used_peak - memory.used_before_load,
                               memory.used_before_load, memory.total_bytes);
  if (commMemory)
    llvm::outs() << prefix
                 << llvm::format("memory: %zu bytes in use before the communicators (the CUDA "
                                 "context), NCCL's communicators +%zu bytes; its buffers come "
                                 "at the first collectives (in the peak)\n",
                                 commMemory->first, commMemory->second - commMemory->first);
  llvm::outs() << prefix << llvm::format("memory-json: {\"planned\": %zu, \"before\": %zu, "
                               "\"after_arena\": %zu, \"after_load\": %zu, \"peak\": %zu, "
                               "\"total\": %zu",
                               memory.planned_bytes, memory.used_before_load,
                               memory.used_after_arena, memory.used_after_load,
                               memory.used_peak, memory.total_bytes);
  if (commMemory)
    llvm::outs() << llvm::format(", \"context\": %zu, \"nccl_init\": %zu", commMemory->first,
                                 commMemory->second - commMemory->first);
  llvm::outs() << "}\n";
  return kExitOk;
}


} // namespace weft
