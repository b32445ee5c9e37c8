// Placements written by hand: a column-parallel then a row-parallel GEMM
// (Megatron's MLP) partition into local GEMMs and one all-reduce; the
// gathered results equal the global function's (simulated ranks).
// RUN: weft-opt %s --weft-partition | FileCheck %s
// RUN: weft-opt %s --weft-partition --weft-diff-each-pass --weft-diff-entry=mlp --weft-diff-rtol=1e-12 -o /dev/null

shard.grid @grid(shape = 4)

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %arg0: tensor<2x8xf64>, %arg1: tensor<4x8xf64> {weft.split_dim = 0 : i64}, %arg2: tensor<8x4xf64> {weft.split_dim = 1 : i64}) -> tensor<2x8xf64>
// CHECK-SAME: weft.grid = @grid, weft.grid_axis = 0 : i64
// CHECK: weft.linear %arg0, %arg1 : (tensor<2x8xf64>, tensor<4x8xf64>) -> tensor<2x4xf64>
// CHECK: weft.gelu
// CHECK: weft.linear {{.*}}, %arg2 : (tensor<2x4xf64>, tensor<8x4xf64>) -> tensor<2x8xf64>
// CHECK-NEXT: shard.all_reduce {{.*}} on @grid grid_axes = [0] : tensor<2x8xf64> -> tensor<2x8xf64>
// CHECK-NEXT: return
func.func @mlp(%x: tensor<2x8xf64>, %w1: tensor<16x8xf64>, %w2: tensor<8x16xf64>) -> tensor<2x8xf64> {
  %col = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %w1s = shard.shard %w1 to %col : tensor<16x8xf64>
  %row = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %w2s = shard.shard %w2 to %row : tensor<8x16xf64>
  %h = weft.linear %x, %w1s : (tensor<2x8xf64>, tensor<16x8xf64>) -> tensor<2x16xf64>
  %g = weft.gelu %h {approximate = "tanh"} : (tensor<2x16xf64>) -> tensor<2x16xf64>
  %y = weft.linear %g, %w2s : (tensor<2x16xf64>, tensor<8x16xf64>) -> tensor<2x8xf64>
  return %y : tensor<2x8xf64>
}

