// weft_step_copy_in_device / weft_step_copy_out_device: device-to-device
// copies into and out of a loaded step's buffers, on the caller's stream.
#include "Driver.h"
#include "Status.h"
#include "StepState.h"

using namespace weft;
using namespace weft::runtime;

namespace {

// The stream device copies go on and the caller orders its work with:
// options.stream, else the step's stream 0.
CUstream callerStream(const weft_step &step) {
  return step.prepared.options.stream ? step.prepared.options.stream : step.streams[0];
}

weft_status copyDevice(weft_step *step, size_t index, CUdeviceptr other, size_t bytes,
                       bool in, const char *caller) {
  return apiCall(caller, [&]() -> weft_status {
    if (weft_status status = checkBuffer(step, index, caller))
      return status;
    const pkg::Buffer &b = step->prepared.package.buffers[index];
    if (bytes != b.size)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: buffer '%s' has %llu bytes, got %zu", caller, b.name.c_str(),
                         (unsigned long long)b.size, bytes));
    if (!other)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: the %s of buffer '%s' is a null device pointer", caller,
                         in ? "source" : "destination", b.name.c_str()));
    if (weft_status status = makeCurrent(*step, caller))
      return status;
    if (bytes == 0)
      return WEFT_OK;
    CUdeviceptr buffer = step->address[index];
    if (!buffer)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: buffer '%s' is bound by the caller and has no memory yet "
                         "(weft_step_bind_device)",
                         caller, b.name.c_str()));
    if (CUresult result = step->api->cuMemcpyDtoDAsync_v2(in ? buffer : other, in ? other : buffer,
                                                          bytes, callerStream(*step)))
      return failCuda(result, format("cuMemcpyDtoDAsync %s buffer '%s' (%zu bytes)",
                                     in ? "into" : "out of", b.name.c_str(), bytes));
    return WEFT_OK;
  });
}

} // namespace

extern "C" {

weft_status weft_step_copy_in_device(weft_step *step, size_t index, CUdeviceptr source,
                                     size_t bytes) {
  return copyDevice(step, index, source, bytes, true, "weft_step_copy_in_device");
}

weft_status weft_step_copy_out_device(weft_step *step, size_t index, CUdeviceptr destination,
                                      size_t bytes) {
  return copyDevice(step, index, destination, bytes, false, "weft_step_copy_out_device");
}

} // extern "C"
