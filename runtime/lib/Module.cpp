// Loads cubin/PTX modules with cuModuleLoadDataEx (JIT logs into the error
// message) after checking the image's sm against the device's.
#include "Driver.h"
#include "Image.h"
#include "Status.h"

#include <string>
#include <vector>

struct weft_module {
  CUmodule module;
  CUcontext context; // the context it was loaded in, made current to unload it
  weft_image_info info;
};

namespace weft::runtime {
namespace {

// Large enough for ptxas' messages on a generated kernel; the driver truncates
// longer logs rather than failing.
constexpr size_t kJitLogBytes = 16384;

std::string trimmed(const std::vector<char> &log) {
  std::string text(log.data());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

// Names of the kernels in `module`, for a not-found message; empty when the
// driver predates cuModuleEnumerateFunctions (CUDA 12.4).
std::string kernelNames(const DriverApi &api, CUmodule module) {
  if (!api.cuModuleGetFunctionCount || !api.cuModuleEnumerateFunctions || !api.cuFuncGetName)
    return "";
  unsigned count = 0;
  if (api.cuModuleGetFunctionCount(&count, module) != CUDA_SUCCESS || count == 0)
    return "";
  std::vector<CUfunction> functions(count);
  if (api.cuModuleEnumerateFunctions(functions.data(), count, module) != CUDA_SUCCESS)
    return "";
  std::string names;
  for (CUfunction function : functions) {
    const char *name = nullptr;
    if (api.cuFuncGetName(&name, function) != CUDA_SUCCESS || !name)
      continue;
    names += names.empty() ? "" : ", ";
    names += name;
  }
  return names;
}

} // namespace
} // namespace weft::runtime

using namespace weft::runtime;

extern "C" {

weft_status weft_module_load(const void *image, size_t size, weft_module **out) {
  return apiCall("weft_module_load", [&]() -> weft_status {
    if (!out)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_module_load: out is NULL");
    *out = nullptr;
    weft_image_info info = {};
    if (weft_status status = inspectImage(image, size, info))
      return status;
    const DriverApi *api = nullptr;
    if (weft_status status = requireDriver(api))
      return status;
    CUdevice device = 0;
    if (weft_status status = currentDevice(*api, device, "weft_module_load"))
      return status;
    int sm = 0;
    if (weft_status status = deviceSm(*api, device, sm))
      return status;
    if (weft_status status = checkImageArch(info, sm))
      return status;
    CUcontext context = nullptr;
    if (CUresult result = api->cuCtxGetCurrent(&context))
      return failCuda(result, "weft_module_load: cuCtxGetCurrent");

    std::vector<char> errorLog(kJitLogBytes, '\0'), infoLog(kJitLogBytes, '\0');
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    // Sizes travel in the pointer slot itself, as the driver API specifies.
    void *values[] = {errorLog.data(), reinterpret_cast<void *>(uintptr_t{kJitLogBytes - 1}),
                      infoLog.data(), reinterpret_cast<void *>(uintptr_t{kJitLogBytes - 1})};
    CUmodule module = nullptr;
    CUresult result = api->cuModuleLoadDataEx(&module, image, 4, options, values);
    if (result != CUDA_SUCCESS) {
      std::string message = cudaFailureText(
          result, format("cuModuleLoadDataEx (%s for sm_%d, %zu bytes, device sm_%d)",
                         imageKindName(info.kind), info.sm, size, sm));
      std::string errors = trimmed(errorLog), notes = trimmed(infoLog);
      if (!errors.empty())
        message += "\nJIT error log:\n" + errors;
      if (!notes.empty())
        message += "\nJIT info log:\n" + notes;
      return failCudaMessage(result, std::move(message));
    }
    *out = new weft_module{module, context, info};
    return WEFT_OK;
  });
}

weft_status weft_module_unload(weft_module *module) {
  return apiCall("weft_module_unload", [&]() -> weft_status {
    if (!module)
      return WEFT_OK;
    const DriverApi *api = nullptr;
    if (weft_status status = requireDriver(api))
      return status;
    // cuModuleUnload acts on the current context, which on this thread may
    // not be the one the module was loaded in.
    CUcontext current = nullptr;
    if (CUresult result = api->cuCtxGetCurrent(&current))
      return failCuda(result, "weft_module_unload: cuCtxGetCurrent");
    bool switchContext = current != module->context;
    if (switchContext)
      if (CUresult result = api->cuCtxPushCurrent_v2(module->context))
        return failCuda(result, "weft_module_unload: cuCtxPushCurrent");
    CUresult result = api->cuModuleUnload(module->module);
    if (switchContext) {
      CUcontext popped = nullptr;
      api->cuCtxPopCurrent_v2(&popped);
    }
    // Freed even when unloading failed: the handle is unusable either way,
    // and the caller is told through the status.
    delete module;
    if (result != CUDA_SUCCESS)
      return failCuda(result, "weft_module_unload: cuModuleUnload");
    return WEFT_OK;
  });
}

weft_status weft_module_function(weft_module *module, const char *name, CUfunction *out) {
  return apiCall("weft_module_function", [&]() -> weft_status {
    if (!module || !name || !out)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_module_function: %s is NULL",
                         !module ? "module" : !name ? "name" : "out"));
    *out = nullptr;
    const DriverApi *api = nullptr;
    if (weft_status status = requireDriver(api))
      return status;
    CUfunction function = nullptr;
    CUresult result = api->cuModuleGetFunction(&function, module->module, name);
    if (result == CUDA_ERROR_NOT_FOUND) {
      std::string names = kernelNames(*api, module->module);
      return fail(WEFT_ERROR_NOT_FOUND,
                  format("kernel '%s' is not in the module (%s for sm_%d)%s%s", name,
                         imageKindName(module->info.kind), module->info.sm,
                         names.empty() ? "" : "; it has: ", names.c_str()));
    }
    if (result != CUDA_SUCCESS)
      return failCuda(result, format("cuModuleGetFunction('%s')", name));
    *out = function;
    return WEFT_OK;
  });
}

} // extern "C"
