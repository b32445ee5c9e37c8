// A token model with dropout at tp = 2, with and without sequence parallelism: every
// shard's place in its global tensor is a rank-relative launch immediate (base + position x
// scale along grid axis 0): the vocabulary-parallel embedding's and
// cross-entropy's first row (64 / 2 = 32), the attention's first head for
// its dropout mask (dropout_heads 2, one head a rank), and with SP the
// residual dropouts' first sequence row and the position table's all_slice
// (32 / 2 = 16). The packages check with every kernel's image.
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_dropout_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=2 --tuning-table=none -o %t.tp.mlir
// RUN: weft-opt %t.tp.mlir --weft-build-plan | FileCheck %s --check-prefix=TP
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_dropout_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=2 --sequence-parallel --tuning-table=none -o %t.sp.mlir
// RUN: weft-opt %t.sp.mlir --weft-build-plan | FileCheck %s --check-prefix=SP
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_dropout_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=2 --sequence-parallel --fuse-elementwise --tuning-table=none --target=sm_90a --emit=package -o %t.sp.weftpkg
// RUN: weft-run --check %t.sp.weftpkg | FileCheck %s --check-prefix=CHECK-PKG

// TP: weft_plan.launch @weft_embedding_{{[0-9]+}} [@arg{{[0-9]+}}, @s{{[0-9]+}}, {base = 0 : i64, rank_axes = array<i64: 0>, scale = 32 : i64}, @s{{[0-9]+}}]
// TP: weft_plan.launch @weft_attn_forward_{{.*}}_dh2 [{{.*}}, {base = 0 : i32, rank_axes = array<i64: 0>, scale = 1 : i64}, @arg{{[0-9]+}}]
// TP: weft_plan.launch @weft_cross_entropy_partial_{{[0-9]+}} [{{.*}}, {base = 0 : i64, rank_axes = array<i64: 0>, scale = 32 : i64}, @s{{[0-9_]+}}, @s{{[0-9_]+}}]
// TP: weft_plan.launch @weft_cross_entropy_combine_
// TP: weft_plan.launch @weft_cross_entropy_grad_partial_{{[0-9]+}} [{{.*}}, {base = 0 : i64, rank_axes = array<i64: 0>, scale = 32 : i64}, @s{{[0-9]+}}]
// TP: weft_plan.launch @weft_attn_backward_dkdv_{{.*}}_dh2 [{{.*}}, {base = 0 : i32, rank_axes = array<i64: 0>, scale = 1 : i64}, @arg{{[0-9]+}}]
// TP: weft_plan.launch @weft_embedding_grad_{{[0-9]+}} [@s{{[0-9]+}}, @arg{{[0-9]+}}, {base = 0 : i64, rank_axes = array<i64: 0>, scale = 32 : i64}, @s{{[0-9]+}}]

// SP: weft_plan.launch @weft_all_slice_{{[0-9]+}} [@s{{[0-9]+}}, {base = 0 : i64, rank_axes = array<i64: 0>, scale = 16 : i64}, @s{{[0-9]+}}]
// SP: weft_plan.launch @weft_dropout_{{[0-9]+}} [@s{{[0-9]+}}, @arg{{[0-9]+}}, 0, {base = 0 : i64, rank_axes = array<i64: 0>, scale = 16 : i64}, 0, @s{{[0-9]+}}]

// CHECK-PKG: grid 2 (2 ranks, one plan)
// CHECK-PKG: rank-relative immediates in
// CHECK-PKG: ok
