// weft-compile --emit=kernels: the files of each unit, their names (per
// function and op kind, in walk order), the C declarations and the metadata.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels -o %t
// RUN: FileCheck %s --check-prefix=INDEX < %t/kernels.json
// RUN: FileCheck %s --check-prefix=FWD-H < %t/layer_attention_0.h
// RUN: FileCheck %s --check-prefix=BWD-H < %t/layer_attention_grad_0.h
// RUN: FileCheck %s --check-prefix=FWD-JSON < %t/layer_attention_0.json
// RUN: FileCheck %s --check-prefix=BWD-JSON < %t/layer_attention_grad_0.json
// RUN: FileCheck %s --check-prefix=F16-JSON < %t/head_attention_0.json
// RUN: FileCheck %s --check-prefix=PTX < %t/layer_attention_0.ptx
// RUN: FileCheck %s --check-prefix=SRC < %t/layer_attention_grad_0.c
// Units of one configuration share the build: the same cubin.
// RUN: cmp %t/layer_attention_0.cubin %t/layer_attention_1.cubin
// RUN: not cmp -s %t/layer_attention_0.cubin %t/head_attention_0.cubin
// The tiles come from --block-q / --block-k.
// RUN: weft-compile %s --emit=kernels -o %t/tiles --block-q=128 --block-k=32
// RUN: FileCheck %s --check-prefix=TILES < %t/tiles/layer_attention_0.json

// INDEX:      "weft_version": "0.5.0",
// INDEX-NEXT: "format_version": 1,
// INDEX-NEXT: "arch": "sm_90a",
// INDEX-NEXT: "units": [
// INDEX-NEXT:   "layer_attention_0",
// INDEX-NEXT:   "layer_attention_1",
// INDEX-NEXT:   "layer_attention_grad_0",
// INDEX-NEXT:   "head_attention_0"
// INDEX-NEXT: ]

// FWD-H: #include <cuda.h>
// FWD-H: #include "weft_runtime.h"
// FWD-H: typedef struct layer_attention_0_module layer_attention_0_module;
// FWD-H: #define layer_attention_0_WEFT_VERSION "0.5.0"
// FWD-H: #define layer_attention_0_FORMAT_VERSION 1
// FWD-H: #define layer_attention_0_ARCH "sm_90a"
// FWD-H: #define layer_attention_0_DTYPE "bf16"
// FWD-H: #define layer_attention_0_BATCH 2
// FWD-H: #define layer_attention_0_Q_HEADS 4
// FWD-H: #define layer_attention_0_KV_HEADS 1
// FWD-H: #define layer_attention_0_Q_LEN 100
// FWD-H: #define layer_attention_0_K_LEN 100
// FWD-H: #define layer_attention_0_HEAD_DIM 64
// FWD-H: CUresult layer_attention_0_load(layer_attention_0_module **out);
// FWD-H: CUresult layer_attention_0_unload(layer_attention_0_module *module);
// FWD-H: CUresult layer_attention_0_launch(layer_attention_0_module *module, CUstream stream, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr out, CUdeviceptr lse);
// FWD-H: size_t layer_attention_0_workspace_bytes(void);

// BWD-H: CUresult layer_attention_grad_0_launch(layer_attention_grad_0_module *module, CUstream stream, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr out, CUdeviceptr dout, CUdeviceptr lse, CUdeviceptr delta_workspace, CUdeviceptr dq, CUdeviceptr dk, CUdeviceptr dv);

// FWD-JSON:      "name": "layer_attention_0",
// FWD-JSON-NEXT: "direction": "forward",
// FWD-JSON-NEXT: "config": {
// FWD-JSON-NEXT:   "dtype": "bf16",
// FWD-JSON-NEXT:   "head_dim": 64,
// FWD-JSON-NEXT:   "causal": true,
// FWD-JSON-NEXT:   "block_q": 64,
// FWD-JSON-NEXT:   "block_k": 64
// FWD-JSON:      "shapes": {
// FWD-JSON-NEXT:   "batch": 2,
// FWD-JSON-NEXT:   "q_heads": 4,
// FWD-JSON-NEXT:   "kv_heads": 1,
// FWD-JSON-NEXT:   "q_len": 100,
// FWD-JSON-NEXT:   "k_len": 100,
// FWD-JSON-NEXT:   "head_dim": 64,
// FWD-JSON-NEXT:   "scale": 0.125
// FWD-JSON:      "ptx": "layer_attention_0.ptx",
// FWD-JSON-NEXT: "cubin": "layer_attention_0.cubin",
// FWD-JSON:      "name": "weft_attn_forward_bf16_d64_causal_q64_k64",
// FWD-JSON-NEXT: "role": "forward",
// FWD-JSON:      "threads": 128,
// FWD-JSON-NEXT: "rows_per_block": 64,
// FWD-JSON-NEXT: "over_keys": false,
// FWD-JSON:      "registers": {{[1-9][0-9]*}},
// FWD-JSON-NEXT: "spill_store_bytes": 0,
// FWD-JSON-NEXT: "spill_load_bytes": 0,
// FWD-JSON:      "workspaces": []

// The backward: three kernels in launch order, dK/dV over key blocks, and
// the delta workspace [b, hq, sq] f32.
// BWD-JSON: "direction": "backward",
// BWD-JSON: "role": "backward_preprocess",
// BWD-JSON: "role": "backward_dkdv",
// BWD-JSON: "over_keys": true,
// BWD-JSON: "role": "backward_dq",
// BWD-JSON: "workspaces": [
// BWD-JSON:   "name": "delta",
// BWD-JSON:   "dtype": "f32",
// BWD-JSON:   "shape": [
// BWD-JSON-NEXT: 2,
// BWD-JSON-NEXT: 4,
// BWD-JSON-NEXT: 100

// F16-JSON: "dtype": "f16",
// F16-JSON: "head_dim": 128,
// F16-JSON: "causal": false,
// F16-JSON: "scale": 0.5

// PTX: .target sm_90a
// PTX: .entry weft_attn_forward_bf16_d64_causal_q64_k64(

// The launcher: grids from the shapes (ceil(100 / 64) = 2 query blocks, 4 q
// heads, batch 2; dK/dV over 2 key blocks of the one kv head), the workspace
// b * hq * sq * 4 = 3200 bytes, and a metadata check at load.
// SRC: static const char layer_attention_grad_0_metadata[] =
// SRC: "q_len=100\n"
// SRC: layer_attention_grad_0_check_metadata(void)
// SRC: weft_runtime_version()
// SRC-LABEL: CUresult layer_attention_grad_0_launch(
// SRC: if (!delta_workspace)
// SRC: /* weft_attn_backward_preprocess_bf16_d64_causal_q64_k64 (backward_preprocess) */
// SRC: /* weft_attn_backward_dkdv_bf16_d64_causal_q64_k64 (backward_dkdv) */
// SRC: const unsigned grid[3] = {2u, 1u, 2u};
// SRC: /* weft_attn_backward_dq_bf16_d64_causal_q64_k64 (backward_dq) */
// SRC: const unsigned grid[3] = {2u, 4u, 2u};
// SRC: size_t layer_attention_grad_0_workspace_bytes(void) {
// SRC-NEXT: return (size_t)3200u;

// TILES: "block_q": 128,
// TILES: "block_k": 32
// TILES: "name": "weft_attn_forward_bf16_d64_causal_q128_k32",
// TILES: "threads": 256,
// TILES-NEXT: "rows_per_block": 128,

func.func @layer(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x1x100x64xbf16>, %v: tensor<2x1x100x64xbf16>, %dout: tensor<2x4x100x64xbf16>) -> (tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x1x100x64xbf16>, tensor<2x1x100x64xbf16>) {
  %out, %lse = weft.attention %q, %k, %v {causal, scale = 0.125 : f32} : (tensor<2x4x100x64xbf16>, tensor<2x1x100x64xbf16>, tensor<2x1x100x64xbf16>) -> (tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>)
  %out1 = weft.attention %q, %k, %v {causal, scale = 0.125 : f32} : (tensor<2x4x100x64xbf16>, tensor<2x1x100x64xbf16>, tensor<2x1x100x64xbf16>) -> tensor<2x4x100x64xbf16>
  %dq, %dk, %dv = weft.attention_grad %dout, %q, %k, %v, %out, %lse {causal, scale = 0.125 : f32} : (tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x1x100x64xbf16>, tensor<2x1x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>) -> (tensor<2x4x100x64xbf16>, tensor<2x1x100x64xbf16>, tensor<2x1x100x64xbf16>)
  return %out, %out1, %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x1x100x64xbf16>, tensor<2x1x100x64xbf16>
}

func.func @head(%q: tensor<1x2x128x128xf16>) -> tensor<1x2x128x128xf16> {
  %out = weft.attention %q, %q, %q {scale = 0.5 : f32} : (tensor<1x2x128x128xf16>, tensor<1x2x128x128xf16>, tensor<1x2x128x128xf16>) -> tensor<1x2x128x128xf16>
  return %out : tensor<1x2x128x128xf16>
}
