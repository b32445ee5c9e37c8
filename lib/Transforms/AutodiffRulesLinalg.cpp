// Gradient rules of the GEMMs and of attention: linear, matmul (transposes,
// a 2-d b shared by every batch) and attention -> attention_grad.
#include "AutodiffRules.h"

#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/GradientOpInterface.h"

using namespace mlir;
using namespace weft;

namespace {

RankedTensorType withShape(RankedTensorType type, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, type.getElementType());
}

Value matmul(GradientState &state, ArrayRef<int64_t> shape, Value a, Value b,
             bool transposeA, bool transposeB) {
  OpBuilder &builder = state.getBuilder();
  return MatmulOp::create(builder, state.getLoc(), withShape(tensorType(a), shape),
                          a, b, transposeA ? builder.getUnitAttr() : nullptr,
                          transposeB ? builder.getUnitAttr() : nullptr);
}

/// Product of `dims`: the rows of a tensor flattened to a matrix.
int64_t product(ArrayRef<int64_t> dims) {
  int64_t count = 1;
  for (int64_t dim : dims)
    count *= dim;
  return count;
}

/// y = x W^T + b:  dx = dy W,  dW = dy^T x (rows of every batch),  db = sum dy.
struct LinearGradient
    : GradientOpInterface::ExternalModel<LinearGradient, LinearOp> {
  using Op = LinearOp;
  LogicalResult buildGradient(Operation *op, GradientState &state) const {
    auto linear = cast<LinearOp>(op);
    Value dy = state.getGradient(linear.getY());
    Value x = linear.getX(), w = linear.getW();
    RankedTensorType xType = tensorType(x), wType = tensorType(w);
    int64_t out = wType.getShape()[0], in = wType.getShape()[1];
    int64_t rows = product(xType.getShape().drop_back());
    if (state.needsGradient(x)) {
      // matmul takes a 2-d b shared by the batch; a 1-d x is one row.
      Value dyRows = xType.getRank() == 1
                         ? state.reshape(dy, withShape(xType, {1, out}))
                         : dy;
      SmallVector<int64_t> shape(tensorType(dyRows).getShape());
      shape.back() = in;
      Value dx = matmul(state, shape, dyRows, w, false, false);
      state.accumulate(x, state.reshape(dx, xType));
    }
    if (state.needsGradient(w)) {
      Value dyRows = state.reshape(dy, withShape(xType, {rows, out}));
      Value xRows = state.reshape(x, withShape(xType, {rows, in}));
      state.accumulate(w, matmul(state, {out, in}, dyRows, xRows, true, false));
    }
    if (Value bias = linear.getBias(); bias && state.needsGradient(bias))
      state.accumulate(bias, state.unbroadcast(dy, bias.getType()));
    return success();
  }
};

/// c = op(a) op(b) with op a transpose where the flag is set:
/// d op(a) = dc op(b)^T and d op(b) = op(a)^T dc, written with matmul's own
/// transpose flags so no transpose is materialised when b is batched like a.
struct MatmulGradient
    : GradientOpInterface::ExternalModel<MatmulGradient, MatmulOp> {
  using Op = MatmulOp;
  LogicalResult buildGradient(Operation *op, GradientState &state) const {
    auto mm = cast<MatmulOp>(op);
    Value dc = state.getGradient(mm.getC());
    Value a = mm.getA(), b = mm.getB();
    bool ta = mm.getTransposeA(), tb = mm.getTransposeB();
    RankedTensorType aType = tensorType(a), bType = tensorType(b);
    ArrayRef<int64_t> as = aType.getShape();
    SmallVector<int64_t> batch(as.drop_back(2));
    // b is shared by every batch of a: its gradient sums over them.
    bool shared = bType.getRank() == 2 && aType.getRank() > 2;
    int64_t m = ta ? as.back() : as[as.size() - 2];
    int64_t k = ta ? as[as.size() - 2] : as.back();
    int64_t n = tb ? bType.getShape()[bType.getRank() - 2] : bType.getShape().back();
    auto batched = [&](int64_t rows, int64_t cols) {
      SmallVector<int64_t> shape(batch);
      shape.append({rows, cols});
      return shape;
    };

    if (state.needsGradient(a)) {
      Value da;
      if (!ta) {
        da = matmul(state, batched(m, k), dc, b, false, !tb);
      } else if (!shared) {
        da = matmul(state, batched(k, m), b, dc, tb, true);
      } else {
        // matmul wants the batched operand first: form (dc op(b)^T) and
        // transpose its last two dims.
        Value dOpA = matmul(state, batched(m, k), dc, b, false, !tb);
        SmallVector<int64_t> perm;
        for (int64_t i = 0; i < int64_t(batch.size()); ++i)
          perm.push_back(i);
        perm.append({int64_t(batch.size()) + 1, int64_t(batch.size())});
        OpBuilder &builder = state.getBuilder();
        da = TransposeOp::create(builder, state.getLoc(), aType, dOpA,
                                 builder.getDenseI64ArrayAttr(perm));
      }
      state.accumulate(a, da);
    }

    if (state.needsGradient(b)) {
      Value db;
      if (!shared) {
        db = tb ? matmul(state, batched(n, k), dc, a, true, ta)
                : matmul(state, batched(k, n), a, dc, !ta, false);
      } else if (!ta) {
        // Rows of every batch stacked: one GEMM over [batch * m] rows.
        int64_t rows = product(batch) * m;
        Value aRows = state.reshape(a, withShape(aType, {rows, k}));
        Value dcRows = state.reshape(dc, withShape(aType, {rows, n}));
        db = tb ? matmul(state, {n, k}, dcRows, aRows, true, false)
                : matmul(state, {k, n}, aRows, dcRows, true, false);
      } else {
        // a is [..., k, m]: per-batch products, then the sum over batches.
        Value perBatch = tb ? matmul(state, batched(n, k), dc, a, true, true)
                            : matmul(state, batched(k, n), a, dc, false, false);
        db = state.unbroadcast(perBatch, bType);
      }
      state.accumulate(b, db);
    }
    return success();
  }
};

/// The rule reads the forward's output and row log-sum-exp: the forward op
/// is rebuilt with its lse result when it has none. attention_grad carries
/// the forward's attributes, seed and weft.rng_id, so it draws the same
/// dropout mask.
struct AttentionGradient
    : GradientOpInterface::ExternalModel<AttentionGradient, AttentionOp> {
  using Op = AttentionOp;
  Operation *saveForBackward(Operation *op, RewriterBase &rewriter) const {
    auto attention = cast<AttentionOp>(op);
    if (attention.getLse())
      return op;
    // lse is [b, hq, sq] in either layout.
    SmallVector<int64_t> rows(attention.getOut().getType().getShape().drop_back());
    if (attention.getSeqMajor())
      std::swap(rows[1], rows[2]);
    auto lseType = RankedTensorType::get(rows, rewriter.getF32Type());
    auto withLse = AttentionOp::create(
        rewriter, op->getLoc(), attention.getOut().getType(), lseType,
        attention.getQ(), attention.getK(), attention.getV(),
        attention.getRng(), attention.getCausalAttr(),
        attention.getScaleAttr(), attention.getDropoutPAttr(),
        attention.getSeqMajorAttr(), attention.getDropoutHeadsAttr());
    withLse->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceAllUsesWith(attention.getOut(), withLse.getOut());
    rewriter.eraseOp(op);
    return withLse;
  }

  LogicalResult buildGradient(Operation *op, GradientState &state) const {
    auto attention = cast<AttentionOp>(op);
    Value lse = attention.getLse();
    if (!lse)
      return op->emitOpError("has no lse result to differentiate with; the "
                             "reverse sweep adds it before building gradients");
    if (state.getGradient(lse))
      return op->emitOpError("cannot differentiate through its lse result "
                             "(")
             << lse.getType() << "): attention_grad takes the gradient of "
             << "the output only";
    Value dout = state.getGradient(attention.getOut());
    if (!dout)
      return success();
    Value q = attention.getQ(), k = attention.getK(), v = attention.getV();
    auto grad = AttentionGradOp::create(
        state.getBuilder(), state.getLoc(), q.getType(), k.getType(),
        v.getType(), dout, q, k, v, attention.getOut(), lse, attention.getRng(),
        attention.getCausalAttr(), attention.getScaleAttr(),
        attention.getDropoutPAttr(), attention.getSeqMajorAttr(),
        attention.getDropoutHeadsAttr(), /*atomic_dq=*/UnitAttr());
    if (Attribute rngId = op->getAttr(WeftDialect::kRngIdAttr))
      grad->setAttr(WeftDialect::kRngIdAttr, rngId);
    state.accumulate(q, grad.getDq());
    state.accumulate(k, grad.getDk());
    state.accumulate(v, grad.getDv());
    return success();
  }
};

} // namespace

void weft::registerLinalgGradientModels(DialectRegistry &registry) {
  attachGradientRules<
      LinearGradient, MatmulGradient, AttentionGradient>(registry);
}
