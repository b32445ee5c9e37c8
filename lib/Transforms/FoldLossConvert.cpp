// weft-fold-loss-convert: cross_entropy reads the bf16/f16 logits an f32
// convert (and reshapes) fed it, computing in f32 with one rounding, so no f32
// copy of [rows, vocab] logits or of their gradient is ever made.
#include "weft/Transforms/Passes.h"

#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-fold-loss-convert"

namespace weft {
#define GEN_PASS_DEF_FOLDLOSSCONVERTPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

bool isNarrowFloat(Type type) { return type.isBF16() || type.isF16(); }

/// The narrow value the f32 `logits` were converted from, through reshapes
/// (innermost first in `reshapes`); null when there is none.
Value narrowSource(Value logits, SmallVectorImpl<ReshapeOp> &reshapes) {
  Value value = logits;
  while (auto reshape = value.getDefiningOp<ReshapeOp>()) {
    reshapes.push_back(reshape);
    value = reshape.getX();
  }
  auto convert = value.getDefiningOp<ConvertOp>();
  if (!convert || !isNarrowFloat(convert.getX().getType().getElementType()) ||
      !convert.getY().getType().getElementType().isF32())
    return Value();
  std::reverse(reshapes.begin(), reshapes.end());
  return convert.getX();
}

/// Rewrites one loss; returns whether it did.
bool foldLossConvert(CrossEntropyOp loss) {
  if (!loss.getLoss().getType().getElementType().isF32())
    return false;
  SmallVector<ReshapeOp> reshapes;
  Value narrow = narrowSource(loss.getLogits(), reshapes);
  if (!narrow)
    return false;
  OpBuilder builder(loss);
  Type element = cast<RankedTensorType>(narrow.getType()).getElementType();
  // The same views, of the narrow tensor.
  for (ReshapeOp reshape : reshapes)
    narrow = ReshapeOp::create(builder, reshape.getLoc(),
                               reshape.getY().getType().clone(element), narrow);
  LDBG() << "loss " << loss << " reads " << narrow.getType();
  Operation *producer = loss.getLogits().getDefiningOp();
  loss.getLogitsMutable().assign(narrow);
  // The f32 chain, when nothing else reads it.
  while (producer && producer->use_empty()) {
    Operation *next = producer->getOperand(0).getDefiningOp();
    producer->erase();
    next = next && isa<ReshapeOp, ConvertOp>(next) ? next : nullptr;
    producer = next;
  }
  return true;
}

struct FoldLossConvertPass
    : weft::impl::FoldLossConvertPassBase<FoldLossConvertPass> {
  void runOnOperation() override {
    SmallVector<CrossEntropyOp> losses;
    getOperation().walk([&](CrossEntropyOp op) { losses.push_back(op); });
    for (CrossEntropyOp loss : losses)
      foldLossConvert(loss);
  }
};

} // namespace
