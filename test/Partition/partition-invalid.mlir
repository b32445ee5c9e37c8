// weft-partition refuses a placement that does not divide, naming the
// argument, the dimension and the grid.
// RUN: not weft-opt %s --weft-partition 2>&1 | FileCheck %s

shard.grid @grid(shape = 4)

// CHECK: error: 'func.func' op argument #0 ('tensor<6x8xf64>') dimension 0 of size 6 is not divisible by the grid axis 0 of size 4 (grid @grid)
func.func @odd(%w: tensor<6x8xf64>) -> tensor<6x8xf64> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ws = shard.shard %w to %s : tensor<6x8xf64>
  return %ws : tensor<6x8xf64>
}
