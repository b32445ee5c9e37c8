// Bus bytes and time of the shard collectives, and the roofline time of the
// compute they are weighed against (LinkModel.h).
#include "weft/Analysis/LinkModel.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace weft {

namespace {

double tensorBytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return 0.0;
  return double(type.getNumElements()) *
         double(std::max<int64_t>(1, type.getElementTypeBitWidth() / 8));
}

/// Ring algorithms: how many times `whole` bytes cross each GPU's link.
template <typename CollectiveOp>
double ringBytes(CollectiveOp op, SymbolTableCollection &symbols, double whole) {
  int64_t peers = 1;
  if (shard::GridOp grid = shard::getGridOrNull(op, op.getGridAttr(), symbols))
    peers = shard::collectiveProcessGroupSize(op.getGridAxes(), grid);
  if (peers <= 1 || ShapedType::isDynamic(peers))
    return 0.0;
  return whole * double(peers - 1) / double(peers);
}

} // namespace

double getComputeSeconds(Operation *op, const ComputeModel &model) {
  auto cost = dyn_cast<CostOpInterface>(op);
  return cost ? cost.getRooflineSeconds(model.flopsPerSecond, model.bytesPerSecond) : 0.0;
}

bool isCommunicating(Operation *op) {
  return isa<shard::AllGatherOp, shard::ReduceScatterOp, shard::AllReduceOp,
             shard::AllToAllOp, shard::BroadcastOp, shard::GatherOp,
             shard::ReduceOp, shard::ScatterOp, shard::SendOp, shard::RecvOp,
             shard::ShiftOp>(op);
}

double getCollectiveBusBytes(Operation *op, SymbolTableCollection &symbols) {
  if (auto gather = dyn_cast<shard::AllGatherOp>(op))
    return ringBytes(gather, symbols, tensorBytes(gather.getResult()));
  if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op))
    return ringBytes(scatter, symbols, tensorBytes(scatter.getInput()));
  if (auto reduce = dyn_cast<shard::AllReduceOp>(op))
    return ringBytes(reduce, symbols, 2.0 * tensorBytes(reduce.getInput()));
  if (auto allToAll = dyn_cast<shard::AllToAllOp>(op))
    return ringBytes(allToAll, symbols, tensorBytes(allToAll.getInput()));
  if (!isCommunicating(op))
    return 0.0;
  double total = 0.0;
  for (Value operand : op->getOperands())
    total += tensorBytes(operand);
  return total;
}

double getCollectiveSeconds(Operation *op, SymbolTableCollection &symbols,
                            const LinkModel &link) {
  double bytes = getCollectiveBusBytes(op, symbols);
  if (bytes <= 0.0)
    return 0.0;
  return bytes / link.busBytesPerSecond + link.latencySeconds;
}

} // namespace weft
