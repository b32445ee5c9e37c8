// weft-reduce-scatter-slabs: a sum reduce-scatter as an all-to-all of the
// ranks' slabs and their sum (Passes.td).
#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace weft {
#define GEN_PASS_DEF_REDUCESCATTERSLABSPASS
#include "weft/Partition/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The ranks along `axes` of the grid `op` names; 0 when it is not found.
int64_t groupSize(shard::ReduceScatterOp op) {
  SymbolTableCollection symbols;
  shard::GridOp grid = shard::getGridOrNull(op, op.getGridAttr(), symbols);
  if (!grid)
    return 0;
  int64_t size = 1;
  for (int16_t axis : op.getGridAxes())
    size *= grid.getShape()[axis];
  return size;
}

/// Whether `op` is one this pass rewrites: a sum over contiguous blocks,
/// static shapes, no attributes of another pass (collective matmul's chunks).
bool rewritable(shard::ReduceScatterOp op, int64_t ranks) {
  auto input = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto result = dyn_cast<RankedTensorType>(op.getResult().getType());
  if (!input || !result || !input.hasStaticShape() || !result.hasStaticShape() || ranks < 2)
    return false;
  if (op.getReduction() != shard::ReductionKind::Sum || op->hasAttr(WeftDialect::kChunksAttr) ||
      op->hasAttr(WeftDialect::kLocalFirstAttr))
    return false;
  int64_t axis = op.getScatterAxis().getSExtValue();
  return axis >= 0 && axis < input.getRank() &&
         llvm::all_of(input.getShape().take_front(axis), [](int64_t d) { return d == 1; }) &&
         input.getNumElements() == ranks * result.getNumElements();
}

struct ReduceScatterSlabsPass
    : weft::impl::ReduceScatterSlabsPassBase<ReduceScatterSlabsPass> {
  void runOnOperation() override {
    SmallVector<shard::ReduceScatterOp> scatters;
    getOperation().walk([&](shard::ReduceScatterOp op) { scatters.push_back(op); });
    for (shard::ReduceScatterOp op : scatters) {
      int64_t ranks = groupSize(op);
      if (!rewritable(op, ranks))
        continue;
      auto result = cast<RankedTensorType>(op.getResult().getType());
      Type element = result.getElementType();
      int64_t block = result.getNumElements();
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto slabs = RankedTensorType::get({ranks, block}, element);
      Value flat = ReshapeOp::create(b, loc, slabs, op.getInput());
      Value moved = shard::AllToAllOp::create(b, loc, slabs, op.getGridAttr(),
                                              op.getGridAxesAttr(), flat,
                                              b.getIndexAttr(0), b.getIndexAttr(0));
      Value sum = ReduceSumOp::create(b, loc, RankedTensorType::get({block}, element), moved,
                                      b.getDenseI64ArrayAttr({0}), false);
      Value out = ReshapeOp::create(b, loc, result, sum);
      // The new ops keep the scatter's layer (remat and the report group by it).
      if (Attribute layer = op->getAttr(WeftDialect::kLayerAttr))
        for (Value v : {flat, moved, sum, out})
          v.getDefiningOp()->setAttr(WeftDialect::kLayerAttr, layer);
      op.getResult().replaceAllUsesWith(out);
      op.erase();
    }
  }
};

} // namespace
