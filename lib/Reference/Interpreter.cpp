// The reference interpreter's driver: argument checks, the shard.grid a
// function runs on, and lockstep execution of all ranks op by op (func.call,
// func.return, arith.constant, the shard ops and the weft kernels).
#include "weft/Reference/Interpreter.h"

#include "Kernels.h"

#include "weft/Reference/Numerics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
namespace shard = mlir::shard;

namespace weft::reference {

using detail::shapeString;

std::optional<DType> dtypeOf(Type elementType) {
  if (elementType.isF64())
    return DType::F64;
  if (elementType.isF32())
    return DType::F32;
  if (elementType.isF16())
    return DType::F16;
  if (elementType.isBF16())
    return DType::BF16;
  if (elementType.isInteger(64))
    return DType::I64;
  if (elementType.isInteger(16))
    return DType::I16;
  if (elementType.isInteger(1))
    return DType::I1;
  return std::nullopt;
}

namespace {

/// Per-rank values: element r belongs to rank r.
template <typename T>
using PerRank = std::vector<T>;

/// A function may nest calls this deep before the interpreter gives up
/// (recursion has no base case in straight-line IR).
constexpr int kMaxCallDepth = 64;

/// The functions `root` calls, transitively, including `root`.
FailureOr<SmallVector<func::FuncOp>> reachableFunctions(func::FuncOp root) {
  llvm::SetVector<func::FuncOp> functions;
  functions.insert(root);
  for (size_t i = 0; i < functions.size(); ++i) {
    func::FuncOp function = functions[i];
    WalkResult walk = function.walk([&](func::CallOp call) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee) {
        call.emitOpError("calls unknown function ") << call.getCalleeAttr();
        return WalkResult::interrupt();
      }
      functions.insert(callee);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return SmallVector<func::FuncOp>(functions.begin(), functions.end());
}

/// The shard.grid that `func` (and what it calls) names, or a null op.
FailureOr<shard::GridOp> findGrid(func::FuncOp func) {
  auto functions = reachableFunctions(func);
  if (failed(functions))
    return failure();
  shard::GridOp grid;
  for (func::FuncOp function : *functions) {
    WalkResult walk = function.walk([&](Operation *op) {
      if (!isa<shard::ShardDialect>(op->getDialect()))
        return WalkResult::advance();
      auto symbol = op->getAttrOfType<FlatSymbolRefAttr>("grid");
      if (!symbol)
        return WalkResult::advance();
      auto named = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, symbol);
      if (!named) {
        op->emitOpError("names unknown grid ") << symbol;
        return WalkResult::interrupt();
      }
      if (grid && grid != named) {
        op->emitOpError("names grid ")
            << symbol << " but the function already uses grid @"
            << grid.getSymName()
            << "; the reference interpreter runs one grid at a time";
        return WalkResult::interrupt();
      }
      grid = named;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  if (grid && llvm::any_of(grid.getShape(), ShapedType::isDynamic))
    return grid.emitOpError("has a dynamic shape ")
           << shapeString(grid.getShape())
           << "; the reference interpreter needs a static grid";
  return grid;
}

/// An empty tensor of `type` for a kernel to fill: zeros of the right shape
/// and dtype. Index and integer scalars become 0-d i64 tensors.
FailureOr<Tensor> zeroTensorOf(Operation *op, Type type) {
  Tensor tensor;
  if (isa<IndexType>(type)) {
    tensor.dtype = DType::I64;
  } else if (auto ranked = dyn_cast<RankedTensorType>(type)) {
    std::optional<DType> dtype = dtypeOf(ranked.getElementType());
    if (!dtype || !ranked.hasStaticShape())
      return op->emitOpError("reference interpreter cannot hold values of type ")
             << type;
    tensor.dtype = *dtype;
    tensor.shape.assign(ranked.getShape().begin(), ranked.getShape().end());
  } else if (std::optional<DType> dtype = dtypeOf(type)) {
    tensor.dtype = *dtype;
  } else {
    return op->emitOpError("reference interpreter cannot hold values of type ")
           << type;
  }
  tensor.data.assign(tensor.numElements(), 0.0);
  return tensor;
}

/// arith.constant's value as a tensor.
FailureOr<Tensor> constantTensor(arith::ConstantOp constant) {
  auto tensor = zeroTensorOf(constant, constant.getType());
  if (failed(tensor))
    return failure();
  Attribute value = constant.getValue();
  auto toDouble = [](Attribute element) -> std::optional<double> {
    if (auto number = dyn_cast<FloatAttr>(element))
      return number.getValue().convertToDouble();
    if (auto integer = dyn_cast<IntegerAttr>(element))
      return integer.getType().isInteger(1)
                 ? double(integer.getValue().getBoolValue())
                 : double(integer.getValue().getSExtValue());
    return std::nullopt;
  };
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    size_t i = 0;
    for (Attribute element : dense.getValues<Attribute>()) {
      std::optional<double> number = toDouble(element);
      if (!number)
        return constant.emitOpError("reference interpreter cannot read ")
               << element;
      tensor->data[i++] = *number;
    }
    return tensor;
  }
  if (std::optional<double> number = toDouble(value)) {
    tensor->data[0] = *number;
    return tensor;
  }
  return constant.emitOpError(
             "reference interpreter cannot read constant values of kind ")
         << value;
}

/// Runs functions for all ranks in lockstep.
class LockstepExecutor {
public:
  LockstepExecutor(ArrayRef<int64_t> gridShape, int64_t ranks)
      : gridShape(gridShape), ranks(ranks) {}

  FailureOr<PerRank<std::vector<Tensor>>>
  call(func::FuncOp func, PerRank<std::vector<Tensor>> args, int depth);

private:
  using Frame = llvm::DenseMap<Value, Tensor>;

  LogicalResult execute(Operation *op, PerRank<Frame> &frames, int depth);
  /// Runs a weft.fused group's body on every rank: the group's values are
  /// its ops' values, each rounded to its declared type as when unfused.
  LogicalResult runFused(FusedOp fused, PerRank<Frame> &frames, int depth);
  /// Runs `op` on every rank, filling `results[rank]` (pre-shaped).
  LogicalResult compute(Operation *op, PerRank<Frame> &frames,
                        PerRank<std::vector<Tensor>> &results, int depth);

  std::vector<int64_t> coordinates(int64_t rank) const {
    std::vector<int64_t> coords(gridShape.size());
    for (size_t d = gridShape.size(); d-- > 0;) {
      coords[d] = rank % gridShape[d];
      rank /= gridShape[d];
    }
    return coords;
  }

  ArrayRef<int64_t> gridShape;
  int64_t ranks;
};

/// Values of the operands of `op` on one rank; null for !shard.sharding
/// operands, which carry no data.
FailureOr<std::vector<const Tensor *>>
operandTensors(Operation *op, llvm::DenseMap<Value, Tensor> &frame) {
  std::vector<const Tensor *> operands;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (isa<shard::ShardingType>(operand.getType())) {
      operands.push_back(nullptr);
      continue;
    }
    auto it = frame.find(operand);
    if (it == frame.end())
      return op->emitOpError("reference interpreter has no value for operand #")
             << i;
    operands.push_back(&it->second);
  }
  return operands;
}

/// An op on integer or index scalars (the offset arithmetic partitioning
/// emits: arith.muli of a process index by a shard size).
bool isScalarIntegerOp(Operation *op) {
  return op->getNumRegions() == 0 && op->getNumOperands() > 0 &&
         op->getNumResults() == 1 &&
         op->getResult(0).getType().isIntOrIndex() &&
         llvm::all_of(op->getOperandTypes(),
                      [](Type type) { return type.isIntOrIndex(); });
}

/// Runs such an op on every rank through its folder, so the interpreter
/// needs no table of integer ops.
LogicalResult foldScalarIntegerOp(Operation *op,
                                  PerRank<std::vector<const Tensor *>> &operands,
                                  PerRank<std::vector<Tensor>> &results) {
  for (size_t rank = 0; rank < operands.size(); ++rank) {
    SmallVector<Attribute> constants;
    for (auto [operand, value] :
         llvm::zip(op->getOperands(), operands[rank]))
      constants.push_back(IntegerAttr::get(
          operand.getType(), static_cast<int64_t>(value->data[0])));
    SmallVector<OpFoldResult> folded;
    if (failed(op->fold(constants, folded)) || folded.size() != 1)
      return op->emitOpError("reference interpreter cannot evaluate '")
             << op->getName() << "' on constant operands";
    if (auto value = dyn_cast<Value>(folded[0])) {
      // Folded to one of its operands (x * 1, x + 0).
      for (auto [operand, tensor] : llvm::zip(op->getOperands(), operands[rank]))
        if (operand == value)
          results[rank][0].data = tensor->data;
      continue;
    }
    auto integer = dyn_cast<IntegerAttr>(cast<Attribute>(folded[0]));
    if (!integer)
      return op->emitOpError("reference interpreter got a non-integer fold");
    results[rank][0].data = {double(integer.getValue().getSExtValue())};
  }
  return success();
}

LogicalResult LockstepExecutor::compute(Operation *op, PerRank<Frame> &frames,
                                        PerRank<std::vector<Tensor>> &results,
                                        int depth) {
  PerRank<std::vector<const Tensor *>> operands(ranks);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    auto tensors = operandTensors(op, frames[rank]);
    if (failed(tensors))
      return failure();
    operands[rank] = std::move(*tensors);
  }

  if (isa<WeftDialect>(op->getDialect())) {
    for (int64_t rank = 0; rank < ranks; ++rank)
      if (failed(detail::runWeftOp(op, operands[rank], results[rank])))
        return failure();
    return success();
  }
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee)
      return call.emitOpError("calls unknown function ")
             << call.getCalleeAttr();
    PerRank<std::vector<Tensor>> args(ranks);
    for (int64_t rank = 0; rank < ranks; ++rank)
      for (const Tensor *operand : operands[rank])
        args[rank].push_back(operand ? *operand : Tensor{});
    auto returned = this->call(callee, std::move(args), depth + 1);
    if (failed(returned))
      return call.emitOpError("failed in the call to ")
             << call.getCalleeAttr();
    for (int64_t rank = 0; rank < ranks; ++rank)
      for (auto [i, result] : llvm::enumerate(call.getResults()))
        if (!isa<shard::ShardingType>(result.getType()))
          results[rank][i] = std::move((*returned)[rank][i]);
    return success();
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto value = constantTensor(constant);
    if (failed(value))
      return failure();
    for (int64_t rank = 0; rank < ranks; ++rank)
      results[rank][0] = *value;
    return success();
  }
  if (detail::isCollective(op)) {
    PerRank<const Tensor *> inputs(ranks);
    PerRank<Tensor> outputs(ranks);
    for (int64_t rank = 0; rank < ranks; ++rank) {
      inputs[rank] = operands[rank][0];
      outputs[rank] = std::move(results[rank][0]);
    }
    if (failed(detail::runCollective(op, gridShape, inputs, outputs)))
      return failure();
    for (int64_t rank = 0; rank < ranks; ++rank)
      results[rank][0] = std::move(outputs[rank]);
    return success();
  }
  if (isa<shard::ShardingOp, shard::GetShardingOp>(op))
    return success(); // A sharding is metadata: nothing to compute.
  if (isa<shard::ShardOp, tensor::CastOp>(op)) {
    // An annotation, or a cast between static shapes (which upstream's
    // shard-partition emits): each rank's tensor passes through unchanged.
    for (int64_t rank = 0; rank < ranks; ++rank)
      results[rank][0] = *operands[rank][0];
    return success();
  }
  if (auto linear = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
    for (int64_t rank = 0; rank < ranks; ++rank)
      results[rank][0].data = {double(rank)};
    return success();
  }
  auto axesOrAll = [&](ArrayRef<shard::GridAxis> axes) {
    SmallVector<int64_t> all;
    if (axes.empty())
      for (size_t d = 0; d < gridShape.size(); ++d)
        all.push_back(d);
    else
      all.assign(axes.begin(), axes.end());
    return all;
  };
  if (auto multi = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
    SmallVector<int64_t> axes = axesOrAll(multi.getAxes());
    for (int64_t rank = 0; rank < ranks; ++rank) {
      std::vector<int64_t> coords = coordinates(rank);
      for (auto [i, axis] : llvm::enumerate(axes))
        results[rank][i].data = {double(coords[axis])};
    }
    return success();
  }
  if (auto shape = dyn_cast<shard::GridShapeOp>(op)) {
    SmallVector<int64_t> axes = axesOrAll(shape.getAxes());
    for (int64_t rank = 0; rank < ranks; ++rank)
      for (auto [i, axis] : llvm::enumerate(axes))
        results[rank][i].data = {double(gridShape[axis])};
    return success();
  }
  if (isScalarIntegerOp(op))
    return foldScalarIntegerOp(op, operands, results);
  return op->emitOpError("reference interpreter cannot run '")
         << op->getName() << "'";
}

LogicalResult LockstepExecutor::execute(Operation *op, PerRank<Frame> &frames,
                                        int depth) {
  // Pre-shape every result from its type (nothing for sharding values).
  std::vector<Tensor> shaped;
  for (Type type : op->getResultTypes()) {
    if (isa<shard::ShardingType>(type)) {
      shaped.emplace_back();
      continue;
    }
    auto zero = zeroTensorOf(op, type);
    if (failed(zero))
      return failure();
    shaped.push_back(std::move(*zero));
  }
  PerRank<std::vector<Tensor>> results(ranks, shaped);
  if (failed(compute(op, frames, results, depth)))
    return failure();
  for (int64_t rank = 0; rank < ranks; ++rank)
    for (auto [result, tensor] : llvm::zip(op->getResults(), results[rank])) {
      if (isa<shard::ShardingType>(result.getType()))
        continue;
      // The one rounding of every result, to its declared element type.
      roundTensor(tensor);
      frames[rank][result] = std::move(tensor);
    }
  return success();
}

LogicalResult LockstepExecutor::runFused(FusedOp fused, PerRank<Frame> &frames,
                                         int depth) {
  Block &body = fused.getBodyBlock();
  PerRank<Frame> inner(ranks);
  for (int64_t rank = 0; rank < ranks; ++rank)
    for (auto [i, input, arg] :
         llvm::enumerate(fused.getInputs(), body.getArguments())) {
      auto it = frames[rank].find(input);
      if (it == frames[rank].end())
        return fused.emitOpError(
                   "reference interpreter has no value for input #")
               << i;
      inner[rank][arg] = it->second;
    }
  for (Operation &op : body.without_terminator())
    if (failed(execute(&op, inner, depth)))
      return failure();
  for (int64_t rank = 0; rank < ranks; ++rank)
    for (auto [result, value] :
         llvm::zip(fused.getResults(), fused.getYield().getValues())) {
      auto it = inner[rank].find(value);
      if (it == inner[rank].end())
        return fused.emitOpError("reference interpreter has no value for "
                                 "yielded result #")
               << result.getResultNumber();
      frames[rank][result] = it->second;
    }
  return success();
}

FailureOr<PerRank<std::vector<Tensor>>>
LockstepExecutor::call(func::FuncOp func, PerRank<std::vector<Tensor>> args,
                       int depth) {
  if (depth > kMaxCallDepth)
    return func.emitOpError("reference interpreter exceeded the call depth ")
           << kMaxCallDepth << " (recursive calls?)";
  if (func.isExternal())
    return func.emitOpError(
        "reference interpreter cannot run a function without a body");
  Region &body = func.getBody();
  if (!body.hasOneBlock())
    return func.emitOpError("reference interpreter runs single-block "
                            "functions, this one has ")
           << body.getBlocks().size() << " blocks";
  Block &block = body.front();

  // Free each value after its last use so long graphs stay small.
  llvm::DenseMap<Value, Operation *> lastUse;
  for (Operation &op : block) {
    for (Value operand : op.getOperands())
      lastUse[operand] = &op;
    // Values an op's regions capture are used by the op itself.
    if (op.getNumRegions() != 0)
      op.walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          lastUse[operand] = &op;
      });
  }

  PerRank<Frame> frames(ranks);
  for (int64_t rank = 0; rank < ranks; ++rank)
    for (auto [argument, value] : llvm::zip(block.getArguments(), args[rank]))
      frames[rank][argument] = std::move(value);

  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      PerRank<std::vector<Tensor>> returned(ranks);
      for (int64_t rank = 0; rank < ranks; ++rank) {
        auto operands = operandTensors(&op, frames[rank]);
        if (failed(operands))
          return failure();
        for (const Tensor *value : *operands)
          returned[rank].push_back(value ? *value : Tensor{});
      }
      return returned;
    }
    if (detail::isStructuredOp(&op)) {
      for (Frame &frame : frames)
        if (failed(detail::runStructuredOp(&op, frame)))
          return failure();
    } else if (auto fused = dyn_cast<FusedOp>(op)) {
      if (failed(runFused(fused, frames, depth)))
        return failure();
    } else if (op.getNumRegions() != 0) {
      return op.emitOpError("reference interpreter cannot run '")
             << op.getName() << "' (ops with regions are not supported)";
    } else if (failed(execute(&op, frames, depth))) {
      return failure();
    }
    for (Value operand : op.getOperands())
      if (lastUse.lookup(operand) == &op)
        for (Frame &frame : frames)
          frame.erase(operand);
    for (Value result : op.getResults())
      if (result.use_empty())
        for (Frame &frame : frames)
          frame.erase(result);
  }
  return func.emitOpError("reference interpreter found no func.return");
}

/// Checks one rank's arguments against the signature of `func`.
LogicalResult checkArguments(func::FuncOp func, int64_t rank,
                             const std::vector<Tensor> &args) {
  ArrayRef<Type> inputs = func.getFunctionType().getInputs();
  if (args.size() != inputs.size())
    return func.emitOpError("expects ")
           << inputs.size() << " arguments, rank " << rank << " has "
           << args.size();
  for (auto [i, type, arg] : llvm::enumerate(inputs, args)) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    std::optional<DType> dtype =
        ranked ? dtypeOf(ranked.getElementType()) : std::nullopt;
    if (!dtype || !ranked.hasStaticShape())
      return func.emitOpError("argument #")
             << i << " has type " << type
             << ", which the reference interpreter cannot take";
    ArrayRef<int64_t> expected = ranked.getShape();
    if (ArrayRef<int64_t>(arg.shape) != expected || arg.dtype != *dtype)
      return func.emitOpError("argument #")
             << i << " (rank " << rank << ") expects shape "
             << shapeString(expected) << " of " << dtypeName(*dtype)
             << ", got shape " << shapeString(arg.shape) << " of "
             << dtypeName(arg.dtype);
    if (int64_t(arg.data.size()) != arg.numElements())
      return func.emitOpError("argument #")
             << i << " (rank " << rank << ") has shape "
             << shapeString(arg.shape) << " but " << arg.data.size()
             << " values";
  }
  return success();
}

} // namespace

FailureOr<int64_t> numRanks(func::FuncOp func) {
  auto grid = findGrid(func);
  if (failed(grid))
    return failure();
  if (!*grid)
    return int64_t(1);
  int64_t count = 1;
  for (int64_t extent : grid->getShape())
    count *= extent;
  return count;
}

FailureOr<std::vector<std::vector<Tensor>>>
runSpmd(func::FuncOp func, const std::vector<std::vector<Tensor>> &perRankArgs) {
  auto grid = findGrid(func);
  if (failed(grid))
    return failure();
  SmallVector<int64_t> gridShape;
  if (*grid)
    gridShape.assign(grid->getShape().begin(), grid->getShape().end());
  int64_t ranks = 1;
  for (int64_t extent : gridShape)
    ranks *= extent;
  if (int64_t(perRankArgs.size()) != ranks)
    return func.emitOpError("runs on ")
           << ranks << " ranks but was given arguments for "
           << perRankArgs.size();
  std::vector<std::vector<Tensor>> args(perRankArgs);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    if (failed(checkArguments(func, rank, args[rank])))
      return failure();
    for (Tensor &arg : args[rank])
      roundTensor(arg);
  }
  LockstepExecutor executor(gridShape, ranks);
  return executor.call(func, std::move(args), /*depth=*/0);
}

FailureOr<std::vector<Tensor>> run(func::FuncOp func,
                                   const std::vector<Tensor> &args) {
  auto results = runSpmd(func, {args});
  if (failed(results))
    return failure();
  return std::move(results->front());
}

} // namespace weft::reference
