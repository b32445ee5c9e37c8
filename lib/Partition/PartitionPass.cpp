// weft-partition: every function with placements becomes its per-rank step.
#include "Partitioner.h"

#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace weft {
#define GEN_PASS_DEF_PARTITIONPASS
#include "weft/Partition/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::partition;

FailureOr<GridContext> weft::partition::gridOf(func::FuncOp func) {
  FlatSymbolRefAttr symbol;
  func.walk([&](shard::ShardingOp sharding) {
    if (!symbol)
      symbol = sharding.getGridAttr();
  });
  if (!symbol)
    return failure();
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(func, symbol);
  if (!grid)
    return func.emitOpError("names grid ") << symbol << ", which does not exist";
  GridContext context;
  context.grid = symbol;
  context.shape.assign(grid.getShape().begin(), grid.getShape().end());
  if (llvm::any_of(context.shape, [](int64_t size) { return size <= 0; }))
    return grid.emitOpError("needs a static shape to partition over");
  context.axis = int16_t(context.shape.size() - 1);
  if (auto names = grid->getAttrOfType<ArrayAttr>(WeftDialect::kAxisNamesAttr))
    for (auto [i, name] : llvm::enumerate(names))
      if (auto text = dyn_cast<StringAttr>(name); text && text.getValue() == "tp")
        context.axis = int16_t(i);
  return context;
}

namespace {

struct PartitionPass : public weft::impl::PartitionPassBase<PartitionPass> {
  using PartitionPassBase::PartitionPassBase;

  void runOnOperation() override {
    PartitionOptions options;
    options.sequenceParallel = sequenceParallel;
    for (auto func : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      if (func.isExternal() || func->hasAttr(WeftDialect::kGridAttr))
        continue;
      bool annotated = false;
      func.walk([&](shard::ShardingOp) { annotated = true; });
      if (!annotated)
        continue;
      FailureOr<GridContext> grid = gridOf(func);
      if (failed(grid) || failed(partitionFunction(func, *grid, options)))
        return signalPassFailure();
    }
  }
};

} // namespace
