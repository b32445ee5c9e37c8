// The partitioner: placements propagate through the step in program order.
// For each op, the loop its ShardingInterface nest splits is the candidate
// (from the operands' split dimensions and the placements its results are
// wanted in) that moves the fewest bytes: resharding operands (an all-gather
// costs the tensor, a slice of a replicated tensor nothing, gathering a
// parameter is never worth it) and resolving partial sums. A partial result
// is resolved right after its op: an all-reduce, or under sequence
// parallelism a reduce-scatter along the sequence for [batch, seq, ...]
// activations. Reshards are emitted once per value and placement in the
// forward and again in the backward (Megatron re-gathers sequence shards for
// the weight gradients rather than keeping the gathered tensor alive).
#include "Partitioner.h"

#include "Reshard.h"

#include "weft/Analysis/LinkModel.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using shard::Sharding;

namespace weft::partition {

namespace {

int64_t bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return 0;
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// The loops of a dimension expression with their coefficients.
void collectTerms(AffineExpr expr, int64_t scale,
                  SmallVectorImpl<std::pair<unsigned, int64_t>> &terms) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    terms.push_back({dim.getPosition(), scale});
    return;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return;
  if (expr.getKind() == AffineExprKind::Add) {
    collectTerms(binary.getLHS(), scale, terms);
    collectTerms(binary.getRHS(), scale, terms);
  } else if (expr.getKind() == AffineExprKind::Mul) {
    if (auto constant = dyn_cast<AffineConstantExpr>(binary.getRHS()))
      collectTerms(binary.getLHS(), scale * constant.getValue(), terms);
    else if (auto constant = dyn_cast<AffineConstantExpr>(binary.getLHS()))
      collectTerms(binary.getRHS(), scale * constant.getValue(), terms);
  }
}

/// Whether `op`'s formula is a signed sum of its operands (add, sub, neg):
/// then partial sums pass through it (sum of the ranks' results = the op of
/// the summed operands) and their resolution can wait.
bool isSumOfOperands(Operation *op) {
  auto pointwise = dyn_cast<ScalarFormulaOpInterface>(op);
  if (!pointwise)
    return false;
  ScalarFormula formula;
  formula.setResult(pointwise.buildFormula(formula));
  return llvm::all_of(formula.getInstructions(), [](const ScalarInstruction &i) {
    return i.primitive == ScalarPrimitive::Operand || i.primitive == ScalarPrimitive::Add ||
           i.primitive == ScalarPrimitive::Sub || i.primitive == ScalarPrimitive::Neg;
  });
}

/// An op's nest as the partitioner reads it.
struct Nest {
  SmallVector<utils::IteratorType> iterators;
  SmallVector<shard::ReductionKind> kinds; // per loop
  SmallVector<AffineMap> maps;
  SmallVector<int64_t> extents; // per loop, -1 when unknown

  /// The outermost loop (largest coefficient) of dimension `dim` of map `m`
  /// among loops of extent > 1, or -1.
  int64_t leadLoop(unsigned m, unsigned dim) const {
    SmallVector<std::pair<unsigned, int64_t>> terms;
    collectTerms(maps[m].getResult(dim), 1, terms);
    int64_t lead = -1, best = 0;
    for (auto [loop, coefficient] : terms)
      if (extents[loop] != 1 && coefficient > best) {
        best = coefficient;
        lead = loop;
      }
    return lead;
  }
  bool mentions(unsigned m, unsigned dim, unsigned loop) const {
    return maps[m].getResult(dim).isFunctionOfDim(loop);
  }
};

/// The collectives (and views) emitted for `op` (after `before`) carry its weft.layer,
/// so reports can count communication per layer.
void tagCollectives(Operation *op, Operation *before, Block &block) {
  Attribute layer = op->getAttr(WeftDialect::kLayerAttr);
  if (!layer)
    return;
  auto it = before ? std::next(before->getIterator()) : block.begin();
  // Collectives and the views of gathered tensors the resharder made.
  for (; it != block.end(); ++it)
    if (!it->hasAttr(WeftDialect::kLayerAttr) && it->getNumResults() > 0)
      it->setAttr(WeftDialect::kLayerAttr, layer);
}

std::optional<Nest> nestOf(shard::ShardingInterface op) {
  Nest nest;
  nest.iterators = op.getLoopIteratorTypes();
  nest.maps = op.getIndexingMaps();
  Operation *raw = op.getOperation();
  if (nest.maps.size() != raw->getNumOperands() + raw->getNumResults())
    return std::nullopt;
  SmallVector<shard::ReductionKind> reductions = op.getReductionLoopIteratorKinds();
  unsigned next = 0;
  for (utils::IteratorType type : nest.iterators)
    nest.kinds.push_back(type == utils::IteratorType::reduction
                             ? reductions[next++]
                             : shard::ReductionKind::Sum);
  nest.extents.assign(nest.iterators.size(), -1);
  SmallVector<Value> values(raw->getOperands());
  values.append(raw->result_begin(), raw->result_end());
  for (auto [map, value] : llvm::zip(nest.maps, values)) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || map.getNumResults() != type.getRank())
      continue;
    for (auto [dim, expr] : llvm::enumerate(map.getResults()))
      if (auto loop = dyn_cast<AffineDimExpr>(expr))
        nest.extents[loop.getPosition()] = type.getDimSize(dim);
  }
  return nest;
}

class Partitioner {
public:
  Partitioner(func::FuncOp func, const GridContext &grid,
              const PartitionOptions &options)
      : func(func), grid(grid), options(options), reshard(grid) {}

  LogicalResult run();

private:
  LogicalResult readArguments(Block &entry, Block &local);
  void computeWanted(Block &entry);
  LogicalResult partitionOp(Operation *op, OpBuilder &builder);
  LogicalResult replicateOp(Operation *op, OpBuilder &builder);
  LogicalResult emitReturn(func::ReturnOp ret, OpBuilder &builder);
  FailureOr<Value> operandIn(Value global, const Placement &target,
                             OpBuilder &builder, Location loc);
  void resolvePartial(Value global, OpBuilder &builder, bool force = false);
  LogicalResult partitionPartialSum(Operation *op, OpBuilder &builder);
  bool isTokenActivation(Value value) const;
  Placement partialTarget(Value global) const;
  bool isBatchInput(BlockArgument arg);
  bool canDefer(Operation *op) const;
  FailureOr<Value> materialize(Value global, const Placement &target,
                               OpBuilder &builder);
  std::optional<Placement> annotationOf(Value sharding) const;
  double reshardCost(Value global, const Placement &from, const Placement &to) const;

  func::FuncOp func;
  GridContext grid;
  PartitionOptions options;
  Resharder reshard;
  LinkModel link;
  llvm::DenseMap<Value, Value> local;
  llvm::DenseMap<Value, Placement> placement;
  llvm::DenseMap<Value, Placement> wanted;
  llvm::DenseSet<Value> parameters;
  /// Values built where they are used (canDefer), and those built so far by
  /// value and split dimension (-1: whole).
  llvm::DenseSet<Value> deferred;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> materialized;
  /// Ops after this one are the backward (reshards are not shared across).
  Operation *lossOp = nullptr;
  bool inBackward = false;
  SmallVector<int64_t, 2> tokenShape;
  SmallVector<Placement> argumentPlacements, resultPlacements;
};

std::optional<Placement> Partitioner::annotationOf(Value shardingValue) const {
  Sharding sharding(shardingValue);
  std::optional<int64_t> dim;
  for (auto [d, axes] : llvm::enumerate(sharding.getSplitAxes())) {
    if (axes.empty())
      continue;
    if (dim || axes.size() != 1 || axes.asArrayRef()[0] != grid.axis)
      return std::nullopt;
    dim = d;
  }
  return Placement{dim, false};
}

LogicalResult Partitioner::readArguments(Block &entry, Block &localBlock) {
  for (BlockArgument arg : entry.getArguments()) {
    Placement argPlacement;
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    for (Operation *user : arg.getUsers()) {
      auto annotation = dyn_cast<shard::ShardOp>(user);
      if (!annotation || annotation.getAnnotateForUsers())
        continue;
      std::optional<Placement> read = annotationOf(annotation.getSharding());
      if (!read)
        return annotation.emitOpError("splits argument #")
               << arg.getArgNumber() << " along a grid axis other than the "
               << "tensor-parallel one (axis " << grid.axis
               << "), or along several; Weft splits one dimension along it";
      argPlacement = *read;
    }
    if (argPlacement.splitDim) {
      int64_t size = type.getDimSize(*argPlacement.splitDim);
      if (size % grid.size() != 0)
        return func.emitOpError("argument #")
               << arg.getArgNumber() << " (" << arg.getType() << ") dimension "
               << *argPlacement.splitDim << " of size " << size
               << " is not divisible by the grid axis " << grid.axis << " of size "
               << grid.size() << " (grid " << grid.grid << ")";
    }
    Type localTypeOf = type ? Type(localType(type, argPlacement, grid.size()))
                            : arg.getType();
    BlockArgument newArg = localBlock.addArgument(localTypeOf, arg.getLoc());
    local[arg] = newArg;
    placement[arg] = argPlacement;
    argumentPlacements.push_back(argPlacement);
    if (func.getArgAttr(arg.getArgNumber(), WeftDialect::kParamAttr))
      parameters.insert(arg);
    if (tokenShape.empty() && type && type.getRank() >= 2 && isBatchInput(arg))
      tokenShape.assign({type.getDimSize(0), type.getDimSize(1)});
  }
  return success();
}

/// A batch input (token ids, labels, hidden states): not a parameter, a
/// carried copy, or step state that a result updates in place (weft.alias:
/// the AdamW moments).
bool Partitioner::isBatchInput(BlockArgument arg) {
  unsigned i = arg.getArgNumber();
  if (func.getArgAttr(i, WeftDialect::kParamAttr) ||
      func.getArgAttr(i, WeftDialect::kCopyOfAttr))
    return false;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (auto alias = func.getResultAttrOfType<IntegerAttr>(r, WeftDialect::kAliasAttr);
        alias && alias.getInt() == int64_t(i))
      return false;
  return true;
}

/// The placement each value is wanted in by its users, from the results
/// back (an AdamW update wants its gradient split like its parameter), so a
/// gradient op can produce its result split rather than slice it later.
void Partitioner::computeWanted(Block &entry) {
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (auto alias = func.getResultAttrOfType<IntegerAttr>(i, WeftDialect::kAliasAttr))
      wanted[value] = argumentPlacements[alias.getInt()];
    else if (auto grad = func.getResultAttrOfType<IntegerAttr>(i, WeftDialect::kGradOfAttr))
      wanted[value] = argumentPlacements[grad.getInt()];
  for (Operation &op : llvm::reverse(entry.without_terminator())) {
    // A value annotated for its users is wanted in that placement (an
    // expanded QKV weight: each rank gathers only its rows).
    if (auto annotation = dyn_cast<shard::ShardOp>(&op)) {
      if (annotation.getAnnotateForUsers() && !wanted.count(annotation.getSrc()))
        if (std::optional<Placement> target = annotationOf(annotation.getSharding()))
          if (target->splitDim)
            wanted[annotation.getSrc()] = *target;
      continue;
    }
    auto iface = dyn_cast<shard::ShardingInterface>(&op);
    if (!iface)
      continue;
    std::optional<Nest> nest = nestOf(iface);
    if (!nest)
      continue;
    unsigned operands = op.getNumOperands();
    for (auto [r, result] : llvm::enumerate(op.getResults())) {
      auto it = wanted.find(result);
      if (it == wanted.end() || !it->second.splitDim)
        continue;
      int64_t loop = nest->leadLoop(operands + r, *it->second.splitDim);
      if (loop < 0)
        continue;
      for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
        auto type = dyn_cast<RankedTensorType>(operand.getType());
        if (!type || wanted.count(operand) || isa<BlockArgument>(operand))
          continue;
        for (unsigned d = 0; d < nest->maps[i].getNumResults(); ++d)
          if (nest->leadLoop(i, d) == loop)
            wanted[operand] = Placement::split(d);
      }
    }
  }
}

/// Seconds of moving `global` from one placement to another under the link
/// model: nothing for the same placement or a slice of a replicated tensor,
/// an all-gather's (or reduce-scatter's) (n-1)/n of the tensor, an
/// all-reduce's twice that.
double Partitioner::reshardCost(Value global, const Placement &from,
                                const Placement &to) const {
  if (from == to || (!from.splitDim && !from.partial && to.splitDim))
    return 0;
  double parts = double(grid.size());
  double busBytes = double(bytesOf(global)) * (parts - 1) / parts;
  if (from.partial && !to.splitDim)
    busBytes *= 2;
  double seconds = busBytes / link.busBytesPerSecond + link.latencySeconds;
  // Megatron keeps weights split: gathering a parameter (or its converted
  // copy) is never the plan.
  if (parameters.count(global))
    seconds *= 1e6;
  return seconds;
}

/// Seconds of `op` on one rank: its roofline time, split `parts` ways when
/// its loop is.
static double computeSeconds(Operation *op, double parts) {
  return getComputeSeconds(op) / parts;
}

/// Where a partial sum goes: a sequence shard under sequence parallelism
/// (reduce-scatter) for [batch, seq, ...] activations, else every rank
/// (all-reduce).
Placement Partitioner::partialTarget(Value global) const {
  if (options.sequenceParallel && isTokenActivation(global) &&
      tokenShape[1] % grid.size() == 0)
    return Placement::split(1);
  return Placement::replicated();
}

bool Partitioner::isTokenActivation(Value value) const {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && !tokenShape.empty() && type.getRank() >= 3 &&
         type.getDimSize(0) == tokenShape[0] && type.getDimSize(1) == tokenShape[1];
}

FailureOr<Value> Partitioner::operandIn(Value global, const Placement &target,
                                        OpBuilder &builder, Location loc) {
  if (deferred.contains(global))
    return materialize(global, target, builder);
  auto it = local.find(global);
  if (it == local.end())
    return emitError(loc, "partitioning has no value for an operand");
  return reshard.to(global, it->second, placement.lookup(global), target,
                    inBackward, builder, loc);
}

/// Whether `op` can wait for its users: a splat constant, or a weft op of
/// one result whose operands all wait (a loss gradient's broadcast ones).
/// Such values are built where they are used, in the placement used, so a
/// split user gets a small constant rather than a slice of a whole one.
bool Partitioner::canDefer(Operation *op) const {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return false;
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return isa<SplatElementsAttr>(constant.getValue()) &&
           isa<RankedTensorType>(constant.getType());
  return isa<shard::ShardingInterface>(op) && op->getNumOperands() > 0 &&
         llvm::all_of(op->getOperands(),
                      [&](Value operand) { return deferred.contains(operand); });
}

FailureOr<Value> Partitioner::materialize(Value global, const Placement &target,
                                          OpBuilder &builder) {
  auto key = std::make_pair(global, target.splitDim ? *target.splitDim : -1);
  if (Value built = materialized.lookup(key))
    return built;
  Operation *op = global.getDefiningOp();
  auto type = cast<RankedTensorType>(global.getType());
  Value result;
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    RankedTensorType localTypeOf = localType(type, target, grid.size());
    result = arith::ConstantOp::create(
        builder, op->getLoc(), localTypeOf,
        cast<SplatElementsAttr>(constant.getValue()).resizeSplat(localTypeOf));
  } else {
    auto iface = cast<shard::ShardingInterface>(op);
    std::optional<Nest> nest = nestOf(iface);
    unsigned resultIndex = op->getNumOperands();
    int64_t loop = -1;
    if (target.splitDim && nest) {
      loop = nest->leadLoop(resultIndex, *target.splitDim);
      if (loop >= 0 && (nest->iterators[loop] != utils::IteratorType::parallel ||
                        nest->extents[loop] <= 0 ||
                        nest->extents[loop] % grid.size() != 0))
        loop = -1;
    }
    SmallVector<Value> operands;
    std::vector<Sharding> operandShardings;
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      Placement need;
      auto operandType = dyn_cast<RankedTensorType>(operand.getType());
      if (loop >= 0 && operandType && nest->maps[i].getNumResults() == operandType.getRank())
        for (unsigned d = 0; d < nest->maps[i].getNumResults(); ++d)
          if (nest->leadLoop(i, d) == loop)
            need.splitDim = d;
      FailureOr<Value> value = operandIn(operand, need, builder, op->getLoc());
      if (failed(value))
        return failure();
      operands.push_back(*value);
      operandShardings.push_back(operandType ? toSharding(grid, need, operandType.getRank())
                                             : Sharding());
    }
    Placement built = loop >= 0 ? target : Placement::replicated();
    std::vector<Sharding> resultShardings{toSharding(grid, built, type.getRank())};
    IRMapping mapping;
    SymbolTableCollection symbols;
    if (failed(iface.partition(operands, operandShardings, resultShardings, mapping,
                               symbols, builder)))
      return failure();
    result = mapping.lookup(global);
    if (built != target)
      result = reshard.to(global, result, built, target, inBackward, builder,
                          op->getLoc());
  }
  materialized[key] = result;
  return result;
}

void Partitioner::resolvePartial(Value global, OpBuilder &builder, bool force) {
  // Partial sums that only feed signed sums stay partial: the sum of two
  // row-parallel outputs (SwiGLU's gate and up gradients) needs one
  // all-reduce, not two.
  if (!force && !global.use_empty() && !placement.lookup(global).average &&
      llvm::all_of(global.getUsers(), [](Operation *user) { return isSumOfOperands(user); }))
    return;
  Location loc = global.getLoc();
  Placement target = partialTarget(global);
  Placement from = placement.lookup(global);
  local[global] = reshard.to(global, local[global], from, target, inBackward,
                             builder, loc);
  placement[global] = target;
}

LogicalResult Partitioner::replicateOp(Operation *op, OpBuilder &builder) {
  for (Value operand : op->getOperands())
    if (placement.lookup(operand).partial)
      resolvePartial(operand, builder, /*force=*/true);
  IRMapping mapping;
  for (Value operand : op->getOperands()) {
    auto value = operandIn(operand, Placement::replicated(), builder, op->getLoc());
    if (failed(value))
      return failure();
    mapping.map(operand, *value);
  }
  Operation *clone = builder.clone(*op, mapping);
  for (auto [global, result] : llvm::zip(op->getResults(), clone->getResults())) {
    local[global] = result;
    placement[global] = Placement::replicated();
  }
  return success();
}

LogicalResult Partitioner::partitionOp(Operation *op, OpBuilder &builder) {
  if (canDefer(op)) {
    deferred.insert(op->getResult(0));
    placement[op->getResult(0)] = Placement::replicated();
    return success();
  }
  auto iface = dyn_cast<shard::ShardingInterface>(op);
  if (!iface) {
    if (isa<WeftDialect>(op->getDialect()))
      return op->emitOpError("has no sharding model: partition the step before ")
             << "fusion, or give the op a ShardingInterface model";
    return replicateOp(op, builder);
  }
  // Signed sums of partial sums (not averages) stay partial.
  auto isPending = [&](Value operand) {
    Placement p = placement.lookup(operand);
    return p.partial && !p.average;
  };
  if (isSumOfOperands(op) && llvm::all_of(op->getOperands(), isPending))
    return partitionPartialSum(op, builder);
  for (Value operand : op->getOperands())
    if (placement.lookup(operand).partial)
      resolvePartial(operand, builder, /*force=*/true);
  std::optional<Nest> nest = nestOf(iface);
  if (!nest || nest->iterators.empty())
    return replicateOp(op, builder);
  unsigned operandCount = op->getNumOperands();
  auto mapOf = [&](Value value, unsigned index) -> int64_t {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    return type && nest->maps[index].getNumResults() == type.getRank() ? index : -1;
  };

  // Candidate loops, each evaluated by the bytes it moves.
  SmallVector<int64_t> candidates{-1};
  auto addCandidate = [&](unsigned index, std::optional<int64_t> dim) {
    if (!dim)
      return;
    int64_t loop = nest->leadLoop(index, *dim);
    if (loop >= 0 && !llvm::is_contained(candidates, loop))
      candidates.push_back(loop);
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (mapOf(operand, i) >= 0)
      addCandidate(i, placement.lookup(operand).splitDim);
  for (auto [r, result] : llvm::enumerate(op->getResults()))
    if (mapOf(result, operandCount + r) >= 0 && wanted.count(result))
      addCandidate(operandCount + r, wanted.lookup(result).splitDim);

  // The placement of value `index` (operand or result) when `loop` is split;
  // nullopt when the split would not be a contiguous block of a dimension.
  auto placementUnder = [&](unsigned index, Value value,
                            int64_t loop) -> std::optional<Placement> {
    if (loop < 0 || mapOf(value, index) < 0)
      return Placement::replicated();
    Placement result;
    for (unsigned d = 0; d < nest->maps[index].getNumResults(); ++d) {
      if (!nest->mentions(index, d, loop))
        continue;
      if (nest->leadLoop(index, d) != loop)
        return std::nullopt;
      result.splitDim = d;
    }
    return result;
  };

  double bestCost = INFINITY;
  SmallVector<Placement> bestOperands, bestResults;
  SmallVector<bool> bestPartial;
  Placement bestPartialKind = Placement::partialSum();
  for (int64_t loop : candidates) {
    if (loop >= 0 && (nest->kinds[loop] == shard::ReductionKind::Generic &&
                          nest->iterators[loop] == utils::IteratorType::reduction ||
                      nest->extents[loop] <= 0 ||
                      nest->extents[loop] % grid.size() != 0))
      continue;
    bool sums = loop >= 0 && nest->iterators[loop] == utils::IteratorType::reduction;
    Placement partialKind = loop >= 0 && nest->kinds[loop] == shard::ReductionKind::Average
                                ? Placement::partialAverage()
                                : Placement::partialSum();
    double cost = 0;
    SmallVector<Placement> operandPlacements, resultPlacements;
    SmallVector<bool> partial;
    bool valid = true;
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      std::optional<Placement> need = placementUnder(i, operand, loop);
      if (!need) {
        valid = false;
        break;
      }
      operandPlacements.push_back(*need);
      cost += reshardCost(operand, placement.lookup(operand), *need);
    }
    for (auto [r, result] : llvm::enumerate(op->getResults())) {
      if (!valid)
        break;
      std::optional<Placement> has = placementUnder(operandCount + r, result, loop);
      if (!has) {
        valid = false;
        break;
      }
      bool isPartial = sums && !has->splitDim && mapOf(result, operandCount + r) >= 0;
      resultPlacements.push_back(*has);
      partial.push_back(isPartial);
      if (isPartial)
        cost += reshardCost(result, partialKind, partialTarget(result));
      // A result wanted elsewhere (a returned parameter's placement) pays
      // its reshard here.
      if (wanted.count(result))
        cost += wanted.lookup(result) == *has
                    ? -1e-12
                    : reshardCost(result, *has, wanted.lookup(result));
    }
    if (!valid)
      continue;
    // The work itself: split, each rank does 1/n of it.
    cost += computeSeconds(op, loop >= 0 ? double(grid.size()) : 1.0);
    // Ties (nothing to move, no cost model): splitting is less work.
    if (loop >= 0)
      cost -= 1e-12;
    if (cost < bestCost) {
      bestCost = cost;
      bestOperands = operandPlacements;
      bestResults = resultPlacements;
      bestPartial = partial;
      bestPartialKind = partialKind;
    }
  }

  SmallVector<Value> operands;
  std::vector<Sharding> operandShardings, resultShardings;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto value = operandIn(operand, bestOperands[i], builder, op->getLoc());
    if (failed(value))
      return failure();
    operands.push_back(*value);
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    operandShardings.push_back(type ? toSharding(grid, bestOperands[i], type.getRank())
                                    : Sharding());
  }
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    resultShardings.push_back(type ? toSharding(grid, bestResults[r], type.getRank())
                                   : Sharding());
  }
  IRMapping mapping;
  SymbolTableCollection symbols;
  if (failed(iface.partition(operands, operandShardings, resultShardings, mapping,
                             symbols, builder)))
    return failure();
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    Value mapped = mapping.lookupOrNull(result);
    if (!mapped)
      return op->emitOpError("partition() did not produce result #") << r;
    local[result] = mapped;
    placement[result] = bestPartial[r] ? bestPartialKind : bestResults[r];
    // A parameter's converted or reshaped copy is a parameter too.
    if (op->getNumOperands() == 1 && parameters.count(op->getOperand(0)))
      parameters.insert(result);
    if (bestPartial[r])
      resolvePartial(result, builder);
  }
  return success();
}

/// A signed sum of partial sums: the same op on each rank's summands.
LogicalResult Partitioner::partitionPartialSum(Operation *op, OpBuilder &builder) {
  IRMapping mapping;
  for (Value operand : op->getOperands())
    mapping.map(operand, local.lookup(operand));
  Operation *clone = builder.clone(*op, mapping);
  for (auto [global, result] : llvm::zip(op->getResults(), clone->getResults())) {
    local[global] = result;
    placement[global] = Placement::partialSum();
    resolvePartial(global, builder);
  }
  return success();
}

LogicalResult Partitioner::emitReturn(func::ReturnOp ret, OpBuilder &builder) {
  SmallVector<Value> results;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    Placement target;
    if (auto alias = func.getResultAttrOfType<IntegerAttr>(i, WeftDialect::kAliasAttr))
      target = argumentPlacements[alias.getInt()];
    if (auto grad = func.getResultAttrOfType<IntegerAttr>(i, WeftDialect::kGradOfAttr))
      target = argumentPlacements[grad.getInt()];
    if (auto annotation = value.getDefiningOp<shard::ShardOp>())
      if (std::optional<Placement> read = annotationOf(annotation.getSharding()))
        target = *read;
    auto localValue = operandIn(value, target, builder, ret.getLoc());
    if (failed(localValue))
      return failure();
    results.push_back(*localValue);
    resultPlacements.push_back(target);
  }
  func::ReturnOp::create(builder, ret.getLoc(), results);
  return success();
}

LogicalResult Partitioner::run() {
  Block &entry = func.getBody().front();
  // The per-rank body is built beside the global one (symbol lookups from
  // its ops need a parent), which is erased at the end.
  auto *localBlock = new Block();
  func.getBody().push_back(localBlock);
  auto dropLocal = [&]() {
    localBlock->dropAllDefinedValueUses();
    localBlock->erase();
    return failure();
  };
  if (failed(readArguments(entry, *localBlock)))
    return dropLocal();
  computeWanted(entry);
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  if (func.getNumResults() > 1 && ret.getNumOperands() > 0)
    if (Operation *def = ret.getOperand(0).getDefiningOp())
      lossOp = def;
  OpBuilder builder = OpBuilder::atBlockEnd(localBlock);
  for (Operation &op : entry.without_terminator()) {
    if (isCommunicating(&op) || isa<shard::AllSliceOp>(op)) {
      op.emitOpError("is a collective in the step to partition: weft-partition "
                     "takes the global (unsharded) step with placements only");
      return dropLocal();
    }
    if (isa<shard::ShardingOp>(op))
      continue;
    if (auto annotation = dyn_cast<shard::ShardOp>(op)) {
      Value source = annotation.getSrc();
      std::optional<Placement> target = annotationOf(annotation.getSharding());
      if (!target)
        return annotation.emitOpError("names a split Weft cannot honour: one "
                                      "dimension along the tensor-parallel axis"),
               dropLocal();
      if (isa<BlockArgument>(source) && !annotation.getAnnotateForUsers()) {
        // Copies first: inserting into a DenseMap may move its entries.
        Value sourceValue = local.lookup(source);
        Placement sourcePlacement = placement.lookup(source);
        local[annotation] = sourceValue;
        placement[annotation] = sourcePlacement;
        if (parameters.count(source))
          parameters.insert(annotation);
        continue;
      }
      auto type = dyn_cast<RankedTensorType>(source.getType());
      if (target->splitDim &&
          (!type || type.getDimSize(*target->splitDim) % grid.size() != 0)) {
        annotation.emitOpError("splits dimension ")
            << *target->splitDim << " of " << source.getType()
            << ", which the grid axis " << grid.axis << " of size " << grid.size()
            << " (grid " << grid.grid << ") does not divide";
        return dropLocal();
      }
      auto value = operandIn(source, *target, builder, annotation.getLoc());
      if (failed(value))
        return dropLocal();
      local[annotation] = *value;
      placement[annotation] = *target;
      continue;
    }
    Operation *before = localBlock->empty() ? nullptr : &localBlock->back();
    if (failed(partitionOp(&op, builder)))
      return dropLocal();
    tagCollectives(&op, before, *localBlock);
    if (&op == lossOp)
      inBackward = true;
  }
  if (failed(emitReturn(ret, builder)))
    return dropLocal();
  // Swap in the per-rank body and signature.
  entry.dropAllDefinedValueUses();
  entry.erase();
  func.setFunctionType(FunctionType::get(func.getContext(),
                                         localBlock->getArgumentTypes(),
                                         localBlock->getTerminator()->getOperandTypes()));
  MLIRContext *context = func.getContext();
  auto splitAttr = [&](const Placement &p) {
    return IntegerAttr::get(IntegerType::get(context, 64), *p.splitDim);
  };
  for (auto [i, p] : llvm::enumerate(argumentPlacements))
    if (p.splitDim)
      func.setArgAttr(i, WeftDialect::kSplitDimAttr, splitAttr(p));
  for (auto [i, p] : llvm::enumerate(resultPlacements))
    if (p.splitDim)
      func.setResultAttr(i, WeftDialect::kSplitDimAttr, splitAttr(p));
  func->setAttr(WeftDialect::kGridAttr, grid.grid);
  func->setAttr(WeftDialect::kGridAxisAttr, IntegerAttr::get(IntegerType::get(context, 64), grid.axis));
  return success();
}

} // namespace

LogicalResult partitionFunction(func::FuncOp func, const GridContext &grid,
                                const PartitionOptions &options) {
  return Partitioner(func, grid, options).run();
}

} // namespace weft::partition
