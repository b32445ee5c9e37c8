// weft-reduce-scatter-slabs on a TP+SP step: every sum reduce-scatter becomes
// an all-to-all of the two ranks' slabs and their sum; the float64 step on 2
// simulated ranks gives the same values before and after (1e-10).
// RUN: sed -e 's/bf16/f64/g' %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir > %t.mlir
// RUN: weft-opt %t.mlir --weft-autodiff "--weft-place=grid=tp=2 sequence-parallel=true func=forward_step" --weft-partition=sequence-parallel=true --weft-hoist-collectives --weft-fuse-elementwise --weft-reduce-scatter-slabs --weft-diff-each-pass --weft-diff-entry=forward_step --weft-diff-rtol=1e-10 --weft-diff-seed=7 | FileCheck %s

// CHECK-NOT: shard.reduce_scatter
// CHECK: %[[S:.*]] = weft.reshape %{{.*}} : (tensor<1x64x128xf64>) -> tensor<2x4096xf64>
// CHECK: %[[A:.*]] = shard.all_to_all %[[S]] on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 {weft.layer = 0 : i64} : tensor<2x4096xf64> -> tensor<2x4096xf64>
// CHECK: %[[M:.*]] = weft.reduce_sum %[[A]] {dims = array<i64: 0>, weft.layer = 0 : i64} : (tensor<2x4096xf64>) -> tensor<4096xf64>
// CHECK: weft.reshape %[[M]] {weft.layer = 0 : i64} : (tensor<4096xf64>) -> tensor<1x32x128xf64>
// CHECK-NOT: shard.reduce_scatter
