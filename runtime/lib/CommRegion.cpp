// weft_comm_map_region: a caller's allocation mapped into every rank, so
// that weft_comm_collective's all-gathers and all-to-alls whose input lies
// in it run on the copy engines (PeerArena.h), as a step's do in its arena:
// the collectives benchmarked alone on either engine.
#include "Nccl.h"
#include "Status.h"

using namespace weft::runtime;

extern "C" {

weft_status weft_comm_map_region(weft_comm *comm, CUdeviceptr base, size_t bytes, int engine,
                                 int *active) {
  return apiCall("weft_comm_map_region", [&]() -> weft_status {
    if (!comm || !active || !base || !bytes)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  "weft_comm_map_region: comm, active, base and bytes are required");
    *active = 0;
    if (comm->aborted)
      return fail(WEFT_ERROR_NCCL, format("weft_comm_map_region: rank %d: the communicator was "
                                          "aborted after an earlier failure",
                                          comm->rank));
    if (comm->region.active || comm->region.ownFlags)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_comm_map_region: rank %d: a region is mapped already", comm->rank));
    int resolved = WEFT_COLLECTIVES_NCCL;
    if (weft_status status = resolveCollectiveEngine(engine, resolved))
      return status;
    if (resolved == WEFT_COLLECTIVES_NCCL)
      return WEFT_OK;
    const DriverApi &cuda = *comm->cuda;
    PeerMapRequest request;
    request.engine = resolved;
    request.rank = comm->rank;
    request.worldSize = comm->worldSize;
    request.arena = base;
    request.arenaBytes = bytes;
    request.flagItems = 1; // one collective at a time (one stream)
    if (weft_status status = currentDevice(cuda, request.device, "weft_comm_map_region"))
      return status;
    // IPC maps whole allocations: the region must start one.
    CUdeviceptr start = 0;
    size_t size = 0;
    if (CUresult result = cuda.cuMemGetAddressRange_v2(&start, &size, base))
      request.refusal = cudaFailureText(result, "cuMemGetAddressRange of the region");
    else if (start != base || size < bytes)
      request.refusal = format("rank %d's region 0x%llx (%zu bytes) is not the start of one "
                               "allocation (0x%llx, %zu bytes)",
                               comm->rank, (unsigned long long)base, bytes,
                               (unsigned long long)start, size);
    CUstream stream = nullptr;
    if (CUresult result = cuda.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))
      return failCuda(result, "cuStreamCreate (weft_comm_map_region)");
    weft_status status = mapPeerArenas(
        cuda, request,
        [&](const void *mine, void *all, size_t n) {
          return gatherHostBytes(*comm, stream, mine, all, n);
        },
        comm->region);
    cuda.cuStreamDestroy_v2(stream);
    *active = comm->region.active;
    return status;
  });
}

} // extern "C"
