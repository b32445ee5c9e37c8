// A partitioned step with no collective (every op local to its block) still
// runs on every rank of its grid, and its gathered results equal the global
// function's.
// RUN: weft-opt %s --weft-partition | FileCheck %s
// RUN: weft-opt %s --weft-partition --weft-diff-each-pass --weft-diff-entry=local --weft-diff-rtol=0 -o /dev/null

shard.grid @grid(shape = 4)

// CHECK-LABEL: func.func @local(
// CHECK-SAME: tensor<2x8xf64> {weft.split_dim = 0 : i64}) -> (tensor<2x8xf64> {weft.split_dim = 0 : i64})
// CHECK-NOT: shard.
// CHECK: weft.gelu
func.func @local(%x: tensor<8x8xf64>) -> tensor<8x8xf64> {
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %rows : tensor<8x8xf64>
  %y = weft.gelu %xs {approximate = "tanh"} : (tensor<8x8xf64>) -> tensor<8x8xf64>
  %ys = shard.shard %y to %rows annotate_for_users : tensor<8x8xf64>
  return %ys : tensor<8x8xf64>
}
