// Head dim 256, which only the warpgroup-MMA kernels implement. Without a
// tuning-table entry weft-compile takes the tilings that fit 227 KiB of
// shared memory: forward 128 x 64, backward 64 x 64, 2 stages. The dK/dV
// kernel's two consumer warpgroups share 64 keys and split dK's and dV's
// 256 columns (128 each).
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels --tuning-table=none -o %t
// RUN: FileCheck %s --check-prefix=FWD < %t/layer_attention_0.json
// RUN: FileCheck %s --check-prefix=BWD < %t/layer_attention_grad_0.json
// RUN: FileCheck %s --check-prefix=PTX < %t/layer_attention_grad_0.ptx
// RUN: not weft-compile %s --emit=kernels --tuning-table=none --attention-mma=warp -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR-WARP
// RUN: not weft-compile %s --emit=kernels --tuning-table=none --block-k=128 -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR-BLOCK
// RUN: not weft-compile %s --emit=kernels --tuning-table=none --block-q=128 -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR-SMEM

// Q (128 x 256 x 2 B = 65536), 2 stages of K and V (2 x 2 x 64 x 256 x 2 B
// = 131072), 7 mbarriers (56 B): 196664 bytes.
// FWD: "name": "weft_attn_forward_bf16_d256_causal_q128_k64_wgmma_s2"
// FWD: "threads": 384
// FWD-NEXT: "rows_per_block": 128
// FWD: "dynamic_smem_bytes": 196664
// FWD: "spill_store_bytes": 0

// dK/dV: K and V of 64 keys resident (65536), 2 stages of 64 rows of Q and
// dO (131072), lse and delta of 64 rows a stage (1024), 5 mbarriers (40):
// 197672 bytes; a producer and two consumers of the same 64 keys.
// BWD: "name": "weft_attn_backward_dkdv_bf16_d256_causal_q64_k64_wgmma_s2"
// BWD: "threads": 384
// BWD-NEXT: "rows_per_block": 64
// BWD: "dynamic_smem_bytes": 197672
// BWD: "spill_store_bytes": 0
// BWD: "name": "weft_attn_backward_dq_bf16_d256_causal_q64_k64_wgmma_s2"
// BWD: "threads": 256
// BWD: "dynamic_smem_bytes": 196648
// BWD: "spill_store_bytes": 0

// A dK/dV consumer's products with Q and dO are 128 columns wide (after
// the 64-wide S^T and dP^T), dQ's product with K 256.
// PTX-LABEL: .entry weft_attn_backward_dkdv_bf16_d256_causal_q64_k64_wgmma_s2
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-NOT: m64n256k16
// PTX-LABEL: .entry weft_attn_backward_dq_bf16_d256_causal_q64_k64_wgmma_s2
// PTX: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16

// ERR-WARP: error: head_dim 256 needs the warpgroup-MMA attention kernels (--attention-mma=warpgroup)
// ERR-BLOCK: error: the warpgroup-MMA attention backward at head_dim 256 needs block_k = 64 (two consumer warpgroups split the columns of 64 keys' dK and dV), got 128
// ERR-SMEM: error: the warpgroup-MMA attention backward dQ with block_q 128, block_k 64, head_dim 256 and 2 stages needs 262184 bytes of shared memory, more than the 232448 a CTA can have

func.func @layer(%q: tensor<1x4x256x256xbf16>, %k: tensor<1x2x256x256xbf16>, %v: tensor<1x2x256x256xbf16>, %dout: tensor<1x4x256x256xbf16>) -> (tensor<1x4x256x256xbf16>, tensor<1x4x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>) {
  %out, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x4x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>) -> (tensor<1x4x256x256xbf16>, tensor<1x4x256xf32>)
  %dq, %dk, %dv = weft.attention_grad %dout, %q, %k, %v, %out, %lse {causal} : (tensor<1x4x256x256xbf16>, tensor<1x4x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x4x256x256xbf16>, tensor<1x4x256xf32>) -> (tensor<1x4x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>)
  return %out, %dq, %dk, %dv : tensor<1x4x256x256xbf16>, tensor<1x4x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>
}
