// The reference interpreter on upstream structured IR: the arith, math and
// scf ops that weft-tile-attention emits, and the driver's entry points.
// Integer ops compute on uint64_t/int64_t at the op's bit width; float ops
// round to their result type. Tensor and linalg ops: StructuredTensor.cpp.
#include "Structured.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace weft::reference::detail::structured {

FailureOr<std::vector<Tensor>> Runner::runBlock(Block &block,
                                                ArrayRef<Tensor> args) {
  for (auto [argument, value] : llvm::zip(block.getArguments(), args))
    frame[argument] = value;
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      std::vector<Tensor> yielded;
      for (Value operand : op.getOperands()) {
        auto t = get(&op, operand);
        if (failed(t))
          return failure();
        yielded.push_back(**t);
      }
      return yielded;
    }
    if (failed(run(&op)))
      return failure();
  }
  return std::vector<Tensor>{};
}

LogicalResult Runner::runConstant(arith::ConstantOp op) {
  Attribute value = op.getValue();
  Type type = op.getType();
  auto element = [&](Attribute attr) -> std::optional<double> {
    if (auto f = dyn_cast<FloatAttr>(attr))
      return f.getValue().convertToDouble();
    if (auto i = dyn_cast<IntegerAttr>(attr)) {
      unsigned width = bitWidth(i.getType());
      if (width == 1)
        return double(i.getValue().getZExtValue() & 1);
      return double(signExtend(i.getValue().getZExtValue(), width));
    }
    return std::nullopt;
  };
  if (auto shaped = dyn_cast<RankedTensorType>(type)) {
    auto dense = dyn_cast<DenseElementsAttr>(value);
    std::optional<DType> dtype = heldDType(shaped.getElementType());
    if (!dense || !dtype || !shaped.hasStaticShape())
      return op.emitOpError("reference interpreter cannot read ") << value;
    Tensor t;
    t.dtype = *dtype;
    t.shape.assign(shaped.getShape().begin(), shaped.getShape().end());
    for (Attribute attr : dense.getValues<Attribute>())
      t.data.push_back(element(attr).value_or(0.0));
    roundTensor(t);
    frame[op.getResult()] = std::move(t);
    return success();
  }
  std::optional<double> number = element(value);
  std::optional<DType> dtype = heldDType(type);
  if (!number || !dtype)
    return op.emitOpError("reference interpreter cannot read ") << value;
  frame[op.getResult()] = scalar(*dtype, roundValue(*number, *dtype));
  return success();
}

LogicalResult Runner::runIntBinary(Operation *op) {
  Value lhsValue = op->getOperand(0), rhsValue = op->getOperand(1);
  auto lb = bits(op, lhsValue), rb = bits(op, rhsValue);
  if (failed(lb) || failed(rb))
    return failure();
  unsigned width = bitWidth(lhsValue.getType());
  uint64_t a = *lb, b = *rb, mask = maskOf(width);
  int64_t sa = signExtend(a, width), sb = signExtend(b, width);
  auto zeroDivisor = [&]() {
    return op->emitOpError("reference interpreter: division by zero");
  };
  if (auto mul = dyn_cast<arith::MulUIExtendedOp>(op)) {
    if (width > 32)
      return op->emitOpError("reference interpreter runs mului_extended on "
                             "at most 32-bit integers");
    uint64_t product = a * b; // exact: both < 2^32
    if (failed(setInt(op, mul.getLow(), product & mask)))
      return failure();
    return setInt(op, mul.getHigh(), (product >> width) & mask);
  }
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    bool r = false;
    switch (cmp.getPredicate()) {
    case arith::CmpIPredicate::eq: r = a == b; break;
    case arith::CmpIPredicate::ne: r = a != b; break;
    case arith::CmpIPredicate::slt: r = sa < sb; break;
    case arith::CmpIPredicate::sle: r = sa <= sb; break;
    case arith::CmpIPredicate::sgt: r = sa > sb; break;
    case arith::CmpIPredicate::sge: r = sa >= sb; break;
    case arith::CmpIPredicate::ult: r = a < b; break;
    case arith::CmpIPredicate::ule: r = a <= b; break;
    case arith::CmpIPredicate::ugt: r = a > b; break;
    case arith::CmpIPredicate::uge: r = a >= b; break;
    }
    return setInt(op, op->getResult(0), r);
  }
  uint64_t r;
  if (isa<arith::AddIOp>(op)) r = a + b;
  else if (isa<arith::SubIOp>(op)) r = a - b;
  else if (isa<arith::MulIOp>(op)) r = a * b; // wraps mod 2^64, then masked
  else if (isa<arith::AndIOp>(op)) r = a & b;
  else if (isa<arith::OrIOp>(op)) r = a | b;
  else if (isa<arith::XOrIOp>(op)) r = a ^ b;
  else if (isa<arith::ShLIOp>(op)) r = b >= width ? 0 : a << b;
  else if (isa<arith::ShRUIOp>(op)) r = b >= width ? 0 : a >> b;
  else if (isa<arith::ShRSIOp>(op))
    r = uint64_t(sa >> std::min<uint64_t>(b, 63));
  else if (isa<arith::MinSIOp>(op)) r = uint64_t(std::min(sa, sb));
  else if (isa<arith::MaxSIOp>(op)) r = uint64_t(std::max(sa, sb));
  else if (isa<arith::MinUIOp>(op)) r = std::min(a, b);
  else if (isa<arith::MaxUIOp>(op)) r = std::max(a, b);
  else if (isa<arith::DivUIOp, arith::RemUIOp, arith::DivSIOp, arith::RemSIOp,
                arith::CeilDivSIOp, arith::FloorDivSIOp, arith::CeilDivUIOp>(
               op)) {
    if (b == 0)
      return zeroDivisor();
    if (isa<arith::DivUIOp>(op)) r = a / b;
    else if (isa<arith::RemUIOp>(op)) r = a % b;
    else if (isa<arith::CeilDivUIOp>(op)) r = a / b + (a % b != 0);
    else if (isa<arith::DivSIOp>(op)) r = uint64_t(sa / sb);
    else if (isa<arith::RemSIOp>(op)) r = uint64_t(sa % sb);
    else {
      int64_t q = sa / sb;
      bool inexact = sa % sb != 0, sameSign = (sa < 0) == (sb < 0);
      if (isa<arith::CeilDivSIOp>(op) && inexact && sameSign)
        ++q;
      if (isa<arith::FloorDivSIOp>(op) && inexact && !sameSign)
        --q;
      r = uint64_t(q);
    }
  } else {
    return op->emitOpError("reference interpreter cannot run '")
           << op->getName() << "'";
  }
  return setInt(op, op->getResult(0), r & mask);
}

static double maximumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::nan("");
  if (a == 0 && b == 0)
    return std::signbit(a) ? b : a;
  return std::max(a, b);
}
static double minimumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::nan("");
  if (a == 0 && b == 0)
    return std::signbit(a) ? a : b;
  return std::min(a, b);
}

LogicalResult Runner::runFloat(Operation *op) {
  SmallVector<double> x;
  for (Value operand : op->getOperands()) {
    auto v = real(op, operand);
    if (failed(v))
      return failure();
    x.push_back(*v);
  }
  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    double a = x[0], b = x[1];
    bool unordered = std::isnan(a) || std::isnan(b);
    bool r = false;
    using P = arith::CmpFPredicate;
    switch (cmp.getPredicate()) {
    case P::AlwaysFalse: r = false; break;
    case P::AlwaysTrue: r = true; break;
    case P::OEQ: r = !unordered && a == b; break;
    case P::OGT: r = !unordered && a > b; break;
    case P::OGE: r = !unordered && a >= b; break;
    case P::OLT: r = !unordered && a < b; break;
    case P::OLE: r = !unordered && a <= b; break;
    case P::ONE: r = !unordered && a != b; break;
    case P::ORD: r = !unordered; break;
    case P::UEQ: r = unordered || a == b; break;
    case P::UGT: r = unordered || a > b; break;
    case P::UGE: r = unordered || a >= b; break;
    case P::ULT: r = unordered || a < b; break;
    case P::ULE: r = unordered || a <= b; break;
    case P::UNE: r = unordered || a != b; break;
    case P::UNO: r = unordered; break;
    }
    return setInt(op, op->getResult(0), r);
  }
  double r;
  if (isa<arith::AddFOp>(op)) r = x[0] + x[1];
  else if (isa<arith::SubFOp>(op)) r = x[0] - x[1];
  else if (isa<arith::MulFOp>(op)) r = x[0] * x[1];
  else if (isa<arith::DivFOp>(op)) r = x[0] / x[1];
  else if (isa<arith::MaximumFOp>(op)) r = maximumF(x[0], x[1]);
  else if (isa<arith::MinimumFOp>(op)) r = minimumF(x[0], x[1]);
  else if (isa<arith::MaxNumFOp>(op)) r = std::fmax(x[0], x[1]);
  else if (isa<arith::MinNumFOp>(op)) r = std::fmin(x[0], x[1]);
  else if (isa<arith::NegFOp>(op)) r = -x[0];
  else if (isa<arith::ExtFOp, arith::TruncFOp>(op)) r = x[0];
  else if (isa<math::ExpOp>(op)) r = std::exp(x[0]);
  else if (isa<math::LogOp>(op)) r = std::log(x[0]);
  else if (isa<math::SqrtOp>(op)) r = std::sqrt(x[0]);
  else if (isa<math::TanhOp>(op)) r = std::tanh(x[0]);
  else
    return op->emitOpError("reference interpreter cannot run '")
           << op->getName() << "'";
  // The one rounding, to the result type (f32 via float; f64 exact).
  return setReal(op, op->getResult(0), r);
}

LogicalResult Runner::runFor(scf::ForOp op) {
  auto lb = sint(op, op.getLowerBound()), ub = sint(op, op.getUpperBound()),
       step = sint(op, op.getStep());
  if (failed(lb) || failed(ub) || failed(step))
    return failure();
  if (*step <= 0)
    return op.emitOpError("reference interpreter needs a positive step");
  std::vector<Tensor> carried;
  for (Value init : op.getInitArgs()) {
    auto t = get(op, init);
    if (failed(t))
      return failure();
    carried.push_back(**t);
  }
  Type ivType = op.getInductionVar().getType();
  bool isUnsigned = op.getUnsignedCmp();
  for (int64_t iv = *lb; isUnsigned ? uint64_t(iv) < uint64_t(*ub) : iv < *ub;
       iv += *step) {
    std::vector<Tensor> args;
    args.push_back(scalar(bitWidth(ivType) == 1 ? DType::I1 : DType::I64,
                          double(iv)));
    for (Tensor &value : carried)
      args.push_back(std::move(value));
    auto yielded = runBlock(*op.getBody(), args);
    if (failed(yielded))
      return failure();
    carried = std::move(*yielded);
  }
  for (auto [result, value] : llvm::zip(op.getResults(), carried))
    frame[result] = std::move(value);
  return success();
}

LogicalResult Runner::runIf(scf::IfOp op) {
  auto cond = bits(op, op.getCondition());
  if (failed(cond))
    return failure();
  Region &region = *cond ? op.getThenRegion() : op.getElseRegion();
  if (region.empty())
    return success();
  auto yielded = runBlock(region.front(), {});
  if (failed(yielded))
    return failure();
  for (auto [result, value] : llvm::zip(op.getResults(), *yielded))
    frame[result] = std::move(value);
  return success();
}

/// Calls body(sourceOffset, k) for the k-th (row-major) element of the strided
LogicalResult Runner::run(Operation *op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return runConstant(constant);
  // Elementwise arith/math on tensors is not run here (scalars only).
  if (isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) &&
      (llvm::any_of(op->getOperandTypes(), llvm::IsaPred<ShapedType>) ||
       llvm::any_of(op->getResultTypes(), llvm::IsaPred<ShapedType>)))
    return op->emitOpError("reference interpreter cannot run '")
           << op->getName() << "' on tensors";
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::AndIOp,
          arith::OrIOp, arith::XOrIOp, arith::ShLIOp, arith::ShRUIOp,
          arith::ShRSIOp, arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp,
          arith::MaxUIOp, arith::DivUIOp, arith::RemUIOp, arith::DivSIOp,
          arith::RemSIOp, arith::CeilDivSIOp, arith::FloorDivSIOp,
          arith::CeilDivUIOp, arith::CmpIOp, arith::MulUIExtendedOp>(op))
    return runIntBinary(op);
  if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
          arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
          arith::MinNumFOp, arith::NegFOp, arith::ExtFOp, arith::TruncFOp,
          arith::CmpFOp, math::ExpOp, math::LogOp, math::SqrtOp,
          math::TanhOp>(op))
    return runFloat(op);
  if (isa<arith::TruncIOp, arith::ExtUIOp, arith::ExtSIOp, arith::IndexCastOp,
          arith::IndexCastUIOp>(op)) {
    Value in = op->getOperand(0);
    auto b = bits(op, in);
    if (failed(b))
      return failure();
    bool sign = isa<arith::ExtSIOp, arith::IndexCastOp>(op);
    uint64_t v = sign ? uint64_t(signExtend(*b, bitWidth(in.getType()))) : *b;
    return setInt(op, op->getResult(0),
                  v & maskOf(bitWidth(op->getResult(0).getType())));
  }
  if (isa<arith::SIToFPOp, arith::UIToFPOp>(op)) {
    auto b = bits(op, op->getOperand(0));
    if (failed(b))
      return failure();
    double v = isa<arith::SIToFPOp>(op)
                   ? double(signExtend(*b, bitWidth(op->getOperand(0).getType())))
                   : double(*b);
    return setReal(op, op->getResult(0), v);
  }
  if (auto select = dyn_cast<arith::SelectOp>(op)) {
    auto cond = get(op, select.getCondition());
    auto t = get(op, select.getTrueValue()), f = get(op, select.getFalseValue());
    if (failed(cond) || failed(t) || failed(f))
      return failure();
    if ((*cond)->data.size() != 1)
      return op->emitOpError("reference interpreter runs scalar conditions");
    Tensor chosen = (*cond)->data[0] != 0 ? **t : **f;
    frame[select.getResult()] = std::move(chosen);
    return success();
  }
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    return runFor(forOp);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return runIf(ifOp);
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return runExtractSlice(slice);
  if (auto slice = dyn_cast<tensor::InsertSliceOp>(op))
    return runInsertSlice(slice);
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return runGeneric(generic);
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    RankedTensorType type = empty.getType();
    std::optional<DType> dtype = heldDType(type.getElementType());
    if (!dtype)
      return op->emitOpError("reference interpreter cannot hold ") << type;
    Tensor t;
    t.dtype = *dtype;
    unsigned dynamic = 0;
    for (int64_t extent : type.getShape()) {
      if (ShapedType::isDynamic(extent)) {
        auto v = sint(op, empty.getDynamicSizes()[dynamic++]);
        if (failed(v))
          return failure();
        extent = *v;
      }
      t.shape.push_back(extent);
    }
    t.data.assign(t.numElements(), 0.0);
    frame[empty.getResult()] = std::move(t);
    return success();
  }
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    auto source = get(op, dim.getSource());
    auto index = sint(op, dim.getIndex());
    if (failed(source) || failed(index))
      return failure();
    if (*index < 0 || *index >= int64_t((*source)->shape.size()))
      return op->emitOpError("reference interpreter: dimension out of range");
    return setInt(op, dim.getResult(), uint64_t((*source)->shape[*index]));
  }
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    auto source = get(op, extract.getTensor());
    if (failed(source))
      return failure();
    const Tensor &src = **source;
    std::vector<int64_t> strides = rowMajorStrides(src.shape);
    int64_t offset = 0;
    for (auto [d, value] : llvm::enumerate(extract.getIndices())) {
      auto i = sint(op, value);
      if (failed(i))
        return failure();
      if (*i < 0 || *i >= src.shape[d])
        return op->emitOpError("reference interpreter: index out of bounds");
      offset += *i * strides[d];
    }
    Tensor element = scalar(src.dtype, src.data[offset]);
    frame[extract.getResult()] = std::move(element);
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    auto value = get(op, fill.getInputs()[0]);
    auto init = get(op, fill.getOutputs()[0]);
    if (failed(value) || failed(init))
      return failure();
    Tensor t = **init;
    double v = roundValue((*value)->data[0], t.dtype);
    std::fill(t.data.begin(), t.data.end(), v);
    frame[op->getResult(0)] = std::move(t);
    return success();
  }
  if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    if (linalgIndex.empty() || index.getDim() >= linalgIndex.back()->size())
      return op->emitOpError("reference interpreter: linalg.index outside a "
                             "linalg.generic");
    return setInt(op, index.getResult(),
                  uint64_t((*linalgIndex.back())[index.getDim()]));
  }
  return op->emitOpError("reference interpreter cannot run '")
         << op->getName() << "'";
}

} // namespace weft::reference::detail::structured

namespace weft::reference::detail {

bool isStructuredOp(Operation *op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    // Constants the driver cannot hold (i32, ...): other constants keep the
    // driver's path.
    auto integer = dyn_cast<IntegerType>(constant.getType());
    return integer && integer.getWidth() != 1 && integer.getWidth() != 64;
  }
  return isa<arith::ArithDialect, math::MathDialect, scf::SCFDialect,
             tensor::TensorDialect, linalg::LinalgDialect>(op->getDialect());
}

LogicalResult runStructuredOp(Operation *op,
                              llvm::DenseMap<Value, Tensor> &frame) {
  return structured::Runner(frame).run(op);
}

} // namespace weft::reference::detail
