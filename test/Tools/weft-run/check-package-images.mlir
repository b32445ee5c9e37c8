// REQUIRES: ptxas
// Every kernel of the bf16 GPT block's training step has an image in the
// package: the attention kernels (AttentionToNVVM) and every other non-GEMM
// op (ElementwiseToNVVM: convert, add, layer_norm(_grad), gelu(_grad),
// cross_entropy(_grad), adamw, transpose, split, concat, embedding(_grad),
// reduce_sum, the fill of the constant), so the strict check passes.
//
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB --target=sm_90a --emit=package --tuning-table=none -o %t.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTE
// NOTE-NOT: no image
// NOTE-NOT: warning
//
// RUN: weft-run --check %t.weftpkg | FileCheck %s
// CHECK: package format 2, weft 0.5.0, arch sm_90a, step @forward_step_plan
// Each of the three layer_norm_grads runs three kernels (row statistics,
// column sums, rows) from one image.
// CHECK: {{[0-9]+}} buffers, [[KERNELS:[0-9]+]] kernels ([[KERNELS]] with images), {{[0-9]+}} launches, 15 gemms, 0 events, {{[0-9]+}} images
// CHECK-NEXT: ok
//
// The same step with weft-fuse-elementwise's groups (add+layer_norm,
// layer_norm_grad+add, convert+adamw, ...): every group gets its image.
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB --fuse-elementwise --target=sm_90a --emit=package --tuning-table=none -o %t.fused.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTE
// RUN: weft-run --check %t.fused.weftpkg | FileCheck %s
