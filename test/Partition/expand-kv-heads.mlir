// weft-expand-kv-heads: GQA with 4 q / 2 kv heads at tp = 4 replicates each
// kv head twice. The fused QKV projection reads an expanded weight gathered
// from the parameter's rows (4 groups of one q head + k + v, 8 rows each:
// 96 rows, the k and v rows of a kv group twice); attention reads 4 kv
// heads; the forward's result is unchanged.
// RUN: weft-opt %S/Inputs/llama_2layer.mlir --weft-expand-kv-heads=tp=4 | FileCheck %s
// RUN: weft-opt %S/Inputs/llama_2layer.mlir --weft-expand-kv-heads=tp=4 --weft-diff-each-pass --weft-diff-rtol=1e-12 -o /dev/null
// RUN: weft-opt %S/Inputs/llama_2layer.mlir --weft-expand-kv-heads=tp=2 | FileCheck %s --check-prefix=SAME
// RUN: not weft-opt %S/Inputs/llama_2layer.mlir --weft-expand-kv-heads=tp=8 2>&1 | FileCheck %s --check-prefix=BAD
// The whole pipeline: expand, autodiff, place, partition at tp = 4 with SP.
// RUN: weft-opt %S/Inputs/llama_2layer.mlir --weft-expand-kv-heads=tp=4 --weft-autodiff=optimizer=adamw --weft-place="grid=tp=4 sequence-parallel func=forward_step" --weft-partition=sequence-parallel --weft-diff-each-pass --weft-diff-entry=forward_step --weft-diff-rtol=1e-10 -o /dev/null

// CHECK-LABEL: func.func @forward(
// CHECK: %[[ROWS:.*]] = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 16, {{.*}}, 31, 8, 9, 10, 11, 12, 13, 14, 15, 16, {{.*}}]> : tensor<96xi64>
// CHECK: %[[W:.*]] = weft.embedding %[[ROWS]], %{{.*}} : (tensor<96xi64>, tensor<64x32xf64>) -> tensor<96x32xf64>
// CHECK: weft.linear %{{.*}}, %[[W]] {{.*}} -> tensor<2x8x96xf64>
// CHECK: weft.reshape {{.*}} -> tensor<2x8x4x3x8xf64>
// CHECK: weft.split {{.*}} {dim = 3 : i64, sizes = array<i64: 1, 1, 1>
// CHECK: weft.attention {{.*}} : (tensor<2x4x8x8xf64>, tensor<2x4x8x8xf64>, tensor<2x4x8x8xf64>, tensor<i64>) -> tensor<2x4x8x8xf64>

// At tp = 2 every rank holds a whole kv head already: nothing changes.
// SAME-NOT: weft.embedding %cst
// SAME: weft.attention {{.*}} : (tensor<2x4x8x8xf64>, tensor<2x2x8x8xf64>, tensor<2x2x8x8xf64>, tensor<i64>)

// BAD: error: 'weft.attention' op has 4 query heads and 2 kv heads: tp=8 must divide the query heads and be a multiple of the kv heads to replicate them
