// Tensor parallelism (Megatron-LM) on a 2-layer GPT step at tp = 2: per layer
// two all-reduces in the forward (after the row-parallel proj and fc2) and
// two in the backward (after the column-parallel qkv and fc1 input
// gradients); the vocabulary-parallel embedding and cross-entropy add theirs
// outside the layers; nothing else communicates.
// RUN: weft-opt %S/Inputs/gpt_2layer.mlir --weft-autodiff=optimizer=adamw --weft-place=grid=tp=2 --weft-partition | FileCheck %s
// RUN: weft-opt %S/Inputs/llama_2layer.mlir --weft-autodiff=optimizer=adamw --weft-place=grid=tp=2 --weft-partition | FileCheck %s --check-prefix=LLAMA

// CHECK-LABEL: func.func @forward_step(
// CHECK-SAME: weft.split_dim = 0
// CHECK: weft.embedding
// CHECK-NEXT: shard.all_reduce
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: weft.attention
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: shard.all_reduce {{.*}} {weft.layer = 0 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: shard.all_reduce {{.*}} {weft.layer = 0 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: weft.attention
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: shard.all_reduce {{.*}} {weft.layer = 1 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: shard.all_reduce {{.*}} {weft.layer = 1 : i64}
// The loss: max, sum of exp and label logit over the vocabulary shards.
// CHECK: shard.all_reduce {{.*}} reduction = max
// CHECK: shard.all_reduce
// CHECK: shard.all_reduce
// CHECK: weft.cross_entropy_combine
// CHECK: shard.all_reduce {{.*}} reduction = max
// CHECK: shard.all_reduce
// CHECK: shard.all_reduce
// CHECK: weft.cross_entropy_grad_partial
// The LM head's input gradient.
// CHECK: shard.all_reduce
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: shard.all_reduce {{.*}} {weft.layer = 1 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: weft.attention_grad
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: shard.all_reduce {{.*}} {weft.layer = 1 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: shard.all_reduce {{.*}} {weft.layer = 0 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: weft.attention_grad
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: shard.all_reduce {{.*}} {weft.layer = 0 : i64}
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: weft.embedding_grad
// CHECK-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// CHECK: return

// LLaMA (RMSNorm, RoPE, SwiGLU, GQA 4:2): gate and up are column-parallel,
// down row-parallel; the same two all-reduces per layer each way.
// LLAMA-LABEL: func.func @forward_step(
// LLAMA: weft.attention
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: shard.all_reduce {{.*}} {weft.layer = 0 : i64}
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: weft.silu
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: shard.all_reduce {{.*}} {weft.layer = 0 : i64}
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: weft.attention
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: shard.all_reduce {{.*}} {weft.layer = 1 : i64}
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: shard.all_reduce {{.*}} {weft.layer = 1 : i64}
// LLAMA: weft.cross_entropy_grad_partial
// LLAMA: shard.all_reduce
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: shard.all_reduce {{.*}} {weft.layer = 1 : i64}
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: weft.attention_grad
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: shard.all_reduce {{.*}} {weft.layer = 1 : i64}
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: shard.all_reduce {{.*}} {weft.layer = 0 : i64}
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: weft.attention_grad
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: shard.all_reduce {{.*}} {weft.layer = 0 : i64}
// LLAMA-NOT: shard.{{all_reduce|reduce_scatter|all_gather|all_slice}}
// LLAMA: return
