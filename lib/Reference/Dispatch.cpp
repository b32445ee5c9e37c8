// Dispatch of weft ops to their reference kernels.
#include "Kernels.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace weft::reference::detail {

int64_t rngIdOf(Operation *op) {
  if (auto id = op->getAttrOfType<IntegerAttr>(WeftDialect::kRngIdAttr))
    return id.getInt();
  return 0;
}

LogicalResult runWeftOp(Operation *op, Operands in, Results out) {
  if (auto pointwise = dyn_cast<ScalarFormulaOpInterface>(op))
    return runFormula(pointwise, in, out);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](LinearOp op) { return runLinear(op, in, out); })
      .Case([&](MatmulOp op) { return runMatmul(op, in, out); })
      .Case([&](AttentionOp op) { return runAttention(op, in, out); })
      .Case([&](AttentionGradOp op) { return runAttentionGrad(op, in, out); })
      .Case([&](LayerNormOp op) { return runLayerNorm(op, in, out); })
      .Case([&](LayerNormGradOp op) { return runLayerNormGrad(op, in, out); })
      .Case([&](RmsNormOp op) { return runRmsNorm(op, in, out); })
      .Case([&](RmsNormGradOp op) { return runRmsNormGrad(op, in, out); })
      .Case([&](SoftmaxOp op) { return runSoftmax(op, in, out); })
      .Case([&](SoftmaxGradOp op) { return runSoftmaxGrad(op, in, out); })
      .Case([&](DropoutOp op) { return runDropout(op, in, out); })
      .Case([&](CausalMaskOp op) { return runCausalMask(op, in, out); })
      .Case([&](ConvertOp op) { return runConvert(op, in, out); })
      .Case([&](ReduceSumOp op) {
        return runReduce(op, op.getDims(), ReduceKind::Sum, in, out);
      })
      .Case([&](ReduceMeanOp op) {
        return runReduce(op, op.getDims(), ReduceKind::Mean, in, out);
      })
      .Case([&](ReduceMaxOp op) {
        return runReduce(op, op.getDims(), ReduceKind::Max, in, out);
      })
      .Case([&](ReshapeOp op) { return runReshape(op, in, out); })
      .Case([&](TransposeOp op) { return runTranspose(op, in, out); })
      .Case([&](SplitOp op) { return runSplit(op, in, out); })
      .Case([&](ConcatOp op) { return runConcat(op, in, out); })
      .Case([&](EmbeddingOp op) { return runEmbedding(op, in, out); })
      .Case([&](EmbeddingGradOp op) { return runEmbeddingGrad(op, in, out); })
      .Case([&](CrossEntropyOp op) { return runCrossEntropy(op, in, out); })
      .Case([&](CrossEntropyGradOp op) {
        return runCrossEntropyGrad(op, in, out);
      })
      .Case([&](CrossEntropyPartialOp op) {
        return runCrossEntropyPartial(op, in, out);
      })
      .Case([&](CrossEntropyCombineOp op) {
        return runCrossEntropyCombine(op, in, out);
      })
      .Case([&](CrossEntropyGradPartialOp op) {
        return runCrossEntropyGradPartial(op, in, out);
      })
      .Case([&](RopeOp op) { return runRope(op, in, out); })
      .Case([&](AdamWOp op) { return runAdamW(op, in, out); })
      .Default([&](Operation *op) {
        return op->emitOpError("reference interpreter cannot run '")
               << op->getName() << "'";
      });
}

} // namespace weft::reference::detail
