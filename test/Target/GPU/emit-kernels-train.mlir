// weft-compile --train --entry F --emit=kernels: the units are the training
// step's attention ops (@forward_step), not the forward function's.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %S/Inputs/attention-loss.mlir --train --entry forward --emit=kernels -o %t
// RUN: FileCheck %s < %t/kernels.json
// RUN: FileCheck %s --check-prefix=GRAD < %t/forward_step_attention_grad_0.json

// CHECK:      "units": [
// CHECK-NEXT:   "forward_step_attention_0",
// CHECK-NEXT:   "forward_step_attention_grad_0"
// CHECK-NEXT: ]

// GRAD: "direction": "backward",
// GRAD: "causal": true,
// GRAD: "q_heads": 2,
// GRAD-NEXT: "kv_heads": 1,
// GRAD-NEXT: "q_len": 128,
// GRAD: "scale": 0.125
