// Each weft op's loop nest, written once (see LoopNests.h for the kinds).
#include "LoopNests.h"

using namespace mlir;
using shard::ReductionKind;
using utils::IteratorType;

namespace weft::partition {

ReductionKind LoopNest::kindOf(unsigned loop) const {
  unsigned reductions = 0;
  for (unsigned i = 0; i < loop; ++i)
    reductions += iterators[i] == IteratorType::reduction;
  if (iterators[loop] != IteratorType::reduction)
    return ReductionKind::Sum;
  return reductionKinds[reductions];
}

AffineExpr LoopNestBuilder::parallel() {
  nest.iterators.push_back(IteratorType::parallel);
  return getAffineDimExpr(nest.iterators.size() - 1, context);
}

AffineExpr LoopNestBuilder::reduction(ReductionKind kind) {
  nest.iterators.push_back(IteratorType::reduction);
  nest.reductionKinds.push_back(kind);
  return getAffineDimExpr(nest.iterators.size() - 1, context);
}

AffineExpr LoopNestBuilder::constant(int64_t value) {
  return getAffineConstantExpr(value, context);
}

LoopNest LoopNestBuilder::build() const {
  LoopNest result = nest;
  for (const auto &exprs : maps)
    result.maps.push_back(
        AffineMap::get(nest.iterators.size(), 0, exprs, context));
  return result;
}

namespace {

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

bool isTensorWithDims(Value value) {
  auto tensor = dyn_cast<RankedTensorType>(value.getType());
  return tensor && tensor.getRank() > 0;
}

/// `operand` broadcast from the right against loops over `shape`.
SmallVector<AffineExpr> broadcastMap(LoopNestBuilder &nest,
                                     ArrayRef<AffineExpr> loops,
                                     ArrayRef<int64_t> shape,
                                     ArrayRef<int64_t> operand) {
  SmallVector<AffineExpr> exprs;
  size_t lead = shape.size() - operand.size();
  for (size_t d = 0; d < operand.size(); ++d)
    exprs.push_back(operand[d] == 1 && shape[lead + d] != 1 ? nest.constant(0)
                                                            : loops[lead + d]);
  return exprs;
}

/// Loops over `rows` leading dims (of `kind`) and one last dim of `lastKind`.
struct RowLoops {
  SmallVector<AffineExpr> rows;
  AffineExpr last;
  SmallVector<AffineExpr> all() const {
    SmallVector<AffineExpr> exprs(rows);
    exprs.push_back(last);
    return exprs;
  }
};

enum class Kind { Parallel, Sum, Generic };

AffineExpr loop(LoopNestBuilder &nest, Kind kind) {
  switch (kind) {
  case Kind::Parallel:
    return nest.parallel();
  case Kind::Sum:
    return nest.reduction(ReductionKind::Sum);
  case Kind::Generic:
    return nest.reduction(ReductionKind::Generic);
  }
  return nest.parallel();
}

RowLoops rowLoops(LoopNestBuilder &nest, int64_t rank, Kind rows, Kind last) {
  RowLoops loops;
  for (int64_t d = 0; d + 1 < rank; ++d)
    loops.rows.push_back(loop(nest, rows));
  loops.last = loop(nest, last);
  return loops;
}

/// Loops over `shape`, generic (never split) where `generic` says so.
SmallVector<AffineExpr> dimLoops(LoopNestBuilder &nest, ArrayRef<int64_t> shape,
                                 llvm::function_ref<bool(int64_t)> generic) {
  SmallVector<AffineExpr> loops;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    loops.push_back(generic(d) ? nest.reduction(ReductionKind::Generic)
                               : nest.parallel());
  return loops;
}

/// A linearized index of `loops` over `sizes` (row-major).
AffineExpr linearized(LoopNestBuilder &nest, ArrayRef<AffineExpr> loops,
                      ArrayRef<int64_t> sizes) {
  AffineExpr expr = nest.constant(0);
  int64_t stride = 1;
  for (size_t i = loops.size(); i-- > 0;) {
    expr = expr + loops[i] * stride;
    stride *= sizes[i];
  }
  return expr;
}

template <typename NormOp> LoopNest normLoops(NormOp op, bool hasBeta) {
  LoopNestBuilder nest(op.getContext());
  RowLoops loops = rowLoops(nest, shapeOf(op.getX()).size(), Kind::Parallel, Kind::Generic);
  nest.map(loops.all());
  nest.map({loops.last});
  if (hasBeta)
    nest.map({loops.last});
  nest.map(loops.all());
  return nest.build();
}

/// dy, x, gamma -> dx, dgamma (, dbeta): the rows are summed into the
/// weight gradients.
LoopNest normGradLoops(Operation *op) {
  LoopNestBuilder nest(op->getContext());
  RowLoops loops = rowLoops(nest, shapeOf(op->getOperand(0)).size(), Kind::Sum, Kind::Generic);
  nest.map(loops.all());
  nest.map(loops.all());
  nest.map({loops.last});
  nest.map(loops.all());
  for (unsigned i = 1; i < op->getNumResults(); ++i)
    nest.map({loops.last});
  return nest.build();
}

/// Every operand and result indexed alike over `shape`, `generic` dims
/// never split.
LoopNest sameShapeLoops(Operation *op, ArrayRef<int64_t> shape,
                        llvm::function_ref<bool(int64_t)> generic) {
  LoopNestBuilder nest(op->getContext());
  SmallVector<AffineExpr> loops = dimLoops(nest, shape, generic);
  for (unsigned i = 0; i < op->getNumOperands() + op->getNumResults(); ++i)
    nest.map(loops);
  return nest.build();
}

template <typename ReduceOp>
LoopNest reduceLoops(ReduceOp op, ReductionKind kind) {
  LoopNestBuilder nest(op.getContext());
  ArrayRef<int64_t> shape = shapeOf(op.getX());
  int64_t rank = shape.size();
  SmallVector<bool> reduced(rank, false);
  for (int64_t dim : op.getDims())
    reduced[dim < 0 ? dim + rank : dim] = true;
  SmallVector<AffineExpr> loops, result;
  for (int64_t d = 0; d < rank; ++d)
    loops.push_back(reduced[d] ? nest.reduction(kind) : nest.parallel());
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d])
      result.push_back(loops[d]);
    else if (op.getKeepdim())
      result.push_back(nest.constant(0));
  nest.map(loops);
  nest.map(result);
  return nest.build();
}

/// Attention's loops: b, kv heads, q heads per kv head, sq, sk, d, dv.
struct AttentionLoops {
  AffineExpr b, kvHead, group, sq, sk, d, dv, qHead;
  bool seqMajor;
  SmallVector<AffineExpr> q(AffineExpr last) const {
    return seqMajor ? SmallVector<AffineExpr>{b, sq, qHead, last}
                    : SmallVector<AffineExpr>{b, qHead, sq, last};
  }
  SmallVector<AffineExpr> kv(AffineExpr last) const {
    return seqMajor ? SmallVector<AffineExpr>{b, sk, kvHead, last}
                    : SmallVector<AffineExpr>{b, kvHead, sk, last};
  }
};

template <typename AttentionLike>
AttentionLoops attentionLoops(LoopNestBuilder &nest, AttentionLike op,
                              bool groupSum) {
  bool seqMajor = op.getSeqMajor();
  int64_t qHeads = shapeOf(op.getQ())[seqMajor ? 2 : 1];
  int64_t kvHeads = shapeOf(op.getK())[seqMajor ? 2 : 1];
  AttentionLoops loops;
  loops.seqMajor = seqMajor;
  loops.b = nest.parallel();
  loops.kvHead = nest.parallel();
  loops.group = groupSum ? nest.reduction(ReductionKind::Sum) : nest.parallel();
  loops.sq = nest.reduction(ReductionKind::Generic);
  loops.sk = nest.reduction(ReductionKind::Generic);
  loops.d = nest.reduction(ReductionKind::Generic);
  loops.dv = nest.parallel();
  loops.qHead = loops.kvHead * (qHeads / kvHeads) + loops.group;
  return loops;
}

} // namespace

LoopNest pointwiseLoops(Operation *op) {
  LoopNestBuilder nest(op->getContext());
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  SmallVector<AffineExpr> loops = dimLoops(nest, shape, [](int64_t) { return false; });
  for (Value operand : op->getOperands()) {
    if (isTensorWithDims(operand))
      nest.map(broadcastMap(nest, loops, shape, shapeOf(operand)));
    else
      nest.scalar();
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    nest.map(loops);
  return nest.build();
}

LoopNest describeLoops(LinearOp op) {
  LoopNestBuilder nest(op.getContext());
  SmallVector<AffineExpr> batch;
  for (size_t d = 0; d + 1 < shapeOf(op.getX()).size(); ++d)
    batch.push_back(nest.parallel());
  AffineExpr n = nest.parallel(), k = nest.reduction(ReductionKind::Sum);
  SmallVector<AffineExpr> x(batch), y(batch);
  x.push_back(k);
  y.push_back(n);
  nest.map(x);
  nest.map({n, k});
  if (op.getBias())
    nest.map({n});
  nest.map(y);
  return nest.build();
}

LoopNest describeLoops(MatmulOp op) {
  LoopNestBuilder nest(op.getContext());
  size_t rank = shapeOf(op.getA()).size();
  SmallVector<AffineExpr> batch;
  for (size_t d = 0; d + 2 < rank; ++d)
    batch.push_back(nest.parallel());
  AffineExpr m = nest.parallel(), n = nest.parallel(),
             k = nest.reduction(ReductionKind::Sum);
  SmallVector<AffineExpr> a(batch), b, c(batch);
  if (shapeOf(op.getB()).size() == rank)
    b = batch;
  a.append(op.getTransposeA() ? SmallVector<AffineExpr>{k, m}
                              : SmallVector<AffineExpr>{m, k});
  b.append(op.getTransposeB() ? SmallVector<AffineExpr>{n, k}
                              : SmallVector<AffineExpr>{k, n});
  c.append({m, n});
  nest.map(a);
  nest.map(b);
  nest.map(c);
  return nest.build();
}

LoopNest describeLoops(AttentionOp op) {
  LoopNestBuilder nest(op.getContext());
  AttentionLoops loops = attentionLoops(nest, op, /*groupSum=*/false);
  nest.map(loops.q(loops.d));
  nest.map(loops.kv(loops.d));
  nest.map(loops.kv(loops.dv));
  for (size_t i = 0; i < op.getRng().size(); ++i)
    nest.scalar();
  nest.map(loops.q(loops.dv));
  if (op.getLse())
    nest.map({loops.b, loops.qHead, loops.sq});
  return nest.build();
}

LoopNest describeLoops(AttentionGradOp op) {
  LoopNestBuilder nest(op.getContext());
  // dk and dv sum over the q heads of their group.
  AttentionLoops loops = attentionLoops(nest, op, /*groupSum=*/true);
  nest.map(loops.q(loops.dv));
  nest.map(loops.q(loops.d));
  nest.map(loops.kv(loops.d));
  nest.map(loops.kv(loops.dv));
  nest.map(loops.q(loops.dv));
  nest.map({loops.b, loops.qHead, loops.sq});
  for (size_t i = 0; i < op.getRng().size(); ++i)
    nest.scalar();
  nest.map(loops.q(loops.d));
  nest.map(loops.kv(loops.d));
  nest.map(loops.kv(loops.dv));
  return nest.build();
}

LoopNest describeLoops(LayerNormOp op) { return normLoops(op, true); }
LoopNest describeLoops(RmsNormOp op) { return normLoops(op, false); }
LoopNest describeLoops(LayerNormGradOp op) { return normGradLoops(op); }
LoopNest describeLoops(RmsNormGradOp op) { return normGradLoops(op); }

LoopNest describeLoops(SoftmaxOp op) {
  int64_t rank = shapeOf(op.getX()).size();
  int64_t dim = op.getDim() < 0 ? op.getDim() + rank : op.getDim();
  return sameShapeLoops(op, shapeOf(op.getX()), [&](int64_t d) { return d == dim; });
}

LoopNest describeLoops(SoftmaxGradOp op) {
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  int64_t rank = shape.size();
  int64_t dim = op.getDim() < 0 ? op.getDim() + rank : op.getDim();
  return sameShapeLoops(op, shape, [&](int64_t d) { return d == dim; });
}

LoopNest describeLoops(CausalMaskOp op) {
  int64_t rank = shapeOf(op.getX()).size();
  return sameShapeLoops(op, shapeOf(op.getX()),
                        [&](int64_t d) { return d >= rank - 2; });
}

LoopNest describeLoops(ReduceSumOp op) { return reduceLoops(op, ReductionKind::Sum); }
// A split mean is the average of the ranks' means (equal blocks).
LoopNest describeLoops(ReduceMeanOp op) { return reduceLoops(op, ReductionKind::Average); }
LoopNest describeLoops(ReduceMaxOp op) { return reduceLoops(op, ReductionKind::Generic); }

LoopNest describeLoops(ReshapeOp op) {
  LoopNestBuilder nest(op.getContext());
  ArrayRef<int64_t> from = shapeOf(op.getX()), to = shapeOf(op.getY());
  SmallVector<AffineExpr> fromExprs, toExprs;
  size_t i = 0, j = 0;
  auto skipOnes = [&]() {
    while (i < from.size() && from[i] == 1) {
      fromExprs.push_back(nest.constant(0));
      ++i;
    }
    while (j < to.size() && to[j] == 1) {
      toExprs.push_back(nest.constant(0));
      ++j;
    }
  };
  skipOnes();
  while (i < from.size() && j < to.size()) {
    // One dim on one side equals the product of a run of dims on the other.
    size_t i1 = i + 1, j1 = j + 1;
    int64_t a = from[i], b = to[j];
    while (a != b) {
      if (a < b && i1 < from.size())
        a *= from[i1++];
      else if (b < a && j1 < to.size())
        b *= to[j1++];
      else
        return LoopNest(); // no common refinement: runs replicated
    }
    bool fineFrom = i1 - i >= j1 - j;
    if (i1 - i > 1 && j1 - j > 1)
      return LoopNest();
    ArrayRef<int64_t> fine = fineFrom ? from.slice(i, i1 - i) : to.slice(j, j1 - j);
    SmallVector<AffineExpr> loops;
    for (size_t k = 0; k < fine.size(); ++k)
      loops.push_back(nest.parallel());
    // Size-1 dims inside a run keep constant 0 expressions on the fine side.
    SmallVector<AffineExpr> fineExprs;
    for (auto [loop, size] : llvm::zip(loops, fine))
      fineExprs.push_back(size == 1 ? nest.constant(0) : loop);
    AffineExpr coarse = linearized(nest, loops, fine);
    if (fineFrom) {
      fromExprs.append(fineExprs);
      toExprs.push_back(coarse);
    } else {
      toExprs.append(fineExprs);
      fromExprs.push_back(coarse);
    }
    i = i1;
    j = j1;
    skipOnes();
  }
  if (i != from.size() || j != to.size())
    return LoopNest();
  nest.map(fromExprs);
  nest.map(toExprs);
  return nest.build();
}

LoopNest describeLoops(TransposeOp op) {
  LoopNestBuilder nest(op.getContext());
  SmallVector<AffineExpr> loops =
      dimLoops(nest, shapeOf(op.getX()), [](int64_t) { return false; });
  SmallVector<AffineExpr> result;
  for (int64_t source : op.getPerm())
    result.push_back(loops[source]);
  nest.map(loops);
  nest.map(result);
  return nest.build();
}

LoopNest describeLoops(SplitOp op) {
  int64_t dim = op.getDim() < 0 ? op.getDim() + shapeOf(op.getX()).size() : op.getDim();
  return sameShapeLoops(op, shapeOf(op.getX()), [&](int64_t d) { return d == dim; });
}

LoopNest describeLoops(ConcatOp op) {
  int64_t dim = op.getDim() < 0 ? op.getDim() + shapeOf(op.getY()).size() : op.getDim();
  return sameShapeLoops(op, shapeOf(op.getY()), [&](int64_t d) { return d == dim; });
}

LoopNest describeLoops(EmbeddingOp op) {
  LoopNestBuilder nest(op.getContext());
  SmallVector<AffineExpr> ids =
      dimLoops(nest, shapeOf(op.getIds()), [](int64_t) { return false; });
  // A row outside a vocabulary shard is zero: shards sum to the lookup.
  AffineExpr vocab = nest.reduction(ReductionKind::Sum), hidden = nest.parallel();
  SmallVector<AffineExpr> y(ids);
  y.push_back(hidden);
  nest.map(ids);
  nest.map({vocab, hidden});
  if (op.getVocabOffset())
    nest.scalar();
  nest.map(y);
  return nest.build();
}

LoopNest describeLoops(EmbeddingGradOp op) {
  LoopNestBuilder nest(op.getContext());
  SmallVector<AffineExpr> ids;
  for (size_t d = 0; d < shapeOf(op.getIds()).size(); ++d)
    ids.push_back(nest.reduction(ReductionKind::Sum));
  AffineExpr vocab = nest.parallel(), hidden = nest.parallel();
  SmallVector<AffineExpr> dy(ids);
  dy.push_back(hidden);
  nest.map(dy);
  nest.map(ids);
  if (op.getVocabOffset())
    nest.scalar();
  nest.map({vocab, hidden});
  return nest.build();
}

// The vocabulary loop is parallel: partition() exchanges the row statistics
// (Megatron-LM's vocabulary-parallel cross-entropy), so the loss is whole.
// Rows are averaged with the global count: never split.
LoopNest describeLoops(CrossEntropyOp op) {
  LoopNestBuilder nest(op.getContext());
  RowLoops loops = rowLoops(nest, shapeOf(op.getLogits()).size(), Kind::Generic,
                            Kind::Parallel);
  nest.map(loops.all());
  nest.map(loops.rows);
  nest.map({});
  return nest.build();
}

LoopNest describeLoops(CrossEntropyGradOp op) {
  LoopNestBuilder nest(op.getContext());
  RowLoops loops = rowLoops(nest, shapeOf(op.getLogits()).size(), Kind::Generic,
                            Kind::Parallel);
  nest.scalar();
  nest.map(loops.all());
  nest.map(loops.rows);
  nest.map(loops.all());
  return nest.build();
}

LoopNest describeLoops(RopeOp op) {
  LoopNestBuilder nest(op.getContext());
  ArrayRef<int64_t> shape = shapeOf(op.getX());
  int64_t rank = shape.size();
  // rotate_half pairs the two halves of the last dim.
  SmallVector<AffineExpr> loops =
      dimLoops(nest, shape, [&](int64_t d) { return d == rank - 1; });
  SmallVector<AffineExpr> table{loops[rank - 2], loops[rank - 1]};
  nest.map(loops);
  nest.map(table);
  nest.map(table);
  nest.map(loops);
  return nest.build();
}

} // namespace weft::partition
