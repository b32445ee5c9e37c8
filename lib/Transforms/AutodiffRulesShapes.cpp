// Gradient rules of reductions, shape ops, embedding, cross_entropy and rope.
#include "AutodiffRules.h"

#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/GradientOpInterface.h"

using namespace mlir;
using namespace weft;

namespace {

/// dx of a reduction: dy with the reduced dims restored as size 1 (when the
/// op dropped them), scaled by 1/count for a mean, broadcast to x's shape.
LogicalResult reduceGradient(Value x, Value y,
                             ArrayRef<int64_t> dims, bool mean,
                             GradientState &state) {
  Value dy = state.getGradient(y);
  RankedTensorType xType = tensorType(x);
  SmallVector<int64_t> kept(xType.getShape());
  int64_t count = 1;
  for (int64_t dim : dims) {
    int64_t d = dim < 0 ? dim + xType.getRank() : dim;
    count *= kept[d];
    kept[d] = 1;
  }
  if (mean && count == 0) {
    // An empty reduction reads no element of x.
    state.accumulate(x, state.zeros(xType));
    return success();
  }
  Value dx = state.reshape(dy, RankedTensorType::get(kept, xType.getElementType()));
  if (mean && count != 1) {
    OpBuilder &builder = state.getBuilder();
    dx = ScaleOp::create(builder, state.getLoc(), dx.getType(), dx,
                         builder.getF64FloatAttr(1.0 / double(count)));
  }
  state.accumulate(x, state.broadcastTo(dx, xType));
  return success();
}

struct ReduceSumGradient : GradientRule<ReduceSumGradient, ReduceSumOp> {
  static LogicalResult build(ReduceSumOp op, GradientState &state) {
    return reduceGradient(op.getX(), op.getY(), op.getDims(), false, state);
  }
};

struct ReduceMeanGradient : GradientRule<ReduceMeanGradient, ReduceMeanOp> {
  static LogicalResult build(ReduceMeanOp op, GradientState &state) {
    return reduceGradient(op.getX(), op.getY(), op.getDims(), true, state);
  }
};

struct ReshapeGradient : GradientRule<ReshapeGradient, ReshapeOp> {
  static LogicalResult build(ReshapeOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getX(), state.reshape(dy, op.getX().getType()));
    return success();
  }
};

/// Transposed back by the inverse permutation.
struct TransposeGradient : GradientRule<TransposeGradient, TransposeOp> {
  static LogicalResult build(TransposeOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    ArrayRef<int64_t> perm = op.getPerm();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = int64_t(i);
    OpBuilder &builder = state.getBuilder();
    state.accumulate(op.getX(),
                     TransposeOp::create(builder, state.getLoc(), op.getX().getType(),
                                         dy, builder.getDenseI64ArrayAttr(inverse)));
    return success();
  }
};

/// The pieces' gradients concatenated (zeros for a piece the loss ignores).
struct SplitGradient : GradientRule<SplitGradient, SplitOp> {
  static LogicalResult build(SplitOp op, GradientState &state) {
    SmallVector<Value> pieces;
    for (Value piece : op.getPieces()) {
      Value gradient = state.getGradient(piece);
      pieces.push_back(gradient ? gradient : state.zeros(piece.getType()));
    }
    Value dx = pieces.size() == 1
                   ? pieces.front()
                   : ConcatOp::create(state.getBuilder(), state.getLoc(),
                                      op.getX().getType(), pieces, op.getDimAttr())
                         .getResult();
    state.accumulate(op.getX(), dx);
    return success();
  }
};

/// dy split back into the operands' sizes along the concatenated dim.
struct ConcatGradient : GradientRule<ConcatGradient, ConcatOp> {
  static LogicalResult build(ConcatOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    int64_t rank = tensorType(dy).getRank();
    // getDim() is unsigned; the attribute holds the signed dim.
    int64_t dim = op.getDimAttr().getInt();
    if (dim < 0)
      dim += rank;
    SmallVector<int64_t> sizes;
    SmallVector<Type> types;
    for (Value piece : op.getPieces()) {
      sizes.push_back(tensorType(piece).getDimSize(dim));
      types.push_back(piece.getType());
    }
    OpBuilder &builder = state.getBuilder();
    ValueRange dpieces = dy;
    if (op.getPieces().size() > 1)
      dpieces = SplitOp::create(builder, state.getLoc(), types, dy,
                                op.getDimAttr(), builder.getDenseI64ArrayAttr(sizes))
                    .getPieces();
    for (auto [piece, gradient] : llvm::zip_equal(op.getPieces(), dpieces))
      state.accumulate(piece, gradient);
    return success();
  }
};

/// Rows of dy scatter-added into the table by id.
struct EmbeddingGradient : GradientRule<EmbeddingGradient, EmbeddingOp> {
  static LogicalResult build(EmbeddingOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    state.accumulate(op.getTable(),
                     EmbeddingGradOp::create(state.getBuilder(), state.getLoc(),
                                             op.getTable().getType(), dy, op.getIds(),
                                             op.getVocabOffset()));
    return success();
  }
};

struct CrossEntropyGradient : GradientRule<CrossEntropyGradient, CrossEntropyOp> {
  static LogicalResult build(CrossEntropyOp op, GradientState &state) {
    Value dloss = state.getGradient(op.getLoss());
    state.accumulate(op.getLogits(),
                     CrossEntropyGradOp::create(state.getBuilder(), state.getLoc(),
                                                op.getLogits().getType(), dloss,
                                                op.getLogits(), op.getLabels(),
                                                op.getAllLabels(), op.getIgnoreIndexAttr()));
    return success();
  }
};

/// rotate_half(t) = cat(-t2, t1) over the last dim.
Value rotateHalf(GradientState &state, Value t) {
  RankedTensorType type = tensorType(t);
  int64_t half = type.getShape().back() / 2;
  SmallVector<int64_t> halfShape(type.getShape());
  halfShape.back() = half;
  auto halfType = RankedTensorType::get(halfShape, type.getElementType());
  OpBuilder &builder = state.getBuilder();
  Location loc = state.getLoc();
  int64_t last = type.getRank() - 1;
  auto split = SplitOp::create(builder, loc, TypeRange{halfType, halfType}, t,
                               builder.getI64IntegerAttr(last),
                               builder.getDenseI64ArrayAttr({half, half}));
  Value negated = ScaleOp::create(builder, loc, halfType, split.getPieces()[1],
                                  builder.getF64FloatAttr(-1.0));
  return ConcatOp::create(builder, loc, type, ValueRange{negated, split.getPieces()[0]},
                          builder.getI64IntegerAttr(last));
}

/// rope is linear in x: dx is the transposed rotation (rope with `inverse`
/// flipped). The tables get gradients too when they vary: for
/// y = x cos + rh(x) sin, dcos = sum(dy x) and dsin = sum(dy rh(x)); for the
/// inverse y = x cos - rh(x sin), dcos = sum(dy x) and dsin = sum(x rh(dy))
/// (rh^T = -rh), each summed over the broadcast batch dims.
struct RopeGradient : GradientRule<RopeGradient, RopeOp> {
  static LogicalResult build(RopeOp op, GradientState &state) {
    Value dy = state.getGradient(op.getY());
    Value x = op.getX(), cos = op.getCos(), sin = op.getSin();
    OpBuilder &builder = state.getBuilder();
    Location loc = state.getLoc();
    if (state.needsGradient(x))
      state.accumulate(x, RopeOp::create(builder, loc, x.getType(), dy, cos, sin,
                                         op.getInverse() ? nullptr
                                                         : builder.getUnitAttr()));
    auto product = [&](Value a, Value b) {
      return MulOp::create(builder, loc, x.getType(), a, b).getResult();
    };
    if (state.needsGradient(cos))
      state.accumulate(cos, state.unbroadcast(product(dy, x), cos.getType()));
    if (state.needsGradient(sin)) {
      Value dsin = op.getInverse() ? product(x, rotateHalf(state, dy))
                                   : product(dy, rotateHalf(state, x));
      state.accumulate(sin, state.unbroadcast(dsin, sin.getType()));
    }
    return success();
  }
};

} // namespace

void weft::registerShapeGradientModels(DialectRegistry &registry) {
  attachGradientRules<
      ReduceSumGradient, ReduceMeanGradient, ReshapeGradient, TransposeGradient,
      SplitGradient, ConcatGradient, EmbeddingGradient, CrossEntropyGradient,
      RopeGradient>(registry);
}
