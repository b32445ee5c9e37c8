// Copy-engine collectives of a one-node partitioned step: every rank's arena
// (one cuMemAlloc) and a small flag buffer are exported with CUDA IPC and
// opened by every other rank, so a buffer's peer address is the peer's arena
// base plus the buffer's offset (plans are SPMD: the same offset on every
// rank). An all-gather or all-to-all then pulls the peers' blocks with
// cuMemcpyDtoDAsync (the copy engines, no SMs), ordered by 32-bit flags the
// ranks write into each other's flag buffers with stream memory operations
// (capturable into a CUDA graph; every flag is reset to 0 after its wait, so
// a replayed graph needs no host-side epoch).
#ifndef WEFT_RUNTIME_PEERARENA_H
#define WEFT_RUNTIME_PEERARENA_H

#include "Driver.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace weft::runtime {

// Every rank's arena and flag buffer as mapped in this context (this rank's
// own: its local pointers). Inactive: the step's collectives all use NCCL.
struct PeerArenas {
  bool active = false;
  int rank = 0, worldSize = 0;
  uint64_t arenaBytes = 0;
  std::vector<CUdeviceptr> arenas, flags; // per world rank
  CUdeviceptr ownFlags = 0;               // allocated here, freed by releasePeerArenas
  uint32_t flagItems = 0;                 // collectives with flag slots
  // A non-blocking stream for unblockPeerWaits (the step's streams block on
  // the null stream, so a synchronous memset would wait behind the waits).
  CUstream unblockStream = nullptr;
  // More than one peer: a stream per peer for the pulls (forked from the
  // collective's stream by forkEvent, joined back by joinEvents).
  std::vector<CUstream> pullStreams;
  std::vector<CUevent> joinEvents;
  CUevent forkEvent = nullptr;
};

// A collective's two handshakes: "my input is ready" and "done reading yours".
enum class FlagPhase : uint32_t { Ready = 0, Done = 1 };

// The byte offset in a flag buffer of the slot that rank `from` writes for
// collective `item`'s `phase`.
uint64_t flagOffset(const PeerArenas &peers, uint32_t item, FlagPhase phase, int from);

// One copy-engine collective: WEFT_ALL_GATHER or WEFT_ALL_TO_ALL of `bytes`
// (the whole tensor) over the world ranks `members` (by group position), this
// rank at `position`; `send` lies in this rank's arena.
struct CopyCollective {
  int kind = 0;
  uint32_t item = 0;
  CUdeviceptr send = 0, recv = 0;
  uint64_t bytes = 0;
  std::vector<int> members;
  int position = 0;
};

// Whether `peers` can run a collective of `kind` whose input is at `send`
// (`sendBytes` long): active, a data-movement kind, the input in the arena.
bool copyEngineCan(const PeerArenas &peers, int kind, CUdeviceptr send, uint64_t sendBytes);

// Enqueues `call` on `stream`: ready flags to the peers, waits for theirs
// (each reset after), the pulls (with several peers on the pull streams,
// forked and joined by events), done flags to the peers, waits for theirs
// (so the input may be reused once the stream passes, as after NCCL).
weft_status enqueueCopyCollective(const DriverApi &cuda, const PeerArenas &peers,
                                  const CopyCollective &call, CUstream stream,
                                  const std::string &subject);

// An all-gather of `bytes` bytes from every world rank, in rank order, into
// `all` (worldSize * bytes): the run's communicator.
using GatherBytes = std::function<weft_status(const void *mine, void *all, size_t bytes)>;

// What each rank publishes in mapPeerArenas' first gather (host bytes, the
// same build on every rank of a node).
struct PeerRecord {
  char host[64];
  char busId[32]; // cuDeviceGetPCIBusId
  CUipcMemHandle arena, flags;
  uint64_t arenaBytes;
  int32_t refused; // this rank cannot take part (its verdict says why)
  int32_t pad;
};
// The second gather: whether a rank mapped every peer, else why not.
struct PeerVerdict {
  int32_t ok;
  char reason[252];
};
static_assert(sizeof(PeerRecord) % 4 == 0 && sizeof(PeerVerdict) == 256, "gathered as words");

struct PeerMapRequest {
  int engine = WEFT_COLLECTIVES_AUTO; // COPY_ENGINE: refusing is an error
  int rank = 0, worldSize = 0;
  CUdevice device = 0;
  CUdeviceptr arena = 0; // the step's own cuMemAlloc (0: none to export)
  uint64_t arenaBytes = 0;
  uint32_t flagItems = 0;
  std::string refusal; // why this rank cannot take part ("" when it can)
};

// Maps every rank's arena and flags into `peers` when every rank can (same
// node, peer access between every pair of devices, IPC handles open); two
// gathers, so every rank decides the same. Auto: inactive otherwise; copy
// engine forced: an error naming each rank that refused and why.
weft_status mapPeerArenas(const DriverApi &cuda, const PeerMapRequest &request,
                          const GatherBytes &gather, PeerArenas &peers);

// After an abort (a dead or hung peer, a timeout): sets every flag of this
// rank, so the streams waiting on peers that will never write run to their
// end and the step can be freed (cuStreamSynchronize, cuMemFree) without a
// hang. The copies after those waits then read stale data: the run failed.
void unblockPeerWaits(const DriverApi &cuda, const PeerArenas &peers);

// Closes the peers' mappings and frees this rank's flag buffer.
void releasePeerArenas(const DriverApi &cuda, PeerArenas &peers);

// "nccl", "copy-engine", "auto" -> weft_collective_engine; false otherwise.
bool parseCollectiveEngine(const std::string &text, int &engine);
// options.collectives with 0 resolved through $WEFT_COLLECTIVES (unset: NCCL).
weft_status resolveCollectiveEngine(int option, int &engine);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_PEERARENA_H
