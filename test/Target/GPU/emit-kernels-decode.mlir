// weft-compile --emit=kernels on decoding steps (a few query rows over a long
// KV cache): the split-KV decode units, their split rule, grids and
// workspace, and the C launcher's checks; a short cache keeps the training
// forward.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels -o %t
// RUN: FileCheck %s --check-prefix=CAUSAL < %t/decode_attention_0.json
// RUN: FileCheck %s --check-prefix=WIDE < %t/decode_attention_1.json
// RUN: FileCheck %s --check-prefix=SHORT < %t/decode_attention_2.json
// RUN: FileCheck %s --check-prefix=SRC < %t/decode_attention_0.c
// RUN: FileCheck %s --check-prefix=PTX < %t/decode_attention_0.ptx

// bf16, d 128, 32 q heads over 4 kv heads, 4 query rows over 16384 keys:
// 8 * 4 = 32 rows per CTA (padded to 64, 4 warps). Shared memory: (64 rows
// of Q + 2 * 64 keys) * (128 + 8) * 2 bytes = 52224. ptxas gives the split
// kernel 134 registers: 136 * 32 per warp * 4 warps = 17408 of the 65536,
// so 3 CTAs per SM (shared memory would allow 4). Split rule: one wave of
// 132 * 3 = 396 slots over 4 CTAs a split (1 batch x 4 kv heads) = 99 splits,
// ceil(256 blocks of 64 keys / 99) = 3 blocks = 192 keys a split, so
// ceil(16384 / 192) = 86 splits. Workspace: 86 splits * 128 rows * (128 + 1)
// * 4 = 5680128 bytes, lse_partial after 86 * 128 * 128 * 4 = 5636096.
// CAUSAL: "causal": true,
// CAUSAL: "block_k": 64,
// CAUSAL: "decode": {
// CAUSAL-NEXT: "rows": 64,
// CAUSAL-NEXT: "num_splits": 86,
// CAUSAL-NEXT: "keys_per_split": 192,
// CAUSAL-NEXT: "sm_count": 132,
// CAUSAL-NEXT: "ctas_per_sm": 3
// CAUSAL: "name": "weft_attn_decode_split_bf16_d128_causal_k64_dec64",
// CAUSAL-NEXT: "role": "decode_split",
// CAUSAL: "threads": 128,
// CAUSAL-NEXT: "grid": [
// CAUSAL-NEXT: 86,
// CAUSAL-NEXT: 4,
// CAUSAL-NEXT: 1
// CAUSAL: "dynamic_smem_bytes": 52224,
// CAUSAL-NEXT: "registers": {{[1-9][0-9]*}},
// CAUSAL-NEXT: "spill_store_bytes": 0,
// CAUSAL-NEXT: "spill_load_bytes": 0,
// CAUSAL: "name": "weft_attn_decode_combine_bf16_d128_causal_k64_dec64",
// CAUSAL-NEXT: "role": "decode_combine",
// CAUSAL: "threads": 32,
// CAUSAL-NEXT: "grid": [
// CAUSAL-NEXT: 128,
// CAUSAL-NEXT: 1,
// CAUSAL-NEXT: 1
// CAUSAL: "spill_store_bytes": 0,
// CAUSAL: "name": "split_workspace",
// CAUSAL-NEXT: "dtype": "f32",
// CAUSAL-NEXT: "bytes": 5680128,
// CAUSAL-NEXT: "lse_partial_offset": 5636096

// f16, d 256, batch 2, 16 query rows over 4096 keys: 128 rows (8 warps),
// about 237 registers: 240 * 32 * 8 warps = 61440, one CTA per SM. 132
// slots over 8 CTAs a split = 16 splits of ceil(128 blocks of 32 keys / 16)
// = 8 blocks = 256 keys. Shared memory (128 + 64) * 528 = 101376.
// WIDE: "name": "weft_attn_decode_split_f16_d256_full_k32_dec128",
// WIDE: "threads": 256,
// WIDE-NEXT: "grid": [
// WIDE-NEXT: 16,
// WIDE-NEXT: 4,
// WIDE-NEXT: 2
// WIDE: "dynamic_smem_bytes": 101376,
// WIDE-NEXT: "registers": {{[1-9][0-9]*}},
// WIDE-NEXT: "spill_store_bytes": 0,
// WIDE-NEXT: "spill_load_bytes": 0,
// WIDE: "role": "decode_combine",
// WIDE: "threads": 64,

// 128 keys are below the decode threshold (256): the training forward.
// SHORT-NOT: "decode": {
// SHORT: "role": "forward",
// SHORT-NOT: decode_split

// SRC: CUresult decode_attention_0_launch(decode_attention_0_module *module, CUstream stream, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr out, CUdeviceptr lse, CUdeviceptr split_workspace)
// SRC: if (q % 16u != 0)
// SRC: decode_attention_0_launch: q is not 16-byte aligned
// SRC: if (out % 4u != 0)
// SRC: CUdeviceptr lse_partial = split_workspace + 5636096u;
// SRC-NEXT: int num_splits = 86, keys_per_split = 192;
// SRC: const unsigned grid[3] = {86u, 4u, 1u};
// SRC: const unsigned grid[3] = {128u, 1u, 1u};
// SRC: return (size_t)5680128u;

// 16-byte K/V loads and the bf16 mma.
// PTX: .entry weft_attn_decode_split_bf16_d128_causal_k64_dec64
// PTX: ld.global.v4.b32
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: .entry weft_attn_decode_combine_bf16_d128_causal_k64_dec64

func.func @decode(%q: tensor<1x32x4x128xbf16>, %k: tensor<1x4x16384x128xbf16>,
                  %q2: tensor<2x32x16x256xf16>, %k2: tensor<2x4x4096x256xf16>,
                  %q3: tensor<1x32x4x64xbf16>, %k3: tensor<1x4x128x64xbf16>)
    -> (tensor<1x32x4x128xbf16>, tensor<2x32x16x256xf16>, tensor<1x32x4x64xbf16>) {
  %o, %l = weft.attention %q, %k, %k {causal} : (tensor<1x32x4x128xbf16>, tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>) -> (tensor<1x32x4x128xbf16>, tensor<1x32x4xf32>)
  %o2, %l2 = weft.attention %q2, %k2, %k2 : (tensor<2x32x16x256xf16>, tensor<2x4x4096x256xf16>, tensor<2x4x4096x256xf16>) -> (tensor<2x32x16x256xf16>, tensor<2x32x16xf32>)
  %o3, %l3 = weft.attention %q3, %k3, %k3 : (tensor<1x32x4x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) -> (tensor<1x32x4x64xbf16>, tensor<1x32x4xf32>)
  return %o, %o2, %o3 : tensor<1x32x4x128xbf16>, tensor<2x32x16x256xf16>, tensor<1x32x4x64xbf16>
}
