// weft-compile --attention-layout: the kernels' names, the units' metadata
// and the C launcher say the layout; the tensor maps are rank 4 with the
// strides of [b, s, h, d] (seq_major) and of one packed qkv tensor.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels --attention-mma=warpgroup --tuning-table=none --block-q=128 --block-k=64 --attention-layout=seq_major -o %t/sm
// RUN: FileCheck %s --check-prefix=SM-JSON < %t/sm/layer_attention_0.json
// RUN: FileCheck %s --check-prefix=SM-H < %t/sm/layer_attention_0.h
// RUN: FileCheck %s --check-prefix=SM-C < %t/sm/layer_attention_0.c
// RUN: weft-compile %s --emit=kernels --attention-mma=warpgroup --tuning-table=none --block-q=128 --block-k=64 --attention-layout=packed -o %t/packed
// RUN: FileCheck %s --check-prefix=PK-H < %t/packed/layer_attention_grad_0.h
// RUN: FileCheck %s --check-prefix=PK-C < %t/packed/layer_attention_grad_0.c
// RUN: FileCheck %s --check-prefix=PK-JSON < %t/packed/layer_attention_grad_0.json
// RUN: weft-compile %s --emit=kernels --attention-mma=warpgroup --tuning-table=none --block-q=128 --block-k=64 -o %t/hm
// RUN: FileCheck %s --check-prefix=HM-C < %t/hm/layer_attention_0.c
// RUN: not weft-compile %s --emit=kernels --attention-layout=bshd -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not weft-compile %s --train --entry=layer --emit=package --attention-layout=packed -o %t/bad.weftpkg 2>&1 | FileCheck %s --check-prefix=ERR-EMIT

// SM-JSON: "layout": "seq_major"
// SM-JSON: "name": "weft_attn_forward_bf16_d64_causal_q128_k64_wgmma_s2_sm",
// SM-H: Layout seq_major: tensors are contiguous [batch, len, heads, head_dim] bf16.
// SM-H: #define layer_attention_0_LAYOUT "seq_major"
// SM-H: CUresult layer_attention_0_launch(layer_attention_0_module *module, CUstream stream, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr out, CUdeviceptr lse);
// SM-C: "layout=seq_major\n"
// The load-time check rebuilds the metadata from the header, layout included.
// SM-C: head_dim=%d\ncausal=%d\nblock_q=%d\nblock_k=%d\nscale=%.9e\nlayout=%s\n",
// SM-C: (double)layer_attention_0_SCALE, layer_attention_0_LAYOUT);
// q [1, 200, 4, 64]: dims (64, 200, 4, 1), strides (4 * 64 * 2, 64 * 2, 200 * 512).
// SM-C: const unsigned long long dims[4] = {64ull, 200ull, 4ull, 1ull};
// SM-C-NEXT: const unsigned long long strides[3] = {512ull, 128ull, 102400ull};
// SM-C-NEXT: const unsigned box[4] = {64u, 128u, 1u, 1u};
// SM-C-NEXT: weft_tensor_map_encode_tiled(&q_map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4u, (void *)(uintptr_t)q,
// k [1, 200, 2, 64]: row pitch 2 * 64 * 2 = 256 bytes.
// SM-C: const unsigned long long dims[4] = {64ull, 200ull, 2ull, 1ull};
// SM-C-NEXT: const unsigned long long strides[3] = {256ull, 128ull, 51200ull};

// PK-H: Layout packed: tensors are contiguous [batch, len, heads, head_dim] bf16;
// PK-H-NEXT: qkv is one [batch, len, q_heads + 2 * kv_heads, head_dim] tensor
// PK-H-NEXT: dqkv is the gradient in the same packed form.
// PK-H: #define layer_attention_grad_0_LAYOUT "packed"
// PK-H: CUresult layer_attention_grad_0_launch(layer_attention_grad_0_module *module, CUstream stream, CUdeviceptr qkv, CUdeviceptr out, CUdeviceptr dout, CUdeviceptr lse, CUdeviceptr delta_workspace, CUdeviceptr dqkv);
// qkv [1, 200, 4 + 2 * 2, 64]: every map of q, k, v spans all 8 heads (row
// pitch 8 * 128 = 1024 bytes); dout stays [1, 200, 4, 64].
// PK-C: const unsigned long long dims[4] = {64ull, 200ull, 8ull, 1ull};
// PK-C-NEXT: const unsigned long long strides[3] = {1024ull, 128ull, 204800ull};
// PK-C: (void *)(uintptr_t)qkv,
// PK-C: const unsigned long long dims[4] = {64ull, 200ull, 4ull, 1ull};
// PK-C: (void *)(uintptr_t)dout,
// PK-C: void *args[] = {&q_map, &k_map, &v_map, &dout_map, &lse, &delta_workspace, &dqkv, &dqkv, &batch,
// PK-JSON: "layout": "packed"
// PK-JSON: "name": "weft_attn_backward_dkdv_bf16_d64_causal_q128_k64_wgmma_s2_sm_pqkv_pgrad",

// head_major keeps today's names and its maps are (d, len, heads, batch).
// HM-C: "layout=head_major\n"
// HM-C: /* weft_attn_forward_bf16_d64_causal_q128_k64_wgmma_s2 (forward) */
// HM-C: const unsigned long long dims[4] = {64ull, 200ull, 4ull, 1ull};
// HM-C-NEXT: const unsigned long long strides[3] = {128ull, 25600ull, 102400ull};

// ERR: --attention-layout must be head_major, seq_major{{.*}}, got 'bshd'
// ERR-EMIT: --attention-layout=packed applies to --emit=kernels only

func.func @layer(%q: tensor<1x4x200x64xbf16>, %k: tensor<1x2x200x64xbf16>, %v: tensor<1x2x200x64xbf16>, %do: tensor<1x4x200x64xbf16>) -> (tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>) {
  %o, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>) -> (tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>)
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal} : (tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>) -> (tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>
}

// A seq-major op (a step built with --fold-attention-layout) gets seq-major
// units whatever --attention-layout says, its shapes read as [b, s, h, d]:
// gpt_bf16 has batch 2, 2 heads, seq 16.
// RUN: weft-compile %S/../../Tools/weft-run/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --fold-attention-layout --emit=kernels --tuning-table=none -o %t/step
// RUN: FileCheck %s --check-prefix=STEP-H < %t/step/forward_step_attention_grad_0.h
// STEP-H: Layout seq_major: tensors are contiguous [batch, len, heads, head_dim] bf16
// STEP-H: #define forward_step_attention_grad_0_BATCH 2
// STEP-H-NEXT: #define forward_step_attention_grad_0_Q_HEADS 2
// STEP-H-NEXT: #define forward_step_attention_grad_0_KV_HEADS 2
// STEP-H-NEXT: #define forward_step_attention_grad_0_Q_LEN 16
// STEP-H-NEXT: #define forward_step_attention_grad_0_K_LEN 16
