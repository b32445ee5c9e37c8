// Kernel launches: dynamic shared-memory opt-in and cuLaunchKernel, with the
// launch configuration checked first so mistakes get a message, not a fault.
#include "Driver.h"
#include "Status.h"

#include <climits>

namespace weft::runtime {
namespace {

// Hardware limits of every GPU since compute capability 3.0.
constexpr unsigned kMaxBlockThreads = 1024;
constexpr unsigned kMaxBlockXY = 1024;
constexpr unsigned kMaxBlockZ = 64;
constexpr unsigned kMaxGridX = 0x7fffffffu;
constexpr unsigned kMaxGridYZ = 65535;

weft_status funcAttribute(const DriverApi &api, CUfunction fn, CUfunction_attribute attribute,
                          const char *attributeName, int &value) {
  if (CUresult result = api.cuFuncGetAttribute(&value, attribute, fn))
    return failCuda(result, format("cuFuncGetAttribute(%s)", attributeName));
  return WEFT_OK;
}

// Checks that need no driver: done before loading it, so they also work (and
// are tested) on machines without a GPU.
weft_status checkLaunchShape(CUfunction fn, const unsigned grid[3], const unsigned block[3],
                             size_t dynamicSmem) {
  if (!fn || !grid || !block)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_launch: %s is NULL", !fn ? "fn" : !grid ? "grid" : "block"));
  for (int axis = 0; axis < 3; ++axis)
    if (grid[axis] == 0 || block[axis] == 0)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_launch: grid (%u, %u, %u) and block (%u, %u, %u) must be positive "
                         "in every dimension",
                         grid[0], grid[1], grid[2], block[0], block[1], block[2]));
  unsigned long long threads = 1ull * block[0] * block[1] * block[2];
  if (threads > kMaxBlockThreads || block[0] > kMaxBlockXY || block[1] > kMaxBlockXY ||
      block[2] > kMaxBlockZ)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_launch: block (%u, %u, %u) has %llu threads; at most %u threads, "
                       "x and y <= %u, z <= %u",
                       block[0], block[1], block[2], threads, kMaxBlockThreads, kMaxBlockXY,
                       kMaxBlockZ));
  if (grid[0] > kMaxGridX || grid[1] > kMaxGridYZ || grid[2] > kMaxGridYZ)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_launch: grid (%u, %u, %u) exceeds the limits (x <= %u, y and z <= "
                       "%u)",
                       grid[0], grid[1], grid[2], kMaxGridX, kMaxGridYZ));
  if (dynamicSmem > UINT_MAX)
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("weft_launch: dynamic shared memory of %zu bytes does not fit "
                       "cuLaunchKernel's 32-bit size",
                       dynamicSmem));
  return WEFT_OK;
}

} // namespace
} // namespace weft::runtime

using namespace weft::runtime;

extern "C" {

weft_status weft_function_set_dynamic_smem(CUfunction fn, size_t bytes) {
  return apiCall("weft_function_set_dynamic_smem", [&]() -> weft_status {
    if (!fn)
      return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_function_set_dynamic_smem: fn is NULL");
    const DriverApi *api = nullptr;
    if (weft_status status = requireDriver(api))
      return status;
    CUdevice device = 0;
    if (weft_status status = currentDevice(*api, device, "weft_function_set_dynamic_smem"))
      return status;
    int optIn = 0, staticBytes = 0;
    if (weft_status status =
            deviceAttribute(*api, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                            "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", optIn))
      return status;
    if (weft_status status = funcAttribute(*api, fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                           "SHARED_SIZE_BYTES", staticBytes))
      return status;
    long long available = static_cast<long long>(optIn) - staticBytes;
    if (static_cast<unsigned long long>(bytes) > static_cast<unsigned long long>(
                                                     available < 0 ? 0 : available))
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("weft_function_set_dynamic_smem: %zu bytes of dynamic shared memory "
                         "exceed the device's opt-in limit of %d bytes per block minus the "
                         "kernel's %d bytes of static shared memory (%lld bytes available)",
                         bytes, optIn, staticBytes, available));
    if (CUresult result = api->cuFuncSetAttribute(
            fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)))
      return failCuda(result, format("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, %zu)",
                                     bytes));
    return WEFT_OK;
  });
}

} // extern "C"

/// weft_launch and weft_launch_dependent: the checks, then the launch, with
/// the programmatic stream serialization attribute when `dependent`.
static weft_status launchChecked(const char *caller, CUfunction fn, const unsigned grid[3],
                                 const unsigned block[3], size_t dynamic_smem, CUstream stream,
                                 void **args, bool dependent) {
  if (weft_status status = checkLaunchShape(fn, grid, block, dynamic_smem))
    return status;
  const DriverApi *api = nullptr;
  if (weft_status status = requireDriver(api))
    return status;
  // A few attribute reads per launch (well under a microsecond) buy a
  // message naming the limit instead of CUDA_ERROR_INVALID_VALUE.
  int maxThreads = 0, maxDynamic = 0;
  if (weft_status status = funcAttribute(*api, fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                         "MAX_THREADS_PER_BLOCK", maxThreads))
    return status;
  unsigned threads = block[0] * block[1] * block[2];
  if (threads > static_cast<unsigned>(maxThreads))
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: block (%u, %u, %u) has %u threads but this kernel allows "
                       "at most %d (its register use limits it)",
                       caller, block[0], block[1], block[2], threads, maxThreads));
  if (weft_status status =
          funcAttribute(*api, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        "MAX_DYNAMIC_SHARED_SIZE_BYTES", maxDynamic))
    return status;
  if (dynamic_smem > static_cast<size_t>(maxDynamic))
    return fail(WEFT_ERROR_INVALID_ARGUMENT,
                format("%s: %zu bytes of dynamic shared memory exceed the kernel's "
                       "limit of %d bytes; call weft_function_set_dynamic_smem(fn, %zu) first",
                       caller, dynamic_smem, maxDynamic, dynamic_smem));
  if (!args && api->cuFuncGetParamInfo) {
    size_t offset = 0, bytes = 0;
    if (api->cuFuncGetParamInfo(fn, 0, &offset, &bytes) == CUDA_SUCCESS)
      return fail(WEFT_ERROR_INVALID_ARGUMENT,
                  format("%s: args is NULL but the kernel takes parameters (the "
                         "first is %zu bytes)",
                         caller, bytes));
  }
  std::string shape = format("grid (%u, %u, %u), block (%u, %u, %u), %zu bytes dynamic shared "
                             "memory",
                             grid[0], grid[1], grid[2], block[0], block[1], block[2],
                             dynamic_smem);
  // A driver without cuLaunchKernelEx (before CUDA 12) launches plainly: the
  // stream orders the kernels as before, only later.
  if (dependent && api->cuLaunchKernelEx) {
    CUlaunchAttribute attribute = {};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config = {};
    config.gridDimX = grid[0];
    config.gridDimY = grid[1];
    config.gridDimZ = grid[2];
    config.blockDimX = block[0];
    config.blockDimY = block[1];
    config.blockDimZ = block[2];
    config.sharedMemBytes = static_cast<unsigned>(dynamic_smem);
    config.hStream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    if (CUresult result = api->cuLaunchKernelEx(&config, fn, args, nullptr))
      return failCuda(result, "cuLaunchKernelEx(programmatic dependent, " + shape + ")");
    return WEFT_OK;
  }
  if (CUresult result =
          api->cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                              static_cast<unsigned>(dynamic_smem), stream, args, nullptr))
    return failCuda(result, "cuLaunchKernel(" + shape + ")");
  return WEFT_OK;
}

extern "C" {

weft_status weft_launch(CUfunction fn, const unsigned grid[3], const unsigned block[3],
                        size_t dynamic_smem, CUstream stream, void **args) {
  return apiCall("weft_launch", [&]() -> weft_status {
    return launchChecked("weft_launch", fn, grid, block, dynamic_smem, stream, args, false);
  });
}

weft_status weft_launch_dependent(CUfunction fn, const unsigned grid[3], const unsigned block[3],
                                  size_t dynamic_smem, CUstream stream, void **args) {
  return apiCall("weft_launch_dependent", [&]() -> weft_status {
    return launchChecked("weft_launch_dependent", fn, grid, block, dynamic_smem, stream, args,
                         true);
  });
}

} // extern "C"
