// The CUDA driver entry points, resolved from libcuda.so.1 with dlsym at run
// time so nothing that links the runtime needs a driver to start.
#ifndef WEFT_RUNTIME_DRIVER_H
#define WEFT_RUNTIME_DRIVER_H

#include "weft_runtime.h"

#include <string>

namespace weft::runtime {

// Entry points listed by their exported names: cuda.h #defines some API names
// to versioned symbols (cuMemGetInfo -> cuMemGetInfo_v2), and dlsym needs the
// symbol, so the list spells the symbol.
#define WEFT_DRIVER_REQUIRED(X)                                                                    \
  X(cuInit)                                                                                        \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuCtxGetCurrent)                                                                               \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxGetDevice)                                                                                \
  X(cuCtxPushCurrent_v2)                                                                           \
  X(cuCtxPopCurrent_v2)                                                                            \
  X(cuMemGetInfo_v2)                                                                               \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncGetAttribute)                                                                            \
  X(cuFuncSetAttribute)                                                                            \
  X(cuLaunchKernel)                                                                                \
  X(cuTensorMapEncodeTiled)                                                                        \
  X(cuMemAlloc_v2)                                                                                 \
  X(cuMemFree_v2)                                                                                  \
  X(cuMemsetD8_v2)                                                                                 \
  X(cuMemsetD8Async)                                                                               \
  X(cuMemcpyHtoD_v2)                                                                               \
  X(cuMemcpyDtoH_v2)                                                                               \
  X(cuMemcpyDtoDAsync_v2)                                                                          \
  X(cuStreamCreate)                                                                                \
  X(cuStreamCreateWithPriority)                                                                    \
  X(cuCtxGetStreamPriorityRange)                                                                   \
  X(cuStreamDestroy_v2)                                                                            \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamQuery)                                                                                 \
  X(cuEventQuery)                                                                                  \
  X(cuStreamWaitEvent)                                                                             \
  X(cuEventCreate)                                                                                 \
  X(cuEventRecord)                                                                                 \
  X(cuEventDestroy_v2)                                                                             \
  X(cuStreamBeginCapture_v2)                                                                       \
  X(cuStreamEndCapture)                                                                            \
  X(cuGraphInstantiateWithFlags)                                                                   \
  X(cuGraphLaunch)                                                                                 \
  X(cuGraphExecDestroy)                                                                            \
  X(cuGraphDestroy)                                                                                \
  X(cuDeviceGetPCIBusId)                                                                           \
  X(cuDeviceGetByPCIBusId)                                                                         \
  X(cuDeviceCanAccessPeer)                                                                         \
  X(cuIpcGetMemHandle)                                                                             \
  X(cuIpcOpenMemHandle_v2)                                                                         \
  X(cuIpcCloseMemHandle)                                                                           \
  X(cuStreamWriteValue32_v2)                                                                       \
  X(cuStreamWaitValue32_v2)                                                                        \
  X(cuMemGetAddressRange_v2)

// Newer (CUDA 12.4+) entry points that only improve checks and messages, and
// the event timing of weft_step_run_timed (cuEventElapsedTime_v2: CUDA 12.8+),
// and weft_launch_dependent's attribute (cuLaunchKernelEx: CUDA 12.0+);
// the runtime works without them on older drivers.
#define WEFT_DRIVER_OPTIONAL(X)                                                                    \
  X(cuFuncGetParamInfo)                                                                            \
  X(cuModuleGetFunctionCount)                                                                      \
  X(cuModuleEnumerateFunctions)                                                                    \
  X(cuFuncGetName)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime_v2)                                                                         \
  X(cuLaunchKernelEx)

struct DriverApi {
#define WEFT_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  WEFT_DRIVER_REQUIRED(WEFT_DRIVER_MEMBER)
  WEFT_DRIVER_OPTIONAL(WEFT_DRIVER_MEMBER)
#undef WEFT_DRIVER_MEMBER
};

// Loads the driver and runs cuInit once (weft_init); on failure the thread's
// error says why. The returned table stays valid for the process' lifetime.
weft_status requireDriver(const DriverApi *&api);

// The device of the calling thread's current context; fails with a hint to
// call weft_context_ensure when there is none.
weft_status currentDevice(const DriverApi &api, CUdevice &device, const char *caller);
weft_status deviceAttribute(const DriverApi &api, CUdevice device, CUdevice_attribute attribute,
                            const char *attributeName, int &value);
// Compute capability as major * 10 + minor (90 for 9.0).
weft_status deviceSm(const DriverApi &api, CUdevice device, int &sm);

// "CUDA_ERROR_..." and the driver's text for a CUresult; usable before the
// driver is loaded or when it cannot name the result ("CUresult" and "" for
// results unknown then).
std::string cuResultName(CUresult result);
std::string cuResultText(CUresult result);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DRIVER_H
