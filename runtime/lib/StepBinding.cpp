// Launch arguments of a loaded step: the argument blobs filled at load, and
// the buffers bound by the caller (weft_step_bind_device), whose addresses
// come later and may change: a bind re-fills the blobs and tensor maps that
// name the buffer and drops a captured CUDA graph, which bakes addresses.
#include "Driver.h"
#include "Status.h"
#include "StepState.h"

#include <cstring>

using namespace weft;
using namespace weft::runtime;

namespace {

// Fills launch `i`'s blob. A buffer without an address yet (bound, not
// bound) is written as null, its tensor maps left zero: the bind fills them.
weft_status fillLaunch(weft_step &step, size_t i) {
  const PreparedStep &prepared = step.prepared;
  const ResolvedLaunch &launch = prepared.launches[i];
  std::vector<BlobChunk> &blob = step.blobs[i];
  blob.assign(launch.blobBytes / sizeof(BlobChunk), BlobChunk{});
  unsigned char *base = blob.front().bytes;
  std::vector<void *> &pointers = step.params[i];
  pointers.clear();
  for (const ParamSlot &slot : launch.params) {
    unsigned char *at = base + slot.offset;
    pointers.push_back(at);
    switch (slot.kind) {
    case pkg::ParamKind::Pointer: {
      uint64_t address = step.address[slot.value];
      std::memcpy(at, &address, 8);
      break;
    }
    case pkg::ParamKind::I64:
      std::memcpy(at, &slot.value, 8);
      break;
    case pkg::ParamKind::I32:
    case pkg::ParamKind::F32: {
      uint32_t bits = uint32_t(slot.value);
      std::memcpy(at, &bits, 4);
      break;
    }
    case pkg::ParamKind::TensorMap: {
      const ResolvedTensorMap &map = prepared.tensorMaps[slot.value];
      CUdeviceptr address = step.address[map.buffer];
      if (!address)
        break;
      auto *tensorMap = reinterpret_cast<CUtensorMap *>(at);
      void *global = reinterpret_cast<void *>(uintptr_t(address));
      if (weft_status status = weft_tensor_map_encode_tiled(
              tensorMap, map.dtype, map.rank, global, map.dims,
              map.rank > 1 ? map.strides : nullptr, map.box, map.swizzle))
        return fail(status, format("launch %zu: tensor map %llu of buffer '%s': %s", i,
                                   (unsigned long long)slot.value,
                                   prepared.package.buffers[map.buffer].name.c_str(),
                                   weft_last_error()));
      break;
    }
    }
  }
  return WEFT_OK;
}

// Whether launch `i` reads or writes buffer `index` (directly or through a
// tensor map).
bool launchUses(const PreparedStep &prepared, size_t i, size_t index) {
  for (const ParamSlot &slot : prepared.launches[i].params)
    if ((slot.kind == pkg::ParamKind::Pointer && slot.value == index) ||
        (slot.kind == pkg::ParamKind::TensorMap &&
         prepared.tensorMaps[slot.value].buffer == index))
      return true;
  return false;
}

// The element size of a buffer's dtype ("" when the package has no type).
size_t dtypeBytes(const std::string &dtype) {
  if (dtype == "f64" || dtype == "i64")
    return 8;
  if (dtype == "f32" || dtype == "i32")
    return 4;
  if (dtype == "bf16" || dtype == "f16" || dtype == "i16")
    return 2;
  return 1;
}

} // namespace

weft_status weft::runtime::bindArguments(weft_step &step) {
  size_t count = step.prepared.launches.size();
  step.blobs.resize(count);
  step.params.resize(count);
  for (size_t i = 0; i < count; ++i)
    if (weft_status status = fillLaunch(step, i))
      return status;
  return WEFT_OK;
}

weft_status weft::runtime::requireBound(const weft_step &step, const char *what) {
  const std::vector<pkg::Buffer> &buffers = step.prepared.package.buffers;
  size_t missing = 0, first = 0;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].bound && !step.address[i] && buffers[i].size && missing++ == 0)
      first = i;
  if (!missing)
    return WEFT_OK;
  return fail(WEFT_ERROR_INVALID_ARGUMENT,
              format("%s: buffer %zu '%s' (argument %d, %llu bytes) is bound by the caller "
                     "but has no memory yet (%zu of the step's bound buffers lack one): give "
                     "it with weft_step_bind_device first",
                     what, first, buffers[first].name.c_str(), buffers[first].arg,
                     (unsigned long long)buffers[first].size, missing));
}

extern "C" {

weft_status weft_step_buffer_bound(const weft_step *step, size_t index, int *bound) {
  return apiCall("weft_step_buffer_bound", [&]() -> weft_status {
    if (weft_status status = checkBuffer(step, index, "weft_step_buffer_bound"))
      return status;
    if (!bound)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_step_buffer_bound: bound is NULL");
    *bound = step->prepared.package.buffers[index].bound ? 1 : 0;
    return WEFT_OK;
  });
}

weft_status weft_step_bind_device(weft_step *step, size_t index, CUdeviceptr pointer,
                                  size_t bytes, const char *dtype) {
  return apiCall("weft_step_bind_device", [&]() -> weft_status {
    if (weft_status status = checkBuffer(step, index, "weft_step_bind_device"))
      return status;
    const pkg::Buffer &b = step->prepared.package.buffers[index];
    const BufferShape &shape = step->prepared.shapes[index];
    if (!b.bound)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_bind_device: buffer '%s' (%s) lives in the step's arena at "
                         "offset %llu; only buffers the package marks bound (weft-compile "
                         "--bind-arguments) take the caller's memory",
                         b.name.c_str(), pkg::roleName(b.role), (unsigned long long)b.offset));
    if (bytes != b.size)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_bind_device: buffer '%s' (%s) has %llu bytes, got %zu",
                         b.name.c_str(), b.type.c_str(), (unsigned long long)b.size, bytes));
    if (dtype && !shape.dtype.empty() && shape.dtype != dtype)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_bind_device: buffer '%s' holds %s elements (%s), got %s",
                         b.name.c_str(), shape.dtype.c_str(), b.type.c_str(), dtype));
    if (!pointer && b.size)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_bind_device: buffer '%s' (%llu bytes) at a null device "
                         "pointer",
                         b.name.c_str(), (unsigned long long)b.size));
    // What cuBLASLt's algorithms and TMA descriptors assume of an operand.
    uint64_t alignment = std::max<uint64_t>(16, dtypeBytes(shape.dtype));
    if (pointer % alignment)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_step_bind_device: buffer '%s' at 0x%llx is not %llu-byte "
                         "aligned",
                         b.name.c_str(), (unsigned long long)pointer,
                         (unsigned long long)alignment));
    if (!step->loaded)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  "weft_step_bind_device: the step was prepared for inspection only "
                  "(weft_step_prepare); load it with weft_step_load to use the device");
    if (step->address[index] == pointer)
      return WEFT_OK;
    if (weft_status status = makeCurrent(*step, "weft_step_bind_device"))
      return status;
    const DriverApi &api = *step->api;
    // A captured graph holds the old address: replayed runs finish first,
    // and the next run captures again.
    if (step->graphExec || step->graph) {
      if (CUresult result = api.cuStreamSynchronize(step->streams[0]))
        return failCuda(result, "cuStreamSynchronize (before re-capturing the graph)");
      if (step->graphExec)
        api.cuGraphExecDestroy(step->graphExec);
      if (step->graph)
        api.cuGraphDestroy(step->graph);
      step->graphExec = nullptr;
      step->graph = nullptr;
    }
    step->address[index] = pointer;
    // cuLaunchKernel copies the arguments when it is called: queued launches
    // keep the address they were given.
    for (size_t i = 0; i < step->prepared.launches.size(); ++i)
      if (launchUses(step->prepared, i, index))
        if (weft_status status = fillLaunch(*step, i))
          return status;
    return WEFT_OK;
  });
}

} // extern "C"
