// weft-compile --emit=kernels for an attention with dropout_p > 0: the
// kernels draw the Philox mask themselves (the 10 rounds' multiplier
// 0xD2511F53 = -766435501 as an i32 in the PTX, the products' high halves by
// mul.hi.u32, warp shuffles trading the draws), the
// Hopper (TMA + wgmma) kernels at the tiles asked for (as the tuning table's
// q128 k128; the forward 2 stages, the backward 3: fitDropoutTiles), the
// mma.sync kernels (--attention-mma=warp) at 64 x 64; ptxas finds no spill,
// and the launchers take the seed's device address last. The Hopper units
// draw their mask once, in a keep-mask kernel, into their workspace (the
// backward's after delta); the forward, dK/dV and dQ kernels read it and run
// no Philox round.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels -o %t --attention-mma=warpgroup --block-q=128 --block-k=128
// RUN: FileCheck %s --check-prefix=FWD-JSON < %t/layer_attention_0.json
// RUN: FileCheck %s --check-prefix=BWD-JSON < %t/layer_attention_grad_0.json
// RUN: FileCheck %s --check-prefix=FWD-H < %t/layer_attention_0.h
// RUN: FileCheck %s --check-prefix=BWD-H < %t/layer_attention_grad_0.h
// RUN: FileCheck %s --check-prefix=SRC < %t/layer_attention_0.c
// RUN: FileCheck %s --check-prefix=FWD-PTX < %t/layer_attention_0.ptx
// RUN: FileCheck %s --check-prefix=GRAD-PTX < %t/layer_attention_grad_0.ptx
// No kernel of either unit spills.
// RUN: not grep -E '"(spill_store|spill_load|stack)_bytes": [1-9]' %t/layer_attention_0.json %t/layer_attention_grad_0.json
// --attention-mma=warp gives dropout the mma.sync kernels at 64 x 64.
// RUN: weft-compile %s --emit=kernels -o %t/warp --attention-mma=warp
// RUN: FileCheck %s --check-prefix=WARP-JSON < %t/warp/layer_attention_0.json
// RUN: FileCheck %s --check-prefix=WARP-BWD < %t/warp/layer_attention_grad_0.json
// RUN: FileCheck %s --check-prefix=PTX < %t/warp/layer_attention_grad_0.ptx
// RUN: not grep -E '"(spill_store|spill_load|stack)_bytes": [1-9]' %t/warp/layer_attention_0.json %t/warp/layer_attention_grad_0.json

func.func @layer(%q: tensor<2x4x256x64xbf16>, %k: tensor<2x2x256x64xbf16>,
                 %v: tensor<2x2x256x64xbf16>, %do: tensor<2x4x256x64xbf16>, %seed: tensor<i64>)
    -> (tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>) {
  %o, %lse = weft.attention %q, %k, %v, %seed {causal, dropout_p = 0.1 : f64, weft.rng_id = 7 : i64} : (tensor<2x4x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<i64>) -> (tensor<2x4x256x64xbf16>, tensor<2x4x256xf32>)
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse, %seed {causal, dropout_p = 0.1 : f64, weft.rng_id = 7 : i64} : (tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x4x256xf32>, tensor<i64>) -> (tensor<2x4x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>
}

// FWD-JSON: "block_q": 128,
// FWD-JSON-NEXT: "block_k": 128,
// FWD-JSON-NEXT: "mma": "warpgroup",
// FWD-JSON-NEXT: "stages": 2,
// FWD-JSON: "dropout": {
// FWD-JSON-NEXT: "p": {{0\.10*1?}},
// FWD-JSON-NEXT: "rng_id": 7
// FWD-JSON: "name": "weft_attn_forward_bf16_d64_causal_q128_k128_wgmma_s2_drop429496729_r7"
// FWD-JSON: "name": "scale",
// FWD-JSON-NEXT: "kind": "f32"
// FWD-JSON-NEXT: },
// FWD-JSON-NEXT: {
// FWD-JSON-NEXT: "name": "seed",
// FWD-JSON-NEXT: "kind": "pointer"
// FWD-JSON-NEXT: },
// FWD-JSON-NEXT: {
// FWD-JSON-NEXT: "name": "mask",
// FWD-JSON-NEXT: "kind": "pointer"
// FWD-JSON-NEXT: }
// FWD-JSON-NEXT: ],
// The forward's workspace is its keep mask: 2 x 4 planes x 32 row groups x
// 16 key chunks x 16 bytes.
// FWD-JSON: "workspaces": [
// FWD-JSON-NEXT: {
// FWD-JSON-NEXT: "name": "mask",
// FWD-JSON-NEXT: "dtype": "bits",
// FWD-JSON-NEXT: "bytes": 65536

// The delta preprocess draws nothing: no seed; the keep mask, dK/dV and dQ
// take it last.
// BWD-JSON: "stages": 3,
// BWD-JSON: "name": "weft_attn_backward_preprocess_bf16_d64_causal_q128_k128_wgmma_s3_drop429496729_r7"
// BWD-JSON: "name": "scale",
// BWD-JSON-NEXT: "kind": "f32"
// BWD-JSON-NEXT: }
// BWD-JSON-NEXT: ],
// BWD-JSON: "name": "weft_attn_keep_mask_bf16_d64_causal_q128_k128_wgmma_s3_drop429496729_r7"
// BWD-JSON: "role": "keep_mask",
// BWD-JSON: "name": "seed",
// BWD-JSON: "name": "weft_attn_backward_dkdv_bf16_d64_causal_q128_k128_wgmma_s3_drop429496729_r7"
// BWD-JSON: "name": "seed",
// BWD-JSON: "name": "weft_attn_backward_dq_bf16_d64_causal_q128_k128_wgmma_s3_drop429496729_r7"
// BWD-JSON: "name": "seed",

// FWD-H: * Dropout p = 0.1 on the probabilities, rng_id 7: the launcher's last argument,
// FWD-H-NEXT: *   seed, is the device address of one int64
// FWD-H: #define layer_attention_0_DROPOUT_P 0.1
// FWD-H: #define layer_attention_0_RNG_ID 7
// FWD-H: CUresult layer_attention_0_launch(layer_attention_0_module *module, CUstream stream, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr out, CUdeviceptr lse, CUdeviceptr mask_workspace, CUdeviceptr seed);
// BWD-H: CUresult layer_attention_grad_0_launch({{.*}}, CUdeviceptr dq, CUdeviceptr dk, CUdeviceptr dv, CUdeviceptr seed);

// SRC: if (!seed)
// SRC: void *args[] = {&mask_workspace, &batch, &q_heads, &kv_heads, &q_len, &k_len, &scale, &seed};
// SRC: void *args[] = {&q_map, &k_map, &v_map, &out, &lse, &batch, &q_heads, &kv_heads, &q_len, &k_len, &scale, &seed, &mask_workspace};

// WARP-JSON: "block_q": 64,
// WARP-JSON-NEXT: "block_k": 64,
// WARP-JSON-NEXT: "mma": "warp",
// WARP-JSON: "name": "weft_attn_forward_bf16_d64_causal_q64_k64_drop429496729_r7"
// WARP-BWD: "name": "weft_attn_backward_dkdv_bf16_d64_causal_q64_k64_drop429496729_r7"
// WARP-BWD: "name": "weft_attn_backward_dq_bf16_d64_causal_q64_k64_drop429496729_r7"

// PTX-DAG: -766435501
// PTX-DAG: mul.hi.u32
// PTX-DAG: shfl.sync.bfly

// The workspace: delta (2 x 4 x 256 f32, 8192 bytes), then the keep mask's
// 2 x 4 planes x 32 row groups x 16 key chunks x 16 bytes.
// BWD-JSON: "workspaces": [
// BWD-JSON: "name": "delta",
// BWD-JSON: "bytes": 73728,
// BWD-JSON-NEXT: "keep_mask_offset": 8192

// GRAD-PTX: .entry weft_attn_keep_mask_
// GRAD-PTX: -766435501
// GRAD-PTX: mul.hi.u32
// GRAD-PTX: .entry weft_attn_backward_dkdv_
// GRAD-PTX-NOT: -766435501
// GRAD-PTX: .entry weft_attn_backward_dq_
// GRAD-PTX-NOT: -766435501

// FWD-PTX: .entry weft_attn_keep_mask_
// FWD-PTX: -766435501
// FWD-PTX: mul.hi.u32
// FWD-PTX: .entry weft_attn_forward_
// FWD-PTX-NOT: -766435501
