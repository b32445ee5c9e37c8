// weft-place: Megatron-LM's placements, found from the graph of a GPT step.
// RUN: weft-opt %S/Inputs/gpt_2layer.mlir --weft-autodiff=optimizer=adamw --weft-place="grid=dp=2,tp=2 func=forward_step" | FileCheck %s
// RUN: weft-opt %S/Inputs/gpt_2layer.mlir --weft-autodiff=optimizer=adamw --weft-place="grid=dp=2,tp=2 func=forward_step" --weft-partition --weft-diff-each-pass --weft-diff-entry=forward_step --weft-diff-rtol=1e-10 -o /dev/null

// CHECK: shard.grid @grid(shape = 2x2) {weft.axis_names = ["dp", "tp"]}
// CHECK-LABEL: func.func @forward_step(
// The token embedding: vocabulary-parallel.
// CHECK: %[[V:.*]] = shard.sharding @grid split_axes = {{\[\[}}1], []] : !shard.sharding
// CHECK-NEXT: shard.shard %arg0 to %[[V]] : tensor<32x32xf64>
// qkv (column-parallel: whole heads per rank) and its bias.
// CHECK: %[[QKV:.*]] = shard.sharding @grid split_axes = {{\[\[}}1], []]
// CHECK-NEXT: shard.shard %arg4 to %[[QKV]] : tensor<96x32xf64>
// CHECK: %[[QKVB:.*]] = shard.sharding @grid split_axes = {{\[\[}}1]]
// CHECK-NEXT: shard.shard %arg5 to %[[QKVB]] : tensor<96xf64>
// proj (row-parallel); its bias stays replicated.
// CHECK: %[[PROJ:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [1]]
// CHECK-NEXT: shard.shard %arg6 to %[[PROJ]] : tensor<32x32xf64>
// CHECK-NOT: shard.shard %arg7
// fc1 column-, fc2 row-parallel.
// CHECK: shard.shard %arg10 to {{.*}} : tensor<64x32xf64>
// CHECK: shard.shard %arg11 to {{.*}} : tensor<64xf64>
// CHECK: shard.shard %arg12 to {{.*}} : tensor<32x64xf64>
// Layer 1's qkv; the LM head: vocabulary-parallel (column).
// CHECK: shard.shard %arg16 to {{.*}} : tensor<96x32xf64>
// CHECK: shard.shard %arg28 to {{.*}} : tensor<32x32xf64>
// The AdamW moments follow their parameters.
// CHECK: shard.shard %arg29 to {{.*}} : tensor<32x32xf64>
// CHECK: shard.shard %arg33 to {{.*}} : tensor<96x32xf64>
