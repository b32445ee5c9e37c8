// Tensor-parallel placements and the ShardingInterface models of the weft ops.
//
// A placement says, for one tensor, which dimension (if any) is split over
// the tensor-parallel grid axis, and whether the tensor is a partial sum over
// that axis (MLIR 22's shard.sharding cannot say "partial": Weft tracks it
// here and resolves it with a collective).
#ifndef WEFT_PARTITION_SHARDING_H
#define WEFT_PARTITION_SHARDING_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"

#include <optional>
#include <string>

namespace weft::partition {

/// Attaches mlir::shard::ShardingInterface to every weft op that partitioning
/// can split: its loops, their kinds and indexing maps, and its partition().
void registerShardingModels(mlir::DialectRegistry &registry);

/// A device grid as `--grid` writes it: "tp=4" or "dp=2,tp=2" (dp only
/// replicates for now).
struct GridSpec {
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<std::string> names;
  int64_t tpAxis = -1;
  int64_t tensorParallelSize() const { return shape[tpAxis]; }
  /// "dp=2,tp=2", as diagnostics name the grid.
  std::string str() const;
};

/// Parses `text`; on failure returns nullopt with `error` saying why.
std::optional<GridSpec> parseGridSpec(llvm::StringRef text, std::string &error);

/// One tensor's placement over the grid's tensor-parallel axis.
struct Placement {
  /// The split dimension, or nullopt when every rank holds the whole tensor.
  std::optional<int64_t> splitDim;
  /// Each rank holds a summand of the tensor (a row-parallel GEMM's output),
  /// or with `average` one of the terms whose mean it is (a split mean).
  bool partial = false;
  bool average = false;

  static Placement replicated() { return {}; }
  static Placement split(int64_t dim) { return {dim, false, false}; }
  static Placement partialSum() { return {std::nullopt, true, false}; }
  static Placement partialAverage() { return {std::nullopt, true, true}; }
  bool operator==(const Placement &other) const {
    return splitDim == other.splitDim && partial == other.partial &&
           average == other.average;
  }
  bool operator!=(const Placement &other) const { return !(*this == other); }
  std::string str() const;
};

/// The grid a step is partitioned over: its symbol, its shape and the axis
/// tensor parallelism splits along (the others replicate).
struct GridContext {
  mlir::FlatSymbolRefAttr grid;
  llvm::SmallVector<int64_t> shape;
  int16_t axis = 0;
  int64_t size() const { return shape[axis]; }
};

/// The shard.sharding split axes of `placement` on a tensor of `rank`.
mlir::shard::Sharding toSharding(const GridContext &grid,
                                 const Placement &placement, int64_t rank);
/// The split dimension of `sharding` (nullopt when it splits none).
std::optional<int64_t> splitDimOf(const mlir::shard::Sharding &sharding);
/// The per-rank type of `type` under `placement`.
mlir::RankedTensorType localType(mlir::RankedTensorType type,
                                 const Placement &placement, int64_t parts);
/// The grid size along the axes `sharding` splits (1 when none).
int64_t splitParts(const mlir::shard::Sharding &sharding,
                   mlir::SymbolTableCollection &symbols, mlir::Operation *from);
/// `index` of this rank's block along the tensor-parallel axis times
/// `blockSize`: the first global index of the block (an index value).
mlir::Value blockOffset(mlir::OpBuilder &builder, mlir::Location loc,
                        mlir::FlatSymbolRefAttr grid, int16_t axis,
                        int64_t blockSize);

} // namespace weft::partition

#endif // WEFT_PARTITION_SHARDING_H
