// Private to the reference interpreter: the runner of upstream structured
// ops (Structured.cpp: arith, math, scf and the driver; StructuredTensor.cpp:
// tensor slices and linalg.generic). Scalars are 0-d Tensors: floats rounded
// to their type, integers (any width, and index) held as the sign-extended
// value of their bits (exact up to 2^53, checked), i1 as 0/1.
#ifndef WEFT_LIB_REFERENCE_STRUCTURED_H
#define WEFT_LIB_REFERENCE_STRUCTURED_H

#include "Kernels.h"

#include "weft/Reference/Interpreter.h"
#include "weft/Reference/Numerics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace weft::reference::detail::structured {

using namespace mlir;

inline unsigned bitWidth(Type type) {
  if (isa<IndexType>(type))
    return 64;
  return cast<IntegerType>(type).getWidth();
}
inline uint64_t maskOf(unsigned width) {
  return width >= 64 ? ~uint64_t(0) : ((uint64_t(1) << width) - 1);
}
inline int64_t signExtend(uint64_t bits, unsigned width) {
  bits &= maskOf(width);
  if (width < 64 && (bits >> (width - 1)) & 1)
    bits |= ~maskOf(width);
  return int64_t(bits);
}

/// The dtype a scalar (or tensor element) of `type` is held as.
inline std::optional<DType> heldDType(Type type) {
  if (isa<IndexType>(type))
    return DType::I64;
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.getWidth() == 1 ? DType::I1 : DType::I64;
  return dtypeOf(type);
}

inline Tensor scalar(DType dtype, double value) {
  Tensor t;
  t.dtype = dtype;
  t.data = {value};
  return t;
}
class Runner {
public:
  explicit Runner(llvm::DenseMap<Value, Tensor> &frame) : frame(frame) {}

  LogicalResult run(Operation *op);

private:
  llvm::DenseMap<Value, Tensor> &frame;
  /// The iteration index of each enclosing linalg.generic, innermost last.
  SmallVector<const SmallVector<int64_t> *> linalgIndex;

  FailureOr<const Tensor *> get(Operation *op, Value value) {
    auto it = frame.find(value);
    if (it == frame.end())
      return op->emitOpError("reference interpreter has no value for an operand");
    return &it->second;
  }
  FailureOr<uint64_t> bits(Operation *op, Value value) {
    auto t = get(op, value);
    if (failed(t))
      return failure();
    if ((*t)->data.size() != 1)
      return op->emitOpError("reference interpreter expects a scalar operand");
    return uint64_t(int64_t((*t)->data[0])) & maskOf(bitWidth(value.getType()));
  }
  FailureOr<int64_t> sint(Operation *op, Value value) {
    auto b = bits(op, value);
    if (failed(b))
      return failure();
    return signExtend(*b, bitWidth(value.getType()));
  }
  FailureOr<double> real(Operation *op, Value value) {
    auto t = get(op, value);
    if (failed(t))
      return failure();
    return (*t)->data[0];
  }
  LogicalResult setInt(Operation *op, Value result, uint64_t value) {
    unsigned width = bitWidth(result.getType());
    if (width == 1) {
      frame[result] = scalar(DType::I1, double(value & 1));
      return success();
    }
    int64_t v = signExtend(value, width);
    if (v > (int64_t(1) << 53) || v < -(int64_t(1) << 53))
      return op->emitOpError("reference interpreter cannot hold the integer ")
             << v << " exactly (beyond 2^53)";
    frame[result] = scalar(DType::I64, double(v));
    return success();
  }
  LogicalResult setReal(Operation *op, Value result, double value) {
    std::optional<DType> dtype = dtypeOf(result.getType());
    if (!dtype)
      return op->emitOpError("reference interpreter cannot hold ")
             << result.getType();
    frame[result] = scalar(*dtype, roundValue(value, *dtype));
    return success();
  }
  FailureOr<int64_t> foldResult(Operation *op, OpFoldResult ofr) {
    if (auto attr = dyn_cast<Attribute>(ofr))
      return cast<IntegerAttr>(attr).getInt();
    return sint(op, cast<Value>(ofr));
  }
  FailureOr<SmallVector<int64_t>> foldResults(Operation *op,
                                              ArrayRef<OpFoldResult> list) {
    SmallVector<int64_t> values;
    for (OpFoldResult ofr : list) {
      auto v = foldResult(op, ofr);
      if (failed(v))
        return failure();
      values.push_back(*v);
    }
    return values;
  }

  /// Runs `block` on `args`, returning its terminator's operand values.
  FailureOr<std::vector<Tensor>> runBlock(Block &block, ArrayRef<Tensor> args);

  LogicalResult runConstant(arith::ConstantOp op);
  LogicalResult runIntBinary(Operation *op);
  LogicalResult runFloat(Operation *op);
  LogicalResult runFor(scf::ForOp op);
  LogicalResult runIf(scf::IfOp op);
  LogicalResult runExtractSlice(tensor::ExtractSliceOp op);
  LogicalResult runInsertSlice(tensor::InsertSliceOp op);
  LogicalResult runGeneric(linalg::GenericOp op);
};

} // namespace weft::reference::detail::structured

#endif // WEFT_LIB_REFERENCE_STRUCTURED_H
