// Slicing global arguments for the ranks of a partitioned step and gathering
// its results.
#include "weft/Reference/Partitioned.h"

#include "weft/Dialect/WeftDialect.h"
#include "weft/Reference/Interpreter.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"

#include <cmath>

using namespace mlir;

namespace weft::reference {

namespace {

/// The grid's shape and tensor-parallel axis of a partitioned function.
struct GridInfo {
  SmallVector<int64_t> shape;
  int64_t axis = 0;
  int64_t parts() const { return shape[axis]; }
  /// `rank`'s coordinate along the tensor-parallel axis (row-major ranks).
  int64_t coordinate(int64_t rank) const {
    for (size_t d = shape.size(); d-- > 0;) {
      if (int64_t(d) == axis)
        return rank % shape[d];
      rank /= shape[d];
    }
    return 0;
  }
};

FailureOr<GridInfo> gridInfoOf(func::FuncOp func) {
  auto symbol = func->getAttrOfType<FlatSymbolRefAttr>(WeftDialect::kGridAttr);
  auto axis = func->getAttrOfType<IntegerAttr>(WeftDialect::kGridAxisAttr);
  auto grid = symbol ? SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(func, symbol)
                     : shard::GridOp();
  if (!grid || !axis || axis.getInt() >= int64_t(grid.getShape().size()))
    return func.emitOpError("is partitioned but names no valid grid and axis (")
           << WeftDialect::kGridAttr << ", " << WeftDialect::kGridAxisAttr << ")";
  GridInfo info;
  info.shape.assign(grid.getShape().begin(), grid.getShape().end());
  info.axis = axis.getInt();
  return info;
}

std::optional<int64_t> splitDim(DictionaryAttr attrs) {
  if (!attrs)
    return std::nullopt;
  if (auto dim = attrs.getAs<IntegerAttr>(WeftDialect::kSplitDimAttr))
    return dim.getInt();
  return std::nullopt;
}

Type globalType(Type type, std::optional<int64_t> dim, int64_t parts) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !dim)
    return type;
  SmallVector<int64_t> shape(tensor.getShape());
  shape[*dim] *= parts;
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// Outer, extent, inner sizes around `dim` of `shape`.
void around(ArrayRef<int64_t> shape, int64_t dim, int64_t &outer, int64_t &inner) {
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

Tensor sliceOf(const Tensor &global, int64_t dim, int64_t parts, int64_t part) {
  Tensor block = global;
  int64_t outer, inner;
  around(global.shape, dim, outer, inner);
  int64_t extent = global.shape[dim], size = extent / parts;
  block.shape[dim] = size;
  block.data.assign(outer * size * inner, 0.0);
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(global.data.begin() + (o * extent + part * size) * inner, size * inner,
                block.data.begin() + o * size * inner);
  return block;
}

void placeBlock(Tensor &global, const Tensor &block, int64_t dim, int64_t part) {
  int64_t outer, inner;
  around(global.shape, dim, outer, inner);
  int64_t extent = global.shape[dim], size = block.shape[dim];
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(block.data.begin() + o * size * inner, size * inner,
                global.data.begin() + (o * extent + part * size) * inner);
}

bool sameBits(const Tensor &a, const Tensor &b) {
  if (a.shape != b.shape)
    return false;
  for (size_t i = 0; i < a.data.size(); ++i)
    if (a.data[i] != b.data[i] && !(std::isnan(a.data[i]) && std::isnan(b.data[i])))
      return false;
  return true;
}

} // namespace

bool isPartitioned(func::FuncOp func) {
  return func->hasAttr(WeftDialect::kGridAttr);
}

OwningOpRef<func::FuncOp> globalSignature(func::FuncOp func) {
  FailureOr<GridInfo> grid = gridInfoOf(func);
  int64_t parts = succeeded(grid) ? grid->parts() : 1;
  SmallVector<Type> inputs, results;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
    inputs.push_back(globalType(type, splitDim(func.getArgAttrDict(i)), parts));
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    results.push_back(globalType(type, splitDim(func.getResultAttrDict(i)), parts));
  // A clone whose entry block takes the global types: what reads arguments
  // (drawing random inputs reads their uses) sees them; the body is never run.
  OwningOpRef<func::FuncOp> global = func.clone();
  for (auto [arg, type] : llvm::zip(global->getArguments(), inputs))
    arg.setType(type);
  global->setFunctionType(FunctionType::get(func.getContext(), inputs, results));
  return global;
}

FailureOr<std::vector<Tensor>> runPartitioned(func::FuncOp func,
                                              const std::vector<Tensor> &globalArgs) {
  FailureOr<GridInfo> grid = gridInfoOf(func);
  FailureOr<int64_t> ranks = numRanks(func);
  if (failed(grid) || failed(ranks))
    return failure();
  int64_t gridRanks = 1;
  for (int64_t size : grid->shape)
    gridRanks *= size;
  int64_t parts = grid->parts();
  if (globalArgs.size() != func.getNumArguments())
    return func.emitOpError("takes ")
           << func.getNumArguments() << " arguments, got " << globalArgs.size();
  PerRankTensors args(gridRanks);
  for (int64_t rank = 0; rank < gridRanks; ++rank)
    for (auto [i, global] : llvm::enumerate(globalArgs)) {
      std::optional<int64_t> dim = splitDim(func.getArgAttrDict(i));
      if (!dim) {
        args[rank].push_back(global);
        continue;
      }
      if (*dim >= int64_t(global.shape.size()) || global.shape[*dim] % parts != 0)
        return func.emitOpError("argument #")
               << i << " of shape " << describeTensor(global.shape, global.dtype)
               << " cannot be split in " << parts << " along dimension " << *dim;
      args[rank].push_back(sliceOf(global, *dim, parts, grid->coordinate(rank)));
    }
  // A step without collectives runs rank by rank (the interpreter's SPMD
  // run counts the ranks of the grid its collectives name).
  FailureOr<PerRankTensors> results = PerRankTensors();
  if (*ranks == gridRanks) {
    results = runSpmd(func, args);
  } else if (*ranks == 1) {
    for (const std::vector<Tensor> &rankArgs : args) {
      FailureOr<std::vector<Tensor>> one = run(func, rankArgs);
      if (failed(one))
        return failure();
      results->push_back(std::move(*one));
    }
  } else {
    return func.emitOpError("runs collectives on ")
           << *ranks << " ranks but its grid has " << gridRanks;
  }
  if (failed(results))
    return failure();
  std::vector<Tensor> gathered;
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    std::optional<int64_t> dim = splitDim(func.getResultAttrDict(r));
    if (!dim) {
      for (int64_t rank = 1; rank < gridRanks; ++rank)
        if (!sameBits((*results)[rank][r], (*results)[0][r]))
          return func.emitOpError("replicated result #")
                 << r << " differs between rank 0 and rank " << rank;
      gathered.push_back((*results)[0][r]);
      continue;
    }
    Tensor global = (*results)[0][r];
    global.shape[*dim] *= parts;
    global.data.assign(global.numElements(), 0.0);
    // Ranks that differ only off the tensor-parallel axis hold the same block.
    for (int64_t rank = 0; rank < gridRanks; ++rank)
      placeBlock(global, (*results)[rank][r], *dim, grid->coordinate(rank));
    gathered.push_back(std::move(global));
  }
  return gathered;
}

} // namespace weft::reference
