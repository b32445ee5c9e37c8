// NCCL behind the runtime: libnccl is opened with dlopen at first use (as
// libcuda is), so programs linking the runtime start without it. A weft_comm
// is an NCCL communicator over every rank of a run plus the sub-communicators
// of grid axes (ncclCommSplit). The calls that wait for peers (init, split,
// finalize) run on a thread of their own, and every wait (on those, on a
// step's collectives) polls ncclCommGetAsyncError, a peer-failure flag the
// host's rendezvous sets, and a deadline, and aborts the communicators
// (ncclCommAbort) on any of them: a failed or dead peer is an error naming
// it, never a hang.
#ifndef WEFT_RUNTIME_NCCL_H
#define WEFT_RUNTIME_NCCL_H

#include "weft_runtime.h"

#include "Driver.h"
#include "PeerArena.h"

#include <nccl.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace weft::runtime {

#define WEFT_NCCL_ENTRY_POINTS(X)                                                                  \
  X(ncclGetVersion)                                                                                \
  X(ncclGetUniqueId)                                                                               \
  X(ncclCommInitRankConfig)                                                                        \
  X(ncclCommSplit)                                                                                 \
  X(ncclCommGetAsyncError)                                                                         \
  X(ncclCommAbort)                                                                                 \
  X(ncclCommDestroy)                                                                               \
  X(ncclCommFinalize)                                                                              \
  X(ncclGetErrorString)                                                                            \
  X(ncclGetLastError)                                                                              \
  X(ncclAllReduce)                                                                                 \
  X(ncclAllGather)                                                                                 \
  X(ncclReduceScatter)                                                                             \
  X(ncclSend)                                                                                      \
  X(ncclRecv)                                                                                      \
  X(ncclGroupStart)                                                                                \
  X(ncclGroupEnd)

struct NcclApi {
#define WEFT_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  WEFT_NCCL_ENTRY_POINTS(WEFT_NCCL_MEMBER)
#undef WEFT_NCCL_MEMBER
};

// Loads libnccl ($WEFT_LIBNCCL, else libnccl.so.2, else libnccl.so) once;
// WEFT_ERROR_LIBRARY_MISSING naming every path tried when it cannot.
weft_status requireNccl(const NcclApi *&api);

} // namespace weft::runtime

// A run's communicators. `world` spans every rank; `axes[mask]` the ranks
// that share every grid coordinate outside the axes of `mask` (built by
// weft_comm_split_grid, the world itself for all axes).
struct weft_comm {
  const weft::runtime::NcclApi *nccl = nullptr;
  const weft::runtime::DriverApi *cuda = nullptr;
  int worldSize = 0, rank = 0;
  double timeoutSeconds = 300;
  ncclComm_t world = nullptr;
  std::vector<int64_t> grid; // the grid the axes were split for
  std::map<uint32_t, ncclComm_t> axes;
  bool aborted = false;
  // weft_comm_barrier's stream and its one-element buffer (made at first use).
  CUstream barrierStream = nullptr;
  CUdeviceptr barrierBuffer = 0;
  // Set by weft_comm_peer_failed from any thread (the host's heartbeat).
  std::atomic<bool> peerFailed{false};
  std::mutex peerMutex;
  std::string peerMessage;
  // weft_comm_map_region: every rank's region, for weft_comm_collective's
  // copy-engine all-gathers and all-to-alls (inactive until mapped).
  weft::runtime::PeerArenas region;
};

namespace weft::runtime {

// "collective 3 (all_reduce ...)" and the like: what a wait is for, asked
// only when the wait fails (the in-flight collective is known then).
using WaitSubject = std::function<std::string()>;

// Waits until `done()` (polled) is true, checking the communicators, the
// peer flag and the timeout in between; on a failure aborts every
// communicator and returns an error naming the rank, `subject()` and the
// cause. `done` returns a CUresult-like status: 1 done, 0 not yet, < 0 a
// driver error (already recorded).
weft_status waitWatched(weft_comm &comm, const std::function<int()> &done,
                        const WaitSubject &subject);

// A waitWatched `done` for the work queued on `stream` (or up to `event`
// when it is not null): 1 done, 0 not yet, -1 a driver error (recorded,
// naming `what`).
std::function<int()> queryDone(const DriverApi &cuda, CUstream stream, CUevent event,
                               std::string what);

// An all-gather of `bytes` host bytes from every rank of the world, in rank
// order, into `all` (worldSize * bytes), through a device buffer on
// `stream`, waited for with the watch: the peer-arena handle exchange.
weft_status gatherHostBytes(weft_comm &comm, CUstream stream, const void *mine, void *all,
                            size_t bytes);

// The communicator of grid axes `mask` (bit i: axis i); the world's when the
// mask covers every axis of a one-communicator grid.
weft_status commForAxes(weft_comm &comm, uint32_t mask, ncclComm_t &out);

// NCCL's element type and reduction for the package's.
bool ncclTypeOf(int dtype, ncclDataType_t &type); // weft_dtype or -1 for f64
ncclRedOp_t ncclOpOf(int reduction);              // 0 sum, 1 max, 2 min, 3 avg

// One collective of a group of `ranks` ranks, this one at `position` in it
// (the package's layout: pkg::Collective). `count` counts the elements of
// the whole tensor; `shift` and `rotate` are a send_recv's.
struct CollectiveCall {
  int kind = WEFT_ALL_REDUCE; // weft_collective_kind, the package's kinds
  const void *send = nullptr;
  void *recv = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int ranks = 1, position = 0;
  int64_t shift = 0;
  bool rotate = false;
};

// Enqueues `call` on `stream`: an NCCL collective, or for all_to_all and
// send_recv NCCL's send and receive calls in one group (a send_recv's rank
// without a source zeroes its output first, cuMemsetD8Async).
weft_status enqueueCollective(weft_comm &comm, ncclComm_t nccl, const CollectiveCall &call,
                              CUstream stream, const WaitSubject &subject);

// The positions a send_recv at `position` of `ranks` sends to and receives
// from: `shift` ahead and behind, wrapping with `rotate`, else -1 past the
// ends.
void shiftPeers(int position, int ranks, int64_t shift, bool rotate, int &to, int &from);

// Splits the world into the communicators of each axes mask over `grid`
// (row-major ranks, the last axis fastest); every rank calls it with the same
// grid and masks in the same order.
weft_status splitGrid(weft_comm &comm, const std::vector<int64_t> &grid,
                      const std::vector<uint32_t> &masks);

// Ranks in the communicator of `mask` over `grid`.
int ranksAlong(const std::vector<int64_t> &grid, uint32_t mask);
// World rank `rank`'s position in its communicator of `mask` over `grid`:
// its coordinates along the mask's axes, row-major (ncclCommSplit keys the
// ranks by world rank).
int groupPosition(const std::vector<int64_t> &grid, uint32_t mask, int rank);
// The world ranks of world rank `rank`'s communicator of `mask` over `grid`,
// by position in it.
std::vector<int> groupMembers(const std::vector<int64_t> &grid, uint32_t mask, int rank);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_NCCL_H
