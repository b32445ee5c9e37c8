// weft-narrow-pointwise: a unary pointwise op that a model computes in f32
// between a widening convert of a bf16/f16 value and a narrowing convert
// back (HF GPT-2's GELU under autocast) runs on the narrow value itself:
// weft's pointwise ops compute in f32 and round once to their type, so the
// values are those of the chain, the f32 tensors between the converts never
// exist, and the op sits on its producer's shape (where a GEMM epilogue can
// take it).
#include "weft/Transforms/Passes.h"

#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-narrow-pointwise"

namespace weft {
#define GEN_PASS_DEF_NARROWPOINTWISEPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

bool isNarrowFloat(Type type) { return type.isBF16() || type.isF16(); }

Type elementOf(Value value) { return cast<RankedTensorType>(value.getType()).getElementType(); }

/// `value` through single-use reshapes (the chain's ops, innermost last).
Value skipReshapes(Value value, SmallVectorImpl<Operation *> &chain) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>()) {
    if (!reshape.getY().hasOneUse())
      break;
    chain.push_back(reshape);
    value = reshape.getX();
  }
  return value;
}

/// Rewrites `narrowing` = convert(reshape*(op(reshape*(convert(x))))) with x
/// bf16/f16, op unary pointwise on f32 and every value between read once,
/// as reshape(op(root)), root the tensor x views; returns whether it did.
bool narrow(ConvertOp narrowing) {
  Type narrowType = elementOf(narrowing.getY());
  if (!isNarrowFloat(narrowType) || !elementOf(narrowing.getX()).isF32())
    return false;
  SmallVector<Operation *> chain;
  Value wide = skipReshapes(narrowing.getX(), chain);
  Operation *op = wide.getDefiningOp();
  if (!op || isa<ConvertOp>(op) || !isUnaryPointwise(op) || !wide.hasOneUse() ||
      !elementOf(op->getOperand(0)).isF32())
    return false;
  chain.push_back(op);
  Value input = skipReshapes(op->getOperand(0), chain);
  auto widening = input.getDefiningOp<ConvertOp>();
  if (!widening || !input.hasOneUse() || elementOf(widening.getX()) != narrowType)
    return false;
  chain.push_back(widening);

  OpBuilder builder(narrowing);
  // On the bytes' first shape: a pointwise op commutes with views.
  Value x = widening.getX(), viewed = x;
  while (auto view = x.getDefiningOp<ReshapeOp>())
    x = view.getX();
  Operation *clone = builder.clone(*op);
  clone->setOperand(0, x);
  clone->getResult(0).setType(x.getType());
  Value result = clone->getResult(0);
  if (result.getType() != narrowing.getY().getType()) {
    auto reshape = ReshapeOp::create(builder, narrowing.getLoc(), narrowing.getY().getType(), result);
    for (NamedAttribute attr : narrowing->getDiscardableAttrs())
      reshape->setAttr(attr.getName(), attr.getValue());
    result = reshape.getY();
  }
  LDBG() << "narrowed " << *op << " to " << x.getType();
  narrowing.getY().replaceAllUsesWith(result);
  narrowing->erase();
  for (Operation *dead : chain)
    dead->erase();
  // Views of x that only the chain read.
  while (auto view = viewed.getDefiningOp<ReshapeOp>()) {
    if (!view.getY().use_empty())
      break;
    viewed = view.getX();
    view->erase();
  }
  return true;
}

struct NarrowPointwisePass : weft::impl::NarrowPointwisePassBase<NarrowPointwisePass> {
  void runOnOperation() override {
    SmallVector<ConvertOp> converts;
    getOperation().walk([&](ConvertOp op) { converts.push_back(op); });
    for (ConvertOp convert : converts)
      narrow(convert);
  }
};

} // namespace
