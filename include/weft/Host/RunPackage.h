// Running a compiled step (weft-run STEP.weftpkg) through the runtime
// (weft_step_*): steps of inputs from an .npz, state files (--load-state,
// --save-state, --init-state), carried weight copies and split masters. No
// MLIR: the PyTorch plugin and the multi-GPU launcher bind steps the same way.
#ifndef WEFT_HOST_RUNPACKAGE_H
#define WEFT_HOST_RUNPACKAGE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace weft {

struct RunPackageOptions {
  std::string path;
  int64_t steps = 1;
  std::string data;      // per-step inputs: arg<i> with a leading step dim
  std::string loadState; // parameters / optimizer state by buffer name
  std::string saveState;
  std::string outputs;   // the last step's results as res<i>
  bool graph = false;
  bool debugBuffers = false;
  bool printMemory = false;
  /// Resolve and print the step for a device of `sm` without a GPU.
  bool dryRun = false;
  int sm = 0; // 0: the package's own arch
  int device = 0;
  bool deviceGiven = false; // else a multi-GPU rank takes LOCAL_RANK
  /// Seconds a rank waits for a collective, a peer or the rendezvous.
  double collectiveTimeout = 300;
  /// "nccl", "copy-engine", "auto" (weft_step_options.collectives); "": the
  /// runtime's default ($WEFT_COLLECTIVES, else NCCL).
  std::string collectives;
  /// "normal", "high" (weft_step_options.comm_priority); "": the runtime's
  /// default ($WEFT_COMM_PRIORITY, else normal).
  std::string commPriority;
  /// SMs the GEMMs beside a collective leave to it
  /// (weft_step_options.gemm_sm_margin); -1: the runtime's default
  /// ($WEFT_GEMM_SM_MARGIN, else none).
  int gemmSmMargin = -1;
  /// >= 0: parameters and optimizer state that no file gives are drawn on
  /// the host from this seed (StepTiming.h: drawStateBytes).
  int64_t initState = -1;
  /// > 0: after the steps, this many runs with an event after every schedule
  /// entry: forward / backward / optimizer medians (StepTiming.h).
  int64_t timeSegments = 0;
  std::string timingJson; // per-entry medians of --time-segments
  std::string traceJson;  // --trace-json: one overlapped run's entry times
};

/// True when `path` starts with the package magic (so weft-run treats it as
/// a package rather than IR).
bool isPackageFile(llvm::StringRef path);

/// Loads and runs the package: on one GPU, or, when WORLD_SIZE is set (by
/// torchrun or --nproc-per-node), as one rank of a partitioned step whose
/// inputs and state files hold the whole tensors (or per-rank shards with an
/// index, Shards.h) and whose --save-state / --outputs are per-rank shards.
/// Returns an ExitCode (ExitCode.h): 0 ok, 1 the
/// run failed, 2 usage or input error, with the error printed.
int runPackage(const RunPackageOptions &options);

} // namespace weft

#endif // WEFT_HOST_RUNPACKAGE_H
