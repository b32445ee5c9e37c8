// JIT execution of a lowered entry function through its C interface: each
// tensor argument becomes a memref descriptor over a host buffer, the results
// come back as descriptors of buffers the compiled code malloc'ed.
#include "weft/Target/CPU/CpuRunner.h"
#include "weft/Reference/Interpreter.h"

#include "weft/Support/FloatBits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;

namespace weft::cpu {

namespace {

/// "tensor<2x3xf32>", as the IR writes it.
std::string describe(ArrayRef<int64_t> shape, DType dtype) {
  std::string text = "tensor<";
  for (int64_t dim : shape)
    text += std::to_string(dim) + "x";
  return text + dtypeName(dtype) + ">";
}

void writeElement(uint8_t *at, DType dtype, double value) {
  switch (dtype) {
  case DType::F64:
    std::memcpy(at, &value, 8);
    return;
  case DType::F32: {
    auto narrow = static_cast<float>(value);
    std::memcpy(at, &narrow, 4);
    return;
  }
  case DType::F16: {
    uint16_t bits = f16Bits(value);
    std::memcpy(at, &bits, 2);
    return;
  }
  case DType::BF16: {
    uint16_t bits = bf16Bits(value);
    std::memcpy(at, &bits, 2);
    return;
  }
  case DType::I64: {
    auto integer = static_cast<int64_t>(value);
    std::memcpy(at, &integer, 8);
    return;
  }
  case DType::I1:
    *at = value != 0.0;
    return;
  case DType::I16: {
    auto integer = static_cast<int16_t>(value);
    std::memcpy(at, &integer, 2);
    return;
  }
  }
}

double readElement(const uint8_t *at, DType dtype) {
  switch (dtype) {
  case DType::F64: {
    double value;
    std::memcpy(&value, at, 8);
    return value;
  }
  case DType::F32: {
    float value;
    std::memcpy(&value, at, 4);
    return value;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, at, 2);
    return dtype == DType::F16 ? f16Value(bits) : bf16Value(bits);
  }
  case DType::I64: {
    int64_t value;
    std::memcpy(&value, at, 8);
    return static_cast<double>(value);
  }
  case DType::I1:
    return (*at & 1) ? 1.0 : 0.0;
  case DType::I16: {
    int16_t value;
    std::memcpy(&value, at, 2);
    return static_cast<double>(value);
  }
  }
  llvm_unreachable("unknown dtype");
}

/// The descriptor words of a ranked memref, as the C interface lays out
/// {ptr allocated, ptr aligned, i64 offset, i64 sizes[rank], i64 strides[rank]}.
size_t descriptorWords(int64_t rank) { return 3 + 2 * rank; }

/// The C interface's memref result pointer the generated code returns for a
/// memref.get_global (a constant): not to be freed.
constexpr uintptr_t kGlobalBufferMarker = 0xdeadbeef;

/// Checks the signature: ranked tensors of supported element types.
LogicalResult checkTypes(func::FuncOp func, TypeRange types, StringRef what) {
  for (auto [index, type] : llvm::enumerate(types)) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() ||
        !reference::dtypeOf(tensor.getElementType()))
      return func.emitError("weft-cpu-run supports static ranked tensors of "
                            "f64, f32, f16, bf16, i64 or i1; ")
             << what << " #" << index << " of @" << func.getSymName()
             << " is " << type;
  }
  return success();
}

} // namespace

FailureOr<std::vector<Tensor>> runOnCpu(ModuleOp module, StringRef entry,
                                        ArrayRef<Tensor> args,
                                        CpuRunOptions options) {
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func || func.isExternal())
    return module.emitError("no function @") << entry << " to run";
  FunctionType signature = func.getFunctionType();
  if (failed(checkTypes(func, signature.getInputs(), "argument")) ||
      failed(checkTypes(func, signature.getResults(), "result")))
    return failure();
  if (args.size() != signature.getNumInputs())
    return func.emitError("@") << entry << " takes " << signature.getNumInputs()
                               << " arguments, got " << args.size();
  for (auto [index, type] : llvm::enumerate(signature.getInputs())) {
    auto tensor = cast<RankedTensorType>(type);
    if (tensor.getShape() != ArrayRef<int64_t>(args[index].shape) ||
        *reference::dtypeOf(tensor.getElementType()) != args[index].dtype)
      return func.emitError("argument #")
             << index << " of @" << entry << " is " << type
             << " but the given tensor is "
             << describe(args[index].shape, args[index].dtype);
  }

  OwningOpRef<ModuleOp> lowered = cast<ModuleOp>(module->clone());
  if (failed(lowerToLLVM(*lowered, entry)))
    return failure();

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  unsigned optLevel = std::min(options.optLevel, 3u);
  auto transformer = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                               /*targetMachine=*/nullptr);
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel =
      static_cast<llvm::CodeGenOptLevel>(optLevel);
  auto engine = ExecutionEngine::create(*lowered, engineOptions);
  if (!engine)
    return func.emitError("JIT compilation of @")
           << entry << " failed: " << llvm::toString(engine.takeError());

  // Arguments: row-major host buffers and their descriptors.
  std::vector<std::vector<uint8_t>> buffers(args.size());
  std::vector<std::vector<int64_t>> descriptors(args.size());
  for (auto [index, tensor] : llvm::enumerate(args)) {
    size_t bytes = elementBytes(tensor.dtype);
    buffers[index].resize(std::max<size_t>(1, tensor.data.size() * bytes));
    for (size_t i = 0; i < tensor.data.size(); ++i)
      writeElement(buffers[index].data() + i * bytes, tensor.dtype,
                   tensor.data[i]);
    auto base = reinterpret_cast<int64_t>(buffers[index].data());
    std::vector<int64_t> &words = descriptors[index];
    words = {base, base, 0};
    words.insert(words.end(), tensor.shape.begin(), tensor.shape.end());
    std::vector<int64_t> strides(tensor.shape.size(), 1);
    for (size_t d = tensor.shape.size(); d-- > 1;)
      strides[d - 1] = strides[d] * tensor.shape[d];
    words.insert(words.end(), strides.begin(), strides.end());
  }
  size_t resultWords = 0;
  for (Type type : signature.getResults())
    resultWords += descriptorWords(cast<RankedTensorType>(type).getRank());
  std::vector<int64_t> results(std::max<size_t>(1, resultWords), 0);

  // The C interface: (result struct pointer if any, descriptor pointers...);
  // invokePacked takes a pointer to each of those parameters.
  SmallVector<void *> parameters;
  if (signature.getNumResults() > 0)
    parameters.push_back(results.data());
  for (std::vector<int64_t> &words : descriptors)
    parameters.push_back(words.data());
  SmallVector<void *> packed;
  for (void *&parameter : parameters)
    packed.push_back(&parameter);
  (*engine)->initialize();
  if (llvm::Error error =
          (*engine)->invokePacked(("_mlir_ciface_" + entry).str(), packed))
    return func.emitError("running @")
           << entry << " failed: " << llvm::toString(std::move(error));

  std::vector<Tensor> outputs;
  llvm::DenseSet<uintptr_t> owned;
  for (std::vector<uint8_t> &buffer : buffers)
    owned.insert(reinterpret_cast<uintptr_t>(buffer.data()));
  owned.insert(kGlobalBufferMarker);
  size_t word = 0;
  for (Type type : signature.getResults()) {
    auto tensorType = cast<RankedTensorType>(type);
    int64_t rank = tensorType.getRank();
    auto allocated = static_cast<uintptr_t>(results[word]);
    const auto *aligned = reinterpret_cast<const uint8_t *>(results[word + 1]);
    int64_t offset = results[word + 2];
    ArrayRef<int64_t> sizes(results.data() + word + 3, rank);
    ArrayRef<int64_t> strides(results.data() + word + 3 + rank, rank);
    word += descriptorWords(rank);
    if (sizes != tensorType.getShape())
      return func.emitError("result of @")
             << entry << " came back as "
             << describe(sizes, *reference::dtypeOf(tensorType.getElementType()))
             << ", expected " << type;
    Tensor tensor;
    tensor.shape.assign(sizes.begin(), sizes.end());
    tensor.dtype = *reference::dtypeOf(tensorType.getElementType());
    tensor.data.resize(tensor.numElements());
    size_t bytes = elementBytes(tensor.dtype);
    SmallVector<int64_t> position(rank, 0);
    for (int64_t flat = 0; flat < tensor.numElements(); ++flat) {
      int64_t element = offset;
      for (int64_t d = 0; d < rank; ++d)
        element += position[d] * strides[d];
      tensor.data[flat] = readElement(aligned + element * bytes, tensor.dtype);
      for (int64_t d = rank; d-- > 0;) // the next row-major position
        if (++position[d] < sizes[d])
          break;
        else
          position[d] = 0;
    }
    outputs.push_back(std::move(tensor));
    // The compiled code hands result buffers to the caller (malloc'ed).
    if (allocated && owned.insert(allocated).second)
      std::free(reinterpret_cast<void *>(allocated));
  }
  return outputs;
}

} // namespace weft::cpu
