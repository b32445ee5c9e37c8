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
// RUN: rm -rf %t2 && weft-compile %s --emit=kernels --attention-stages 2 -o %t2
// RUN: FileCheck %s --check-prefix=TWO < %t2/decode_attention_0.json
// RUN: not weft-compile %s --emit=kernels --attention-stages 5 -o %t3 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FIVE
// RUN: rm -rf %t4 && weft-compile %s --emit=kernels --block-k 64 -o %t4
// RUN: FileCheck %s --check-prefix=HALF < %t4/decode_attention_0.json
// RUN: not weft-compile %s --emit=kernels --block-k 96 -o %t5 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ODD

// --block-k 64, the decode kernels' other block: (32 + 3 * 2 * 64) * 272 =
// 113152 bytes, two CTAs per SM, 66 splits a wave, ceil(256 / 66) = 4 blocks
// = 256 keys a split: 64 splits.
// HALF: "num_splits": 64,
// HALF: "name": "weft_attn_decode_split_bf16_d128_causal_k64_dec32_s3",
// HALF: "dynamic_smem_bytes": 113152,
// ODD: emit-kernels-decode.mlir:{{[0-9]+}}:12: error: the decode attention kernels at head_dim 128 stream blocks of 128 or 64 keys, got block_k 96

// --attention-stages 2: (32 + 2 * 2 * 128) * 272 = 147968 bytes, still one
// CTA per SM, so the same split rule.
// TWO: "decode": {
// TWO-NEXT: "rows": 32,
// TWO-NEXT: "num_splits": 32,
// TWO-NEXT: "keys_per_split": 512,
// TWO-NEXT: "sm_count": 132,
// TWO-NEXT: "ctas_per_sm": 1
// TWO: "name": "weft_attn_decode_split_bf16_d128_causal_k128_dec32_s2",
// TWO: "dynamic_smem_bytes": 147968,
// TWO-NEXT: "registers": {{[1-9][0-9]*}},
// TWO-NEXT: "spill_store_bytes": 0,
// FIVE: emit-kernels-decode.mlir:{{[0-9]+}}:12: error: the decode attention kernels keep 2..4 key blocks in shared memory within 227 KiB, got 5 stages (356864 bytes at head_dim 128 with 32 query rows)

// bf16, d 128, 32 q heads over 4 kv heads, 4 query rows over 16384 keys:
// 8 * 4 = 32 rows per CTA, two row groups of 16, each of two warps that take
// 64 of every block's 16384 / 128 = 128 keys (4 warps). Shared memory: (32
// rows of Q + 3 stages * 2 * 128 keys) * (128 + 8) * 2 bytes = 217600, so
// one CTA per SM. Split rule: one wave of 132 slots over 4 CTAs a split (1
// batch x 4 kv heads) = 33 splits, ceil(128 blocks / 33) = 4 blocks = 512
// keys a split, so 16384 / 512 = 32 splits. Workspace: 32 splits * 128 rows
// * (128 + 1) * 4 = 2113536 bytes, lse_partial after 32 * 128 * 128 * 4 =
// 2097152.
// CAUSAL: "causal": true,
// CAUSAL: "block_k": 128,
// CAUSAL: "decode": {
// CAUSAL-NEXT: "rows": 32,
// CAUSAL-NEXT: "num_splits": 32,
// CAUSAL-NEXT: "keys_per_split": 512,
// CAUSAL-NEXT: "sm_count": 132,
// CAUSAL-NEXT: "ctas_per_sm": 1
// CAUSAL: "name": "weft_attn_decode_split_bf16_d128_causal_k128_dec32_s3",
// CAUSAL-NEXT: "role": "decode_split",
// CAUSAL: "threads": 128,
// CAUSAL-NEXT: "grid": [
// CAUSAL-NEXT: 32,
// CAUSAL-NEXT: 4,
// CAUSAL-NEXT: 1
// CAUSAL: "dynamic_smem_bytes": 217600,
// CAUSAL-NEXT: "registers": {{[1-9][0-9]*}},
// CAUSAL-NEXT: "spill_store_bytes": 0,
// CAUSAL-NEXT: "spill_load_bytes": 0,
// CAUSAL: "name": "weft_attn_decode_combine_bf16_d128_causal_k128_dec32_s3",
// CAUSAL-NEXT: "role": "decode_combine",
// The combine kernel: a CTA per query row (1 * 32 * 4 = 128), 8 lanes of
// 128 / 4 column chunks, (max, sum, 4 of O) per thread in shared memory.
// CAUSAL: "threads": 256,
// CAUSAL-NEXT: "grid": [
// CAUSAL-NEXT: 128,
// CAUSAL-NEXT: 1,
// CAUSAL-NEXT: 1
// CAUSAL: "dynamic_smem_bytes": 6144,
// CAUSAL: "spill_store_bytes": 0,
// CAUSAL: "name": "split_workspace",
// CAUSAL-NEXT: "dtype": "f32",
// CAUSAL-NEXT: "bytes": 2113536,
// CAUSAL-NEXT: "lse_partial_offset": 2097152

// f16, d 256, batch 2, 16 query rows over 4096 keys: 128 rows (8 row groups
// of one warp), blocks of 16384 / 256 = 64 keys; 3 stages would take (128 +
// 3 * 2 * 64) * 528 = 270336 bytes, more than a CTA may have, so 2: (128 + 2
// * 2 * 64) * 528 = 202752, one CTA per SM. 132 slots over 8 CTAs a split =
// 16 splits of ceil(64 blocks / 16) = 4 blocks = 256 keys.
// WIDE: "name": "weft_attn_decode_split_f16_d256_full_k64_dec128_s2",
// WIDE: "threads": 256,
// WIDE-NEXT: "grid": [
// WIDE-NEXT: 16,
// WIDE-NEXT: 4,
// WIDE-NEXT: 2
// WIDE: "dynamic_smem_bytes": 202752,
// WIDE-NEXT: "registers": {{[1-9][0-9]*}},
// WIDE-NEXT: "spill_store_bytes": 0,
// WIDE-NEXT: "spill_load_bytes": 0,
// WIDE: "role": "decode_combine",
// WIDE: "threads": 512,
// WIDE: "programmatic": true

// 128 keys are below the decode threshold (256): the training forward.
// SHORT-NOT: "decode": {
// SHORT: "role": "forward",
// SHORT-NOT: decode_split

// SRC: CUresult decode_attention_0_launch(decode_attention_0_module *module, CUstream stream, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr out, CUdeviceptr lse, CUdeviceptr split_workspace)
// SRC: if (q % 16u != 0)
// SRC: decode_attention_0_launch: q is not 16-byte aligned
// SRC: if (out % 4u != 0)
// SRC: CUdeviceptr lse_partial = split_workspace + 2097152u;
// SRC-NEXT: int num_splits = 32, keys_per_split = 512;
// SRC: const unsigned grid[3] = {32u, 4u, 1u};
// SRC: status = weft_launch(module->functions[0], grid, block, 217600, stream, args);
// SRC: const unsigned grid[3] = {128u, 1u, 1u};
// The combine kernel: a programmatic dependent launch, its start overlapping
// the split kernel's tail.
// SRC: status = weft_launch_dependent(module->functions[1], grid, block, 6144, stream, args);
// SRC: return (size_t)2113536u;

// 16-byte K/V loads and the bf16 mma.
// The split kernel streams K and V through a 3-stage cp.async ring: the
// first 2 blocks' copies before Q's load, then per block a wait for all but
// the newest group.
// PTX: .entry weft_attn_decode_split_bf16_d128_causal_k128_dec32_s3
// PTX: cp.async.cg.shared.global.L2::128B [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// PTX: cp.async.commit_group;
// PTX: ld.global.v4.b32
// PTX: cp.async.wait_group 1;
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// After its loop the split kernel lets the combine kernel launch; the
// combine kernel waits for the split grid before its first read.
// PTX: griddepcontrol.launch_dependents;
// PTX: st.global
// PTX: .entry weft_attn_decode_combine_bf16_d128_causal_k128_dec32_s3
// PTX: griddepcontrol.wait;
// PTX: ld.global

func.func @decode(%q: tensor<1x32x4x128xbf16>, %k: tensor<1x4x16384x128xbf16>,
                  %q2: tensor<2x32x16x256xf16>, %k2: tensor<2x4x4096x256xf16>,
                  %q3: tensor<1x32x4x64xbf16>, %k3: tensor<1x4x128x64xbf16>)
    -> (tensor<1x32x4x128xbf16>, tensor<2x32x16x256xf16>, tensor<1x32x4x64xbf16>) {
  %o, %l = weft.attention %q, %k, %k {causal} : (tensor<1x32x4x128xbf16>, tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>) -> (tensor<1x32x4x128xbf16>, tensor<1x32x4xf32>)
  %o2, %l2 = weft.attention %q2, %k2, %k2 : (tensor<2x32x16x256xf16>, tensor<2x4x4096x256xf16>, tensor<2x4x4096x256xf16>) -> (tensor<2x32x16x256xf16>, tensor<2x32x16xf32>)
  %o3, %l3 = weft.attention %q3, %k3, %k3 : (tensor<1x32x4x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) -> (tensor<1x32x4x64xbf16>, tensor<1x32x4xf32>)
  return %o, %o2, %o3 : tensor<1x32x4x128xbf16>, tensor<2x32x16x256xf16>, tensor<1x32x4x64xbf16>
}
