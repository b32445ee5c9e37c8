// Loads libcuda.so.1 with dlopen, initializes the driver and manages the
// calling thread's context (weft_init, weft_context_ensure, device queries).
#include "Driver.h"
#include "Status.h"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>

namespace weft::runtime {

namespace {

std::mutex driverMutex;
DriverApi driverApi;
bool driverLoaded = false;
// Set (release) only after driverApi is complete and cuInit succeeded, so the
// lock-free fast path in requireDriver sees a full table.
std::atomic<bool> driverReady{false};

// Primary contexts this runtime retained, by ordinal: retained once per
// process and never released, since kernels and modules of any thread may
// still use them.
std::mutex contextMutex;
std::map<int, CUcontext> retainedContexts;

weft_status loadDriverLocked() {
  const char *override = std::getenv("WEFT_LIBCUDA");
  const char *path = override && *override ? override : "libcuda.so.1";
  dlerror();
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return fail(WEFT_ERROR_DRIVER_MISSING,
                format("cannot load the CUDA driver library %s: %s (is the NVIDIA driver "
                       "installed? WEFT_LIBCUDA may name the library's path)",
                       path, why ? why : "unknown dlopen error"));
  }
  DriverApi api;
#define WEFT_RESOLVE_REQUIRED(name)                                                                \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));                          \
  if (!api.name) {                                                                                 \
    const char *why = dlerror();                                                                   \
    dlclose(handle);                                                                               \
    return fail(WEFT_ERROR_DRIVER_MISSING,                                                         \
                format("the CUDA driver library %s has no entry point %s (%s); the driver is "     \
                       "older than this runtime needs (CUDA 12.0 or newer)",                       \
                       path, #name, why ? why : "symbol not found"));                              \
  }
  WEFT_DRIVER_REQUIRED(WEFT_RESOLVE_REQUIRED)
#undef WEFT_RESOLVE_REQUIRED
#define WEFT_RESOLVE_OPTIONAL(name)                                                                \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));
  WEFT_DRIVER_OPTIONAL(WEFT_RESOLVE_OPTIONAL)
#undef WEFT_RESOLVE_OPTIONAL
  driverApi = api;
  driverLoaded = true;
  return WEFT_OK;
}

} // namespace

weft_status requireDriver(const DriverApi *&api) {
  if (driverReady.load(std::memory_order_acquire)) {
    api = &driverApi;
    return WEFT_OK;
  }
  std::lock_guard<std::mutex> lock(driverMutex);
  if (!driverReady.load(std::memory_order_relaxed)) {
    if (!driverLoaded)
      if (weft_status status = loadDriverLocked())
        return status;
    // Retried on a later call when it fails: cuInit reports e.g. a device that
    // is not ready yet, which need not be permanent.
    if (CUresult result = driverApi.cuInit(0))
      return failCuda(result, "cuInit(0)");
    driverReady.store(true, std::memory_order_release);
  }
  api = &driverApi;
  return WEFT_OK;
}

weft_status currentDevice(const DriverApi &api, CUdevice &device, const char *caller) {
  CUcontext context = nullptr;
  if (CUresult result = api.cuCtxGetCurrent(&context))
    return failCuda(result, format("%s: cuCtxGetCurrent", caller));
  if (!context)
    return failCudaMessage(CUDA_ERROR_INVALID_CONTEXT,
                           format("%s: no CUDA context is current on this thread; call "
                                  "weft_context_ensure(ordinal) first",
                                  caller));
  if (CUresult result = api.cuCtxGetDevice(&device))
    return failCuda(result, format("%s: cuCtxGetDevice", caller));
  return WEFT_OK;
}

weft_status deviceAttribute(const DriverApi &api, CUdevice device, CUdevice_attribute attribute,
                            const char *attributeName, int &value) {
  if (CUresult result = api.cuDeviceGetAttribute(&value, attribute, device))
    return failCuda(result, format("cuDeviceGetAttribute(%s, device %d)", attributeName,
                                   static_cast<int>(device)));
  return WEFT_OK;
}

weft_status deviceSm(const DriverApi &api, CUdevice device, int &sm) {
  int major = 0, minor = 0;
  if (weft_status status =
          deviceAttribute(api, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                          "COMPUTE_CAPABILITY_MAJOR", major))
    return status;
  if (weft_status status =
          deviceAttribute(api, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                          "COMPUTE_CAPABILITY_MINOR", minor))
    return status;
  sm = major * 10 + minor;
  return WEFT_OK;
}

namespace {
// Names for results the driver may be unable to name itself: the toolkit's
// link stub (CUDA_ERROR_STUB_LIBRARY) answers every call, cuGetErrorName too,
// with an error.
struct KnownResult {
  CUresult result;
  const char *name;
  const char *text;
};
constexpr KnownResult kKnownResults[] = {
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
     "the loaded libcuda is the CUDA toolkit's link stub, not the NVIDIA driver"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
};

const KnownResult *knownResult(CUresult result) {
  for (const KnownResult &known : kKnownResults)
    if (known.result == result)
      return &known;
  return nullptr;
}
} // namespace

std::string cuResultName(CUresult result) {
  const char *name = nullptr;
  if (driverLoaded && driverApi.cuGetErrorName(result, &name) == CUDA_SUCCESS && name)
    return name;
  if (const KnownResult *known = knownResult(result))
    return known->name;
  return "CUresult";
}

std::string cuResultText(CUresult result) {
  const char *text = nullptr;
  if (driverLoaded && driverApi.cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
    return text;
  if (const KnownResult *known = knownResult(result))
    return known->text;
  return "";
}

} // namespace weft::runtime

using namespace weft::runtime;

extern "C" {

weft_status weft_init(void) {
  return apiCall("weft_init", [] {
    const DriverApi *api = nullptr;
    return requireDriver(api);
  });
}

weft_status weft_context_ensure(int ordinal) {
  return apiCall("weft_context_ensure", [&]() -> weft_status {
    if (ordinal < 0)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_context_ensure: device ordinal %d is negative", ordinal));
    const DriverApi *api = nullptr;
    if (weft_status status = requireDriver(api))
      return status;
    CUcontext current = nullptr;
    if (CUresult result = api->cuCtxGetCurrent(&current))
      return failCuda(result, "weft_context_ensure: cuCtxGetCurrent");
    if (current)
      return WEFT_OK; // e.g. PyTorch's context: launches must share its streams
    int count = 0;
    if (CUresult result = api->cuDeviceGetCount(&count))
      return failCuda(result, "weft_context_ensure: cuDeviceGetCount");
    if (ordinal >= count)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_context_ensure: device ordinal %d is out of range: %d CUDA "
                         "device(s) visible",
                         ordinal, count));
    CUcontext context = nullptr;
    {
      std::lock_guard<std::mutex> lock(contextMutex);
      auto found = retainedContexts.find(ordinal);
      if (found != retainedContexts.end()) {
        context = found->second;
      } else {
        CUdevice device = 0;
        if (CUresult result = api->cuDeviceGet(&device, ordinal))
          return failCuda(result, format("weft_context_ensure: cuDeviceGet(%d)", ordinal));
        if (CUresult result = api->cuDevicePrimaryCtxRetain(&context, device))
          return failCuda(result,
                          format("weft_context_ensure: cuDevicePrimaryCtxRetain(device %d)",
                                 ordinal));
        retainedContexts.emplace(ordinal, context);
      }
    }
    if (CUresult result = api->cuCtxSetCurrent(context))
      return failCuda(result, "weft_context_ensure: cuCtxSetCurrent");
    return WEFT_OK;
  });
}

weft_status weft_device_arch(int *sm) {
  return apiCall("weft_device_arch", [&]() -> weft_status {
    if (!sm)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_device_arch: sm is NULL");
    const DriverApi *api = nullptr;
    if (weft_status status = requireDriver(api))
      return status;
    CUdevice device = 0;
    if (weft_status status = currentDevice(*api, device, "weft_device_arch"))
      return status;
    return deviceSm(*api, device, *sm);
  });
}

weft_status weft_device_memory(size_t *free_bytes, size_t *total_bytes) {
  return apiCall("weft_device_memory", [&]() -> weft_status {
    if (!free_bytes || !total_bytes)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_device_memory: %s is NULL", !free_bytes ? "free_bytes" : "total_bytes"));
    const DriverApi *api = nullptr;
    if (weft_status status = requireDriver(api))
      return status;
    CUdevice device = 0;
    if (weft_status status = currentDevice(*api, device, "weft_device_memory"))
      return status;
    if (CUresult result = api->cuMemGetInfo_v2(free_bytes, total_bytes))
      return failCuda(result, "weft_device_memory: cuMemGetInfo");
    return WEFT_OK;
  });
}

} // extern "C"
