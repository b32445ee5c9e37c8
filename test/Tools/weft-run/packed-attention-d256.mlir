// REQUIRES: ptxas
// A GPT block at head_dim 256 (hidden 512, 2 heads) packaged for training:
// its attention takes the warpgroup kernels at the tuning table's d256
// tiles on the packed, grouped qkv (forward 128 x 64 ping-pong, backward
// 64 x 64 with 384-thread dK/dV CTAs: two consumer warpgroups of 64 keys).
//
// RUN: weft-compile %S/Inputs/gpt_d256_bf16.mlir --entry forward --train --target=sm_90a --emit=package --tuning-table=%weft_src/bench/attention_tuning.json -o %t.weftpkg
// RUN: weft-run --check %t.weftpkg | FileCheck %s --check-prefix=CHECKPKG
// CHECKPKG: 15 gemms
// CHECKPKG-NEXT: ok
// RUN: weft-compile %S/Inputs/gpt_d256_bf16.mlir --entry forward --train -o %t.step.mlir
// RUN: weft-run %t.step.mlir --entry forward_step --random-inputs --save-inputs %t.state.npz > /dev/null
// RUN: weft-run %t.weftpkg --dry-run --load-state %t.state.npz --data %t.state.npz | FileCheck %s
// CHECK: weft_attn_forward_bf16_d256_causal_q128_k64_wgmma_s2_pp_sm_pqkv_grp grid (1, 2, 2) block (384, 1, 1) smem 196680
// CHECK-SAME: dims [256, 16, 6, 2] strides [3072, 512, 49152] box [64, 128, 1, 1]
// CHECK: weft_attn_backward_dkdv_bf16_d256_causal_q64_k64_wgmma_s2_sm_pqkv_pgrad_grp grid (1, 2, 2) block (384, 1, 1) smem 197672
// CHECK: weft_attn_backward_dq_bf16_d256_causal_q64_k64_wgmma_s2_sm_pqkv_pgrad_grp grid (1, 2, 2) block (256, 1, 1) smem 196648
//
// Without a table entry (--tuning-table=none) the same tiles, serial.
// RUN: weft-compile %S/Inputs/gpt_d256_bf16.mlir --entry forward --train --target=sm_90a --emit=package --tuning-table=none -o %t.untuned.weftpkg
// RUN: weft-run %t.untuned.weftpkg --dry-run --load-state %t.state.npz --data %t.state.npz | FileCheck %s --check-prefix=UNTUNED
// UNTUNED: weft_attn_forward_bf16_d256_causal_q128_k64_wgmma_s2_sm_pqkv_grp grid
// UNTUNED: weft_attn_backward_dkdv_bf16_d256_causal_q64_k64_wgmma_s2_sm_pqkv_pgrad_grp grid
