// The reference interpreter on tensor slices and linalg.generic (indexing
// maps evaluated per iteration; outputs accumulate through the body).
#include "Structured.h"

#include "mlir/IR/AffineExpr.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace weft::reference::detail::structured {

template <typename Body>
static LogicalResult forEachInWindow(Operation *op, ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                              ArrayRef<int64_t> strides, Body body) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (sizes[d] > 0 && (offsets[d] < 0 ||
                         offsets[d] + (sizes[d] - 1) * strides[d] >= shape[d]))
      return op->emitOpError("reference interpreter: slice out of bounds in "
                             "dimension ")
             << d;
  std::vector<int64_t> tensorStrides = rowMajorStrides(shape);
  int64_t count = product(sizes, 0, sizes.size());
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < sizes.size(); ++d)
      offset += (offsets[d] + index[d] * strides[d]) * tensorStrides[d];
    body(offset, k);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
  return success();
}

LogicalResult Runner::runExtractSlice(tensor::ExtractSliceOp op) {
  auto source = get(op, op.getSource());
  auto offsets = foldResults(op, op.getMixedOffsets());
  auto sizes = foldResults(op, op.getMixedSizes());
  auto strides = foldResults(op, op.getMixedStrides());
  if (failed(source) || failed(offsets) || failed(sizes) || failed(strides))
    return failure();
  Tensor result;
  result.dtype = (*source)->dtype;
  llvm::SmallBitVector dropped = op.getDroppedDims();
  for (size_t d = 0; d < sizes->size(); ++d)
    if (!dropped.test(d))
      result.shape.push_back((*sizes)[d]);
  result.data.resize(result.numElements());
  const Tensor &src = **source;
  if (failed(forEachInWindow(op, src.shape, *offsets, *sizes, *strides,
                             [&](int64_t offset, int64_t k) {
                               result.data[k] = src.data[offset];
                             })))
    return failure();
  frame[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Runner::runInsertSlice(tensor::InsertSliceOp op) {
  auto source = get(op, op.getSource());
  auto dest = get(op, op.getDest());
  auto offsets = foldResults(op, op.getMixedOffsets());
  auto sizes = foldResults(op, op.getMixedSizes());
  auto strides = foldResults(op, op.getMixedStrides());
  if (failed(source) || failed(dest) || failed(offsets) || failed(sizes) ||
      failed(strides))
    return failure();
  Tensor result = **dest;
  const Tensor &src = **source;
  if (product(*sizes, 0, sizes->size()) != src.numElements())
    return op.emitOpError("reference interpreter: source has ")
           << src.numElements() << " elements, the slice a different count";
  if (failed(forEachInWindow(op, result.shape, *offsets, *sizes, *strides,
                             [&](int64_t offset, int64_t k) {
                               result.data[offset] = src.data[k];
                             })))
    return failure();
  roundTensor(result);
  frame[op.getResult()] = std::move(result);
  return success();
}

static FailureOr<int64_t> evalAffine(AffineExpr expr, ArrayRef<int64_t> dims) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dims[dim.getPosition()];
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return constant.getValue();
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return failure();
  auto lhs = evalAffine(binary.getLHS(), dims);
  auto rhs = evalAffine(binary.getRHS(), dims);
  if (failed(lhs) || failed(rhs))
    return failure();
  int64_t a = *lhs, b = *rhs;
  switch (expr.getKind()) {
  case AffineExprKind::Add: return a + b;
  case AffineExprKind::Mul: return a * b;
  case AffineExprKind::Mod:
    if (b <= 0) return failure();
    return ((a % b) + b) % b;
  case AffineExprKind::FloorDiv:
    if (b == 0) return failure();
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
  case AffineExprKind::CeilDiv:
    if (b == 0) return failure();
    return a / b + ((a % b != 0) && ((a < 0) == (b < 0)));
  default:
    return failure();
  }
}

LogicalResult Runner::runGeneric(linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned numLoops = op.getNumLoops();
  // Copies: the body adds values to the frame, which may move its entries.
  std::vector<Tensor> operandValues;
  for (OpOperand &operand : op->getOpOperands()) {
    auto t = get(op, operand.get());
    if (failed(t))
      return failure();
    operandValues.push_back(**t);
  }
  SmallVector<const Tensor *> operands;
  for (const Tensor &t : operandValues)
    operands.push_back(&t);
  // Loop extents from the operand dimensions indexed by a bare loop dim.
  SmallVector<int64_t> extents(numLoops, -1);
  for (auto [map, tensor] : llvm::zip(maps, operands))
    for (auto [r, expr] : llvm::enumerate(map.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        if (r < tensor->shape.size())
          extents[dim.getPosition()] = tensor->shape[r];
  if (llvm::is_contained(extents, -1))
    return op.emitOpError("reference interpreter cannot infer the loop bounds");

  unsigned numInputs = op.getNumDpsInputs();
  std::vector<Tensor> outputs;
  for (unsigned i = numInputs; i < operands.size(); ++i)
    outputs.push_back(*operands[i]);
  SmallVector<std::vector<int64_t>> strides;
  for (const Tensor *t : operands)
    strides.push_back(rowMajorStrides(t->shape));
  Block &body = *op.getBody();
  SmallVector<DType> argTypes;
  for (BlockArgument arg : body.getArguments()) {
    std::optional<DType> dtype = heldDType(arg.getType());
    if (!dtype)
      return op.emitOpError("reference interpreter cannot hold ")
             << arg.getType();
    argTypes.push_back(*dtype);
  }

  SmallVector<int64_t> index(numLoops, 0);
  linalgIndex.push_back(&index);
  auto offsetOf = [&](unsigned i) -> FailureOr<int64_t> {
    int64_t offset = 0;
    for (auto [r, expr] : llvm::enumerate(maps[i].getResults())) {
      auto v = evalAffine(expr, index);
      if (failed(v))
        return failure();
      if (*v < 0 || *v >= operands[i]->shape[r])
        return failure();
      offset += *v * strides[i][r];
    }
    return offset;
  };
  int64_t count = product(extents, 0, extents.size());
  LogicalResult status = success();
  std::vector<Tensor> args(operands.size());
  SmallVector<int64_t> offsets(operands.size());
  for (int64_t flat = 0; flat < count && succeeded(status); ++flat) {
    for (unsigned i = 0; i < operands.size(); ++i) {
      auto offset = offsetOf(i);
      if (failed(offset)) {
        status = op.emitOpError("reference interpreter: indexing map #")
                 << i << " is out of bounds or not evaluable";
        break;
      }
      offsets[i] = *offset;
      double value = i < numInputs ? operands[i]->data[*offset]
                                   : outputs[i - numInputs].data[*offset];
      args[i] = scalar(argTypes[i], value);
    }
    if (failed(status))
      break;
    auto yielded = runBlock(body, args);
    if (failed(yielded)) {
      status = failure();
      break;
    }
    for (unsigned o = 0; o < outputs.size(); ++o)
      outputs[o].data[offsets[numInputs + o]] =
          roundValue((*yielded)[o].data[0], outputs[o].dtype);
    for (size_t d = numLoops; d-- > 0;) {
      if (++index[d] < extents[d])
        break;
      index[d] = 0;
    }
  }
  linalgIndex.pop_back();
  if (failed(status))
    return failure();
  for (auto [result, value] : llvm::zip(op.getResults(), outputs))
    frame[result] = std::move(value);
  return success();
}
} // namespace weft::reference::detail::structured
