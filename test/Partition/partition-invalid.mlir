// weft-partition refuses a placement that does not divide, naming the
// argument, the dimension and the grid.
// RUN: not weft-opt %s --split-input-file --weft-partition 2>&1 | FileCheck %s

shard.grid @grid(shape = 4)

// CHECK: error: 'func.func' op argument #0 ('tensor<6x8xf64>') dimension 0 of size 6 is not divisible by the grid axis 0 of size 4 (grid @grid)
func.func @odd(%w: tensor<6x8xf64>) -> tensor<6x8xf64> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ws = shard.shard %w to %s : tensor<6x8xf64>
  return %ws : tensor<6x8xf64>
}

// -----

shard.grid @grid(shape = 4)

// CHECK: error: 'shard.shard' op splits dimension 0 of 'tensor<6x8xf64>', which the grid axis 0 of size 4 (grid @grid) does not divide
func.func @intermediate(%x: tensor<6x8xf64>) -> tensor<6x8xf64> {
  %y = weft.gelu %x {approximate = "tanh"} : (tensor<6x8xf64>) -> tensor<6x8xf64>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ys = shard.shard %y to %s annotate_for_users : tensor<6x8xf64>
  return %ys : tensor<6x8xf64>
}

// -----

shard.grid @grid(shape = 2)

// CHECK: error: 'shard.all_reduce' op is a collective in the step to partition: weft-partition takes the global (unsharded) step with placements only
func.func @collective(%x: tensor<8x8xf64>) -> tensor<8x8xf64> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x8xf64>
  %r = shard.all_reduce %xs on @grid grid_axes = [0] : tensor<8x8xf64> -> tensor<8x8xf64>
  return %r : tensor<8x8xf64>
}

// -----

shard.grid @grid(shape = 2x2)

// CHECK: error: 'shard.shard' op splits argument #0 along a grid axis other than the tensor-parallel one (axis 1), or along several
func.func @axes(%x: tensor<8x8xf64>) -> tensor<8x8xf64> {
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x8xf64>
  return %xs : tensor<8x8xf64>
}

// -----

shard.grid @grid(shape = 2)

// Without ignore_index this loss becomes cross_entropy_combine of the
// vocabulary shards' statistics; with it the counted mean has no such form.
// CHECK: error: 'weft.cross_entropy' op with ignore_index has no vocabulary-parallel form yet
func.func @cross_entropy_ignore(%l: tensor<8x16xf64>, %y: tensor<8xi64>) -> tensor<f64> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %ls = shard.shard %l to %s : tensor<8x16xf64>
  %loss = weft.cross_entropy %ls, %y {ignore_index = -100 : i64} : (tensor<8x16xf64>, tensor<8xi64>) -> tensor<f64>
  return %loss : tensor<f64>
}
