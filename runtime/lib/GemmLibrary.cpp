// Opens libcublasLt with dlopen and resolves the entry points the GEMMs use;
// turns cublasStatus_t failures into statuses with messages.
#include "GemmLibrary.h"
#include "GemmPlan.h"
#include "Status.h"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace weft::runtime {

namespace {

std::mutex libraryMutex;
CublasLtApi cublasLtApi;
// Set (release) only once cublasLtApi is complete, for the lock-free path.
std::atomic<bool> cublasLtReady{false};

// dlopen's and dlsym's failures are described by dlerror(), which is reset by
// reading it.
std::string dlErrorText(const char *fallback) {
  const char *why = dlerror();
  return why ? why : fallback;
}

weft_status loadLocked(const char *caller) {
  std::vector<std::string> candidates;
  const char *override = std::getenv("WEFT_CUBLASLT");
  if (override && *override)
    candidates.push_back(override);
  else
    candidates = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  std::string tried;
  for (const std::string &path : candidates) {
    dlerror();
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += format("\n  %s: %s", path.c_str(), dlErrorText("unknown dlopen error").c_str());
      continue;
    }
    CublasLtApi api;
    api.path = path;
#define WEFT_RESOLVE_REQUIRED(name)                                                                \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));                          \
  if (!api.name) {                                                                                 \
    std::string why = dlErrorText("symbol not found");                                             \
    dlclose(handle);                                                                               \
    return fail(WEFT_ERROR_LIBRARY_MISSING,                                                        \
                format("%s: %s is not a usable cuBLASLt: it has no entry point %s (%s)", caller,  \
                       path.c_str(), #name, why.c_str()));                                         \
  }
    WEFT_CUBLASLT_REQUIRED(WEFT_RESOLVE_REQUIRED)
#undef WEFT_RESOLVE_REQUIRED
#define WEFT_RESOLVE_OPTIONAL(name)                                                                \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));
    WEFT_CUBLASLT_OPTIONAL(WEFT_RESOLVE_OPTIONAL)
#undef WEFT_RESOLVE_OPTIONAL
    cublasLtApi = std::move(api);
    return WEFT_OK;
  }
  return fail(WEFT_ERROR_LIBRARY_MISSING,
              format("%s: cannot load cuBLASLt; tried:%s\n(install the CUDA toolkit's or "
                     "PyTorch's cuBLAS, or set WEFT_CUBLASLT to libcublasLt.so's path)",
                     caller, tried.c_str()));
}

} // namespace

weft_status requireCublasLt(const CublasLtApi *&api, const char *caller) {
  if (!cublasLtReady.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(libraryMutex);
    if (!cublasLtReady.load(std::memory_order_relaxed)) {
      if (weft_status status = loadLocked(caller))
        return status;
      cublasLtReady.store(true, std::memory_order_release);
    }
  }
  api = &cublasLtApi;
  return WEFT_OK;
}

weft_status failCublas(const CublasLtApi &api, cublasStatus_t status, const std::string &call,
                       const std::string &problem) {
  std::string message = format("%s failed: %s (%d)", call.c_str(), cublasStatusName(status),
                               static_cast<int>(status));
  if (api.cublasLtGetStatusString)
    if (const char *text = api.cublasLtGetStatusString(status))
      message += format(": %s", text);
  message += format(" [%s]", problem.c_str());
  return fail(WEFT_ERROR_CUBLAS, std::move(message));
}

} // namespace weft::runtime
