// weft-fold-attention-layout: attention whose q, k and v are [b, s, h, d]
// tensors transposed to [b, h, s, d] reads them as they are (seq_major), so
// the transposes around attention and its gradient cancel instead of running
// as copies; the GPU kernels take the seq-major layout with strides.
#include "weft/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-fold-attention-layout"

namespace weft {
#define GEN_PASS_DEF_FOLDATTENTIONLAYOUTPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The permutation between [b, h, s, d] and [b, s, h, d] (its own inverse).
constexpr int64_t kSwap[] = {0, 2, 1, 3};

RankedTensorType swapped(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  std::swap(shape[1], shape[2]);
  return tensor.clone(shape);
}

/// The [b, s, h, d] tensor `value` is a transpose of, if it is one.
Value seqMajorSource(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose || !llvm::equal(transpose.getPerm(), ArrayRef<int64_t>(kSwap)))
    return {};
  return transpose.getX();
}

/// `value` ([b, h, s, d]) as [b, s, h, d]: the transpose's source when it is
/// one, else a new transpose (folded when it undoes another).
Value toSeqMajor(OpBuilder &builder, Location loc, Value value) {
  if (Value source = seqMajorSource(value))
    return source;
  return builder.createOrFold<TransposeOp>(loc, swapped(value.getType()), value,
                                           builder.getDenseI64ArrayAttr(kSwap));
}

/// Replaces each of `oldValues` ([b, h, s, d]) with the transpose of the
/// matching seq-major `newValues`.
void replaceWithTransposes(OpBuilder &builder, Location loc, ValueRange oldValues,
                           ValueRange newValues) {
  for (auto [oldValue, newValue] : llvm::zip(oldValues, newValues)) {
    Value back = TransposeOp::create(builder, loc, oldValue.getType(), newValue,
                                     builder.getDenseI64ArrayAttr(kSwap));
    oldValue.replaceAllUsesWith(back);
  }
}

/// Whether q, k and v all arrive transposed from [b, s, h, d].
template <typename OpTy> bool foldable(OpTy op) {
  return !op.getSeqMajor() && seqMajorSource(op.getQ()) && seqMajorSource(op.getK()) &&
         seqMajorSource(op.getV());
}

void fold(AttentionOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Type lseType = op.getLse() ? op.getLse().getType() : Type();
  auto folded = AttentionOp::create(
      builder, loc, swapped(op.getOut().getType()), lseType, seqMajorSource(op.getQ()),
      seqMajorSource(op.getK()), seqMajorSource(op.getV()), op.getRng(),
      op.getCausalAttr(), op.getScaleAttr(), op.getDropoutPAttr(), builder.getUnitAttr(),
      op.getDropoutHeadsAttr());
  folded->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  replaceWithTransposes(builder, loc, op.getOut(), folded.getOut());
  if (Value lse = op.getLse())
    lse.replaceAllUsesWith(folded.getLse());
  LDBG() << "seq-major attention at " << loc;
  op->erase();
}

void fold(AttentionGradOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value dout = toSeqMajor(builder, loc, op.getDout());
  Value out = toSeqMajor(builder, loc, op.getOut());
  auto folded = AttentionGradOp::create(
      builder, loc, swapped(op.getDq().getType()), swapped(op.getDk().getType()),
      swapped(op.getDv().getType()), dout, seqMajorSource(op.getQ()),
      seqMajorSource(op.getK()), seqMajorSource(op.getV()), out, op.getLse(),
      op.getRng(), op.getCausalAttr(), op.getScaleAttr(), op.getDropoutPAttr(),
      builder.getUnitAttr(), op.getDropoutHeadsAttr(), op.getAtomicDqAttr());
  folded->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  replaceWithTransposes(builder, loc, op->getResults(), folded->getResults());
  LDBG() << "seq-major attention_grad at " << loc;
  op->erase();
}

struct FoldAttentionLayoutPass
    : public weft::impl::FoldAttentionLayoutPassBase<FoldAttentionLayoutPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Forwards first: their transposed outputs are what the gradients read.
    SmallVector<AttentionOp> forwards;
    SmallVector<AttentionGradOp> gradients;
    func.walk([&](Operation *op) {
      if (auto forward = dyn_cast<AttentionOp>(op); forward && foldable(forward))
        forwards.push_back(forward);
      if (auto grad = dyn_cast<AttentionGradOp>(op); grad && foldable(grad))
        gradients.push_back(grad);
    });
    if (forwards.empty() && gradients.empty())
      return;
    for (AttentionOp op : forwards)
      fold(op);
    for (AttentionGradOp op : gradients)
      fold(op);
    // transpose(transpose(x)) folds to x; the transposes left unused go.
    if (failed(applyPatternsGreedily(func, FrozenRewritePatternSet())))
      return signalPassFailure();
  }
};

} // namespace
