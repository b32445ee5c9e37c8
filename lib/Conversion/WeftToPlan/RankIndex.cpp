// evaluateRankIndex: index operands of kernels as base + scale * position.
#include "RankIndex.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace weft {

namespace {

FailureOr<RankIndex> fail(std::string &why, const Twine &what) {
  why = what.str();
  return failure();
}

/// a (+|-) b: both on the same axes, or one a constant.
FailureOr<RankIndex> add(const RankIndex &a, const RankIndex &b, int64_t sign,
                         std::string &why) {
  if (!a.axes.empty() && !b.axes.empty() && a.axes != b.axes)
    return fail(why, "it adds positions along different grid axes");
  RankIndex out;
  bool overflow = sign > 0 ? llvm::AddOverflow(a.base, b.base, out.base) |
                                 llvm::AddOverflow(a.scale, b.scale, out.scale)
                           : llvm::SubOverflow(a.base, b.base, out.base) |
                                 llvm::SubOverflow(a.scale, b.scale, out.scale);
  if (overflow)
    return fail(why, "its value overflows int64");
  out.axes = a.axes.empty() ? b.axes : a.axes;
  if (out.scale == 0)
    out.axes.clear();
  return out;
}

} // namespace

FailureOr<RankIndex> evaluateRankIndex(Value value, std::string &why) {
  if (!value.getType().isIndex())
    return fail(why, llvm::formatv("it is of type {0}, not index", value.getType()));
  Operation *op = value.getDefiningOp();
  if (!op)
    return fail(why, "it is a block argument, not computed from the grid position");
  if (auto constant = dyn_cast<arith::ConstantIndexOp>(op))
    return RankIndex{constant.value(), 0, {}};
  if (auto multi = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
    unsigned result = cast<OpResult>(value).getResultNumber();
    ArrayRef<int16_t> axes = multi.getAxes();
    if (axes.empty())
      return RankIndex{0, 1, {int64_t(result)}}; // every axis, in grid order
    return RankIndex{0, 1, {int64_t(axes[result])}};
  }
  if (auto linear = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
    SymbolTableCollection symbols;
    shard::GridOp grid = shard::getGridOrNull(op, linear.getGridAttr(), symbols);
    if (!grid)
      return fail(why, "its grid is not found");
    RankIndex out{0, 1, {}};
    for (int64_t axis = 0; axis < grid.getRank(); ++axis)
      out.axes.push_back(axis);
    return out;
  }
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
    FailureOr<RankIndex> a = evaluateRankIndex(op->getOperand(0), why);
    if (failed(a))
      return failure();
    FailureOr<RankIndex> b = evaluateRankIndex(op->getOperand(1), why);
    if (failed(b))
      return failure();
    if (isa<arith::AddIOp>(op))
      return add(*a, *b, 1, why);
    if (isa<arith::SubIOp>(op))
      return add(*a, *b, -1, why);
    if (!a->axes.empty() && !b->axes.empty())
      return fail(why, "it multiplies two grid positions");
    const RankIndex &varying = a->axes.empty() ? *b : *a;
    int64_t factor = a->axes.empty() ? a->base : b->base;
    RankIndex out{0, 0, varying.axes};
    if (llvm::MulOverflow(varying.base, factor, out.base) |
        llvm::MulOverflow(varying.scale, factor, out.scale))
      return fail(why, "its value overflows int64");
    if (out.scale == 0)
      out.axes.clear();
    return out;
  }
  return fail(why, llvm::formatv("it is computed by {0}, which a launch immediate "
                                 "cannot carry (index constants, the grid position, "
                                 "addi / subi / muli)",
                                 op->getName()));
}

Attribute rankIndexArg(Builder &builder, const RankIndex &index, bool i32) {
  Attribute base = i32 ? Attribute(builder.getI32IntegerAttr(int32_t(index.base)))
                       : Attribute(builder.getI64IntegerAttr(index.base));
  if (index.axes.empty())
    return base;
  return builder.getDictionaryAttr({
      builder.getNamedAttr("base", base),
      builder.getNamedAttr("rank_axes", builder.getDenseI64ArrayAttr(index.axes)),
      builder.getNamedAttr("scale", builder.getI64IntegerAttr(index.scale)),
  });
}

bool isRankIndexOp(Operation *op) {
  if (!llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIndex(); }) ||
      op->getNumResults() == 0)
    return false;
  return isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp,
             shard::ProcessMultiIndexOp, shard::ProcessLinearIndexOp>(op);
}

} // namespace weft
