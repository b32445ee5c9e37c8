// REQUIRES: ptxas
// ptxas -arch=sm_90a -v accepts every kernel of every case fused_check.py
// runs on the GPU (test/gpu/fused_cases.py, small shapes): 113 kernels, none
// with spill stores, spill loads or a stack frame.
// RUN: rm -rf %t && %python %S/../../gpu/fused_cases.py --small > %t.mlir
// RUN: weft-compile %t.mlir --emit=elementwise-kernels -o %t > %t.resources
// RUN: FileCheck %s --input-file=%t.resources
// RUN: not grep -v "spill_stores=0 spill_loads=0 stack=0 " %t.resources
// RUN: grep -c registers= %t.resources | FileCheck %s --check-prefix=COUNT
// COUNT: 113
// The three kernels of a lone norm-weight gradient (statistics, column sums,
// then dx over the statistics' scratch) and the single loss kernel.
// CHECK-DAG: layer_norm_grad_bf16_0 layer_norm_grad_bf16_0_stats: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: layer_norm_grad_bf16_0 layer_norm_grad_bf16_0_colsum: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: layer_norm_grad_bf16_0 layer_norm_grad_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: cross_entropy_bf16_0 cross_entropy_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// With ignore_index: the loss kernel also sums the kept rows, the gradient
// kernel counts them first.
// CHECK-DAG: cross_entropy_ignore_bf16_0 cross_entropy_ignore_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: cross_entropy_grad_ignore_bf16_0 cross_entropy_grad_ignore_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// bf16 logits, f32 loss and dloss (f32 math; the gradient written in bf16).
// CHECK-DAG: cross_entropy_f32_loss_bf16_0 cross_entropy_f32_loss_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: cross_entropy_grad_f32_dloss_bf16_0 cross_entropy_grad_f32_dloss_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: adamw_convert_bf16_0 adamw_convert_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// The generic pointwise ops from their formulas, one group per dtype.
// CHECK-DAG: tanh_exp_rsqrt_neg_bf16_0 tanh_exp_rsqrt_neg_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: tanh_exp_rsqrt_neg_f32_0 tanh_exp_rsqrt_neg_f32_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// Dropout p = 0.1 (the Philox draws) fused with the residual add and
// LayerNorm, its backward group (rows, column sums) and alone with a tail.
// CHECK-DAG: dropout_p01_add_layer_norm_bf16_0 dropout_p01_add_layer_norm_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: layer_norm_grad_add_dropout_p01_bf16_0 layer_norm_grad_add_dropout_p01_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: layer_norm_grad_add_dropout_p01_bf16_0 layer_norm_grad_add_dropout_p01_bf16_0_colsum: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: dropout_p01_tail_f32_0 dropout_p01_tail_f32_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// The split-master updates (i16 low halves): alone, as a step's group (with
// a scalar tail) and fused with the gradient's producer.
// CHECK-DAG: adamw_split_bf16_0 adamw_split_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: adamw_split_tail_bf16_0 adamw_split_tail_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: add_adamw_split_bf16_0 add_adamw_split_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// RoPE forward and inverse in each dtype (partners as whole vectors), over
// [1, 3, 7, 12] (partners per element / per lane), and fused after RMSNorm
// (rows) and after a multiply (pointwise).
// CHECK-DAG: rope_bf16_0 rope_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: rope_inverse_bf16_0 rope_inverse_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: rope_f16_0 rope_f16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: rope_inverse_f16_0 rope_inverse_f16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: rope_f32_0 rope_f32_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: rope_inverse_f32_0 rope_inverse_f32_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: rope_odd_bf16_0 rope_odd_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: rope_inverse_odd_f32_0 rope_inverse_odd_f32_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: rms_norm_rope_bf16_0 rms_norm_rope_bf16_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: mul_rope_inverse_f32_0 mul_rope_inverse_f32_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// Every unit has its PTX, cubin and launch JSON.
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// FILES: adamw_convert_bf16_0.cubin
// FILES-NEXT: adamw_convert_bf16_0.json
// FILES-NEXT: adamw_convert_bf16_0.ptx
// RUN: %python -c "import json,sys; u=json.load(open(sys.argv[1])); print(u['kind'], [l['kernel'] for l in u['launches']], [p['role'] for p in u['params']])" %t/layer_norm_grad_add_bf16_0.json | FileCheck %s --check-prefix=JSON
// A group's rows kernel parks the statistics in its workspace, the column
// sums follow.
// JSON: layer_norm_grad+add ['layer_norm_grad_add_bf16_0', 'layer_norm_grad_add_bf16_0_colsum'] ['input', 'input', 'input', 'input', 'output', 'output', 'output', 'workspace']
