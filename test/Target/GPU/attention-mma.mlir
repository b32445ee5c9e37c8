// weft-compile --attention-mma=warpgroup: the forward and backward units'
// kernels are the Hopper ones (TMA producer, wgmma consumers); two consumer
// warpgroups at block_q = 128.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels --attention-mma=warpgroup --tuning-table=none --block-q=128 --block-k=64 -o %t
// RUN: FileCheck %s --check-prefix=FWD < %t/layer_attention_0.json
// RUN: FileCheck %s --check-prefix=BWD < %t/layer_attention_grad_0.json
// RUN: FileCheck %s --check-prefix=PTX < %t/layer_attention_0.ptx
// RUN: FileCheck %s --check-prefix=LAUNCHER < %t/layer_attention_0.c
// RUN: not weft-compile %s --emit=kernels --attention-mma=tensor -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not weft-compile %s --emit=kernels --attention-mma=warpgroup --block-q=32 -o %t/bad 2>&1 | FileCheck %s --check-prefix=ERR-TILE

// A producer warpgroup and two consumers: 384 threads, 128 query rows per
// CTA. q, k, v are by-value CUtensorMaps (the JSON says how to build them).
// Dynamic shared memory: Q (128 x 64 x 2 B = 16384), 2 stages of K and V
// (2 x 2 x 64 x 64 x 2 B = 32768), 7 mbarriers (56 B): 49208.
// FWD: "name": "weft_attn_forward_bf16_d64_causal_q128_k64_wgmma_s2"
// FWD: "name": "q",
// FWD-NEXT: "kind": "tensormap",
// FWD-NEXT: "len": "q_len",
// FWD-NEXT: "heads": "q_heads",
// FWD-NEXT: "box_rows": 128
// FWD: "name": "k",
// FWD-NEXT: "kind": "tensormap",
// FWD-NEXT: "len": "k_len",
// FWD-NEXT: "heads": "kv_heads",
// FWD-NEXT: "box_rows": 64
// FWD: "name": "out",
// FWD-NEXT: "kind": "pointer"
// FWD: "threads": 384
// FWD-NEXT: "rows_per_block": 128
// FWD: "dynamic_smem_bytes": 49208
// FWD: "spill_store_bytes": 0

// The backward's dK/dV keeps 64 keys (one consumer warpgroup, 256 threads)
// and streams 128 query rows of q and dout; dQ keeps 128 query rows (two
// consumers) and streams 64 keys.
// BWD: "name": "weft_attn_backward_dkdv_bf16_d64_causal_q128_k64_wgmma_s2"
// BWD: "name": "q",
// BWD-NEXT: "kind": "tensormap",
// BWD-NEXT: "len": "q_len",
// BWD-NEXT: "heads": "q_heads",
// BWD-NEXT: "box_rows": 128
// BWD: "name": "k",
// BWD-NEXT: "kind": "tensormap",
// BWD-NEXT: "len": "k_len",
// BWD-NEXT: "heads": "kv_heads",
// BWD-NEXT: "box_rows": 64
// BWD: "name": "dout",
// BWD-NEXT: "kind": "tensormap",
// BWD: "name": "lse",
// BWD-NEXT: "kind": "pointer"
// BWD: "threads": 256
// BWD: "spill_store_bytes": 0
// BWD: "name": "weft_attn_backward_dq_bf16_d64_causal_q128_k64_wgmma_s2"
// BWD: "threads": 384
// BWD: "spill_store_bytes": 0

// The tensor maps are 64-byte-aligned 128-byte grid constants whose generic
// addresses (cvta.param) the TMA copies take; registers move by setmaxnreg.
// PTX: .entry weft_attn_forward_bf16_d64_causal_q128_k64_wgmma_s2(
// PTX-NEXT: .param .align 64 .b8 weft_attn_forward_bf16_d64_causal_q128_k64_wgmma_s2_param_0[128],
// PTX: .maxntid 384, 1, 1
// PTX: cvta.param.u64
// PTX-DAG: setmaxnreg.dec.sync.aligned.u32 24;
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 240;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

// The C launcher encodes the three maps before the launch.
// LAUNCHER-COUNT-3: weft_tensor_map_encode_tiled(
// LAUNCHER: void *args[] = {&q_map, &k_map, &v_map, &out, &lse,

// ERR: --attention-mma must be warp or warpgroup, got 'tensor'
// ERR-TILE: error: the warpgroup-MMA attention kernels need block_q = 64 or 128 (one or two consumer warpgroups of 4 warps), got 32

func.func @layer(%q: tensor<1x4x200x64xbf16>, %k: tensor<1x2x200x64xbf16>, %v: tensor<1x2x200x64xbf16>, %do: tensor<1x4x200x64xbf16>) -> (tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>) {
  %o, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>) -> (tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>)
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal} : (tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x4x200xf32>) -> (tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<1x4x200x64xbf16>, tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>
}
