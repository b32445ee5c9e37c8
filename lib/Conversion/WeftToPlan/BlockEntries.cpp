// Copies in a plan: shard.all_slice, the rank's block of a replicated
// tensor, by a kernel (ElementwiseToNVVM's BlockKernels) whose first index
// along the slice axis is a rank-relative immediate; and a constant other
// than a float splat, whose bytes the kernel image holds (ConstantKernels).
#include "RankIndex.h"
#include "ScheduleBuilder.h"

#include "weft/Conversion/ElementwiseKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace weft {

LogicalResult ScheduleBuilder::addAllSlice(Operation *op, int64_t index) {
  auto slice = cast<shard::AllSliceOp>(op);
  ArrayRef<int16_t> axes = slice.getGridAxes();
  if (axes.empty() || !llvm::is_sorted(axes) ||
      std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return op->emitError("cannot plan shard.all_slice over grid axes [")
           << llvm::make_range(axes.begin(), axes.end())
           << "]: a rank's block is its position along increasing axes";
  FailureOr<FlatSymbolRefAttr> x = bufferOf(op, slice.getInput());
  FailureOr<FlatSymbolRefAttr> y = bufferOf(op, slice.getResult());
  if (failed(x) || failed(y))
    return failure();
  int64_t axis = int64_t(slice.getSliceAxis().getZExtValue());
  RankIndex first{0, cast<ShapedType>(slice.getResult().getType()).getDimSize(axis), {}};
  for (int16_t a : axes)
    first.axes.push_back(a);
  std::string name = llvm::formatv("weft_all_slice_{0}", index).str();
  std::string reason;
  FailureOr<SmallVector<gpu::ElementwiseLaunch>> launches =
      gpu::planElementwiseKernels(op, name, reason);
  if (failed(launches))
    return op->emitError("cannot plan shard.all_slice: ") << reason;
  if (images.insert(name).second)
    elementwiseImages.push_back({name, op});
  SmallVector<Attribute> args{*x, rankIndexArg(builder, first), *y};
  for (const gpu::ElementwiseLaunch &kernel : *launches) {
    declareKernel(kernel.kernel, name, {"ptr", "i64", "ptr"});
    launch(op->getLoc(), kernel.kernel, args, {kernel.gridX, 1, 1}, kernel.threads,
           /*smem=*/0, index);
  }
  return success();
}

LogicalResult ScheduleBuilder::addDenseConstant(Operation *op, int64_t index) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !isa<DenseElementsAttr>(cast<arith::ConstantOp>(op).getValue()))
    return op->emitError("cannot plan arith.constant of ")
           << op->getResult(0).getType() << ": a kernel writes dense tensor constants only";
  FailureOr<FlatSymbolRefAttr> buffer = bufferOf(op, op->getResult(0));
  if (failed(buffer))
    return failure();
  std::string name = llvm::formatv("weft_constant_{0}", index).str();
  std::string reason;
  FailureOr<SmallVector<gpu::ElementwiseLaunch>> launches =
      gpu::planElementwiseKernels(op, name, reason);
  if (failed(launches))
    return op->emitError("cannot plan arith.constant of ") << type << ": " << reason;
  if (images.insert(name).second)
    elementwiseImages.push_back({name, op});
  for (const gpu::ElementwiseLaunch &kernel : *launches) {
    declareKernel(kernel.kernel, name, {"ptr"});
    launch(op->getLoc(), kernel.kernel, {*buffer}, {kernel.gridX, 1, 1}, kernel.threads,
           /*smem=*/0, index);
  }
  return success();
}

} // namespace weft
