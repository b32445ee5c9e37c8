// weft-compile --emit=kernels takes its tiles from the autotuner's table
// (scripts/autotune-attention): the forward's and the backward's of the op's
// configuration, each direction its own; --block-q / --block-k win over it;
// configurations the table lacks keep 64/64; a bad table is an error that
// names the file and the entry. (lit.cfg.py sets WEFT_TUNING_TABLE=none so
// other tests do not depend on the committed bench/attention_tuning.json.)
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels -o %t/opt --tuning-table=%S/Inputs/tuning-table.json
// RUN: FileCheck %s --check-prefix=FWD < %t/opt/f_attention_0.json
// RUN: FileCheck %s --check-prefix=BWD < %t/opt/f_attention_grad_0.json
// The f16 entry is for sm_80: not this chip's, so the f16 op keeps 64/64.
// RUN: FileCheck %s --check-prefix=DEFAULT < %t/opt/g_attention_0.json
// The environment names the table as well.
// RUN: env WEFT_TUNING_TABLE=%S/Inputs/tuning-table.json weft-compile %s --emit=kernels -o %t/env
// RUN: FileCheck %s --check-prefix=FWD < %t/env/f_attention_0.json
// RUN: FileCheck %s --check-prefix=BWD < %t/env/f_attention_grad_0.json
// The command line wins, per tile: block_q from --block-q, block_k the table's.
// RUN: weft-compile %s --emit=kernels -o %t/cli --tuning-table=%S/Inputs/tuning-table.json --block-q=64
// RUN: FileCheck %s --check-prefix=CLI-FWD < %t/cli/f_attention_0.json
// RUN: FileCheck %s --check-prefix=CLI-BWD < %t/cli/f_attention_grad_0.json
// --tuning-table=none: no table, 64/64 everywhere.
// RUN: env WEFT_TUNING_TABLE=%S/Inputs/tuning-table.json weft-compile %s --emit=kernels -o %t/none --tuning-table=none
// RUN: FileCheck %s --check-prefix=DEFAULT < %t/none/f_attention_0.json
// RUN: FileCheck %s --check-prefix=DEFAULT < %t/none/f_attention_grad_0.json
// Errors name the file and the entry, and leave no output directory.
// RUN: not weft-compile %s --emit=kernels -o %t/bad --tuning-table=%S/Inputs/tuning-table-bad.json 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not weft-compile %s --emit=kernels -o %t/bad --tuning-table=%S/Inputs/tuning-table-duplicate.json 2>&1 | FileCheck %s --check-prefix=DUP
// RUN: not weft-compile %s --emit=kernels -o %t/bad --tuning-table=%t/missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not weft-compile %s --emit=kernels -o %t/bad --tuning-table=%s 2>&1 | FileCheck %s --check-prefix=NOT-JSON
// RUN: not test -e %t/bad

// FWD:      "direction": "forward",
// FWD:        "block_q": 128,
// FWD-NEXT:   "block_k": 32
// BWD:      "direction": "backward",
// BWD:        "block_q": 32,
// BWD-NEXT:   "block_k": 128
// DEFAULT:      "block_q": 64,
// DEFAULT-NEXT: "block_k": 64
// CLI-FWD:      "block_q": 64,
// CLI-FWD-NEXT: "block_k": 32
// CLI-BWD:      "block_q": 64,
// CLI-BWD-NEXT: "block_k": 128
// BAD: error: {{.*}}tuning-table-bad.json: entries[1] (sm_90a f16 d128 full) backward: the GPU attention kernels need block_q in {32, 64, 128} (16 rows per warp, 2..8 warps), got 48
// DUP: error: {{.*}}tuning-table-duplicate.json: entries[0] and entries[1] are both for sm_90a/bf16/d64/causal
// MISSING: error: cannot read the tuning table {{.*}}missing.json: No such file or directory
// NOT-JSON: error: the tuning table {{.*}}tuning-table.mlir is not JSON:

func.func @f(%q: tensor<1x2x128x64xbf16>, %dout: tensor<1x2x128x64xbf16>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) {
  %out, %lse = weft.attention %q, %q, %q {causal} : (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>)
  %dq, %dk, %dv = weft.attention_grad %dout, %q, %q, %q, %out, %lse {causal} : (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>)
  return %out, %dq : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
}

func.func @g(%q: tensor<1x2x128x64xf16>) -> tensor<1x2x128x64xf16> {
  %out = weft.attention %q, %q, %q : (tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>) -> tensor<1x2x128x64xf16>
  return %out : tensor<1x2x128x64xf16>
}
