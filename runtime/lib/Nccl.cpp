// NCCL opened with dlopen, communicators whose peer-waiting calls run on a
// thread of their own, and the watched wait: every wait on a communicator
// polls ncclCommGetAsyncError, the peer-failure flag and a deadline, and
// aborts the communicators on any of them.
#include "Nccl.h"
#include "Status.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <thread>
#include <utility>

namespace weft::runtime {

namespace {

std::mutex ncclMutex;
NcclApi ncclApi;
std::atomic<bool> ncclReady{false};

weft_status loadLocked() {
  std::vector<std::string> candidates;
  const char *override = std::getenv("WEFT_LIBNCCL");
  if (override && *override)
    candidates.push_back(override);
  else
    candidates = {"libnccl.so.2", "libnccl.so"};
  std::string tried;
  for (const std::string &path : candidates) {
    dlerror();
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      tried += format("\n  %s: %s", path.c_str(), why ? why : "unknown dlopen error");
      continue;
    }
    NcclApi api;
#define WEFT_RESOLVE(name)                                                                         \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));                          \
  if (!api.name) {                                                                                 \
    dlclose(handle);                                                                               \
    return fail(WEFT_ERROR_LIBRARY_MISSING,                                                        \
                format("%s is not a usable NCCL: it has no entry point %s (NCCL 2.18 or newer "    \
                       "is needed)",                                                               \
                       path.c_str(), #name));                                                      \
  }
    WEFT_NCCL_ENTRY_POINTS(WEFT_RESOLVE)
#undef WEFT_RESOLVE
    ncclApi = api;
    ncclReady.store(true, std::memory_order_release);
    return WEFT_OK;
  }
  return fail(WEFT_ERROR_LIBRARY_MISSING,
              format("cannot load NCCL (WEFT_LIBNCCL may name the library's path); tried:%s",
                     tried.c_str()));
}

std::string resultText(const NcclApi &nccl, ncclResult_t result, ncclComm_t comm) {
  std::string text = format("%s (%d)", nccl.ncclGetErrorString(result), int(result));
  const char *last = nccl.ncclGetLastError(comm);
  if (last && *last)
    text += std::string(": ") + last;
  return text;
}

std::vector<ncclComm_t> allComms(const weft_comm &comm) {
  std::vector<ncclComm_t> comms;
  for (const auto &[mask, sub] : comm.axes)
    if (sub && sub != comm.world)
      comms.push_back(sub);
  if (comm.world)
    comms.push_back(comm.world);
  return comms;
}

void abortAll(weft_comm &comm) {
  if (comm.aborted)
    return;
  comm.aborted = true;
  for (ncclComm_t c : allComms(comm))
    comm.nccl->ncclCommAbort(c);
}

// Blocking communicators: a nonblocking one hands every enqueue to a helper
// thread (tens of microseconds a collective). The calls that wait for peers
// (init, split, finalize) run on a thread of their own instead (bounded).
ncclConfig_t blockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  return config;
}

// Runs `call` (init, split, finalize: NCCL calls that wait for every peer) on
// a thread with `context` current, waited for with the watch: a peer that
// never comes is a timeout or a peer failure, not a hang. On a failure the
// thread is left behind (the process is failing; it owns its state).
weft_status bounded(weft_comm &comm, std::function<ncclResult_t(ncclComm_t *)> call,
                    ncclComm_t &out, const WaitSubject &subject) {
  struct State {
    std::atomic<bool> done{false};
    ncclResult_t result = ncclSuccess;
    ncclComm_t comm = nullptr;
  };
  auto state = std::make_shared<State>();
  CUcontext context = nullptr;
  comm.cuda->cuCtxGetCurrent(&context);
  const DriverApi *cuda = comm.cuda;
  std::thread([state, call, context, cuda]() {
    cuda->cuCtxSetCurrent(context);
    state->result = call(&state->comm);
    state->done.store(true, std::memory_order_release);
  }).detach();
  if (weft_status status = waitWatched(
          comm, [&]() { return state->done.load(std::memory_order_acquire) ? 1 : 0; },
          subject))
    return status;
  if (state->result != ncclSuccess) {
    std::string message = format("rank %d: %s: NCCL failed: %s", comm.rank, subject().c_str(),
                                 resultText(*comm.nccl, state->result, state->comm).c_str());
    abortAll(comm);
    return fail(WEFT_ERROR_NCCL, message);
  }
  out = state->comm;
  return WEFT_OK;
}

weft_status checkComm(weft_comm *comm, const char *caller) {
  if (!comm)
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: comm is NULL", caller));
  if (comm->aborted)
    return fail(WEFT_ERROR_NCCL, format("%s: rank %d: the communicator was aborted after an "
                                        "earlier failure",
                                        caller, comm->rank));
  return WEFT_OK;
}

} // namespace

weft_status requireNccl(const NcclApi *&api) {
  if (!ncclReady.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(ncclMutex);
    if (!ncclReady.load(std::memory_order_relaxed))
      if (weft_status status = loadLocked())
        return status;
  }
  api = &ncclApi;
  return WEFT_OK;
}

weft_status waitWatched(weft_comm &comm, const std::function<int()> &done,
                        const WaitSubject &subject) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  for (unsigned polls = 0;; ++polls) {
    int state = done();
    if (state > 0)
      return WEFT_OK;
    if (state < 0) {
      // A driver error (recorded): the peers learn of it when this rank exits.
      std::string message = weft_last_error();
      abortAll(comm);
      return fail(WEFT_ERROR_CUDA, format("rank %d: %s: %s", comm.rank, subject().c_str(),
                                          message.c_str()));
    }
    for (ncclComm_t c : allComms(comm)) {
      ncclResult_t async = ncclSuccess;
      comm.nccl->ncclCommGetAsyncError(c, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        std::string message =
            format("rank %d: %s: NCCL reported an error: %s; the communicators were aborted",
                   comm.rank, subject().c_str(), resultText(*comm.nccl, async, c).c_str());
        abortAll(comm);
        return fail(WEFT_ERROR_NCCL, message);
      }
    }
    if (comm.peerFailed.load(std::memory_order_acquire)) {
      std::string peer;
      {
        std::lock_guard<std::mutex> lock(comm.peerMutex);
        peer = comm.peerMessage;
      }
      std::string message = format("rank %d: %s: %s; the communicators were aborted", comm.rank,
                                   subject().c_str(), peer.c_str());
      abortAll(comm);
      return fail(WEFT_ERROR_PEER_FAILED, message);
    }
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed > comm.timeoutSeconds) {
      std::string message =
          format("rank %d: %s did not finish within the collective timeout of %.0f s (a peer "
                 "rank stopped, hung or never joined); the communicators were aborted",
                 comm.rank, subject().c_str(), comm.timeoutSeconds);
      abortAll(comm);
      return fail(WEFT_ERROR_TIMEOUT, message);
    }
    // Spin briefly (a step's tail), then sleep so a long wait costs no core.
    if (polls > 2000)
      std::this_thread::sleep_for(std::chrono::microseconds(polls > 20000 ? 1000 : 50));
  }
}

std::function<int()> queryDone(const DriverApi &cuda, CUstream stream, CUevent event,
                               std::string what) {
  return [&cuda, stream, event, what = std::move(what)]() {
    CUresult result = event ? cuda.cuEventQuery(event) : cuda.cuStreamQuery(stream);
    if (result == CUDA_ERROR_NOT_READY)
      return 0;
    if (result != CUDA_SUCCESS) {
      failCuda(result, format("after %s (a kernel, GEMM or collective failed)", what.c_str()));
      return -1;
    }
    return 1;
  };
}

int ranksAlong(const std::vector<int64_t> &grid, uint32_t mask) {
  int64_t ranks = 1;
  for (size_t axis = 0; axis < grid.size(); ++axis)
    if (mask >> axis & 1)
      ranks *= grid[axis];
  return int(ranks);
}

int groupPosition(const std::vector<int64_t> &grid, uint32_t mask, int rank) {
  std::vector<int64_t> coords(grid.size());
  int64_t rest = rank;
  for (size_t axis = grid.size(); axis-- > 0;) {
    coords[axis] = rest % grid[axis];
    rest /= grid[axis];
  }
  int64_t position = 0;
  for (size_t axis = 0; axis < grid.size(); ++axis)
    if (mask >> axis & 1)
      position = position * grid[axis] + coords[axis];
  return int(position);
}

std::vector<int> groupMembers(const std::vector<int64_t> &grid, uint32_t mask, int rank) {
  int world = 1;
  for (int64_t size : grid)
    world *= int(size);
  int ranks = ranksAlong(grid, mask);
  std::vector<int> members(size_t(ranks), -1);
  // The ranks sharing every coordinate outside the mask, placed by position.
  uint32_t outside = ~mask & ((1u << grid.size()) - 1);
  int ours = groupPosition(grid, outside, rank);
  for (int other = 0; other < world; ++other)
    if (groupPosition(grid, outside, other) == ours)
      members[size_t(groupPosition(grid, mask, other))] = other;
  return members;
}

weft_status commForAxes(weft_comm &comm, uint32_t mask, ncclComm_t &out) {
  if (ranksAlong(comm.grid, mask) == comm.worldSize) {
    out = comm.world;
    return WEFT_OK;
  }
  auto it = comm.axes.find(mask);
  if (it == comm.axes.end())
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("rank %d: no communicator for grid axes mask %u", comm.rank, mask));
  out = it->second;
  return WEFT_OK;
}

bool ncclTypeOf(int dtype, ncclDataType_t &type) {
  switch (dtype) {
  case WEFT_DTYPE_F32:
    type = ncclFloat32;
    return true;
  case WEFT_DTYPE_BF16:
    type = ncclBfloat16;
    return true;
  case WEFT_DTYPE_F16:
    type = ncclFloat16;
    return true;
  case -1:
    type = ncclFloat64;
    return true;
  }
  return false;
}

ncclRedOp_t ncclOpOf(int reduction) {
  switch (reduction) {
  case WEFT_REDUCE_MAX:
    return ncclMax;
  case WEFT_REDUCE_MIN:
    return ncclMin;
  case WEFT_REDUCE_AVG:
    return ncclAvg;
  default:
    return ncclSum;
  }
}

void shiftPeers(int position, int ranks, int64_t shift, bool rotate, int &to, int &from) {
  auto place = [&](int64_t at) {
    if (rotate)
      return int(((at % ranks) + ranks) % ranks);
    return at >= 0 && at < ranks ? int(at) : -1;
  };
  to = place(int64_t(position) + shift);
  from = place(int64_t(position) - shift);
}

namespace {

size_t typeBytes(ncclDataType_t type) {
  switch (type) {
  case ncclFloat64:
    return 8;
  case ncclFloat32:
    return 4;
  default:
    return 2; // bf16, f16: ncclTypeOf makes no others
  }
}

// all_to_all and send_recv: NCCL's sends and receives of one group, which
// NCCL runs together (no peer waits for another's earlier call).
ncclResult_t enqueueGroup(weft_comm &comm, ncclComm_t nccl, const CollectiveCall &call,
                          CUstream stream, const WaitSubject &subject, weft_status &status) {
  const NcclApi &api = *comm.nccl;
  auto cudaStream = reinterpret_cast<cudaStream_t>(stream);
  size_t bytes = typeBytes(call.type);
  struct Transfer {
    bool send;
    int peer;
    size_t byteOffset, count;
  };
  std::vector<Transfer> transfers;
  if (call.kind == WEFT_ALL_TO_ALL) {
    size_t block = call.count / size_t(call.ranks);
    for (int peer = 0; peer < call.ranks; ++peer) {
      transfers.push_back({true, peer, size_t(peer) * block * bytes, block});
      transfers.push_back({false, peer, size_t(peer) * block * bytes, block});
    }
  } else {
    int to = -1, from = -1;
    shiftPeers(call.position, call.ranks, call.shift, call.rotate, to, from);
    if (to >= 0)
      transfers.push_back({true, to, 0, call.count});
    if (from >= 0) {
      transfers.push_back({false, from, 0, call.count});
    } else if (CUresult result = comm.cuda->cuMemsetD8Async(
                   CUdeviceptr(uintptr_t(call.recv)), 0, call.count * bytes, stream)) {
      // The reference's shard.shift: a rank with no source gets zeros.
      status = failCuda(result, format("rank %d: %s: zeroing the output of a rank with no "
                                       "source (cuMemsetD8Async)",
                                       comm.rank, subject().c_str()));
      return ncclSuccess;
    }
  }
  ncclResult_t result = api.ncclGroupStart();
  if (result != ncclSuccess)
    return result;
  for (const Transfer &t : transfers) {
    result = t.send ? api.ncclSend(static_cast<const char *>(call.send) + t.byteOffset, t.count,
                                   call.type, t.peer, nccl, cudaStream)
                    : api.ncclRecv(static_cast<char *>(call.recv) + t.byteOffset, t.count,
                                   call.type, t.peer, nccl, cudaStream);
    if (result != ncclSuccess)
      break;
  }
  ncclResult_t end = api.ncclGroupEnd(); // closes the group even after a failed call
  return result != ncclSuccess ? result : end;
}

} // namespace

weft_status enqueueCollective(weft_comm &comm, ncclComm_t nccl, const CollectiveCall &call,
                              CUstream stream, const WaitSubject &subject) {
  // Whole buffers for all_reduce and send_recv; one block per rank otherwise.
  bool blocks = call.kind != WEFT_ALL_REDUCE && call.kind != WEFT_SEND_RECV;
  if (call.ranks < 1 || (blocks && call.count % size_t(call.ranks) != 0))
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("rank %d: %s: count %zu is not a multiple of its %d ranks", comm.rank,
                       subject().c_str(), call.count, call.ranks));
  if (call.position < 0 || call.position >= call.ranks)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("rank %d: %s: position %d is outside its group of %d ranks", comm.rank,
                       subject().c_str(), call.position, call.ranks));
  if (call.kind == WEFT_SEND_RECV &&
      (call.shift == 0 || call.shift <= -call.ranks || call.shift >= call.ranks))
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("rank %d: %s: shift %lld is not a nonzero shift of magnitude below its "
                       "%d ranks",
                       comm.rank, subject().c_str(), (long long)call.shift, call.ranks));
  const NcclApi &api = *comm.nccl;
  auto cudaStream = reinterpret_cast<cudaStream_t>(stream);
  size_t part = call.count / size_t(call.ranks);
  ncclResult_t result = ncclSuccess;
  weft_status status = WEFT_OK;
  switch (call.kind) {
  case WEFT_ALL_REDUCE:
    result = api.ncclAllReduce(call.send, call.recv, call.count, call.type, call.op, nccl,
                               cudaStream);
    break;
  case WEFT_ALL_GATHER:
    result = api.ncclAllGather(call.send, call.recv, part, call.type, nccl, cudaStream);
    break;
  case WEFT_REDUCE_SCATTER:
    result = api.ncclReduceScatter(call.send, call.recv, part, call.type, call.op, nccl,
                                   cudaStream);
    break;
  case WEFT_ALL_TO_ALL:
  case WEFT_SEND_RECV:
    result = enqueueGroup(comm, nccl, call, stream, subject, status);
    break;
  default:
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("rank %d: %s: collective kind %d is not one of 0-4", comm.rank,
                       subject().c_str(), call.kind));
  }
  if (status != WEFT_OK) {
    abortAll(comm); // peers wait in this collective: they learn of it through the abort
    return status;
  }
  if (result != ncclSuccess) { // blocking communicators: never ncclInProgress
    std::string message = format("rank %d: %s: enqueueing it failed: %s", comm.rank,
                                 subject().c_str(), resultText(api, result, nccl).c_str());
    abortAll(comm);
    return fail(WEFT_ERROR_NCCL, message);
  }
  return WEFT_OK;
}

weft_status gatherHostBytes(weft_comm &comm, CUstream stream, const void *mine, void *all,
                            size_t bytes) {
  const DriverApi &api = *comm.cuda;
  size_t total = bytes * size_t(comm.worldSize);
  CUdeviceptr buffer = 0;
  if (CUresult result = api.cuMemAlloc_v2(&buffer, total))
    return failCuda(result, "cuMemAlloc (the peer-arena exchange)");
  auto subject = [] { return std::string("exchanging the peer arenas' IPC handles"); };
  CollectiveCall call;
  call.kind = WEFT_ALL_GATHER;
  call.send = reinterpret_cast<const void *>(uintptr_t(buffer + bytes * size_t(comm.rank)));
  call.recv = reinterpret_cast<void *>(uintptr_t(buffer));
  call.count = total / 4; // the records are whole 32-bit words
  call.type = ncclFloat32;
  call.ranks = comm.worldSize;
  call.position = comm.rank;
  weft_status status = WEFT_OK;
  if (CUresult result = api.cuMemcpyHtoD_v2(buffer + bytes * size_t(comm.rank), mine, bytes))
    status = failCuda(result, "cuMemcpyHtoD (the peer-arena exchange)");
  if (!status)
    status = enqueueCollective(comm, comm.world, call, stream, subject);
  if (!status)
    status = waitWatched(comm, queryDone(api, stream, nullptr, subject()), subject);
  if (!status)
    if (CUresult result = api.cuMemcpyDtoH_v2(all, buffer, total))
      status = failCuda(result, "cuMemcpyDtoH (the peer-arena exchange)");
  api.cuMemFree_v2(buffer);
  return status;
}

// Splits the world into the communicators of each axes mask of `masks` over
// `grid` (row-major ranks, the last axis fastest): ranks with the same
// coordinates outside the mask share one. Every rank calls this with the
// same grid and masks, in the same order (one package).
weft_status splitGrid(weft_comm &comm, const std::vector<int64_t> &grid,
                      const std::vector<uint32_t> &masks) {
  comm.grid = grid;
  std::vector<int64_t> coords(grid.size());
  int64_t rest = comm.rank;
  for (size_t axis = grid.size(); axis-- > 0;) {
    coords[axis] = rest % grid[axis];
    rest /= grid[axis];
  }
  for (uint32_t mask : masks) {
    if (ranksAlong(grid, mask) == comm.worldSize || comm.axes.count(mask))
      continue;
    int color = 0;
    for (size_t axis = 0; axis < grid.size(); ++axis)
      if (!(mask >> axis & 1))
        color = color * int(grid[axis]) + int(coords[axis]);
    ncclComm_t sub = nullptr;
    auto subject = [&]() { return format("splitting the communicator of grid axes %u", mask); };
    const NcclApi *api = comm.nccl;
    ncclComm_t world = comm.world;
    int rank = comm.rank;
    if (weft_status status = bounded(
            comm,
            [=](ncclComm_t *made) {
              ncclConfig_t config = blockingConfig();
              return api->ncclCommSplit(world, color, rank, made, &config);
            },
            sub, subject))
      return status;
    comm.axes[mask] = sub;
  }
  return WEFT_OK;
}

} // namespace weft::runtime

using namespace weft::runtime;

extern "C" {

weft_status weft_nccl_version(int *version) {
  return apiCall("weft_nccl_version", [&]() -> weft_status {
    if (!version)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_nccl_version: version is NULL");
    const NcclApi *api = nullptr;
    if (weft_status status = requireNccl(api))
      return status;
    if (ncclResult_t result = api->ncclGetVersion(version))
      return fail(WEFT_ERROR_NCCL, format("ncclGetVersion: %s", api->ncclGetErrorString(result)));
    return WEFT_OK;
  });
}

weft_status weft_nccl_unique_id(weft_nccl_id *id) {
  return apiCall("weft_nccl_unique_id", [&]() -> weft_status {
    static_assert(sizeof(weft_nccl_id) == sizeof(ncclUniqueId), "ncclUniqueId is 128 bytes");
    if (!id)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_nccl_unique_id: id is NULL");
    const NcclApi *api = nullptr;
    if (weft_status status = requireNccl(api))
      return status;
    ncclUniqueId unique;
    if (ncclResult_t result = api->ncclGetUniqueId(&unique))
      return fail(WEFT_ERROR_NCCL,
                  format("ncclGetUniqueId: %s", resultText(*api, result, nullptr).c_str()));
    std::memcpy(id->bytes, &unique, sizeof(unique));
    return WEFT_OK;
  });
}

weft_status weft_comm_init(const weft_nccl_id *id, int world_size, int rank, double timeout_s,
                           weft_comm **out) {
  return apiCall("weft_comm_init", [&]() -> weft_status {
    if (!id || !out)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_comm_init: %s is NULL", !id ? "id" : "out"));
    *out = nullptr;
    if (world_size < 1 || rank < 0 || rank >= world_size || !(timeout_s > 0))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_comm_init: rank %d of %d ranks with timeout %g s: the rank must "
                         "be in [0, world size), the timeout positive",
                         rank, world_size, timeout_s));
    auto comm = std::make_unique<weft_comm>();
    if (weft_status status = requireDriver(comm->cuda))
      return status;
    if (weft_status status = requireNccl(comm->nccl))
      return status;
    CUdevice device;
    if (weft_status status = currentDevice(*comm->cuda, device, "weft_comm_init"))
      return status;
    comm->worldSize = world_size;
    comm->rank = rank;
    comm->timeoutSeconds = timeout_s;
    comm->grid = {world_size};
    ncclUniqueId unique;
    std::memcpy(&unique, id->bytes, sizeof(unique));
    const NcclApi *api = comm->nccl;
    if (weft_status status = bounded(
            *comm,
            [=](ncclComm_t *made) {
              ncclConfig_t config = blockingConfig();
              return api->ncclCommInitRankConfig(made, world_size, unique, rank, &config);
            },
            comm->world, [&]() {
              return format("joining the communicator of %d ranks (ncclCommInitRankConfig)",
                            world_size);
            }))
      return status;
    *out = comm.release();
    return WEFT_OK;
  });
}

weft_status weft_comm_set_timeout(weft_comm *comm, double timeout_s) {
  return apiCall("weft_comm_set_timeout", [&]() -> weft_status {
    if (!comm || !(timeout_s > 0))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_comm_set_timeout: %s", !comm ? "comm is NULL"
                                                           : "the timeout must be positive"));
    comm->timeoutSeconds = timeout_s;
    return WEFT_OK;
  });
}

void weft_comm_peer_failed(weft_comm *comm, int peer, const char *reason) {
  if (!comm)
    return;
  {
    std::lock_guard<std::mutex> lock(comm->peerMutex);
    if (!comm->peerFailed.load(std::memory_order_relaxed))
      comm->peerMessage = format("rank %d failed: %s", peer, reason ? reason : "no reason given");
  }
  comm->peerFailed.store(true, std::memory_order_release);
}

weft_status weft_comm_abort(weft_comm *comm) {
  return apiCall("weft_comm_abort", [&]() -> weft_status {
    if (!comm)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_comm_abort: comm is NULL");
    abortAll(*comm);
    return WEFT_OK;
  });
}

weft_status weft_comm_free(weft_comm *comm) {
  return apiCall("weft_comm_free", [&]() -> weft_status {
    if (!comm)
      return WEFT_OK;
    std::unique_ptr<weft_comm> owned(comm);
    weft_status status = WEFT_OK;
    if (comm->aborted)
      unblockPeerWaits(*comm->cuda, comm->region);
    releasePeerArenas(*comm->cuda, comm->region);
    if (comm->barrierStream)
      comm->cuda->cuStreamDestroy_v2(comm->barrierStream);
    if (comm->barrierBuffer)
      comm->cuda->cuMemFree_v2(comm->barrierBuffer);
    for (ncclComm_t c : allComms(*comm)) {
      if (comm->aborted)
        break;
      const NcclApi *api = comm->nccl;
      ncclComm_t unused = nullptr;
      if ((status = bounded(
               *comm, [=](ncclComm_t *) { return api->ncclCommFinalize(c); }, unused,
               [] { return std::string("finalizing a communicator (ncclCommFinalize)"); })))
        break;
    }
    if (comm->aborted)
      return status;
    for (ncclComm_t c : allComms(*comm))
      comm->nccl->ncclCommDestroy(c);
    return status;
  });
}

int weft_comm_rank(const weft_comm *comm) { return comm ? comm->rank : -1; }
int weft_comm_size(const weft_comm *comm) { return comm ? comm->worldSize : 0; }

weft_status weft_comm_collective(weft_comm *comm, weft_collective_kind kind, const void *send,
                                 void *recv, size_t count, weft_dtype dtype,
                                 weft_reduction reduction, CUstream stream) {
  return apiCall("weft_comm_collective", [&]() -> weft_status {
    if (weft_status status = checkComm(comm, "weft_comm_collective"))
      return status;
    if (kind == WEFT_SEND_RECV)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  "weft_comm_collective: send_recv needs a shift: call weft_comm_shift");
    ncclDataType_t type;
    if (kind < WEFT_ALL_REDUCE || kind > WEFT_ALL_TO_ALL || !ncclTypeOf(dtype, type) ||
        reduction < WEFT_REDUCE_SUM || reduction > WEFT_REDUCE_AVG || !send || !recv)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_comm_collective: kind %d, dtype %d, reduction %d, send %p, recv "
                         "%p: kind 0-3, dtype f32/bf16/f16, reduction 0-3 and both buffers "
                         "are required",
                         int(kind), int(dtype), int(reduction), send, recv));
    if (kind == WEFT_ALL_TO_ALL && send == recv)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  "weft_comm_collective: all_to_all cannot run in place (send == recv)");
    const char *names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
    CollectiveCall call;
    call.kind = kind;
    call.send = send;
    call.recv = recv;
    call.count = count;
    call.type = type;
    call.op = ncclOpOf(reduction);
    call.ranks = comm->worldSize;
    call.position = comm->rank;
    auto subject = [&]() { return format("%s of %zu elements", names[kind], count); };
    uint64_t bytes = uint64_t(count) * typeBytes(type);
    uint64_t sendBytes = kind == WEFT_ALL_GATHER ? bytes / uint64_t(comm->worldSize) : bytes;
    CUdeviceptr sendPointer = CUdeviceptr(uintptr_t(send));
    if (count % size_t(comm->worldSize) == 0 &&
        copyEngineCan(comm->region, kind, sendPointer, sendBytes)) {
      CopyCollective copy;
      copy.kind = kind;
      copy.send = sendPointer;
      copy.recv = CUdeviceptr(uintptr_t(recv));
      copy.bytes = bytes;
      for (int r = 0; r < comm->worldSize; ++r)
        copy.members.push_back(r);
      copy.position = comm->rank;
      return enqueueCopyCollective(*comm->cuda, comm->region, copy, stream, subject());
    }
    return enqueueCollective(*comm, comm->world, call, stream, subject);
  });
}

weft_status weft_comm_shift(weft_comm *comm, const void *send, void *recv, size_t count,
                            weft_dtype dtype, int shift, int rotate, CUstream stream) {
  return apiCall("weft_comm_shift", [&]() -> weft_status {
    if (weft_status status = checkComm(comm, "weft_comm_shift"))
      return status;
    ncclDataType_t type;
    if (!ncclTypeOf(dtype, type) || !send || !recv || send == recv)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_comm_shift: dtype %d, send %p, recv %p: dtype f32/bf16/f16 and "
                         "two distinct buffers are required",
                         int(dtype), send, recv));
    CollectiveCall call;
    call.kind = WEFT_SEND_RECV;
    call.send = send;
    call.recv = recv;
    call.count = count;
    call.type = type;
    call.ranks = comm->worldSize;
    call.position = comm->rank;
    call.shift = shift;
    call.rotate = rotate != 0;
    return enqueueCollective(*comm, comm->world, call, stream, [&]() {
      return format("send_recv of %zu elements, shift %d%s", count, shift,
                    rotate ? ", rotating" : "");
    });
  });
}

weft_status weft_comm_barrier(weft_comm *comm) {
  return apiCall("weft_comm_barrier", [&]() -> weft_status {
    if (weft_status status = checkComm(comm, "weft_comm_barrier"))
      return status;
    const DriverApi &cuda = *comm->cuda;
    if (!comm->barrierStream) {
      if (CUresult result = cuda.cuStreamCreate(&comm->barrierStream, CU_STREAM_NON_BLOCKING))
        return failCuda(result, "cuStreamCreate (barrier)");
      if (CUresult result = cuda.cuMemAlloc_v2(&comm->barrierBuffer, 256))
        return failCuda(result, "cuMemAlloc (barrier)");
    }
    void *buffer = reinterpret_cast<void *>(uintptr_t(comm->barrierBuffer));
    auto subject = [] { return std::string("the barrier (a one-element all-reduce)"); };
    CollectiveCall call;
    call.send = call.recv = buffer;
    call.count = 1;
    call.ranks = comm->worldSize;
    call.position = comm->rank;
    if (weft_status status =
            enqueueCollective(*comm, comm->world, call, comm->barrierStream, subject))
      return status;
    return waitWatched(*comm, queryDone(cuda, comm->barrierStream, nullptr, "the barrier"),
                       subject);
  });
}

weft_status weft_comm_synchronize(weft_comm *comm, CUstream stream) {
  return apiCall("weft_comm_synchronize", [&]() -> weft_status {
    if (weft_status status = checkComm(comm, "weft_comm_synchronize"))
      return status;
    return waitWatched(*comm, queryDone(*comm->cuda, stream, nullptr, "the stream"),
                       [] { return std::string("waiting for the stream's collectives"); });
  });
}

} // extern "C"
