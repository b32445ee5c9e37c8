// Placements and their shard.sharding form.
#include "weft/Partition/Sharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace weft::partition {

std::string Placement::str() const {
  if (partial)
    return average ? "partial average" : "partial sum";
  if (!splitDim)
    return "replicated";
  return "split along dimension " + std::to_string(*splitDim);
}

shard::Sharding toSharding(const GridContext &grid, const Placement &placement,
                           int64_t rank) {
  MLIRContext *context = grid.grid.getContext();
  SmallVector<shard::GridAxesAttr> axes(rank, shard::GridAxesAttr::get(context, {}));
  if (placement.splitDim)
    axes[*placement.splitDim] = shard::GridAxesAttr::get(context, {grid.axis});
  return shard::Sharding::get(grid.grid, axes);
}

std::optional<int64_t> splitDimOf(const shard::Sharding &sharding) {
  if (!sharding)
    return std::nullopt;
  for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes()))
    if (!axes.empty())
      return int64_t(dim);
  return std::nullopt;
}

RankedTensorType localType(RankedTensorType type, const Placement &placement,
                           int64_t parts) {
  if (!placement.splitDim)
    return type;
  SmallVector<int64_t> shape(type.getShape());
  shape[*placement.splitDim] /= parts;
  return RankedTensorType::get(shape, type.getElementType());
}

int64_t splitParts(const shard::Sharding &sharding, SymbolTableCollection &symbols,
                   Operation *from) {
  if (!sharding)
    return 1;
  shard::GridOp grid = shard::getGridOrNull(from, sharding.getGridAttr(), symbols);
  if (!grid)
    return 1;
  int64_t parts = 1;
  for (shard::GridAxesAttr axes : sharding.getSplitAxes())
    for (int16_t axis : axes.asArrayRef())
      parts *= grid.getShape()[axis];
  return parts;
}

Value blockOffset(OpBuilder &builder, Location loc, FlatSymbolRefAttr grid,
                  int16_t axis, int64_t blockSize) {
  Value index = shard::ProcessMultiIndexOp::create(builder, loc, grid.getValue(),
                                                   ArrayRef<shard::GridAxis>{axis})
                    .getResult()[0];
  Value size = arith::ConstantIndexOp::create(builder, loc, blockSize);
  return arith::MulIOp::create(builder, loc, index, size);
}

} // namespace weft::partition
