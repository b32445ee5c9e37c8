// With --fold-attention-layout (the default for packages), attention reads the qkv linear's output in
// place: the model's [b, s, kv_heads, g + 2, d] split (Megatron-LM's grouped
// heads) and the gradient's concat become views of one buffer, the q / k / v
// transposes cancel, and the kernels are the seq-major packed ones (_sm_pqkv,
// _pgrad, _grp) whose tensor maps cover the packed tensor: heads 2 + 2 * 2 =
// 6, strides (6 * 64 * 2 bytes per row, 64 * 2 per head, 16 rows per batch).
// REQUIRES: ptxas
//
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB --target=sm_90a --emit=package --tuning-table=none --attention-mma=warpgroup --block-q=128 --block-k=128 --fold-attention-layout --fuse-elementwise -o %t.weftpkg
// RUN: weft-run --check %t.weftpkg | FileCheck %s --check-prefix=CHECKPKG
// CHECKPKG: ok
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB --fold-attention-layout --fuse-elementwise -o %t.step.mlir
// RUN: weft-run %t.step.mlir --entry forward_step --random-inputs --save-inputs %t.state.npz > /dev/null
// RUN: weft-run %t.weftpkg --dry-run --load-state %t.state.npz --data %t.state.npz | FileCheck %s
// CHECK: image {{[0-9]+}} 'weft_attention_bf16_d64_causal_q128_k128_wgmma_s2_sm_pqkv_grp': cubin
// CHECK: image {{[0-9]+}} 'weft_attention_grad_bf16_d64_causal_q128_k128_wgmma_s2_sm_pqkv_pgrad_grp': cubin
// CHECK-NOT: launch {{.*}} weft_split
// CHECK-NOT: launch {{.*}} weft_transpose
// CHECK: launch {{[0-9]+}} at {{[0-9]+}} stream 0: weft_attn_forward_bf16_d64_causal_q128_k128_wgmma_s2_sm_pqkv_grp grid (1, 2, 2) {{.*}} [+0 tensormap '[[QKV:s[0-9]+]]'@{{[0-9]+}} dims [64, 16, 6, 2] strides [768, 128, 12288] box [64, 128, 1, 1] swizzle 128B, +128 tensormap '[[QKV]]'@{{[0-9]+}} dims [64, 16, 6, 2] {{.*}}, +256 tensormap '[[QKV]]'@
// CHECK-NOT: launch {{.*}} weft_concat
// CHECK-NOT: launch {{.*}} weft_transpose
// CHECK: launch {{[0-9]+}} at {{[0-9]+}} stream 0: weft_attn_backward_dkdv_{{.*}}_sm_pqkv_pgrad_grp {{.*}} +528 ptr '[[DQKV:s[0-9_]+]]'@{{[0-9]+}}, +536 ptr '[[DQKV]]'@
// CHECK: launch {{[0-9]+}} at {{[0-9]+}} stream 0: weft_attn_backward_dq_{{.*}}_sm_pqkv_pgrad_grp {{.*}} +528 ptr '[[DQKV]]'@
// CHECK-NOT: launch {{.*}} weft_concat
// CHECK-NOT: launch {{.*}} weft_transpose
//
// Without the fold (--fold-attention-layout=false), the split, the transposes and the concat run.
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB --target=sm_90a --emit=package --tuning-table=none --attention-mma=warpgroup --block-q=128 --block-k=128 --fuse-elementwise --fold-attention-layout=false -o %t.plain.weftpkg
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB --fuse-elementwise -o %t.plain.mlir
// RUN: weft-run %t.plain.mlir --entry forward_step --random-inputs --save-inputs %t.plain.npz > /dev/null
// RUN: weft-run %t.plain.weftpkg --dry-run --load-state %t.plain.npz --data %t.plain.npz | FileCheck %s --check-prefix=PLAIN
// PLAIN: launch {{.*}} weft_split
// PLAIN: launch {{.*}} weft_transpose
// PLAIN: launch {{.*}} weft_concat
//
// The reference interpreter gives the folded step the values of the plain
// one at every pass.
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --fold-attention-layout --fuse-elementwise --weft-diff-each-pass -o /dev/null
