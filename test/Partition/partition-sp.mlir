// Sequence parallelism (Korthikanti et al. 2022) at tp = 2: each all-reduce
// of an activation becomes a reduce-scatter along the sequence, norms,
// dropouts and residual adds run on sequence shards, and an all-gather along
// the sequence precedes each column-parallel GEMM. Per layer the forward has
// 2 reduce-scatters + 2 all-gathers; the backward mirrors them (2
// reduce-scatters after the column-parallel input gradients, 2 all-gathers
// of the output gradients before the row-parallel ones) and re-gathers the 2
// saved sequence shards the weight gradients read, as Megatron-LM does. No
// activation is all-reduced; the replicated norm weights' (and row-parallel
// biases') gradients are summed over the ranks.
// RUN: weft-opt %S/Inputs/gpt_2layer.mlir --weft-autodiff=optimizer=adamw --weft-place="grid=tp=2 sequence-parallel func=forward_step" --weft-partition=sequence-parallel -o %t.gpt.mlir
// RUN: FileCheck %s < %t.gpt.mlir
// RUN: not grep -E 'shard.all_reduce .*tensor<2x[48]x32xf64>' %t.gpt.mlir
// RUN: grep -c 'shard.reduce_scatter .*weft.layer = 0 ' %t.gpt.mlir | FileCheck %s --check-prefix=FOUR
// RUN: grep -c 'shard.all_gather .*gather_axis = 1 {weft.layer = 0 ' %t.gpt.mlir | FileCheck %s --check-prefix=SIX
// RUN: weft-opt %S/Inputs/llama_2layer.mlir --weft-autodiff=optimizer=adamw --weft-place="grid=tp=2 sequence-parallel func=forward_step" --weft-partition=sequence-parallel -o %t.llama.mlir
// RUN: not grep -E 'shard.all_reduce .*tensor<2x[48]x32xf64>' %t.llama.mlir
// RUN: grep -c 'shard.reduce_scatter .*weft.layer = 1 ' %t.llama.mlir | FileCheck %s --check-prefix=FOUR
// RUN: grep -c 'shard.all_gather .*gather_axis = 1 {weft.layer = 1 ' %t.llama.mlir | FileCheck %s --check-prefix=SIX

// FOUR: 4
// SIX: 6

// CHECK-LABEL: func.func @forward_step(
// CHECK: weft.embedding
// CHECK-NEXT: shard.reduce_scatter {{.*}} scatter_axis = 1 : tensor<2x8x32xf64> -> tensor<2x4x32xf64>
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: weft.dropout {{.*}} {global_shape = array<i64: 2, 8, 32>
// CHECK: weft.layer_norm {{.*}} : (tensor<2x4x32xf64>
// CHECK-NEXT: shard.all_gather {{.*}} gather_axis = 1 {weft.layer = 0 : i64} : tensor<2x4x32xf64> -> tensor<2x8x32xf64>
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: weft.attention
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: shard.reduce_scatter {{.*}} {weft.layer = 0 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: weft.layer_norm
// CHECK-NEXT: shard.all_gather {{.*}} {weft.layer = 0 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: shard.reduce_scatter {{.*}} {weft.layer = 0 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: weft.layer_norm
// CHECK-NEXT: shard.all_gather {{.*}} {weft.layer = 1 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: shard.reduce_scatter {{.*}} {weft.layer = 1 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: shard.all_gather {{.*}} {weft.layer = 1 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather}}
// CHECK: shard.reduce_scatter {{.*}} {weft.layer = 1 : i64}
// The backward's norm-weight gradients: partial over the sequence shards.
// CHECK: weft.layer_norm_grad
// CHECK-NEXT: shard.all_reduce %dgamma {{.*}} : tensor<32xf64>
// CHECK-NEXT: shard.all_reduce %dbeta {{.*}} : tensor<32xf64>
