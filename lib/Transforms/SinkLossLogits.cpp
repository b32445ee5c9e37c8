// weft-sink-loss-logits: each loss's logits linear (and the forward
// cross_entropy reading them) moved next to the logits' gradient, so the
// backward does not keep the logits from the forward: with the loss in row
// chunks (weft-chunk-loss), one chunk's logits live at a time.
#include "weft/Transforms/Passes.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-sink-loss-logits"

namespace weft {
#define GEN_PASS_DEF_SINKLOSSLOGITSPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// One element each: the loss, and the [1] views and adds of its sum.
bool hasScalarResults(Operation *op) {
  return llvm::all_of(op->getResultTypes(), [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape() && tensor.getNumElements() == 1;
  });
}

/// Moves the linear making `grad`'s logits, and every op before `grad` that
/// depends on it, right before `grad` (their order kept). Those ops must be
/// the logits' readers with one-element results (the loss) and one-element
/// ops reading them (the sum of the chunks' shares): the backward needs none of them
/// earlier (its seed is a constant). Otherwise nothing moves.
bool sinkLogits(CrossEntropyGradOp grad) {
  Block *block = grad->getBlock();
  auto linear = grad.getLogits().getDefiningOp<LinearOp>();
  if (!linear || linear->getBlock() != block)
    return false;
  llvm::SetVector<Operation *> moving;
  SmallVector<Operation *> worklist{linear};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!moving.insert(op))
      continue;
    for (Operation *user : op->getUsers()) {
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!top || top == grad.getOperation() || !top->isBeforeInBlock(grad))
        continue;
      if (!hasScalarResults(top)) {
        LDBG() << "not sinking the logits of " << grad.getLoc() << ": " << top->getName()
               << " before the gradient reads them";
        return false;
      }
      worklist.push_back(top);
    }
  }
  SmallVector<Operation *> ordered(moving.begin(), moving.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : ordered)
    op->moveBefore(grad);
  LDBG() << "sank " << ordered.size() << " ops next to " << grad.getLoc();
  return true;
}

struct SinkLossLogitsPass : weft::impl::SinkLossLogitsPassBase<SinkLossLogitsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
      return;
    SmallVector<CrossEntropyGradOp> grads(func.getBody().front().getOps<CrossEntropyGradOp>());
    for (CrossEntropyGradOp grad : grads)
      sinkLogits(grad);
  }
};

} // namespace
