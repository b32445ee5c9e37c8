// weft-expand-kv-heads: GQA attention whose kv heads the tensor-parallel size
// exceeds gets each kv head replicated tp / kv_heads times, as Megatron-style
// TP does, so every rank holds whole q heads and the one kv head they read.
//
// The fused QKV projection (rows per kv group [kv_heads, group + 2,
// head_dim]) is rewritten, on the forward function before autodiff, into
// one over the expanded weight: the rows of `tp` groups, each a slice of
// group / r q heads of its kv group plus that group's k and v rows
// (r = tp / kv_heads). The expanded weight is a row gather of the parameter
// (`weft.embedding` of constant row ids), so autodiff sums the replicas'
// gradients back into it. Attention then reads tp kv heads: q head h reads
// expanded head h / (group / r), which holds kv head h / group, as before.
#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace weft {
#define GEN_PASS_DEF_EXPANDKVHEADSPASS
#include "weft/Partition/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The packed projection feeding one attention: linear -> reshape to
/// [b, s, kv, group + 2, d] -> split [group, 1, 1] -> reshapes to
/// [b, s, heads, d], then transposes (and rope) to the attention.
struct PackedQkv {
  LinearOp linear;
  ReshapeOp heads;
  SplitOp split;
  ReshapeOp q, k, v;
  int64_t kvHeads, group, headDim;
};

std::optional<PackedQkv> matchPackedQkv(AttentionOp attention) {
  // k: [rope] <- transpose <- reshape <- split piece 1, each value read by
  // the next op only (the chain is rebuilt with more kv heads).
  auto source = [](Value value) -> ReshapeOp {
    if (auto rope = value.getDefiningOp<RopeOp>()) {
      if (!rope.getY().hasOneUse())
        return ReshapeOp();
      value = rope.getX();
    }
    auto transpose = value.getDefiningOp<TransposeOp>();
    if (!transpose || !transpose.getY().hasOneUse() || !transpose.getX().hasOneUse())
      return ReshapeOp();
    auto reshape = transpose.getX().getDefiningOp<ReshapeOp>();
    return reshape && reshape.getX().hasOneUse() ? reshape : ReshapeOp();
  };
  PackedQkv packed;
  packed.q = source(attention.getQ());
  packed.k = source(attention.getK());
  packed.v = source(attention.getV());
  if (!packed.q || !packed.k || !packed.v || packed.k == packed.v)
    return std::nullopt;
  packed.split = packed.k.getX().getDefiningOp<SplitOp>();
  if (!packed.split || packed.q.getX() != packed.split.getPieces()[0] ||
      packed.k.getX() != packed.split.getPieces()[1] ||
      packed.v.getX() != packed.split.getPieces()[2] || packed.split.getDim() != 3)
    return std::nullopt;
  packed.heads = packed.split.getX().getDefiningOp<ReshapeOp>();
  packed.linear = packed.heads ? packed.heads.getX().getDefiningOp<LinearOp>() : LinearOp();
  if (!packed.linear)
    return std::nullopt;
  ArrayRef<int64_t> shape = packed.heads.getY().getType().getShape();
  ArrayRef<int64_t> sizes = packed.split.getSizes();
  if (shape.size() != 5 || sizes.size() != 3 || sizes[1] != 1 || sizes[2] != 1 ||
      shape[3] != sizes[0] + 2 || packed.linear.getX().getType().getRank() != 3)
    return std::nullopt;
  packed.kvHeads = shape[2];
  packed.group = sizes[0];
  packed.headDim = shape[4];
  return packed;
}

/// Rows of the expanded fused weight: for expanded group e (kv group
/// e / r, q slice e % r), its group / r q heads' rows, then the group's k
/// and v rows.
SmallVector<int64_t> expandedRows(const PackedQkv &p, int64_t tp) {
  int64_t r = tp / p.kvHeads, slice = p.group / r, d = p.headDim;
  SmallVector<int64_t> rows;
  for (int64_t e = 0; e < tp; ++e) {
    int64_t g = e / r, base = g * (p.group + 2) * d;
    for (int64_t h = (e % r) * slice; h < (e % r + 1) * slice; ++h)
      for (int64_t i = 0; i < d; ++i)
        rows.push_back(base + h * d + i);
    for (int64_t kv = p.group; kv < p.group + 2; ++kv)
      for (int64_t i = 0; i < d; ++i)
        rows.push_back(base + kv * d + i);
  }
  return rows;
}

/// `value` with dimension `dim` of its type resized (a retyped clone's result).
RankedTensorType withDim(Type type, int64_t dim, int64_t size) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// Gathers `rows` of `table` ([n] or [n, h]) with weft.embedding.
Value gatherRows(OpBuilder &b, Location loc, Value table, ArrayRef<int64_t> rows) {
  auto type = cast<RankedTensorType>(table.getType());
  auto ids = RankedTensorType::get({int64_t(rows.size())}, b.getI64Type());
  Value idValues =
      arith::ConstantOp::create(b, loc, ids, DenseIntElementsAttr::get(ids, rows));
  Value table2d = table;
  if (type.getRank() == 1)
    table2d = ReshapeOp::create(
        b, loc, RankedTensorType::get({type.getDimSize(0), 1}, type.getElementType()),
        table);
  auto table2dType = cast<RankedTensorType>(table2d.getType());
  Value gathered = EmbeddingOp::create(
      b, loc,
      RankedTensorType::get({int64_t(rows.size()), table2dType.getDimSize(1)},
                            type.getElementType()),
      idValues, table2d, Value());
  if (type.getRank() == 1)
    gathered = ReshapeOp::create(
        b, loc, RankedTensorType::get({int64_t(rows.size())}, type.getElementType()),
        gathered);
  return gathered;
}

/// Rebuilds the chain from a kv reshape to the attention with `heads` kv
/// heads: each transpose and rope retyped; returns the attention operand.
Value retypeChain(OpBuilder &b, Value oldValue, Value newValue, AttentionOp attention) {
  while (true) {
    if (oldValue == attention.getK() || oldValue == attention.getV())
      return newValue;
    Operation *user = *oldValue.getUsers().begin();
    b.setInsertionPoint(user);
    Operation *clone = b.clone(*user);
    clone->setOperand(0, newValue);
    auto oldType = cast<RankedTensorType>(user->getResult(0).getType());
    auto inType = cast<RankedTensorType>(newValue.getType());
    SmallVector<int64_t> shape(oldType.getShape());
    if (auto transpose = dyn_cast<TransposeOp>(user))
      for (auto [i, source] : llvm::enumerate(transpose.getPerm()))
        shape[i] = inType.getDimSize(source);
    else
      shape.assign(inType.getShape().begin(), inType.getShape().end());
    clone->getResult(0).setType(RankedTensorType::get(shape, oldType.getElementType()));
    oldValue = user->getResult(0);
    newValue = clone->getResult(0);
  }
}

LogicalResult expand(AttentionOp attention, PackedQkv p, int64_t tp) {
  OpBuilder b(p.linear);
  Location loc = p.linear.getLoc();
  SmallVector<int64_t> rows = expandedRows(p, tp);
  Value weight = gatherRows(b, loc, p.linear.getW(), rows);
  Value bias = p.linear.getBias() ? gatherRows(b, loc, p.linear.getBias(), rows) : Value();
  RankedTensorType xType = p.linear.getX().getType();
  auto element = xType.getElementType();
  int64_t batch = xType.getDimSize(0), seq = xType.getDimSize(1), d = p.headDim;
  int64_t slice = p.group / (tp / p.kvHeads);
  auto linear = LinearOp::create(
      b, loc, RankedTensorType::get({batch, seq, int64_t(rows.size())}, element),
      p.linear.getX(), weight, bias);
  linear->setDiscardableAttrs(p.linear->getDiscardableAttrDictionary());
  auto heads = ReshapeOp::create(
      b, loc, RankedTensorType::get({batch, seq, tp, slice + 2, d}, element), linear);
  heads->setDiscardableAttrs(p.heads->getDiscardableAttrDictionary());
  SmallVector<Type> pieceTypes{
      RankedTensorType::get({batch, seq, tp, slice, d}, element),
      RankedTensorType::get({batch, seq, tp, 1, d}, element),
      RankedTensorType::get({batch, seq, tp, 1, d}, element)};
  auto split = SplitOp::create(b, loc, pieceTypes, heads, b.getI64IntegerAttr(3),
                               b.getDenseI64ArrayAttr({slice, 1, 1}));
  split->setDiscardableAttrs(p.split->getDiscardableAttrDictionary());
  auto q = ReshapeOp::create(b, loc, p.q.getY().getType(), split.getPieces()[0]);
  auto k = ReshapeOp::create(b, loc, withDim(p.k.getY().getType(), 2, tp),
                             split.getPieces()[1]);
  auto v = ReshapeOp::create(b, loc, withDim(p.v.getY().getType(), 2, tp),
                             split.getPieces()[2]);
  for (Operation *op : {q.getOperation(), k.getOperation(), v.getOperation()})
    op->setDiscardableAttrs(p.q->getDiscardableAttrDictionary());
  p.q.getY().replaceAllUsesWith(q);
  Value newK = retypeChain(b, p.k.getY(), k, attention);
  Value newV = retypeChain(b, p.v.getY(), v, attention);
  attention.getKMutable().assign(newK);
  attention.getVMutable().assign(newV);
  if (failed(mlir::verify(attention)))
    return failure();
  return success();
}

struct ExpandKvHeadsPass : public weft::impl::ExpandKvHeadsPassBase<ExpandKvHeadsPass> {
  using ExpandKvHeadsPassBase::ExpandKvHeadsPassBase;

  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    getOperation().walk([&](AttentionOp attention) { attentions.push_back(attention); });
    for (AttentionOp attention : attentions) {
      if (attention.getSeqMajor())
        continue;
      int64_t qHeads = attention.getQ().getType().getDimSize(1);
      int64_t kvHeads = attention.getK().getType().getDimSize(1);
      if (kvHeads % tp == 0)
        continue; // every rank holds whole kv heads already
      if (tp % kvHeads != 0 || qHeads % tp != 0) {
        attention.emitOpError("has ")
            << qHeads << " query heads and " << kvHeads << " kv heads: tp=" << int64_t(tp)
            << " must divide the query heads and be a multiple of the kv heads "
               "to replicate them";
        return signalPassFailure();
      }
      std::optional<PackedQkv> packed = matchPackedQkv(attention);
      if (!packed) {
        attention.emitOpError("reads kv heads that tp=")
            << int64_t(tp) << " must replicate, but not from a fused QKV projection "
            << "(linear -> [b, s, kv_heads, group + 2, d] -> split) it can expand";
        return signalPassFailure();
      }
      if (failed(expand(attention, *packed, int64_t(tp))))
        return signalPassFailure();
    }
    // The old projection chains are dead now (weft ops are pure).
    while (true) {
      SmallVector<Operation *> dead;
      getOperation().walk([&](Operation *op) {
        if (isa<WeftDialect>(op->getDialect()) && op->getNumResults() > 0 &&
            op->use_empty())
          dead.push_back(op);
      });
      if (dead.empty())
        break;
      for (Operation *op : dead)
        op->erase();
    }
  }
};

} // namespace
