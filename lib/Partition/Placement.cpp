// Placements and their shard.sharding form.
#include "weft/Partition/Sharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace weft::partition {

std::optional<GridSpec> parseGridSpec(StringRef text, std::string &error) {
  GridSpec spec;
  for (StringRef entry : llvm::split(text, ',')) {
    auto [name, size] = entry.trim().split('=');
    int64_t value = 0;
    if ((name != "tp" && name != "dp") || size.trim().getAsInteger(10, value) ||
        value < 1 || llvm::is_contained(spec.names, name.str())) {
      error = ("grid entry '" + entry + "' is not dp=N or tp=N (each at most once, "
               "N >= 1); grid '" + text + "'").str();
      return std::nullopt;
    }
    if (name == "tp")
      spec.tpAxis = spec.names.size();
    spec.names.push_back(name.str());
    spec.shape.push_back(value);
  }
  if (spec.tpAxis < 0) {
    error = ("grid '" + text + "' has no tp axis").str();
    return std::nullopt;
  }
  return spec;
}

std::string GridSpec::str() const {
  std::string text;
  for (auto [i, name] : llvm::enumerate(names))
    text += (i ? "," : "") + name + "=" + std::to_string(shape[i]);
  return text;
}

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
