// Dropout masks on shards are the global mask's slices (ARCHITECTURE.md's
// Philox global-index rule): a dropout split along its columns and an
// attention split along its heads give, gathered from 4 simulated ranks,
// bit for bit the unpartitioned results (--weft-diff-rtol=0).
// RUN: weft-opt %s --weft-partition | FileCheck %s
// RUN: weft-opt %s --weft-partition --weft-diff-each-pass --weft-diff-entry=masks,heads --weft-diff-rtol=0 -o /dev/null

shard.grid @grid(shape = 4)

// CHECK-LABEL: func.func @masks(
// CHECK: %[[I:.*]] = shard.process_multi_index on @grid axes = [0] : index
// CHECK: %[[OFF:.*]] = arith.muli %[[I]], %c4
// CHECK: weft.dropout %arg0, %arg1, %c0{{.*}}, %[[OFF]] {global_shape = array<i64: 4, 16>, p = 5.000000e-01 : f64, weft.rng_id = 7 : i64} : (tensor<4x4xf64>, tensor<i64>, index, index) -> tensor<4x4xf64>
func.func @masks(%x: tensor<4x16xf64>, %seed: tensor<i64>) -> tensor<4x16xf64> {
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %cols : tensor<4x16xf64>
  %y = weft.dropout %xs, %seed {p = 0.5 : f64, weft.rng_id = 7 : i64} : (tensor<4x16xf64>, tensor<i64>) -> tensor<4x16xf64>
  %ys = shard.shard %y to %cols annotate_for_users : tensor<4x16xf64>
  return %ys : tensor<4x16xf64>
}

// CHECK-LABEL: func.func @heads(
// CHECK: weft.attention {{.*}} {causal, dropout_heads = 8 : i64, dropout_p = 2.000000e-01 : f64, weft.rng_id = 3 : i64} : (tensor<1x2x8x4xf64>, tensor<1x2x8x4xf64>, tensor<1x2x8x4xf64>, tensor<i64>, index) -> tensor<1x2x8x4xf64>
func.func @heads(%q: tensor<1x8x8x4xf64>, %k: tensor<1x8x8x4xf64>, %v: tensor<1x8x8x4xf64>, %seed: tensor<i64>) -> tensor<1x8x8x4xf64> {
  %h = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %qs = shard.shard %q to %h : tensor<1x8x8x4xf64>
  %ks = shard.shard %k to %h : tensor<1x8x8x4xf64>
  %vs = shard.shard %v to %h : tensor<1x8x8x4xf64>
  %o = weft.attention %qs, %ks, %vs, %seed {causal, dropout_p = 0.2 : f64, weft.rng_id = 3 : i64} : (tensor<1x8x8x4xf64>, tensor<1x8x8x4xf64>, tensor<1x8x8x4xf64>, tensor<i64>) -> tensor<1x8x8x4xf64>
  return %o : tensor<1x8x8x4xf64>
}
