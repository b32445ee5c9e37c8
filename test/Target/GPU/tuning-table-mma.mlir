// The tuning table picks each direction's MMA kind: "mma": "warpgroup" gives
// the Hopper (TMA + wgmma) kernels, with the entry's "stages"; absent or
// "warp" is mma.sync, so older tables keep their meaning; --attention-mma on
// the command line wins over the table, as --block-q.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels -o %t/table --tuning-table=%S/Inputs/tuning-table-wgmma.json
// RUN: FileCheck %s --check-prefix=WGMMA < %t/table/f_attention_0.json
// RUN: FileCheck %s --check-prefix=WGMMA-H < %t/table/f_attention_0.h
// RUN: FileCheck %s --check-prefix=BWD < %t/table/f_attention_grad_0.json
// RUN: FileCheck %s --check-prefix=WARP-F16 < %t/table/g_attention_0.json
// A table without "mma" (tuning-table.mlir's) keeps mma.sync.
// RUN: weft-compile %s --emit=kernels -o %t/old --tuning-table=%S/Inputs/tuning-table.json
// RUN: FileCheck %s --check-prefix=OLD < %t/old/f_attention_0.json
// The command line wins, both ways; the table's tiles stay.
// RUN: weft-compile %s --emit=kernels -o %t/cli-warp --tuning-table=%S/Inputs/tuning-table-wgmma.json --attention-mma=warp
// RUN: FileCheck %s --check-prefix=CLI-WARP < %t/cli-warp/f_attention_0.json
// RUN: weft-compile %s --emit=kernels -o %t/cli-wg --tuning-table=%S/Inputs/tuning-table.json --attention-mma=warpgroup --block-q=128 --block-k=64
// RUN: FileCheck %s --check-prefix=CLI-WG < %t/cli-wg/f_attention_0.json
// RUN: FileCheck %s --check-prefix=CLI-WG-BWD < %t/cli-wg/f_attention_grad_0.json
// --attention-mma=warpgroup covers the backward, whose dK/dV needs 64 or 128 keys.
// RUN: not weft-compile %s --emit=kernels -o %t/bad --tuning-table=%S/Inputs/tuning-table.json --attention-mma=warpgroup --block-q=128 --block-k=32 2>&1 | FileCheck %s --check-prefix=ERR-BWD-TILE
// Errors name the file, the entry and the direction, and leave no output.
// RUN: weft-compile %s --emit=kernels -o %t/bwd --tuning-table=%S/Inputs/tuning-table-mma-backward.json
// RUN: FileCheck %s --check-prefix=WG-BWD < %t/bwd/f_attention_grad_0.json
// RUN: not weft-compile %s --emit=kernels -o %t/bad --tuning-table=%S/Inputs/tuning-table-mma-bad.json 2>&1 | FileCheck %s --check-prefix=ERR-VALUE
// RUN: not weft-compile %s --emit=kernels -o %t/bad --tuning-table=%S/Inputs/tuning-table-mma-tile.json 2>&1 | FileCheck %s --check-prefix=ERR-TILE
// RUN: not test -e %t/bad

// WGMMA:      "direction": "forward",
// WGMMA:        "block_q": 128,
// WGMMA-NEXT:   "block_k": 64,
// WGMMA-NEXT:   "mma": "warpgroup"
// WGMMA-NEXT:   "stages": 2
// WGMMA:      "name": "weft_attn_forward_bf16_d64_causal_q128_k64_wgmma_s2"
// WGMMA-H: #define f_attention_0_MMA "warpgroup"
// BWD:      "direction": "backward",
// BWD:        "block_q": 64,
// BWD-NEXT:   "block_k": 128,
// BWD-NEXT:   "mma": "warp"
// BWD-NOT:  wgmma
// WARP-F16:      "block_q": 64,
// WARP-F16-NEXT: "block_k": 32,
// WARP-F16-NEXT: "mma": "warp"
// WARP-F16:      "name": "weft_attn_forward_f16_d64_full_q64_k32"
// OLD:      "block_q": 128,
// OLD-NEXT: "block_k": 32,
// OLD-NEXT: "mma": "warp"
// OLD:      "name": "weft_attn_forward_bf16_d64_causal_q128_k32"
// CLI-WARP:      "block_q": 128,
// CLI-WARP-NEXT: "block_k": 64,
// CLI-WARP-NEXT: "mma": "warp"
// CLI-WARP:      "name": "weft_attn_forward_bf16_d64_causal_q128_k64"
// CLI-WG:      "mma": "warpgroup"
// CLI-WG:      "name": "weft_attn_forward_bf16_d64_causal_q128_k64_wgmma_s2"
// CLI-WG-BWD:  "name": "weft_attn_backward_dkdv_bf16_d64_causal_q128_k64_wgmma_s2"
// ERR-BWD-TILE: error: the warpgroup-MMA attention backward needs block_k = 64 or 128 (one or two dK/dV consumer warpgroups of 4 warps), got 32
// WG-BWD:      "direction": "backward",
// WG-BWD:        "block_q": 64,
// WG-BWD-NEXT:   "block_k": 128,
// WG-BWD-NEXT:   "mma": "warpgroup"
// WG-BWD-NEXT:   "stages": 3
// WG-BWD:      "name": "weft_attn_backward_dkdv_bf16_d64_causal_q64_k128_wgmma_s3"
// WG-BWD:      "name": "q",
// WG-BWD-NEXT: "kind": "tensormap",
// WG-BWD:      "threads": 384
// WG-BWD:      "name": "weft_attn_backward_dq_bf16_d64_causal_q64_k128_wgmma_s3"
// WG-BWD:      "threads": 256
// ERR-VALUE: error: {{.*}}tuning-table-mma-bad.json: entries[1] (sm_90a f16 d128 full) forward: "mma" must be "warp" or "warpgroup", got "tensor"
// ERR-TILE: error: {{.*}}tuning-table-mma-tile.json: entries[0] (sm_90a bf16 d128 full) forward: the warpgroup-MMA attention kernels need block_q = 64 or 128 (one or two consumer warpgroups of 4 warps), got 32

func.func @f(%q: tensor<1x2x128x64xbf16>, %dout: tensor<1x2x128x64xbf16>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) {
  %out, %lse = weft.attention %q, %q, %q {causal} : (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>)
  %dq, %dk, %dv = weft.attention_grad %dout, %q, %q, %q, %out, %lse {causal} : (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>)
  return %out, %dq : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
}

func.func @g(%q: tensor<1x2x128x64xf16>) -> tensor<1x2x128x64xf16> {
  %out = weft.attention %q, %q, %q : (tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>) -> tensor<1x2x128x64xf16>
  return %out : tensor<1x2x128x64xf16>
}
