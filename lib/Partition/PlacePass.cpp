// weft-place: Megatron-LM's placements for a training step, written as
// shard.shard annotations of its arguments over a new shard.grid.
#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"
#include "weft/Partition/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

namespace weft {
#define GEN_PASS_DEF_PLACEPASS
#include "weft/Partition/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::partition;

namespace {

/// The argument `value` reads: through converts, and from a carried copy to
/// its master. Null when it is not an argument.
BlockArgument masterOf(Value value, func::FuncOp func) {
  while (auto convert = value.getDefiningOp<ConvertOp>())
    value = convert.getX();
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner()->getParentOp() != func)
    return nullptr;
  if (auto copy = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                     WeftDialect::kCopyOfAttr))
    return func.getArgument(copy.getInt());
  return arg;
}

class Placer {
public:
  Placer(func::FuncOp func, const GridSpec &grid) : func(func), grid(grid) {}

  LogicalResult run();

private:
  LogicalResult place(BlockArgument arg, int64_t dim, Operation *why, StringRef role);
  int64_t parts() const { return grid.tensorParallelSize(); }
  std::string gridText() const { return grid.str(); }

  func::FuncOp func;
  const GridSpec &grid;
  llvm::DenseMap<BlockArgument, int64_t> splitDims;
  /// Computed column-parallel weights and biases, split along dimension 0.
  SmallVector<Value> gathered;

public:
  bool sequenceParallel = false;
};

LogicalResult Placer::place(BlockArgument arg, int64_t dim, Operation *why,
                            StringRef role) {
  auto type = cast<RankedTensorType>(arg.getType());
  int64_t size = type.getDimSize(dim);
  if (size % parts() != 0)
    return why->emitOpError("cannot be ")
           << role << ": its argument #" << arg.getArgNumber() << " ("
           << arg.getType() << ") has dimension " << dim << " of size " << size
           << ", not divisible by tp=" << parts() << " (grid " << gridText() << ")";
  auto [it, inserted] = splitDims.try_emplace(arg, dim);
  if (!inserted && it->second != dim)
    return why->emitOpError("needs argument #")
           << arg.getArgNumber() << " split along dimension " << dim
           << ", which another use splits along dimension " << it->second;
  return success();
}

LogicalResult Placer::run() {
  // Values computed from a column-parallel GEMM's output (split heads or
  // hidden units) until a row-parallel GEMM sums them.
  llvm::DenseSet<Value> split;
  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      int64_t headDim = attention.getSeqMajor() ? 2 : 1;
      int64_t qHeads = attention.getQ().getType().getDimSize(headDim);
      int64_t kvHeads = attention.getK().getType().getDimSize(headDim);
      if (qHeads % parts() != 0 || kvHeads % parts() != 0)
        return attention.emitOpError("has ")
               << qHeads << " query heads and " << kvHeads
               << " kv heads; tp=" << parts() << " (grid " << gridText()
               << ") must divide both (weft-expand-kv-heads replicates kv heads "
               << "that tp exceeds; weft-compile --grid runs it)";
    }
    if (auto linear = dyn_cast<LinearOp>(op)) {
      bool rowParallel = split.contains(linear.getX());
      BlockArgument weight = masterOf(linear.getW(), func);
      if (!weight && !rowParallel) {
        // A computed weight (an expanded QKV): each rank takes its rows.
        gathered.push_back(linear.getW());
        if (linear.getBias())
          gathered.push_back(linear.getBias());
      }
      if (weight && failed(place(weight, rowParallel ? 1 : 0, op,
                                 rowParallel ? "row-parallel" : "column-parallel")))
        return WalkResult::interrupt();
      if (!rowParallel) {
        if (linear.getBias())
          if (BlockArgument bias = masterOf(linear.getBias(), func))
            if (failed(place(bias, 0, op, "column-parallel")))
              return WalkResult::interrupt();
        split.insert(linear.getY());
      }
      return WalkResult::advance();
    }
    if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      // A token embedding (ids from the batch); a row gather of constant
      // ids (weft-expand-kv-heads' expanded QKV weight) leaves its table whole.
      if (isa<BlockArgument>(embedding.getIds()))
        if (BlockArgument table = masterOf(embedding.getTable(), func))
          if (failed(place(table, 0, op, "vocabulary-parallel")))
            return WalkResult::interrupt();
      return WalkResult::advance();
    }
    if (llvm::any_of(op->getOperands(), [&](Value v) { return split.contains(v); }))
      for (Value result : op->getResults())
        split.insert(result);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // The AdamW moments and split low halves follow their master.
  func.walk([&](AdamWOp adamw) {
    BlockArgument master = masterOf(adamw.getParam(), func);
    auto it = master ? splitDims.find(master) : splitDims.end();
    if (it == splitDims.end())
      return;
    int64_t dim = it->second;
    for (Value state : {adamw.getM(), adamw.getV(), adamw.getParamLow()})
      if (auto arg = dyn_cast_or_null<BlockArgument>(state))
        splitDims[arg] = dim;
  });
  // Carried copies follow their master.
  for (BlockArgument arg : func.getArguments())
    if (auto copy = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                       WeftDialect::kCopyOfAttr)) {
      auto it = splitDims.find(func.getArgument(copy.getInt()));
      if (it != splitDims.end())
        splitDims[arg] = it->second;
    }
  // Sequence parallelism: hidden states [batch, seq, hidden] split along seq.
  if (sequenceParallel)
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      unsigned i = arg.getArgNumber();
      if (!type || type.getRank() != 3 || !isa<FloatType>(type.getElementType()) ||
          func.getArgAttr(i, WeftDialect::kParamAttr) ||
          func.getArgAttr(i, WeftDialect::kCopyOfAttr) || splitDims.count(arg))
        continue;
      if (type.getDimSize(1) % parts() != 0)
        return func.emitOpError("argument #")
               << i << " (" << type << "): sequence length " << type.getDimSize(1)
               << " is not divisible by tp=" << parts() << " (grid " << gridText()
               << ") for sequence parallelism";
      splitDims[arg] = 1;
    }

  // Annotate.
  OpBuilder builder = OpBuilder::atBlockBegin(&func.getBody().front());
  MLIRContext *context = func.getContext();
  auto gridSymbol = FlatSymbolRefAttr::get(context, "grid");
  GridContext tpGrid{gridSymbol, grid.shape, int16_t(grid.tpAxis)};
  for (Value value : gathered) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getDimSize(0) % parts() != 0)
      return value.getDefiningOp()->emitOpError("cannot be split for column "
                                                "parallelism: dimension 0 of ")
             << type << " is not divisible by tp=" << parts() << " (grid "
             << gridText() << ")";
    OpBuilder after(value.getContext());
    after.setInsertionPointAfterValue(value);
    shard::Sharding sharding = toSharding(tpGrid, Placement::split(0), type.getRank());
    auto shardingOp = shard::ShardingOp::create(after, value.getLoc(), gridSymbol,
                                                sharding.getSplitAxes());
    auto annotated = shard::ShardOp::create(after, value.getLoc(), value,
                                            shardingOp.getResult(), UnitAttr::get(context));
    value.replaceAllUsesExcept(annotated.getResult(), annotated);
  }
  for (BlockArgument arg : func.getArguments()) {
    auto it = splitDims.find(arg);
    if (it == splitDims.end())
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    GridContext gridContext{gridSymbol, grid.shape, int16_t(grid.tpAxis)};
    shard::Sharding sharding =
        toSharding(gridContext, Placement::split(it->second), type.getRank());
    auto shardingOp = shard::ShardingOp::create(builder, arg.getLoc(), gridSymbol,
                                                sharding.getSplitAxes());
    auto annotated = shard::ShardOp::create(builder, arg.getLoc(), arg,
                                            shardingOp.getResult(), UnitAttr());
    arg.replaceAllUsesExcept(annotated.getResult(), annotated);
  }
  return success();
}

struct PlacePass : public weft::impl::PlacePassBase<PlacePass> {
  using PlacePassBase::PlacePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    std::optional<GridSpec> spec = parseGridSpec(gridSpec, error);
    if (!spec) {
      module.emitError("weft-place: ") << error;
      return signalPassFailure();
    }
    if (SymbolTable::lookupSymbolIn(module, "grid")) {
      module.emitError("weft-place: the module already has a symbol @grid");
      return signalPassFailure();
    }
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    auto gridOp = shard::GridOp::create(builder, module.getLoc(), "grid", spec->shape);
    SmallVector<Attribute> names;
    for (const std::string &name : spec->names)
      names.push_back(builder.getStringAttr(name));
    gridOp->setAttr(WeftDialect::kAxisNamesAttr, builder.getArrayAttr(names));
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      bool hasParams = llvm::any_of(func.getArguments(), [&](BlockArgument arg) {
        return func.getArgAttr(arg.getArgNumber(), WeftDialect::kParamAttr);
      });
      if (funcName.empty() ? !hasParams : func.getSymName() != funcName)
        continue;
      Placer placer(func, *spec);
      placer.sequenceParallel = sequenceParallel;
      if (failed(placer.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
