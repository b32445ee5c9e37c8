// weft-run --init-state, --time-segments and --print-memory: drawing a
// step's state on the host, timing each schedule entry with the runtime's
// events (summed into forward / backward / optimizer segments), and the
// device memory beside the plan.
#ifndef WEFT_HOST_STEPTIMING_H
#define WEFT_HOST_STEPTIMING_H

#include "weft/Host/RunPackage.h"
#include "weft_runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weft {

/// Which part of the training step an entry belongs to.
enum class Segment { Forward, Backward, Optimizer };
const char *segmentName(Segment segment);

/// Segments of the schedule entries (names and schedule indices in issue
/// order): the forward is every entry at or before `lossIndex` (the schedule
/// index that defines the loss); the optimizer is every later AdamW launch
/// (the f32 master update; weft-autodiff runs each as soon as its gradient
/// is final, between backward kernels) with the convert launches right
/// before it (the gradient's cast, when kept); the backward is the rest
/// (recomputation included).
std::vector<Segment> classifySegments(const std::vector<std::string> &names,
                                      const std::vector<unsigned> &indices, unsigned lossIndex);

/// A parameter's or optimizer state's bytes drawn on the host from `seed`
/// (for benchmarks of models too large to ship their state): a parameter of
/// rank >= 2 uniform with the variance of N(0, 1/fan_in), fan_in its last dim;
/// of rank <= 1 (norm weights and biases alike: the buffer does not say
/// which) uniform in [0.4, 0.6]; optimizer state zero. f32, bf16 or f16
/// buffers only; false with `error` naming the buffer otherwise. weft-run
/// draws a split master (its i16 low half's buffer) as that buffer in f32, so
/// it gets the values a converted package's f32 master of the same argument
/// gets, and splits them.
///
/// With `parts` > 1 only block `part` of `parts` along dimension `splitDim`
/// of that whole tensor is drawn (the values the whole draw would hold
/// there: each element's is a function of its index), as a rank of a
/// partitioned step keeps.
bool drawStateBytes(const weft_step_buffer &info, uint64_t seed, std::string &bytes,
                    std::string &error, int splitDim = -1, int64_t parts = 1,
                    int64_t part = 0);

/// Runs the step `runs` times with weft_step_run_timed and prints one
/// "segments:" line and, when `jsonPath` is set, writes per-entry medians and
/// per-segment medians there. Returns 0, or 1 with the error printed.
/// --print-memory: the planned arena beside what cuMemGetInfo saw, each line
/// after `prefix` (a multi-GPU rank's "[rank r] "), and for such a rank the
/// memory in use before and after its communicators were made.
int printStepMemory(weft_step *step, bool debugBuffers, const std::string &prefix,
                    std::optional<std::pair<size_t, size_t>> commMemory);

/// `comm` (a multi-GPU rank's communicators, or null): the ranks meet at a
/// barrier before each timed run, so one rank's lag is not another's wait.
int timeSegments(weft_step *step, unsigned lossIndex, int64_t runs, const std::string &jsonPath,
                 weft_comm *comm = nullptr);

/// --trace-json: `runs` runs with weft_step_run_traced (the streams overlap as
/// in a plain run); writes the entries of the run with the median step time,
/// each with its stream and its start and end (ms from the step's start; an
/// entry starts where the one before it on its stream ended).
int traceStep(weft_step *step, unsigned lossIndex, int64_t runs, const std::string &jsonPath,
              weft_comm *comm = nullptr);

/// weft-run --time-segments and --trace-json after the steps, each rank
/// (`rank`, a multi-GPU run's) writing its own files (PATH.rankR).
/// `lossIndex`: the schedule index of the step's scalar loss; without one
/// both are refused (kExitUsage).
int timeAndTrace(const RunPackageOptions &options, weft_step *step,
                 std::optional<unsigned> lossIndex, std::optional<int> rank, weft_comm *comm);

} // namespace weft

#endif // WEFT_HOST_STEPTIMING_H
