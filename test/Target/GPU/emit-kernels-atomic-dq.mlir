// The backward's atomic dQ (weft.attention_grad's atomic_dq, set here by
// weft-compile --attention-dq=atomic): preprocess (delta, and the f32 dQ
// accumulator zeroed), dK/dV (which also adds dS K into the accumulator, by
// the TMA unit's bulk reduce-add), and backward_dq_convert (dq = scale *
// accumulator); no dQ kernel.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels --attention-dq=atomic --attention-mma=warpgroup --tuning-table=none --block-q=128 --block-k=128 -o %t
// RUN: FileCheck %s --check-prefix=BWD < %t/layer_attention_grad_0.json
// RUN: FileCheck %s --check-prefix=PTX < %t/layer_attention_grad_0.ptx
// RUN: FileCheck %s --check-prefix=FWD < %t/layer_attention_0.json
// RUN: not weft-compile %s --emit=kernels --attention-dq=atomic --attention-mma=warp --tuning-table=none -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR-WARP
// RUN: not weft-compile %s --emit=kernels --attention-dq=sometimes -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR-MODE
// RUN: sed -e 's/weft.attention_grad %dout, %q, %k, %v, %out, %lse {causal}/weft.attention_grad %dout, %q, %k, %v, %out, %lse {causal, atomic_dq}/' %s > %t.attr.mlir
// RUN: rm -rf %t.attr && weft-compile %t.attr.mlir --emit=kernels --attention-mma=warpgroup --tuning-table=none --block-q=128 --block-k=128 -o %t.attr
// RUN: FileCheck %s --check-prefix=BWD < %t.attr/layer_attention_grad_0.json

// The forward is unchanged.
// FWD: "name": "weft_attn_forward_bf16_d128_causal_q128_k128_wgmma_s2"

// The dK/dV kernel's shared memory: K and V (65536), 2 stages of 64 rows of
// Q and dO (65536), two dS tiles of 128 keys x 64 queries (32768), each
// consumer's f32 staging rows (2 x 64 x (64 x 4 + 16) = 34816), lse and
// delta (1024), 5 mbarriers (40): 199720 bytes. The workspace: delta
// (1 x 4 x 256 x 4 = 4096 bytes), then the accumulator (4 x 256 x 128 x 4).
// BWD: "atomic_dq": true
// BWD: "name": "weft_attn_backward_preprocess_bf16_d128_causal_q128_k128_wgmma_s2_adq"
// BWD: "name": "weft_attn_backward_dkdv_bf16_d128_causal_q128_k128_wgmma_s2_adq"
// BWD: "dynamic_smem_bytes": 199720
// BWD: "spill_store_bytes": 0
// BWD: "name": "weft_attn_backward_dq_convert_bf16_d128_causal_q128_k128_wgmma_s2_adq"
// BWD: "role": "backward_dq_convert"
// BWD: "name": "delta"
// BWD-NEXT: "kind": "pointer"
// BWD: "name": "dq"
// BWD: "threads": 128
// BWD-NEXT: "rows_per_block": 64
// BWD-NOT: "role": "backward_dq"
// BWD: "name": "delta"
// BWD-NEXT: "dtype": "f32"
// BWD: "bytes": 528384
// BWD-NEXT: "dq_accumulator_offset": 4096

// The consumers write dS^T, fence it for the async proxy, meet at named
// barrier 1 (256 threads), multiply with both operands transposed (each its
// 64 columns), stage the f32 rows, meet per warpgroup (128 threads) and
// hand each row to the TMA unit's reduce-add.
// PTX-LABEL: .entry weft_attn_backward_dkdv_bf16_d128_causal_q128_k128_wgmma_s2_adq
// PTX: fence.proxy.async.shared::cta;
// PTX: bar.sync {{%r[0-9]+}}, 256;
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, 1, 1, 1, 1;
// PTX: bar.sync {{%r[0-9]+}}, 128;
// PTX: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [{{%rd[0-9]+}}], [{{%r[0-9]+}}], 256;
// PTX: cp.async.bulk.wait_group 0;
// PTX-LABEL: .entry weft_attn_backward_dq_convert

// The option through a training package: the step's attention_grad takes
// atomic_dq, its workspace the accumulator, and the plan launches the
// convert kernel in place of dQ's.
// RUN: weft-compile %S/../../Tools/weft-run/Inputs/gpt_bf16.mlir --entry forward --train --target=sm_90a --emit=package --attention-dq=atomic --attention-mma=warpgroup --block-q=128 --block-k=128 -o %t.weftpkg
// RUN: weft-compile %S/../../Tools/weft-run/Inputs/gpt_bf16.mlir --entry forward --train -o %t.step.mlir
// RUN: weft-run %t.step.mlir --entry forward_step --random-inputs --save-inputs %t.state.npz > /dev/null
// RUN: weft-run %t.weftpkg --dry-run --load-state %t.state.npz --data %t.state.npz | FileCheck %s --check-prefix=PKG
// PKG: weft_attn_backward_preprocess_bf16_d64_causal_q128_k128_wgmma_s2_sm_pqkv_pgrad_grp_adq
// PKG-NEXT: weft_attn_backward_dkdv_bf16_d64_causal_q128_k128_wgmma_s2_sm_pqkv_pgrad_grp_adq
// PKG-NEXT: weft_attn_backward_dq_convert_bf16_d64_causal_q128_k128_wgmma_s2_sm_pqkv_pgrad_grp_adq
// RUN: weft-compile %S/../../Tools/weft-run/Inputs/gpt_bf16.mlir --entry forward --train --attention-dq=atomic -o - | FileCheck %s --check-prefix=STEP
// STEP: weft.attention_grad {{.*}}atomic_dq

// ERR-WARP: error: the atomic dQ (atomic_dq) is the warpgroup-MMA backward's, at head_dim 64 or 128; got a backward with mma.sync, head_dim 128
// ERR-MODE: --attention-dq must be deterministic or atomic, got 'sometimes'

func.func @layer(%q: tensor<1x4x256x128xbf16>, %k: tensor<1x2x256x128xbf16>, %v: tensor<1x2x256x128xbf16>, %dout: tensor<1x4x256x128xbf16>) -> (tensor<1x4x256x128xbf16>, tensor<1x4x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>) {
  %out, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x4x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>) -> (tensor<1x4x256x128xbf16>, tensor<1x4x256xf32>)
  %dq, %dk, %dv = weft.attention_grad %dout, %q, %k, %v, %out, %lse {causal} : (tensor<1x4x256x128xbf16>, tensor<1x4x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x4x256x128xbf16>, tensor<1x4x256xf32>) -> (tensor<1x4x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>)
  return %out, %dq, %dk, %dv : tensor<1x4x256x128xbf16>, tensor<1x4x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>
}
