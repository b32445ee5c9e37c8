// Resharding between placements with the shard dialect's collectives.
#include "Reshard.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace weft::partition {

Value Resharder::to(Value global, Value value, const Placement &from,
                    const Placement &target, bool backward, OpBuilder &builder,
                    Location loc) {
  if (from == target)
    return value;
  if (from.partial)
    return emit(global, value, from, target, builder, loc);
  int64_t key = target.splitDim ? *target.splitDim : -1;
  auto it = cache.find({global, key, int64_t(backward)});
  if (it != cache.end())
    return it->second;
  Value result = target.splitDim ? Value()
                                 : gatheredThroughView(global, from, backward, builder, loc);
  if (!result)
    result = emit(global, value, from, target, builder, loc);
  cache[{global, key, int64_t(backward)}] = result;
  return result;
}

/// Whether every dimension of `shape` before `dim` is 1: a split along `dim`
/// gives each rank one contiguous block of the row-major tensor.
static bool leadingOnes(ArrayRef<int64_t> shape, int64_t dim) {
  return llvm::all_of(shape.take_front(dim), [](int64_t d) { return d == 1; });
}

Value Resharder::gatheredThroughView(Value global, const Placement &from, bool backward,
                                     OpBuilder &builder, Location loc) {
  Operation *view = global.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(global.getType());
  if (!view || !type || !from.splitDim || view->getNumOperands() != 1 ||
      view->getNumResults() != 1 || !isBufferView(view) ||
      !leadingOnes(type.getShape(), *from.splitDim))
    return Value();
  auto it = cache.find({view->getOperand(0), int64_t(-1), int64_t(backward)});
  if (it == cache.end())
    return Value();
  auto gather = it->second.getDefiningOp<shard::AllGatherOp>();
  if (!gather ||
      !leadingOnes(gather.getInput().getType().getShape(), gather.getGatherAxis().getSExtValue()))
    return Value();
  return ReshapeOp::create(builder, loc, type, gather.getResult());
}

Value Resharder::emit(Value global, Value value, const Placement &from,
                      const Placement &target, OpBuilder &builder, Location loc) {
  auto type = dyn_cast<RankedTensorType>(global.getType());
  if (!type)
    return value;
  StringRef gridName = grid.grid.getValue();
  SmallVector<shard::GridAxis> axes{grid.axis};
  int64_t parts = grid.size();
  if (from.partial) {
    auto kind = from.average ? shard::ReductionKind::Average : shard::ReductionKind::Sum;
    if (!target.splitDim)
      return shard::AllReduceOp::create(builder, loc, value, gridName, axes, kind);
    return shard::ReduceScatterOp::create(builder, loc, localType(type, target, parts),
                                          gridName, axes, value, kind,
                                          APInt(64, *target.splitDim));
  }
  // A splat constant (a loss gradient's ones) is sliced by making it small.
  if (auto constant = value.getDefiningOp<arith::ConstantOp>())
    if (auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
        splat && !from.splitDim && target.splitDim) {
      auto local = localType(type, target, parts);
      return arith::ConstantOp::create(builder, loc, local,
                                       splat.resizeSplat(local));
    }
  Value whole = value;
  if (from.splitDim)
    whole = shard::AllGatherOp::create(builder, loc, type, gridName, axes, value,
                                       APInt(64, *from.splitDim));
  if (!target.splitDim)
    return whole;
  return shard::AllSliceOp::create(builder, loc, localType(type, target, parts),
                                   whole, gridName, axes, *target.splitDim);
}

} // namespace weft::partition
