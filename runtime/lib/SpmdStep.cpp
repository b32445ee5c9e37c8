// The collectives of a partitioned (SPMD) step: the grid's axis
// communicators, NCCL calls on the plan's streams, and the watched wait that
// turns an NCCL error, a dead peer or a hang into an error naming this rank,
// the step and the collective in flight.
#include "Nccl.h"
#include "Status.h"
#include "StepState.h"

#include <algorithm>
#include <memory>
#include <set>

using namespace weft;
using namespace weft::runtime;

namespace weft::runtime {

namespace {

static_assert(int(pkg::CollectiveKind::AllReduce) == WEFT_ALL_REDUCE &&
                  int(pkg::CollectiveKind::AllGather) == WEFT_ALL_GATHER &&
                  int(pkg::CollectiveKind::ReduceScatter) == WEFT_REDUCE_SCATTER &&
                  int(pkg::CollectiveKind::AllToAll) == WEFT_ALL_TO_ALL &&
                  int(pkg::CollectiveKind::SendRecv) == WEFT_SEND_RECV,
              "weft_collective_kind numbers the package's collective kinds");

int weftDTypeOf(pkg::DType dtype) {
  switch (dtype) {
  case pkg::DType::BF16:
    return WEFT_DTYPE_BF16;
  case pkg::DType::F16:
    return WEFT_DTYPE_F16;
  case pkg::DType::F32:
    return WEFT_DTYPE_F32;
  case pkg::DType::F64:
    return -1;
  }
  return -1;
}

std::string describeCollective(const weft_step &step, uint32_t item) {
  const pkg::Package &package = step.prepared.package;
  const pkg::Collective &c = package.collectives[item];
  std::string shift;
  if (c.kind == pkg::CollectiveKind::SendRecv)
    shift = format(" by %d%s", c.shift, c.rotate ? " rotating" : "");
  return format("collective %u (%s%s of '%s' into '%s', %lld %s elements over %d ranks, "
                "schedule index %u)",
                item, pkg::collectiveKindName(c.kind), shift.c_str(),
                package.buffers[c.input].name.c_str(), package.buffers[c.output].name.c_str(),
                (long long)c.count, pkg::dtypeName(c.dtype),
                step.collectiveRanks.empty() ? 0 : step.collectiveRanks[item], c.index);
}

// The first collective whose event has not completed: the one in flight (or
// the one a dead peer never joined).
std::string inFlight(const weft_step &step) {
  for (size_t i = 0; i < step.collectiveDone.size(); ++i)
    if (step.api->cuEventQuery(step.collectiveDone[i]) == CUDA_ERROR_NOT_READY)
      return "; in flight: " + describeCollective(step, uint32_t(i));
  return "";
}

// Maps the ranks' arenas for copy-engine collectives when the options ask
// for them (or auto) and the package has an all-gather or all-to-all.
weft_status preparePeerArenas(weft_step &step) {
  const PreparedStep &prepared = step.prepared;
  int engine = WEFT_COLLECTIVES_NCCL;
  if (weft_status status = resolveCollectiveEngine(prepared.options.collectives, engine))
    return status;
  bool moves = false;
  for (const pkg::Collective &c : prepared.package.collectives)
    moves |= c.kind == pkg::CollectiveKind::AllGather || c.kind == pkg::CollectiveKind::AllToAll;
  if (engine == WEFT_COLLECTIVES_NCCL || !moves)
    return WEFT_OK;
  PeerMapRequest request;
  request.engine = engine;
  request.rank = step.comm->rank;
  request.worldSize = step.comm->worldSize;
  if (weft_status status = currentDevice(*step.api, request.device, "weft_step_load_spmd"))
    return status;
  request.arena = step.arena;
  request.arenaBytes = prepared.arenaBytes;
  request.flagItems = uint32_t(prepared.package.collectives.size());
  if (prepared.options.debug_buffers)
    request.refusal = format("rank %d allocates each buffer on its own (debug_buffers)",
                             request.rank);
  else if (prepared.options.arena)
    request.refusal = format("rank %d runs in the caller's arena (weft_step_options.arena)",
                             request.rank);
  return mapPeerArenas(
      *step.api, request,
      [&](const void *mine, void *all, size_t bytes) {
        return gatherHostBytes(*step.comm, step.streams[0], mine, all, bytes);
      },
      step.peers);
}

} // namespace

weft_status prepareCollectives(weft_step &step) {
  const pkg::Package &package = step.prepared.package;
  weft_comm &comm = *step.comm;
  if (comm.aborted)
    return fail(WEFT_ERROR_NCCL, format("rank %d: the communicator was aborted", comm.rank));
  std::vector<uint32_t> masks;
  for (const pkg::Collective &c : package.collectives)
    if (std::find(masks.begin(), masks.end(), c.axes) == masks.end())
      masks.push_back(c.axes);
  std::sort(masks.begin(), masks.end());
  if (!comm.axes.empty() && comm.grid != package.grid)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("rank %d: the communicator was split for another grid", comm.rank));
  if (weft_status status = splitGrid(comm, package.grid, masks))
    return status;
  step.collectiveComms.assign(package.collectives.size(), nullptr);
  step.collectiveRanks.assign(package.collectives.size(), 0);
  step.collectivePositions.assign(package.collectives.size(), 0);
  step.collectiveTypes.assign(package.collectives.size(), ncclBfloat16);
  step.collectiveDone.assign(package.collectives.size(), nullptr);
  step.collectiveMembers.assign(package.collectives.size(), {});
  for (size_t i = 0; i < package.collectives.size(); ++i) {
    const pkg::Collective &c = package.collectives[i];
    step.collectiveMembers[i] = groupMembers(package.grid, c.axes, comm.rank);
    if (weft_status status = commForAxes(comm, c.axes, step.collectiveComms[i]))
      return status;
    step.collectiveRanks[i] = ranksAlong(package.grid, c.axes);
    step.collectivePositions[i] = groupPosition(package.grid, c.axes, comm.rank);
    if (!ncclTypeOf(weftDTypeOf(c.dtype), step.collectiveTypes[i]))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("collective %zu: dtype %s has no NCCL type", i, pkg::dtypeName(c.dtype)));
    if (CUresult result = step.api->cuEventCreate(&step.collectiveDone[i], CU_EVENT_DISABLE_TIMING))
      return failCuda(result, "cuEventCreate (collective)");
  }
  return preparePeerArenas(step);
}

weft_status issueCollective(weft_step &step, uint32_t item, CUstream stream) {
  if (!step.comm)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("collective %u: the step was loaded without a communicator "
                       "(weft_step_load_spmd)",
                       item));
  const pkg::Package &package = step.prepared.package;
  const pkg::Collective &c = package.collectives[item];
  auto subject = [&]() {
    return format("step %llu: %s", step.runs, describeCollective(step, item).c_str());
  };
  uint64_t size = pkg::dtypeBytes(c.dtype);
  CollectiveCall call;
  call.kind = int(c.kind); // weft_collective_kind numbers the package's kinds
  call.send = reinterpret_cast<const void *>(
      uintptr_t(step.address[c.input] + uint64_t(c.inputOffset) * size));
  call.recv = reinterpret_cast<void *>(
      uintptr_t(step.address[c.output] + uint64_t(c.outputOffset) * size));
  call.count = size_t(c.count);
  call.type = step.collectiveTypes[item];
  call.op = ncclOpOf(int(c.reduction));
  call.ranks = step.collectiveRanks[item];
  call.position = step.collectivePositions[item];
  call.shift = c.shift;
  call.rotate = c.rotate;
  uint64_t bytes = uint64_t(c.count) * size;
  CUdeviceptr send = CUdeviceptr(uintptr_t(call.send));
  uint64_t sendBytes = c.kind == pkg::CollectiveKind::AllGather ? bytes / uint64_t(call.ranks)
                                                                : bytes;
  if (copyEngineCan(step.peers, call.kind, send, sendBytes)) {
    CopyCollective copy;
    copy.kind = call.kind;
    copy.item = item;
    copy.send = send;
    copy.recv = CUdeviceptr(uintptr_t(call.recv));
    copy.bytes = bytes;
    copy.members = step.collectiveMembers[item];
    copy.position = call.position;
    if (weft_status status = enqueueCopyCollective(*step.api, step.peers, copy, stream, subject()))
      return status;
  } else if (weft_status status = enqueueCollective(*step.comm, step.collectiveComms[item], call,
                                                    stream, subject)) {
    return status;
  }
  if (CUresult result = step.api->cuEventRecord(step.collectiveDone[item], stream))
    return failCuda(result, "cuEventRecord (after a collective)");
  return WEFT_OK;
}

weft_status waitForStep(weft_step &step, CUevent until, const char *what) {
  const DriverApi &api = *step.api;
  if (!step.comm) {
    CUresult result = until ? (api.cuEventSynchronize ? api.cuEventSynchronize(until)
                                                      : api.cuStreamSynchronize(step.streams[0]))
                            : api.cuStreamSynchronize(step.streams[0]);
    if (result)
      return failCuda(result, format("synchronizing after %s (a kernel or GEMM failed)", what));
    return WEFT_OK;
  }
  return waitWatched(
      *step.comm, queryDone(api, step.streams[0], until, what),
      [&]() { return format("step %llu: %s%s", step.runs, what, inFlight(step).c_str()); });
}

} // namespace weft::runtime

extern "C" {

weft_status weft_step_prepare_spmd(const void *package, size_t size, int device_sm,
                                   const weft_step_options *options, int world_size, int rank,
                                   weft_step **out) {
  return apiCall("weft_step_prepare_spmd", [&]() -> weft_status {
    if (!out)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_prepare_spmd: out is NULL");
    *out = nullptr;
    if (world_size < 1 || rank < 0 || rank >= world_size)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_prepare_spmd: rank %d of %d ranks", rank, world_size));
    auto step = std::make_unique<weft_step>();
    if (weft_status status = prepareStep(package, size, device_sm,
                                         options ? *options : weft_step_options{},
                                         step->prepared, world_size, rank))
      return status;
    *out = step.release();
    return WEFT_OK;
  });
}

weft_status weft_step_grid(const weft_step *step, int *axes, long long dims[WEFT_STEP_MAX_RANK],
                           int *split_axis) {
  return apiCall("weft_step_grid", [&]() -> weft_status {
    if (!step || !axes || !dims || !split_axis)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_grid: an argument is NULL");
    const pkg::Package &package = step->prepared.package;
    *axes = int(package.grid.size());
    for (size_t i = 0; i < WEFT_STEP_MAX_RANK; ++i)
      dims[i] = i < package.grid.size() ? package.grid[i] : 0;
    *split_axis = package.splitAxis;
    return WEFT_OK;
  });
}

weft_status weft_step_collective_engine(const weft_step *step, int *engine) {
  return apiCall("weft_step_collective_engine", [&]() -> weft_status {
    if (!step || !engine)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  "weft_step_collective_engine: an argument is NULL");
    *engine = step->peers.active ? WEFT_COLLECTIVES_COPY_ENGINE : WEFT_COLLECTIVES_NCCL;
    return WEFT_OK;
  });
}

weft_status weft_step_buffer_split(const weft_step *step, size_t index, int *dim) {
  return apiCall("weft_step_buffer_split", [&]() -> weft_status {
    if (!step || !dim)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_buffer_split: an argument is NULL");
    const pkg::Package &package = step->prepared.package;
    if (index >= package.buffers.size())
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_buffer_split: buffer %zu, but the step has %zu", index,
                         package.buffers.size()));
    *dim = -1;
    for (const pkg::Split &split : package.splits)
      if (split.buffer == index)
        *dim = split.dim;
    return WEFT_OK;
  });
}

} // extern "C"
