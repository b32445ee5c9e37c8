// RUN: rm -rf %t && weft-compile %s --emit=kernels -o %t/table --tuning-table=%S/Inputs/tuning-table-schedule.json
// RUN: FileCheck %s --check-prefix=FWD < %t/table/f_attention_0.json
// RUN: FileCheck %s --check-prefix=BWD < %t/table/f_attention_grad_0.json
// RUN: weft-compile %s --emit=kernels -o %t/cli --tuning-table=%S/Inputs/tuning-table-schedule.json --attention-schedule=pingpong
// RUN: FileCheck %s --check-prefix=CLI < %t/cli/f_attention_0.json
// RUN: weft-compile %s --emit=kernels -o %t/serial --tuning-table=%S/Inputs/tuning-table-schedule.json --attention-schedule=serial
// RUN: FileCheck %s --check-prefix=SERIAL < %t/serial/f_attention_0.json
// RUN: not weft-compile %s --emit=kernels -o %t/bad --tuning-table=%S/Inputs/tuning-table-schedule-bad.json 2>&1 | FileCheck %s --check-prefix=ERR-VALUE
// RUN: not weft-compile %s --emit=kernels -o %t/bad-cli --attention-schedule=fast 2>&1 | FileCheck %s --check-prefix=ERR-CLI
// REQUIRES: ptxas

// The table's forward "schedule" picks the warpgroup forward's schedule
// (the unit's config and kernel name say which); the backward stays
// serial and unchanged; --attention-schedule wins over the table. A serial
// unit's JSON has no "schedule", as before the schedules existed.

// FWD:      "direction": "forward",
// FWD:        "stages": 2,
// FWD-NEXT:   "schedule": "overlap",
// FWD:      "name": "weft_attn_forward_bf16_d64_causal_q128_k128_wgmma_s2_ov"
// BWD:      "direction": "backward",
// BWD-NOT:  "schedule"
// BWD:      "name": "weft_attn_backward_dkdv_bf16_d64_causal_q64_k128_wgmma_s3"
// CLI:        "schedule": "pingpong",
// CLI:      "name": "weft_attn_forward_bf16_d64_causal_q128_k128_wgmma_s2_pp"
// SERIAL-NOT: "schedule"
// SERIAL:     "name": "weft_attn_forward_bf16_d64_causal_q128_k128_wgmma_s2"
// ERR-VALUE: error: {{.*}}tuning-table-schedule-bad.json: entries[0] (sm_90a bf16 d64 causal) forward: "schedule" must be "serial", "overlap" or "pingpong"
// ERR-CLI: --attention-schedule must be serial, overlap or pingpong, got 'fast'

func.func @f(%q: tensor<1x2x128x64xbf16>, %dout: tensor<1x2x128x64xbf16>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) {
  %out, %lse = weft.attention %q, %q, %q {causal} : (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>)
  %dq, %dk, %dv = weft.attention_grad %dout, %q, %q, %q, %out, %lse {causal} : (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>)
  return %out, %dq : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
}
