// The partitioner of weft-partition: one function's global training step,
// with placements on its arguments, rewritten into the per-rank SPMD step.
#ifndef WEFT_LIB_PARTITION_PARTITIONER_H
#define WEFT_LIB_PARTITION_PARTITIONER_H

#include "weft/Partition/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace weft::partition {

struct PartitionOptions {
  /// Megatron-LM's sequence parallelism: a partial sum of [batch, seq, ...]
  /// activations becomes a reduce-scatter along the sequence, not an
  /// all-reduce, so the ops between GEMMs run on sequence shards.
  bool sequenceParallel = false;
};

/// Partitions `func` over `grid`. The placements come from the shard.shard
/// annotations of its arguments (and of returned values); the rest follows
/// from the ops' ShardingInterface loop nests.
mlir::LogicalResult partitionFunction(mlir::func::FuncOp func,
                                      const GridContext &grid,
                                      const PartitionOptions &options);

/// The grid a function's annotations name, with its tensor-parallel axis
/// (the `weft.axis_names` entry "tp", else the last axis).
mlir::FailureOr<GridContext> gridOf(mlir::func::FuncOp func);

} // namespace weft::partition

#endif // WEFT_LIB_PARTITION_PARTITIONER_H
