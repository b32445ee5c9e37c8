// FusionOpInterface and BufferViewOpInterface of the ops whose answers are
// not the defaults: each row op's domain anchor, row statistics and column
// sums, and when a split or concat is a view.
#include "weft/Dialect/AttentionPacking.h"
#include "weft/Dialect/WeftDialect.h"

using namespace mlir;
using namespace weft;

namespace {
/// A softmax fuses over its last dimension only.
Value ifLastDim(int64_t dim, Value x) {
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  return dim == -1 || dim == rank - 1 ? x : Value();
}
} // namespace

int64_t weft::rowStatCount(Operation *op) {
  auto fusion = dyn_cast<FusionOpInterface>(op);
  return fusion ? fusion.getRowStatCount() : 0;
}

bool weft::isUnaryPointwise(Operation *op) {
  if (op->getNumOperands() != 1 || op->getNumResults() != 1 || !getFusionDomain(op) ||
      rowStatCount(op) != 0 || op->hasAttr(WeftDialect::kRngIdAttr))
    return false;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return in && out && in.hasStaticShape() && in.getShape() == out.getShape();
}

bool weft::isColumnSum(Value value) {
  auto result = dyn_cast<OpResult>(value);
  auto fusion = result ? dyn_cast<FusionOpInterface>(result.getOwner())
                       : FusionOpInterface();
  return fusion && fusion.isColumnSumResult(result.getResultNumber());
}

bool weft::isBufferView(Operation *op) {
  auto view = dyn_cast<BufferViewOpInterface>(op);
  return view && view.isBufferView();
}

// Norms: per row the mean and 1/std (layer_norm) or 1/rms (rms_norm); their
// gradients add the row means of g and g * xhat (layer_norm_grad) or of
// dy * gamma * x (rms_norm_grad), and sum dgamma (and dbeta) over the rows.
Value LayerNormOp::getFusionAnchor() { return getX(); }
int64_t LayerNormOp::getRowStatCount() { return 2; }
Value RmsNormOp::getFusionAnchor() { return getX(); }
int64_t RmsNormOp::getRowStatCount() { return 1; }
Value LayerNormGradOp::getFusionAnchor() { return getX(); }
int64_t LayerNormGradOp::getRowStatCount() { return 4; }
bool LayerNormGradOp::isColumnSumResult(unsigned index) { return index > 0; }
Value RmsNormGradOp::getFusionAnchor() { return getX(); }
int64_t RmsNormGradOp::getRowStatCount() { return 2; }
bool RmsNormGradOp::isColumnSumResult(unsigned index) { return index == 1; }

// Softmax: the row max and 1/sum; its gradient the row sum of dy * y.
Value SoftmaxOp::getFusionAnchor() { return ifLastDim(getDim(), getX()); }
int64_t SoftmaxOp::getRowStatCount() { return 2; }
Value SoftmaxGradOp::getFusionAnchor() { return ifLastDim(getDim(), getY()); }
int64_t SoftmaxGradOp::getRowStatCount() { return 1; }

// Cross-entropy: the row log-sum-exp of the logits.
Value CrossEntropyOp::getFusionAnchor() { return getLogits(); }
int64_t CrossEntropyOp::getRowStatCount() { return 1; }
Value CrossEntropyGradOp::getFusionAnchor() { return getLogits(); }
int64_t CrossEntropyGradOp::getRowStatCount() { return 1; }
bool CrossEntropyOp::isWholeOperand(unsigned index) {
  return getAllLabels() && index + 1 == getNumOperands();
}
bool CrossEntropyGradOp::isWholeOperand(unsigned index) {
  return getAllLabels() && index + 1 == getNumOperands();
}

Value AdamWOp::getFusionAnchor() { return getParam(); }

bool SplitOp::isBufferView() { return packedQkvSplit(*this).has_value(); }
bool ConcatOp::isBufferView() { return isPackedGradConcat(*this); }
