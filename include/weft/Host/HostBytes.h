// Tensor values as a step's buffers hold them: element widths and the
// conversions between float64 values (.npz tensors) and a dtype's bytes.
#ifndef WEFT_HOST_HOSTBYTES_H
#define WEFT_HOST_HOSTBYTES_H

#include "weft/Support/Npz.h"

#include <optional>
#include <string>
#include <vector>

namespace weft {

/// "tensor<2x3xbf16>" for a shape and a dtype name.
std::string describe(const std::vector<int64_t> &shape, const std::string &dtype);
/// The .npz dtype that holds a buffer's elements (i32 as i64).
std::optional<DType> tensorDType(const std::string &name);
size_t elementBytes(const std::string &dtype);
/// `count` elements of `data` from `start` as a buffer's bytes of `dtype`.
std::string toBytes(const std::vector<double> &data, size_t start, size_t count,
                    const std::string &dtype);
std::vector<double> fromBytes(const std::string &bytes, const std::string &dtype);

} // namespace weft

#endif // WEFT_HOST_HOSTBYTES_H
