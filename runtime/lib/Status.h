// Thread-local error state behind weft_last_error(), and the guard that keeps
// C++ exceptions from crossing the C API.
#ifndef WEFT_RUNTIME_STATUS_H
#define WEFT_RUNTIME_STATUS_H

#include "weft_runtime.h"

#include <new>
#include <string>

namespace weft::runtime {

// printf-style formatting into a std::string (messages name values).
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Records `message` as this thread's last error and returns `status`.
weft_status fail(weft_status status, std::string message);
// "<what> failed: CUDA_ERROR_X (n): <driver's text>".
std::string cudaFailureText(CUresult result, const std::string &what);
// Records a failed driver call: the message gets the CUresult's name and text.
weft_status failCuda(CUresult result, const std::string &what);
// WEFT_ERROR_CUDA with `result` recorded but a message of the caller's own,
// for conditions the runtime detects before the driver would.
weft_status failCudaMessage(CUresult result, std::string message);

void clearError();

// Runs `body` as one C API call: clears the thread's error first (so a success
// leaves "" and 0), and turns any escaping C++ exception into a status.
template <typename Body> weft_status apiCall(const char *name, Body &&body) {
  clearError();
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: out of host memory", name));
  } catch (...) {
    return fail(WEFT_ERROR_INVALID_ARGUMENT, format("%s: unexpected C++ exception", name));
  }
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_STATUS_H
