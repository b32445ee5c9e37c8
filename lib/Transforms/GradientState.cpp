// The reverse sweep of weft-autodiff: activity analysis, gradient
// accumulation, and the dispatch of every forward op to its
// GradientOpInterface rule in reverse program order.
#include "weft/Transforms/GradientOpInterface.h"

#include "AutodiffRules.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-autodiff"

using namespace mlir;
using namespace weft;

#include "weft/Transforms/GradientOpInterface.cpp.inc"

namespace {

bool isFloatTensor(Value value) {
  auto tensor = dyn_cast<RankedTensorType>(value.getType());
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// Values an op reads: its operands and, for an op with regions, the values
/// its regions capture from above.
SmallVector<Value> valuesRead(Operation &op) {
  SmallVector<Value> values(op.getOperands());
  if (op.getNumRegions()) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op.getRegions(), captured);
    values.append(captured.begin(), captured.end());
  }
  return values;
}

/// Records the ops a rule creates, so they get the forward op's weft.layer.
struct CreatedOps : OpBuilder::Listener {
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
  SmallVector<Operation *> ops;
};

} // namespace

void GradientState::accumulate(Value operand, Value gradient) {
  assert(operand.getType() == gradient.getType() &&
         "a gradient has the type of its value");
  if (!needsGradient(operand))
    return;
  Value &slot = gradients[operand];
  if (!slot) {
    slot = gradient;
    return;
  }
  slot = AddOp::create(builder, loc, operand.getType(), slot, gradient);
}

Value GradientState::zeros(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  auto zero = FloatAttr::get(tensor.getElementType(), 0.0);
  return arith::ConstantOp::create(builder, loc, tensor,
                                   DenseElementsAttr::get(tensor, zero));
}

Value GradientState::scalar(Type elementType, double value) {
  auto tensor = RankedTensorType::get({}, elementType);
  auto attr = FloatAttr::get(elementType, value);
  return arith::ConstantOp::create(builder, loc, tensor,
                                   DenseElementsAttr::get(tensor, attr));
}

Value GradientState::reshape(Value value, Type type) {
  if (value.getType() == type)
    return value;
  return ReshapeOp::create(builder, loc, type, value);
}

Value GradientState::unbroadcast(Value gradient, Type operandType) {
  if (gradient.getType() == operandType)
    return gradient;
  auto from = cast<RankedTensorType>(gradient.getType());
  auto to = cast<RankedTensorType>(operandType);
  int64_t prepended = from.getRank() - to.getRank();
  assert(prepended >= 0 && "an operand broadcasts to the result's rank");
  SmallVector<int64_t> reduced, kept;
  for (int64_t i = 0; i < from.getRank(); ++i) {
    bool stretched = i < prepended ||
                     (to.getDimSize(i - prepended) == 1 && from.getDimSize(i) != 1);
    (stretched ? reduced : kept).push_back(i);
  }
  Value summed = gradient;
  if (!reduced.empty()) {
    SmallVector<int64_t> shape;
    for (int64_t i : kept)
      shape.push_back(from.getDimSize(i));
    auto type = RankedTensorType::get(shape, from.getElementType());
    summed = ReduceSumOp::create(builder, loc, type, gradient,
                                 builder.getDenseI64ArrayAttr(reduced),
                                 /*keepdim=*/nullptr);
  }
  return reshape(summed, to);
}

Value GradientState::broadcastTo(Value value, Type type) {
  if (value.getType() == type)
    return value;
  return AddOp::create(builder, loc, type, value, zeros(type));
}

FailureOr<SmallVector<Value>>
GradientState::buildGradients(Block &body, Value loss, ArrayRef<Value> wrt) {
  Operation *terminator = body.getTerminator();
  OpBuilder builder(terminator);
  GradientState state(builder, loss.getLoc());

  // Activity: a floating-point value varies when it is differentiated
  // against or computed from one that varies.
  auto computeVaried = [&] {
    state.varied.clear();
    for (Value value : wrt)
      if (isFloatTensor(value))
        state.varied.insert(value);
    for (Operation &op : body.without_terminator())
      if (llvm::any_of(valuesRead(op),
                       [&](Value v) { return state.varied.contains(v); }))
        for (Value result : op.getResults())
          if (isFloatTensor(result))
            state.varied.insert(result);
  };
  computeVaried();

  // Let every varied op produce what its rule will read (attention's lse).
  IRRewriter rewriter(body.getParentOp()->getContext());
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    auto rule = dyn_cast<GradientOpInterface>(&op);
    if (!rule || llvm::none_of(op.getOperands(), [&](Value v) {
          return state.varied.contains(v);
        }))
      continue;
    rewriter.setInsertionPoint(&op);
    rule.saveForBackward(rewriter);
  }
  computeVaried();

  // The reverse sweep, seeded with d loss / d loss = 1.
  if (state.varied.contains(loss)) {
    auto lossType = cast<RankedTensorType>(loss.getType());
    state.gradients[loss] = state.scalar(lossType.getElementType(), 1.0);
  }
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  for (Operation *op : llvm::reverse(forward)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value r) { return state.gradients.count(r); }))
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule) {
      InFlightDiagnostic diag = op->emitOpError("cannot differentiate '")
                                << op->getName() << "': it has no gradient rule";
      for (OpOperand &operand : op->getOpOperands())
        if (state.varied.contains(operand.get())) {
          diag << ", and the loss depends on its operand #"
               << operand.getOperandNumber() << " (" << operand.get().getType()
               << ") through it";
          break;
        }
      return diag;
    }
    LDBG() << "differentiating " << op->getName() << " at " << op->getLoc();
    CreatedOps created;
    builder.setListener(&created);
    state.loc = op->getLoc();
    LogicalResult built = rule.buildGradient(state);
    builder.setListener(nullptr);
    if (failed(built))
      return failure();
    if (Attribute layer = op->getAttr(WeftDialect::kLayerAttr))
      for (Operation *gradientOp : created.ops)
        gradientOp->setAttr(WeftDialect::kLayerAttr, layer);
  }

  state.loc = loss.getLoc();
  SmallVector<Value> result;
  for (Value value : wrt) {
    Value gradient = state.getGradient(value);
    result.push_back(gradient ? gradient : state.zeros(value.getType()));
  }
  return result;
}

void weft::registerGradientOpModels(DialectRegistry &registry) {
  registerLinalgGradientModels(registry);
  registerPointwiseGradientModels(registry);
  registerShapeGradientModels(registry);
}
