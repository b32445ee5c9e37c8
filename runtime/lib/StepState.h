// The state of a loaded step (struct weft_step), shared by Step.cpp (one
// GPU) and SpmdStep.cpp (the collectives of a partitioned step).
#ifndef WEFT_RUNTIME_STEPSTATE_H
#define WEFT_RUNTIME_STEPSTATE_H

#include "Driver.h"
#include "Nccl.h"
#include "PeerArena.h"
#include "PreparedStep.h"

#include <functional>
#include <string>
#include <vector>

namespace weft::runtime {
// Argument blobs are arrays of these, so CUtensorMaps inside are 64-byte
// aligned as the driver requires.
struct alignas(64) BlobChunk {
  unsigned char bytes[64];
};

} // namespace weft::runtime

struct weft_step {
  weft::runtime::PreparedStep prepared;
  std::string description;
  bool loaded = false; // device resources exist (weft_step_load, not _prepare)
  const weft::runtime::DriverApi *api = nullptr;
  CUcontext context = nullptr;
  CUdeviceptr arena = 0;
  std::vector<CUdeviceptr> debugAllocations;
  std::vector<CUdeviceptr> address; // per buffer
  std::vector<weft_module *> modules; // per package image (null when unused)
  std::vector<CUfunction> functions;  // per kernel
  std::vector<std::vector<weft::runtime::BlobChunk>> blobs;
  std::vector<std::vector<void *>> params;
  std::vector<size_t> gemmWorkspace; // bytes per GEMM
  // Per GEMM, the SMs it targets beside a collective (0: the device's).
  std::vector<int> gemmSms;
  std::vector<CUstream> streams;
  std::vector<CUevent> events, forks, joins;
  std::vector<CUevent> timing; // weft_step_run_timed: one before and one after each entry
  // options.stream: recorded on the caller's stream before a run (stream 0
  // waits for it) and on stream 0 after it (the caller's stream waits).
  CUevent callerReady = nullptr, stepDone = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec graphExec = nullptr;
  weft_step_memory memory = {};
  // A partitioned step (weft_step_load_spmd): the run's communicators (not
  // owned), per collective its communicator, ranks, position and an event recorded
  // after it (which one was in flight when a wait fails), and the runs so far.
  weft_comm *comm = nullptr;
  std::vector<ncclComm_t> collectiveComms;
  std::vector<ncclDataType_t> collectiveTypes;
  std::vector<int> collectiveRanks;
  std::vector<int> collectivePositions; // this rank's place in each one's group
  std::vector<CUevent> collectiveDone;
  // The copy-engine path (weft_step_options.collectives): the ranks' mapped
  // arenas, and per collective its group's world ranks by position.
  weft::runtime::PeerArenas peers;
  std::vector<std::vector<int>> collectiveMembers;
  unsigned long long runs = 0;
};

namespace weft::runtime {

// SpmdStep.cpp: splits the communicators the collectives need and creates
// their events (after the streams exist).
weft_status prepareCollectives(weft_step &step);
// Enqueues collective `item` on `stream` and records its event.
weft_status issueCollective(weft_step &step, uint32_t item, CUstream stream);
// Step.cpp, exposed for the host-side tests over a recording driver table:
// the buffers' addresses (the one arena: allocated, or the caller's), and
// the streams and events of a run.
weft_status allocateBuffers(weft_step &step);
weft_status createStreams(weft_step &step);
// StepBinding.cpp: every launch's argument blob (addresses, immediates,
// tensor maps encoded once) at load; a bound buffer not yet bound is left
// null there and filled in by weft_step_bind_device.
weft_status bindArguments(weft_step &step);
// WEFT_ERROR_INVALID_ARGUMENT naming the first bound buffer the caller has
// not bound yet (and how many are missing), before `what` uses them.
weft_status requireBound(const weft_step &step, const char *what);
// Shared with StepTiming.cpp: the cuMemGetInfo reading (`used`, and the
// peak); the schedule issued on the step's streams (`afterEntry` after each
// entry); the step's context made current (refusing a prepared-only step);
// with options.stream, stream 0 after the caller's work, and the caller's
// stream after the step.
weft_status readMemory(weft_step &step, size_t &used);
weft_status issue(weft_step &step,
                  const std::function<weft_status(size_t)> &afterEntry = nullptr);
weft_status makeCurrent(weft_step &step, const char *caller);
weft_status followCaller(weft_step &step);
/// WEFT_ERROR_INVALID_ARGUMENT naming `caller` when `step` is NULL or has
/// no buffer `index`.
weft_status checkBuffer(const weft_step *step, size_t index, const char *caller);
weft_status rejoinCaller(weft_step &step);
// Waits for `until` (an event; null: stream 0): cuStreamSynchronize for a one-GPU step, the
// communicator's watched wait (errors, dead peers, timeout) for a partitioned one.
weft_status waitForStep(weft_step &step, CUevent until, const char *what);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_STEPSTATE_H
