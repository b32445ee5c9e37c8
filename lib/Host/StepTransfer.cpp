// StepTransfer: bytes between the host and a loaded step's buffers
// (StepTransfer.h).
#include "StepTransfer.h"

#include "weft/Host/HostBytes.h"
#include "weft/Host/StepTiming.h"
#include "weft/Support/FloatBits.h"
#include "weft/Support/ToolError.h"

#include <cstring>

namespace weft::run {

int error(ExitCode code, const llvm::Twine &message) {
  printToolError("weft-run", message);
  return code;
}

bool isState(const weft_step_buffer &info) {
  return info.arg >= 0 &&
         (info.role == WEFT_ROLE_PARAMETER || info.role == WEFT_ROLE_OPTIMIZER_STATE);
}

bool StepTransfer::bindBytes(const BufferView &buffer, const std::string &host) {
  if (weft_step_bind(step, buffer.index, host.data(), host.size())) {
    error(kExitFailed, llvm::Twine("binding '") + buffer.info.name + "': " + weft_last_error());
    return false;
  }
  return true;
}

bool StepTransfer::bind(const Binding &b, int64_t s) {
  if (b.high)
    return bindSplit(b);
  if (b.draw) {
    std::string host;
    return draw(*b.buffer, host) && bindBytes(*b.buffer, host);
  }
  if (isState(b.buffer->info)) { // bound once
    std::vector<double> values = localValues(b, s);
    return bindBytes(*b.buffer, toBytes(values, 0, values.size(), b.buffer->info.dtype));
  }
  int64_t slice = b.steps ? s % b.steps : 0;
  auto &[kept, bytes] = lastSlice[&b];
  if (bytes.empty() || kept != slice) {
    std::vector<double> values = localValues(b, s);
    bytes = toBytes(values, 0, values.size(), b.buffer->info.dtype);
    kept = slice;
  }
  return bindBytes(*b.buffer, bytes);
}

bool StepTransfer::readRaw(const BufferView &buffer, std::string &host) {
  host.assign(buffer.info.size, '\0');
  if (weft_step_read(step, buffer.index, host.data(), host.size())) {
    error(kExitFailed, llvm::Twine("reading '") + buffer.info.name + "': " + weft_last_error());
    return false;
  }
  return true;
}

bool StepTransfer::readBack(const BufferView &buffer, Tensor &tensor) {
  std::string host;
  if (!readRaw(buffer, host))
    return false;
  tensor.shape = buffer.shape;
  tensor.dtype = *tensorDType(buffer.info.dtype);
  tensor.data = fromBytes(host, buffer.info.dtype);
  tensor.data.resize(size_t(buffer.elements));
  return true;
}

bool StepTransfer::deriveCopy(const BufferView &copy, const BufferView &master) {
  std::string host, bytes(copy.info.size, '\0');
  if (!readRaw(master, host))
    return false;
  bool bf16 = std::string(copy.info.dtype) == "bf16";
  for (int64_t i = 0; i < copy.elements; ++i) {
    float f;
    std::memcpy(&f, host.data() + 4 * i, 4);
    uint16_t bits = bf16 ? bf16Bits(f) : f16Bits(f);
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  return bindBytes(copy, bytes);
}

bool StepTransfer::joinSplit(const BufferView &low, const BufferView &high, Tensor &tensor) {
  std::string lowBytes, highBytes;
  if (!readRaw(low, lowBytes) || !readRaw(high, highBytes))
    return false;
  tensor.shape = low.shape;
  tensor.dtype = DType::F32;
  tensor.data.resize(size_t(low.elements));
  for (size_t i = 0; i < tensor.data.size(); ++i) {
    uint16_t hi;
    int16_t lo;
    std::memcpy(&hi, highBytes.data() + 2 * i, 2);
    std::memcpy(&lo, lowBytes.data() + 2 * i, 2);
    tensor.data[i] = joinMaster(hi, lo);
  }
  return true;
}

std::vector<double> StepTransfer::localValues(const Binding &b, int64_t s) {
  const BufferView &buffer = *b.buffer;
  size_t count = size_t(b.local ? buffer.elements : buffer.globalElements);
  const double *start = b.tensor->data.data() + (b.steps ? size_t(s % b.steps) * count : 0);
  if (buffer.splitDim < 0 || b.local)
    return std::vector<double>(start, start + count);
  return blockValues(start, buffer.global, buffer.splitDim, layout.parts(), layout.part());
}

bool StepTransfer::draw(const BufferView &buffer, std::string &host, const char *dtype) {
  weft_step_buffer info = buffer.info;
  if (dtype) {
    info.dtype = dtype;
    info.size = size_t(buffer.elements) * 4;
  }
  if (buffer.splitDim >= 0) {
    info.size *= size_t(layout.parts());
    info.shape[buffer.splitDim] *= layout.parts();
  }
  std::string why;
  bool split = buffer.splitDim >= 0;
  if (!drawStateBytes(info, uint64_t(initState), host, why, split ? buffer.splitDim : -1,
                      split ? layout.parts() : 1, split ? layout.part() : 0)) {
    error(kExitUsage, why);
    return false;
  }
  return true;
}

bool StepTransfer::bindSplit(const Binding &b) {
  const BufferView &low = *b.buffer, &high = *b.high;
  std::vector<float> master(size_t(low.elements));
  if (b.draw) {
    std::string host;
    if (!draw(low, host, "f32"))
      return false;
    std::memcpy(master.data(), host.data(), master.size() * 4);
  } else {
    std::vector<double> values = localValues(b, 0);
    for (size_t i = 0; i < master.size(); ++i)
      master[i] = float(values[i]);
  }
  std::string lowBytes(low.info.size, '\0'), highBytes(high.info.size, '\0');
  for (size_t i = 0; i < master.size(); ++i) {
    int16_t lo = splitMasterLow(master[i]);
    uint16_t hi = splitMasterHigh(master[i]);
    std::memcpy(lowBytes.data() + 2 * i, &lo, 2);
    std::memcpy(highBytes.data() + 2 * i, &hi, 2);
  }
  return bindBytes(low, lowBytes) && bindBytes(high, highBytes);
}

} // namespace weft::run
