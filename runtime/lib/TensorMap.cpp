// TMA descriptors: cuTensorMapEncodeTiled for row-major tensors, with the
// driver's requirements checked first so the message names the bad value.
#include "Driver.h"
#include "Status.h"

#include <cstdint>
#include <utility>

namespace weft::runtime {
namespace {

constexpr unsigned kMaxRank = 5;
constexpr unsigned kMaxBoxDim = 256;
constexpr unsigned long long kMaxGlobalDim = 1ull << 32;
constexpr unsigned long long kMaxStride = 1ull << 40;
constexpr unsigned kGlobalAlignment = 16;
constexpr unsigned kStrideAlignment = 16;
// The driver requires 64; cuda.h declares CUtensorMap alignas(128), so only a
// map placed by hand in a byte buffer can miss it.
constexpr unsigned kMapAlignment = 64;

// Bytes per element, 0 for types this runtime does not encode (the packed
// sub-byte types of CUDA 12.8+ need their own box rules).
unsigned elementBytes(CUtensorMapDataType dtype) {
  switch (dtype) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8:
    return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32:
  case CU_TENSOR_MAP_DATA_TYPE_INT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64:
  case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

// Largest inner box row in bytes for a swizzle mode; 0 for modes this runtime
// does not encode.
unsigned swizzleSpan(CUtensorMapSwizzle swizzle, unsigned innerBoxBytes) {
  switch (swizzle) {
  case CU_TENSOR_MAP_SWIZZLE_NONE:
    return innerBoxBytes; // no limit beyond the box's own
  case CU_TENSOR_MAP_SWIZZLE_32B:
    return 32;
  case CU_TENSOR_MAP_SWIZZLE_64B:
    return 64;
  case CU_TENSOR_MAP_SWIZZLE_128B:
    return 128;
  default:
    return 0;
  }
}

weft_status invalidArgument(std::string message) {
  return fail(WEFT_ERROR_INVALID_ARGUMENT, "weft_tensor_map_encode_tiled: " + message);
}

} // namespace
} // namespace weft::runtime

using namespace weft::runtime;

extern "C" {

weft_status weft_tensor_map_encode_tiled(CUtensorMap *map, CUtensorMapDataType dtype,
                                         unsigned rank, void *global_address,
                                         const unsigned long long *dims,
                                         const unsigned long long *strides_bytes,
                                         const unsigned *box, CUtensorMapSwizzle swizzle) {
  return apiCall("weft_tensor_map_encode_tiled", [&]() -> weft_status {
    if (!map || !dims || !box || (rank > 1 && !strides_bytes))
      return invalidArgument(format("%s is NULL", !map ? "map" : !dims ? "dims" : !box ? "box"
                                                                                : "strides_bytes"));
    if (reinterpret_cast<uintptr_t>(map) % kMapAlignment != 0)
      return invalidArgument(format("map %p is not %u-byte aligned", static_cast<void *>(map),
                                    kMapAlignment));
    if (rank < 1 || rank > kMaxRank)
      return invalidArgument(format("rank %u is not in 1..%u", rank, kMaxRank));
    unsigned element = elementBytes(dtype);
    if (element == 0)
      return invalidArgument(format("element type %d is not supported (supported: the 1-, 2-, "
                                    "4- and 8-byte CU_TENSOR_MAP_DATA_TYPE_* values 0..12)",
                                    static_cast<int>(dtype)));
    if (!global_address || reinterpret_cast<uintptr_t>(global_address) % kGlobalAlignment != 0)
      return invalidArgument(format("global address %p is not %u-byte aligned (nor NULL)",
                                    global_address, kGlobalAlignment));
    for (unsigned i = 0; i < rank; ++i)
      if (dims[i] == 0 || dims[i] > kMaxGlobalDim)
        return invalidArgument(format("dims[%u] = %llu is not in 1..2^32", i, dims[i]));
    for (unsigned i = 0; i + 1 < rank; ++i) {
      unsigned long long stride = strides_bytes[i];
      if (stride % kStrideAlignment != 0 || stride == 0 || stride >= kMaxStride)
        return invalidArgument(format("strides_bytes[%u] (stride of dim %u) = %llu is not a "
                                      "positive multiple of %u below 2^40",
                                      i, i + 1, stride, kStrideAlignment));
    }
    // No two elements at one address: taken by increasing stride (TMA
    // allows any order, e.g. [b, s, h, d] read as (d, s, h, b)), each dim
    // must step past the whole extent of the dims below it. A dim of extent
    // 1 never steps (one kv head of [b, s, 1, d] has the rows' stride), so
    // it is left out. dims * stride can overflow 64 bits: compare by division.
    unsigned order[kMaxRank], count = 0;
    auto strideOf = [&](unsigned dim) -> unsigned long long {
      return dim == 0 ? element : strides_bytes[dim - 1];
    };
    for (unsigned i = 0; i < rank; ++i)
      if (i == 0 || dims[i] > 1)
        order[count++] = i;
    for (unsigned i = 1; i < count; ++i)
      for (unsigned j = i; j > 0 && strideOf(order[j]) < strideOf(order[j - 1]); --j)
        std::swap(order[j], order[j - 1]);
    for (unsigned i = 1; i < count; ++i) {
      unsigned outer = order[i], inner = order[i - 1];
      unsigned long long span = strideOf(inner);
      if (strideOf(outer) / span < dims[inner])
        return invalidArgument(format("strides_bytes[%u] = %llu is smaller than dims[%u] = %llu "
                                      "times %llu bytes: rows would overlap",
                                      outer - 1, strideOf(outer), inner, dims[inner], span));
    }
    for (unsigned i = 0; i < rank; ++i)
      if (box[i] == 0 || box[i] > kMaxBoxDim)
        return invalidArgument(format("box[%u] = %u is not in 1..%u", i, box[i], kMaxBoxDim));
    unsigned innerBoxBytes = box[0] * element;
    if (innerBoxBytes % 16 != 0)
      return invalidArgument(format("inner box of %u elements of %u bytes = %u bytes is not a "
                                    "multiple of 16",
                                    box[0], element, innerBoxBytes));
    unsigned span = swizzleSpan(swizzle, innerBoxBytes);
    if (span == 0)
      return invalidArgument(format("swizzle mode %d is not supported (NONE, 32B, 64B, 128B)",
                                    static_cast<int>(swizzle)));
    if (innerBoxBytes > span)
      return invalidArgument(format("inner box of %u elements of %u bytes = %u bytes exceeds "
                                    "the %u-byte swizzle span",
                                    box[0], element, innerBoxBytes, span));

    const DriverApi *api = nullptr;
    if (weft_status status = requireDriver(api))
      return status;
    // The driver's integer types differ from the C API's (cuuint64_t is
    // unsigned long here), so copy rather than cast the arrays.
    cuuint64_t globalDim[kMaxRank], globalStrides[kMaxRank];
    cuuint32_t boxDim[kMaxRank], elementStrides[kMaxRank];
    for (unsigned i = 0; i < rank; ++i) {
      globalDim[i] = dims[i];
      boxDim[i] = box[i];
      elementStrides[i] = 1;
      globalStrides[i] = i + 1 < rank ? strides_bytes[i] : 0;
    }
    if (CUresult result = api->cuTensorMapEncodeTiled(
            map, dtype, rank, global_address, globalDim, globalStrides, boxDim, elementStrides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))
      return failCuda(result, format("cuTensorMapEncodeTiled(dtype %d, rank %u, address %p, "
                                     "inner dim %llu, inner box %u, swizzle %d)",
                                     static_cast<int>(dtype), rank, global_address, dims[0],
                                     box[0], static_cast<int>(swizzle)));
    return WEFT_OK;
  });
}

} // extern "C"
