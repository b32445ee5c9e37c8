// mlir::shard::ShardingInterface on the weft ops: the loop nests of
// LoopNests.cpp, and partition(), which builds an op's per-rank form from its
// partitioned operands. Most ops are the same op on local types; the ones
// below add what a rank needs to know about its block (a dropout's place in
// the global mask, an embedding shard's first row, the vocabulary-parallel
// cross-entropy's statistics exchange).
#include "LoopNests.h"

#include "weft/Partition/Sharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using shard::Sharding;

namespace weft::partition {

namespace {

/// What partition() receives, with the helpers every op's form uses.
struct PartitionCall {
  Operation *op;
  ArrayRef<Value> operands;
  ArrayRef<Sharding> operandShardings, resultShardings;
  IRMapping &map;
  SymbolTableCollection &symbols;
  OpBuilder &builder;

  Location loc() const { return op->getLoc(); }
  int64_t parts(const Sharding &sharding) const {
    return splitParts(sharding, symbols, op);
  }
  /// Result `i`'s per-rank type.
  Type resultType(unsigned i) const {
    auto type = dyn_cast<RankedTensorType>(op->getResult(i).getType());
    if (!type || i >= resultShardings.size() || !resultShardings[i])
      return op->getResult(i).getType();
    return localType(type, Placement{splitDimOf(resultShardings[i]), false},
                     parts(resultShardings[i]));
  }
  /// The grid axis `sharding` splits along (it splits one dimension).
  int16_t axisOf(const Sharding &sharding) const {
    for (shard::GridAxesAttr axes : sharding.getSplitAxes())
      if (!axes.empty())
        return axes.asArrayRef().front();
    return 0;
  }
  Value offset(const Sharding &sharding, int64_t blockSize) const {
    return blockOffset(builder, loc(), sharding.getGridAttr(), axisOf(sharding),
                       blockSize);
  }
  /// Creates the per-rank op: `op` with `operands`, local result types and
  /// `op`'s attributes plus `extra`; maps its results.
  Operation *emit(ArrayRef<Value> newOperands,
                  ArrayRef<NamedAttribute> extra = {}) const {
    OperationState state(loc(), op->getName());
    state.addOperands(newOperands);
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      state.addTypes(resultType(i));
    NamedAttrList attributes(op->getAttrDictionary());
    for (const NamedAttribute &attribute : extra)
      attributes.set(attribute.getName(), attribute.getValue());
    state.addAttributes(attributes);
    Operation *local = builder.create(state);
    for (auto [global, result] : llvm::zip(op->getResults(), local->getResults()))
      map.map(global, result);
    return local;
  }
  /// A scale of `value` by 1/parts (the partial-sum share of a bias or mean).
  Value share(Value value, int64_t count) const {
    return ScaleOp::create(builder, loc(), value.getType(), value,
                           builder.getF64FloatAttr(1.0 / double(count)));
  }
};

// The default: the same op on local types.
template <typename OpTy> LogicalResult partitionOp(OpTy, PartitionCall &call) {
  call.emit(call.operands);
  return success();
}

/// A row-parallel linear (its reduction split): each rank adds bias/ranks,
/// so the partial sums add up to one bias.
LogicalResult partitionOp(LinearOp op, PartitionCall &call) {
  SmallVector<Value> operands(call.operands);
  int64_t rank = op.getX().getType().getRank();
  if (op.getBias() && splitDimOf(call.operandShardings[0]) == rank - 1)
    operands[2] = call.share(operands[2], call.parts(call.operandShardings[0]));
  call.emit(operands);
  return success();
}

/// A dropout on a block: its offsets in the global tensor, so the mask is the
/// global one's slice.
LogicalResult partitionOp(DropoutOp op, PartitionCall &call) {
  const Sharding &sharding = call.resultShardings[0];
  std::optional<int64_t> split = splitDimOf(sharding);
  if (!split) {
    call.emit(call.operands);
    return success();
  }
  if (!op.getOffsets().empty())
    return op.emitOpError("is already a block of a partitioned tensor");
  RankedTensorType type = op.getX().getType();
  int64_t parts = call.parts(sharding);
  SmallVector<Value> operands{call.operands[0], call.operands[1]};
  for (int64_t d = 0; d < type.getRank(); ++d)
    operands.push_back(d == *split
                           ? call.offset(sharding, type.getDimSize(d) / parts)
                           : arith::ConstantIndexOp::create(call.builder, call.loc(), 0)
                                 .getResult());
  call.emit(operands, {call.builder.getNamedAttr(
                          "global_shape",
                          call.builder.getDenseI64ArrayAttr(type.getShape()))});
  return success();
}

/// Attention on a block of heads: with dropout, the heads' place in the
/// global mask.
template <typename AttentionLike>
LogicalResult partitionAttention(AttentionLike op, PartitionCall &call,
                                 unsigned qIndex) {
  const Sharding &q = call.operandShardings[qIndex];
  int64_t headDim = op.getSeqMajor() ? 2 : 1;
  if (op.getDropoutP().convertToDouble() == 0.0 || splitDimOf(q) != headDim) {
    call.emit(call.operands);
    return success();
  }
  if (op.getHeadOffset())
    return op.emitOpError("is already a block of a partitioned attention");
  int64_t heads = op.getQ().getType().getDimSize(headDim);
  SmallVector<Value> operands(call.operands);
  operands.push_back(call.offset(q, heads / call.parts(q)));
  call.emit(operands, {call.builder.getNamedAttr(
                          "dropout_heads", call.builder.getI64IntegerAttr(heads))});
  return success();
}

LogicalResult partitionOp(AttentionOp op, PartitionCall &call) {
  return partitionAttention(op, call, 0);
}
LogicalResult partitionOp(AttentionGradOp op, PartitionCall &call) {
  return partitionAttention(op, call, 1);
}

/// A vocabulary-parallel table (`table`'s sharding, `vocab` rows in all):
/// the shard's first row as the op's vocab_offset.
LogicalResult partitionVocabShard(PartitionCall &call, const Sharding &table,
                                  int64_t vocab) {
  if (splitDimOf(table) != 0) {
    call.emit(call.operands);
    return success();
  }
  call.emit({call.operands[0], call.operands[1],
             call.offset(table, vocab / call.parts(table))});
  return success();
}

LogicalResult partitionOp(EmbeddingOp op, PartitionCall &call) {
  return partitionVocabShard(call, call.operandShardings[1],
                             op.getTable().getType().getDimSize(0));
}

LogicalResult partitionOp(EmbeddingGradOp op, PartitionCall &call) {
  return partitionVocabShard(call, call.resultShardings[0],
                             op.getDtable().getType().getDimSize(0));
}

/// The global row statistics of vocabulary-split logits: max (all-reduce
/// max), then the shards' sum of exp(x - max) and label logit (all-reduce
/// sums). f32 for 16-bit logits, as the single-GPU kernels keep them.
struct RowStats {
  Value max, sumexp, target, offset;
};

RowStats vocabRowStats(PartitionCall &call, Value logits, Value labels,
                       const Sharding &sharding) {
  OpBuilder &b = call.builder;
  Location loc = call.loc();
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  Type statElement = element.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : element;
  auto rows = RankedTensorType::get(type.getShape().drop_back(), element);
  auto statRows = RankedTensorType::get(type.getShape().drop_back(), statElement);
  Value localMax = ReduceMaxOp::create(b, loc, rows, logits,
                                       b.getDenseI64ArrayAttr({rank - 1}), false);
  if (statElement != element)
    localMax = ConvertOp::create(b, loc, statRows, localMax);
  StringRef grid = sharding.getGridAttr().getValue();
  SmallVector<shard::GridAxis> axes{call.axisOf(sharding)};
  RowStats stats;
  stats.max = shard::AllReduceOp::create(b, loc, localMax, grid, axes,
                                         shard::ReductionKind::Max);
  stats.offset = call.offset(sharding, type.getDimSize(rank - 1));
  auto partial = CrossEntropyPartialOp::create(b, loc, statRows, statRows, logits,
                                               labels, stats.max, stats.offset);
  stats.sumexp = shard::AllReduceOp::create(b, loc, partial.getSumexp(), grid, axes,
                                            shard::ReductionKind::Sum);
  stats.target = shard::AllReduceOp::create(b, loc, partial.getTarget(), grid, axes,
                                            shard::ReductionKind::Sum);
  return stats;
}

LogicalResult partitionOp(CrossEntropyOp op, PartitionCall &call) {
  const Sharding &logits = call.operandShardings[0];
  if (splitDimOf(logits) != op.getLogits().getType().getRank() - 1) {
    call.emit(call.operands);
    return success();
  }
  if (op.getIgnoreIndex())
    return op.emitOpError("with ignore_index has no vocabulary-parallel form yet");
  RowStats stats = vocabRowStats(call, call.operands[0], call.operands[1], logits);
  Value loss = CrossEntropyCombineOp::create(call.builder, call.loc(),
                                             op.getLoss().getType(), stats.sumexp,
                                             stats.target);
  call.map.map(op.getLoss(), loss);
  return success();
}

LogicalResult partitionOp(CrossEntropyGradOp op, PartitionCall &call) {
  const Sharding &logits = call.operandShardings[1];
  if (splitDimOf(logits) != op.getLogits().getType().getRank() - 1) {
    call.emit(call.operands);
    return success();
  }
  if (op.getIgnoreIndex())
    return op.emitOpError("with ignore_index has no vocabulary-parallel form yet");
  RowStats stats = vocabRowStats(call, call.operands[1], call.operands[2], logits);
  Value grad = CrossEntropyGradPartialOp::create(
      call.builder, call.loc(), call.operands[1].getType(), call.operands[0],
      call.operands[1], call.operands[2], stats.max, stats.sumexp, stats.offset);
  call.map.map(op.getDlogits(), grad);
  return success();
}

/// The interface on op type OpTy, its nest from `Describe`.
template <typename OpTy, LoopNest (*Describe)(Operation *)>
struct Model
    : public shard::ShardingInterface::ExternalModel<Model<OpTy, Describe>, OpTy> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return Describe(op).iterators;
  }
  SmallVector<shard::ReductionKind> getReductionLoopIteratorKinds(Operation *op) const {
    return Describe(op).reductionKinds;
  }
  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    return Describe(op).maps;
  }
  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings, IRMapping &map,
                          SymbolTableCollection &symbols, OpBuilder &builder) const {
    PartitionCall call{op, partitionedOperands, operandShardings, resultShardings,
                       map, symbols, builder};
    return partitionOp(cast<OpTy>(op), call);
  }
};

template <typename OpTy> LoopNest describeOp(Operation *op) {
  return describeLoops(cast<OpTy>(op));
}

template <typename... OpTys> void attachNests(MLIRContext *context) {
  (OpTys::template attachInterface<Model<OpTys, describeOp<OpTys>>>(*context), ...);
}

template <typename... OpTys> void attachPointwise(MLIRContext *context) {
  (OpTys::template attachInterface<Model<OpTys, pointwiseLoops>>(*context), ...);
}

} // namespace

void registerShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, WeftDialect *) {
    attachNests<LinearOp, MatmulOp, AttentionOp, AttentionGradOp, LayerNormOp,
                LayerNormGradOp, RmsNormOp, RmsNormGradOp, SoftmaxOp,
                SoftmaxGradOp, CausalMaskOp, ReduceSumOp, ReduceMeanOp,
                ReduceMaxOp, ReshapeOp, TransposeOp, SplitOp, ConcatOp,
                EmbeddingOp, EmbeddingGradOp, CrossEntropyOp,
                CrossEntropyGradOp, RopeOp>(context);
    attachPointwise<AddOp, SubOp, MulOp, DivOp, ScaleOp, WhereOp, GeluOp, GeluGradOp,
                    SiluOp, SiluGradOp, TanhOp, ExpOp, RsqrtOp, NegOp, LogOp,
                    SqrtOp, CosOp, SinOp, SigmoidOp, PowOp, DropoutOp,
                    ConvertOp, AdamWOp>(context);
  });
}

} // namespace weft::partition
