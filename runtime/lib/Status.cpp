// Status codes, their CUresult mapping and the per-thread last error.
#include "Status.h"
#include "Driver.h"

#include <cstdarg>
#include <cstdio>

namespace weft::runtime {

namespace {
// Per thread so concurrent launchers (one per rank or stream) do not see each
// other's messages.
thread_local std::string lastError;
thread_local int lastCuResult = 0;
} // namespace

std::string format(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  int length = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string text;
  if (length > 0) {
    text.resize(static_cast<size_t>(length) + 1);
    std::vsnprintf(text.data(), text.size(), fmt, args);
    text.resize(static_cast<size_t>(length));
  }
  va_end(args);
  return text;
}

weft_status fail(weft_status status, std::string message) {
  lastError = std::move(message);
  if (status != WEFT_ERROR_CUDA)
    lastCuResult = 0;
  return status;
}

std::string cudaFailureText(CUresult result, const std::string &what) {
  std::string message = format("%s failed: %s (%d)", what.c_str(), cuResultName(result).c_str(),
                               static_cast<int>(result));
  std::string text = cuResultText(result);
  if (!text.empty())
    message += ": " + text;
  return message;
}

weft_status failCuda(CUresult result, const std::string &what) {
  return failCudaMessage(result, cudaFailureText(result, what));
}

weft_status failCudaMessage(CUresult result, std::string message) {
  lastError = std::move(message);
  lastCuResult = static_cast<int>(result);
  return WEFT_ERROR_CUDA;
}

void clearError() {
  lastError.clear();
  lastCuResult = 0;
}

} // namespace weft::runtime

using namespace weft::runtime;

extern "C" {

const char *weft_last_error(void) { return lastError.c_str(); }

int weft_last_cu_result(void) { return lastCuResult; }

weft_status weft_set_error(weft_status s, const char *message) {
  if (s == WEFT_OK) {
    weft::runtime::clearError();
    return s;
  }
  return weft::runtime::fail(s, message ? message : "(no message)");
}

CUresult weft_status_to_cu_result(weft_status s) {
  switch (s) {
  case WEFT_OK:
    return CUDA_SUCCESS;
  case WEFT_ERROR_CUDA:
    return lastCuResult != 0 ? static_cast<CUresult>(lastCuResult) : CUDA_ERROR_UNKNOWN;
  case WEFT_ERROR_DRIVER_MISSING:
    return CUDA_ERROR_NO_DEVICE;
  case WEFT_ERROR_INVALID_IMAGE:
    return CUDA_ERROR_INVALID_IMAGE;
  case WEFT_ERROR_ARCH_MISMATCH:
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  case WEFT_ERROR_NOT_FOUND:
    return CUDA_ERROR_NOT_FOUND;
  case WEFT_ERROR_INVALID_ARGUMENT:
  case WEFT_ERROR_VERSION_MISMATCH:
  case WEFT_ERROR_LIBRARY_MISSING:
  case WEFT_ERROR_CUBLAS:
  case WEFT_ERROR_NCCL:
  case WEFT_ERROR_TIMEOUT:
  case WEFT_ERROR_PEER_FAILED:
    return CUDA_ERROR_INVALID_VALUE;
  }
  // A value outside the enum (from C callers) is a caller bug, not a driver error.
  return CUDA_ERROR_INVALID_VALUE;
}

const char *weft_status_name(weft_status s) {
  switch (s) {
  case WEFT_OK:
    return "WEFT_OK";
  case WEFT_ERROR_DRIVER_MISSING:
    return "WEFT_ERROR_DRIVER_MISSING";
  case WEFT_ERROR_CUDA:
    return "WEFT_ERROR_CUDA";
  case WEFT_ERROR_INVALID_IMAGE:
    return "WEFT_ERROR_INVALID_IMAGE";
  case WEFT_ERROR_ARCH_MISMATCH:
    return "WEFT_ERROR_ARCH_MISMATCH";
  case WEFT_ERROR_INVALID_ARGUMENT:
    return "WEFT_ERROR_INVALID_ARGUMENT";
  case WEFT_ERROR_NOT_FOUND:
    return "WEFT_ERROR_NOT_FOUND";
  case WEFT_ERROR_VERSION_MISMATCH:
    return "WEFT_ERROR_VERSION_MISMATCH";
  case WEFT_ERROR_LIBRARY_MISSING:
    return "WEFT_ERROR_LIBRARY_MISSING";
  case WEFT_ERROR_CUBLAS:
    return "WEFT_ERROR_CUBLAS";
  case WEFT_ERROR_NCCL:
    return "WEFT_ERROR_NCCL";
  case WEFT_ERROR_TIMEOUT:
    return "WEFT_ERROR_TIMEOUT";
  case WEFT_ERROR_PEER_FAILED:
    return "WEFT_ERROR_PEER_FAILED";
  }
  return "WEFT_STATUS_UNKNOWN";
}

const char *weft_runtime_version(void) { return WEFT_RUNTIME_VERSION; }

} // extern "C"
