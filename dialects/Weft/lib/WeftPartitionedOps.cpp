// Verifiers of what tensor parallelism adds to the dialect: the
// vocabulary-parallel cross-entropy ops, and the block-of-a-global-tensor
// operands of dropout and attention (their masks follow global indices).
#include "Verify.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace weft;
using namespace weft::verify;

LogicalResult weft::verify::verifyBlockOfGlobal(
    Operation *op, ArrayRef<int64_t> block, size_t offsetCount,
    std::optional<ArrayRef<int64_t>> globalShape) {
  if (offsetCount == 0 && !globalShape)
    return success();
  if (offsetCount != block.size() || !globalShape)
    return op->emitOpError("expects one offset per dimension (")
           << block.size() << ") and a global_shape together, got "
           << offsetCount << " offsets and "
           << (globalShape ? "a" : "no") << " global_shape";
  if (globalShape->size() != block.size())
    return op->emitOpError("expects global_shape ")
           << shapeString(*globalShape) << " of the block's rank "
           << block.size();
  for (auto [dim, local, global] : llvm::enumerate(block, *globalShape))
    if (local > global)
      return op->emitOpError("expects the block ")
             << shapeString(block) << " to fit in global_shape "
             << shapeString(*globalShape) << " (dimension " << dim << ")";
  return success();
}

LogicalResult weft::verify::verifyAttentionRng(Operation *op, ValueRange rng,
                                               std::optional<int64_t> dropoutHeads,
                                               int64_t qHeads) {
  if (rng.size() > 2)
    return op->emitOpError("expects at most a seed and a head offset, got ")
           << rng.size() << " rng operands";
  if (!rng.empty()) {
    auto seed = dyn_cast<RankedTensorType>(rng[0].getType());
    if (!seed || seed.getRank() != 0 || !seed.getElementType().isInteger(64))
      return op->emitOpError("expects the seed (rng #0) to be a 0-d i64 tensor, got ")
             << rng[0].getType();
  }
  if (rng.size() == 2 && !rng[1].getType().isIndex())
    return op->emitOpError("expects the head offset (rng #1) to be an index, got ")
           << rng[1].getType();
  if ((rng.size() == 2) != dropoutHeads.has_value())
    return op->emitOpError("expects a head offset and dropout_heads together");
  if (dropoutHeads && *dropoutHeads < qHeads)
    return op->emitOpError("expects dropout_heads (")
           << *dropoutHeads << ") to be at least the q heads (" << qHeads << ")";
  return success();
}

bool weft::isPartitionedAttention(Operation *op) {
  if (auto forward = dyn_cast<AttentionOp>(op))
    return bool(forward.getHeadOffset());
  if (auto grad = dyn_cast<AttentionGradOp>(op))
    return bool(grad.getHeadOffset());
  return false;
}

//===----------------------------------------------------------------------===//
// Vocabulary-parallel cross-entropy
//===----------------------------------------------------------------------===//

/// Row statistics: [...] of the logits' leading dims, one float type.
static LogicalResult verifyRowStats(Operation *op, Value logits,
                                    ArrayRef<NamedValue> stats) {
  ArrayRef<int64_t> rows = tensorOf(logits).getShape().drop_back();
  for (const NamedValue &named : stats)
    if (failed(verifyShape(op, named.first, named.second, rows)))
      return failure();
  return verifySameElementType(op, stats);
}

LogicalResult CrossEntropyPartialOp::verify() {
  if (failed(verifyLabels(*this, getLogits(), getLabels())))
    return failure();
  return verifyRowStats(*this, getLogits(),
                        {{"max", getMax()}, {"sumexp", getSumexp()},
                         {"target", getTarget()}});
}

LogicalResult CrossEntropyCombineOp::verify() {
  if (failed(verifySameElementType(*this, {{"sumexp", getSumexp()},
                                           {"target", getTarget()}})))
    return failure();
  return verifyShape(*this, "target", getTarget(),
                     getSumexp().getType().getShape());
}

LogicalResult CrossEntropyGradPartialOp::verify() {
  if (failed(verifyLabels(*this, getLogits(), getLabels())) ||
      failed(verifyRowStats(*this, getLogits(),
                            {{"max", getMax()}, {"sumexp", getSumexp()}})))
    return failure();
  if (getDlogits().getType() != getLogits().getType())
    return emitOpError("expects dlogits (")
           << getDlogits().getType() << ") to have the logits' type ("
           << getLogits().getType() << ")";
  return verifyLossPrecision(*this, "dloss", getDloss(), getLogits());
}

LogicalResult ReduceMaxOp::verify() {
  return verifyReduce(*this, getX(), getDims(), getKeepdim(), getY());
}
