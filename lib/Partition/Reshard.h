// The collectives that move a tensor between placements (shard dialect ops
// on per-rank values), emitted once per value, target and phase.
#ifndef WEFT_LIB_PARTITION_RESHARD_H
#define WEFT_LIB_PARTITION_RESHARD_H

#include "weft/Partition/Sharding.h"

#include "llvm/ADT/DenseMap.h"

#include <tuple>

namespace weft::partition {

class Resharder {
public:
  explicit Resharder(const GridContext &grid) : grid(grid) {}

  /// `value` (the per-rank form of `global`, placed `from`) placed `to`:
  /// a slice of a replicated tensor (shard.all_slice, no communication), an
  /// all-gather, an all-reduce or a reduce-scatter of a partial sum, or a
  /// gather then a slice to move the split dimension.
  mlir::Value to(mlir::Value global, mlir::Value value, const Placement &from,
                 const Placement &to, bool backward, mlir::OpBuilder &builder,
                 mlir::Location loc);

private:
  /// The gathered form of a view's source, viewed as `global`'s type: one
  /// all-gather serves a tensor and its row-major reshapes when both split
  /// along a dimension with only 1s before it (the same contiguous block
  /// per rank). Null when there is none.
  mlir::Value gatheredThroughView(mlir::Value global, const Placement &from, bool backward,
                                  mlir::OpBuilder &builder, mlir::Location loc);
  mlir::Value emit(mlir::Value global, mlir::Value value, const Placement &from,
                   const Placement &to, mlir::OpBuilder &builder,
                   mlir::Location loc);

  GridContext grid;
  llvm::DenseMap<std::tuple<mlir::Value, int64_t, int64_t>, mlir::Value> cache;
};

} // namespace weft::partition

#endif // WEFT_LIB_PARTITION_RESHARD_H
