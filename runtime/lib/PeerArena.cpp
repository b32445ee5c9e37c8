// Peer-mapped arenas (IPC handles exchanged over the run's communicator) and
// the copy-engine all-gather / all-to-all over them: see PeerArena.h.
#include "PeerArena.h"
#include "Status.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace weft::runtime {

namespace {

// Two 32-bit flags (ready, done) per collective and writing rank.
uint64_t flagBufferBytes(uint32_t items, int worldSize) {
  return uint64_t(items) * 2 * uint64_t(worldSize) * 4;
}

std::string cudaText(CUresult result, const char *what) { return cudaFailureText(result, what); }

// This rank's record; `why` set when it cannot take part.
PeerRecord describeSelf(const DriverApi &cuda, const PeerMapRequest &request, PeerArenas &peers,
                        std::string &why) {
  PeerRecord record;
  std::memset(&record, 0, sizeof(record));
  if (why.empty() && gethostname(record.host, sizeof(record.host) - 1) != 0)
    why = "gethostname failed";
  if (why.empty())
    if (CUresult r = cuda.cuDeviceGetPCIBusId(record.busId, sizeof(record.busId), request.device))
      why = cudaText(r, "cuDeviceGetPCIBusId");
  uint64_t flagBytes = flagBufferBytes(request.flagItems, request.worldSize);
  if (why.empty())
    if (CUresult r = cuda.cuMemAlloc_v2(&peers.ownFlags, flagBytes))
      why = cudaText(r, "cuMemAlloc of the collective flags");
  if (why.empty())
    if (CUresult r = cuda.cuMemsetD8_v2(peers.ownFlags, 0, flagBytes))
      why = cudaText(r, "cuMemsetD8 of the collective flags");
  if (why.empty())
    if (CUresult r = cuda.cuIpcGetMemHandle(&record.arena, request.arena))
      why = cudaText(r, "cuIpcGetMemHandle of the arena");
  if (why.empty())
    if (CUresult r = cuda.cuIpcGetMemHandle(&record.flags, peers.ownFlags))
      why = cudaText(r, "cuIpcGetMemHandle of the collective flags");
  record.arenaBytes = request.arenaBytes;
  record.refused = !why.empty();
  return record;
}

// Maps rank `peer`'s arena and flags; "" or why not.
std::string mapPeer(const DriverApi &cuda, const PeerMapRequest &request, const PeerRecord &mine,
                    const PeerRecord &theirs, int peer, PeerArenas &peers) {
  int rank = request.rank;
  if (std::strncmp(mine.host, theirs.host, sizeof(mine.host)) != 0)
    return format("rank %d runs on host '%s', rank %d on '%s'", rank, mine.host, peer,
                  theirs.host);
  if (theirs.arenaBytes != request.arenaBytes)
    return format("rank %d's arena has %llu bytes, rank %d's %llu", peer,
                  (unsigned long long)theirs.arenaBytes, rank,
                  (unsigned long long)request.arenaBytes);
  CUdevice device = 0;
  if (CUresult r = cuda.cuDeviceGetByPCIBusId(&device, theirs.busId))
    return format("rank %d's GPU %s is not visible to rank %d (GPU %s): %s", peer, theirs.busId,
                  rank, mine.busId, cudaText(r, "cuDeviceGetByPCIBusId").c_str());
  if (device == request.device)
    return format("ranks %d and %d share GPU %s", rank, peer, mine.busId);
  int access = 0;
  if (CUresult r = cuda.cuDeviceCanAccessPeer(&access, request.device, device))
    return cudaText(r, "cuDeviceCanAccessPeer");
  if (!access)
    return format("GPU %s (rank %d) cannot access GPU %s (rank %d) as a peer "
                  "(cuDeviceCanAccessPeer)",
                  mine.busId, rank, theirs.busId, peer);
  unsigned lazy = CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS;
  if (CUresult r = cuda.cuIpcOpenMemHandle_v2(&peers.arenas[peer], theirs.arena, lazy))
    return format("rank %d opening rank %d's arena: %s", rank, peer,
                  cudaText(r, "cuIpcOpenMemHandle").c_str());
  if (CUresult r = cuda.cuIpcOpenMemHandle_v2(&peers.flags[peer], theirs.flags, lazy))
    return format("rank %d opening rank %d's collective flags: %s", rank, peer,
                  cudaText(r, "cuIpcOpenMemHandle").c_str());
  return "";
}

// The unblock stream, and a pull stream and join event per peer beyond the
// first with the fork event (enqueueCopyCollective).
weft_status createPullStreams(const DriverApi &cuda, PeerArenas &peers) {
  if (CUresult r = cuda.cuStreamCreate(&peers.unblockStream, CU_STREAM_NON_BLOCKING))
    return failCuda(r, "cuStreamCreate (copy-engine collectives)");
  if (peers.worldSize <= 2)
    return WEFT_OK;
  if (CUresult r = cuda.cuEventCreate(&peers.forkEvent, CU_EVENT_DISABLE_TIMING))
    return failCuda(r, "cuEventCreate (copy-engine collectives)");
  for (int k = 0; k + 1 < peers.worldSize; ++k) {
    CUstream pull = nullptr;
    CUevent join = nullptr;
    if (CUresult r = cuda.cuStreamCreate(&pull, CU_STREAM_NON_BLOCKING))
      return failCuda(r, "cuStreamCreate (copy-engine pulls)");
    peers.pullStreams.push_back(pull);
    if (CUresult r = cuda.cuEventCreate(&join, CU_EVENT_DISABLE_TIMING))
      return failCuda(r, "cuEventCreate (copy-engine pulls)");
    peers.joinEvents.push_back(join);
  }
  return WEFT_OK;
}

} // namespace

uint64_t flagOffset(const PeerArenas &peers, uint32_t item, FlagPhase phase, int from) {
  return ((uint64_t(item) * 2 + uint64_t(phase)) * uint64_t(peers.worldSize) + uint64_t(from)) *
         4;
}

bool copyEngineCan(const PeerArenas &peers, int kind, CUdeviceptr send, uint64_t sendBytes) {
  if (!peers.active || (kind != WEFT_ALL_GATHER && kind != WEFT_ALL_TO_ALL))
    return false;
  CUdeviceptr base = peers.arenas[size_t(peers.rank)];
  return send >= base && send + sendBytes <= base + peers.arenaBytes;
}

weft_status enqueueCopyCollective(const DriverApi &cuda, const PeerArenas &peers,
                                  const CopyCollective &call, CUstream stream,
                                  const std::string &subject) {
  int n = int(call.members.size());
  if (n < 1 || call.bytes % uint64_t(n) != 0 || call.position < 0 || call.position >= n)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("rank %d: %s: %llu bytes over %d ranks at position %d", peers.rank,
                       subject.c_str(), (unsigned long long)call.bytes, n, call.position));
  uint64_t block = call.bytes / uint64_t(n);
  int self = peers.rank;
  CUdeviceptr offset = call.send - peers.arenas[size_t(self)];
  auto failed = [&](CUresult r, const char *what) {
    return failCuda(r, format("rank %d: %s: %s (copy engine)", self, subject.c_str(), what));
  };
  // Peers in ring order from the next one, so the ranks pull from different
  // peers at first.
  std::vector<int> order;
  for (int k = 1; k < n; ++k)
    order.push_back((call.position + k) % n);
  auto signal = [&](FlagPhase phase) -> weft_status {
    for (int q : order) {
      int peer = call.members[size_t(q)];
      CUdeviceptr slot = peers.flags[size_t(peer)] + flagOffset(peers, call.item, phase, self);
      if (CUresult r = cuda.cuStreamWriteValue32_v2(stream, slot, 1, 0))
        return failed(r, "cuStreamWriteValue32 (a peer's flag)");
    }
    return WEFT_OK;
  };
  auto await = [&](FlagPhase phase) -> weft_status {
    for (int q : order) {
      int peer = call.members[size_t(q)];
      CUdeviceptr slot = peers.ownFlags + flagOffset(peers, call.item, phase, peer);
      // GEQ rather than EQ: unblockPeerWaits sets the flags to 0x01010101.
      if (CUresult r = cuda.cuStreamWaitValue32_v2(stream, slot, 1, CU_STREAM_WAIT_VALUE_GEQ))
        return failed(r, "cuStreamWaitValue32 (a peer's flag)");
      if (CUresult r = cuda.cuStreamWriteValue32_v2(stream, slot, 0, 0))
        return failed(r, "cuStreamWriteValue32 (resetting a flag)");
    }
    return WEFT_OK;
  };
  auto copy = [&](CUdeviceptr to, CUdeviceptr from, CUstream on) -> weft_status {
    if (to == from)
      return WEFT_OK;
    if (CUresult r = cuda.cuMemcpyDtoDAsync_v2(to, from, block, on))
      return failed(r, "cuMemcpyDtoDAsync");
    return WEFT_OK;
  };
  // With more than one peer, each pull goes on a stream of its own (forked
  // after the ready flags, joined before the done flags) so the GPU's copy
  // engines pull from the peers at once.
  bool fork = order.size() > 1 && peers.pullStreams.size() >= order.size();
  auto record = [&](CUevent event, CUstream on) -> weft_status {
    if (CUresult r = cuda.cuEventRecord(event, on))
      return failed(r, "cuEventRecord (copy-engine fork or join)");
    return WEFT_OK;
  };
  auto waitFor = [&](CUstream on, CUevent event) -> weft_status {
    if (CUresult r = cuda.cuStreamWaitEvent(on, event, 0))
      return failed(r, "cuStreamWaitEvent (copy-engine fork or join)");
    return WEFT_OK;
  };
  if (weft_status status = signal(FlagPhase::Ready))
    return status;
  if (weft_status status = await(FlagPhase::Ready))
    return status;
  // All-gather: block q of the output is peer q's input; all-to-all: block q
  // of the output is block `position` of peer q's input.
  bool gather = call.kind == WEFT_ALL_GATHER;
  uint64_t own = gather ? 0 : uint64_t(call.position) * block;
  if (weft_status status =
          copy(call.recv + uint64_t(call.position) * block, call.send + own, stream))
    return status;
  if (fork)
    if (weft_status status = record(peers.forkEvent, stream))
      return status;
  for (size_t k = 0; k < order.size(); ++k) {
    int q = order[k];
    CUstream on = fork ? peers.pullStreams[k] : stream;
    if (fork)
      if (weft_status status = waitFor(on, peers.forkEvent))
        return status;
    CUdeviceptr source = peers.arenas[size_t(call.members[size_t(q)])] + offset + own;
    if (weft_status status = copy(call.recv + uint64_t(q) * block, source, on))
      return status;
  }
  for (size_t k = 0; fork && k < order.size(); ++k) {
    if (weft_status status = record(peers.joinEvents[k], peers.pullStreams[k]))
      return status;
    if (weft_status status = waitFor(stream, peers.joinEvents[k]))
      return status;
  }
  if (weft_status status = signal(FlagPhase::Done))
    return status;
  return await(FlagPhase::Done);
}

weft_status mapPeerArenas(const DriverApi &cuda, const PeerMapRequest &request,
                          const GatherBytes &gather, PeerArenas &peers) {
  int world = request.worldSize;
  peers = PeerArenas();
  peers.rank = request.rank;
  peers.worldSize = world;
  peers.arenaBytes = request.arenaBytes;
  peers.flagItems = request.flagItems;
  peers.arenas.assign(size_t(world), 0);
  peers.flags.assign(size_t(world), 0);
  std::string why = request.refusal;
  if (why.empty() && !request.arena)
    why = format("rank %d has no arena of its own to export", request.rank);
  PeerRecord mine = describeSelf(cuda, request, peers, why);
  std::vector<PeerRecord> records(static_cast<size_t>(world));
  if (weft_status status = gather(&mine, records.data(), sizeof(PeerRecord)))
    return status;
  bool anyRefused = false;
  for (const PeerRecord &record : records)
    anyRefused |= record.refused != 0;
  for (int peer = 0; peer < world && why.empty() && !anyRefused; ++peer)
    if (peer != request.rank)
      why = mapPeer(cuda, request, mine, records[size_t(peer)], peer, peers);
  PeerVerdict verdict;
  std::memset(&verdict, 0, sizeof(verdict));
  verdict.ok = why.empty() && !anyRefused;
  std::strncpy(verdict.reason, why.c_str(), sizeof(verdict.reason) - 1);
  std::vector<PeerVerdict> verdicts(static_cast<size_t>(world));
  if (weft_status status = gather(&verdict, verdicts.data(), sizeof(PeerVerdict))) {
    releasePeerArenas(cuda, peers);
    return status;
  }
  peers.arenas[size_t(request.rank)] = request.arena;
  peers.flags[size_t(request.rank)] = peers.ownFlags;
  std::string refusals;
  for (int r = 0; r < world; ++r)
    if (!verdicts[size_t(r)].ok && verdicts[size_t(r)].reason[0])
      refusals += format("\n  rank %d: %s", r, verdicts[size_t(r)].reason);
  bool all = true;
  for (const PeerVerdict &v : verdicts)
    all &= v.ok != 0;
  if (all) {
    if (weft_status status = createPullStreams(cuda, peers)) {
      releasePeerArenas(cuda, peers);
      return status;
    }
    peers.active = true;
    return WEFT_OK;
  }
  releasePeerArenas(cuda, peers);
  if (request.engine != WEFT_COLLECTIVES_COPY_ENGINE)
    return WEFT_OK; // auto: NCCL
  return fail(WEFT_ERROR_INVALID_ARGUMENT,
              format("rank %d: copy-engine collectives (--collectives=copy-engine) need every "
                     "one of the %d ranks on one node with peer access between all their GPUs "
                     "and an arena of the step's own; refused:%s",
                     request.rank, world, refusals.c_str()));
}

void unblockPeerWaits(const DriverApi &cuda, const PeerArenas &peers) {
  if (!peers.active)
    return;
  uint64_t bytes = flagBufferBytes(peers.flagItems, peers.worldSize);
  if (cuda.cuMemsetD8Async(peers.ownFlags, 0x01, bytes, peers.unblockStream) == CUDA_SUCCESS)
    cuda.cuStreamSynchronize(peers.unblockStream);
}

void releasePeerArenas(const DriverApi &cuda, PeerArenas &peers) {
  if (peers.unblockStream)
    cuda.cuStreamDestroy_v2(peers.unblockStream);
  peers.unblockStream = nullptr;
  for (CUstream pull : peers.pullStreams)
    cuda.cuStreamDestroy_v2(pull);
  for (CUevent event : peers.joinEvents)
    cuda.cuEventDestroy_v2(event);
  if (peers.forkEvent)
    cuda.cuEventDestroy_v2(peers.forkEvent);
  peers.pullStreams.clear();
  peers.joinEvents.clear();
  peers.forkEvent = nullptr;
  for (int r = 0; r < int(peers.arenas.size()); ++r) {
    if (r == peers.rank)
      continue;
    if (peers.arenas[size_t(r)])
      cuda.cuIpcCloseMemHandle(peers.arenas[size_t(r)]);
    if (peers.flags[size_t(r)])
      cuda.cuIpcCloseMemHandle(peers.flags[size_t(r)]);
    peers.arenas[size_t(r)] = peers.flags[size_t(r)] = 0;
  }
  if (peers.ownFlags)
    cuda.cuMemFree_v2(peers.ownFlags);
  peers.ownFlags = 0;
  peers.active = false;
}

bool parseCollectiveEngine(const std::string &text, int &engine) {
  if (text == "nccl")
    engine = WEFT_COLLECTIVES_NCCL;
  else if (text == "copy-engine")
    engine = WEFT_COLLECTIVES_COPY_ENGINE;
  else if (text == "auto")
    engine = WEFT_COLLECTIVES_AUTO;
  else
    return false;
  return true;
}

weft_status resolveCollectiveEngine(int option, int &engine) {
  if (option < WEFT_COLLECTIVES_DEFAULT || option > WEFT_COLLECTIVES_AUTO)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_step_options: collectives is %d, not one of 0-3 "
                       "(weft_collective_engine)",
                       option));
  engine = option;
  if (option != WEFT_COLLECTIVES_DEFAULT)
    return WEFT_OK;
  engine = WEFT_COLLECTIVES_NCCL;
  const char *text = std::getenv("WEFT_COLLECTIVES");
  if (text && *text && !parseCollectiveEngine(text, engine))
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("$WEFT_COLLECTIVES is '%s', not one of nccl, copy-engine, auto", text));
  return WEFT_OK;
}

} // namespace weft::runtime
