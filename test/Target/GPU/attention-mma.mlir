// weft-compile --attention-mma=warpgroup: the forward unit's kernel is the
// Hopper warpgroup-MMA one (wgmma), the backward stays warp-level; two
// warpgroups at block_q = 128.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels --attention-mma=warpgroup --tuning-table=none --block-q=128 --block-k=64 -o %t
// RUN: FileCheck %s --check-prefix=FWD < %t/layer_attention_0.json
// RUN: FileCheck %s --check-prefix=BWD < %t/layer_attention_grad_0.json
// RUN: FileCheck %s --check-prefix=PTX < %t/layer_attention_0.ptx
// RUN: not weft-compile %s --emit=kernels --attention-mma=tensor -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not weft-compile %s --emit=kernels --attention-mma=warpgroup --block-q=32 -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR-TILE

// Two warpgroups: 256 threads, 128 query rows per CTA. Dynamic shared
// memory: stage 0 holds K and V of one key block as core matrices
// (2 x 64 x 64 x 2 B = 16384); stage 1 the same, or first Q's padded tile
// (128 x (64 + 8) x 2 B = 18432): 16384 + 18432 = 34816.
// FWD: "name": "weft_attn_forward_bf16_d64_causal_q128_k64_wgmma"
// FWD: "threads": 256
// FWD-NEXT: "rows_per_block": 128
// FWD: "dynamic_smem_bytes": 34816
// FWD: "spill_store_bytes": 0

// BWD: "name": "weft_attn_backward_dkdv_bf16_d64_causal_q128_k64"
// BWD-NOT: wgmma

// PTX: .entry weft_attn_forward_bf16_d64_causal_q128_k64_wgmma(
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

// ERR: --attention-mma must be warp or warpgroup, got 'tensor'
// ERR-TILE: error: the warpgroup-MMA attention kernels need block_q = 64 or 128 (one or two warpgroups of 4 warps), got 32

func.func @layer(%q: tensor<1x4x200x64xbf16>, %k: tensor<1x2x200x64xbf16>, %v: tensor<1x2x200x64xbf16>, %do: tensor<1x4x200x64xbf16>) -> (tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>) {
  %o, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>) -> (tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>)
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal} : (tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>) -> (tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>
}
