// weft-compile --train end to end on Inputs/mlp.mlir: the step IR, the
// report's numbers, the same pipeline under weft-opt, and the step runs.

// RUN: weft-compile %S/Inputs/mlp.mlir --entry forward --train --memory-report=%t.none.json | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=NONE < %t.none.json
// IR-LABEL: func.func @forward_step
// IR-SAME: -> (tensor<f32>, tensor<32x16xf32> {weft.grad_of = 0 : i64}, tensor<8x32xf32> {weft.grad_of = 1 : i64})
// IR-SAME: weft.memory_plan = {{.*}}peak_bytes = 7168
// IR: weft.gelu_grad
// IR-NOT: weft.recompute
// IR: return

// Without an optimizer the step returns the loss and the two gradients. The
// max-live step is the last matmul (dW0): parameters 2048 + 1024, the input
// x 256 (y's last reader, cross_entropy_grad, is earlier), gradients dW1
// 1024 + dW0 2048, temporaries the loss (4 -> 256 aligned) and gelu_grad's
// 4x32xf32 512: 3072 + 256 + 3072 + 768 = 7168, the peak.
// NONE:      "remat_policy": "none",
// NONE-NEXT: "peak_bytes": 7168,
// NONE-NEXT: "budget_bytes": null,
// NONE-NEXT: "lower_bound_bytes": 7168,
// NONE:      "parameters": 3072,
// NONE-NEXT: "optimizer_state": 0,
// NONE-NEXT: "inputs": 256,
// NONE-NEXT: "gradients": 3072,
// NONE-NEXT: "saved_activations": 0,
// NONE-NEXT: "temporaries": 768,
// Forward: linear 2*4*32*16 = 4096 + gelu 10*128 = 1280 + linear 2*4*8*32 =
// 2048 + cross_entropy 5*32 = 160 = 7584. Backward: cross_entropy_grad 6*32
// = 192, dA 2*4*32*8 = 2048, dW1 2*8*32*4 = 2048, gelu_grad 16*128 = 2048,
// dW0 2*32*16*4 = 4096: 10432.
// NONE:      "forward_flops": 7584,
// NONE-NEXT: "backward_flops": 10432,
// NONE-NEXT: "recompute_flops": 0,
// NONE-NEXT: "optimizer_flops": 0,
// Saved for the backward: h and gelu(h) in layer 0 (512 each), the logits
// 4x8xf32 = 128 in layer 1.
// NONE:      "layer": 0,
// NONE-NEXT: "saved_bytes": 1024,
// NONE:      "layer": 1,
// NONE-NEXT: "saved_bytes": 128,

// AdamW adds m and v per parameter (2 * 3072 = 6144, live throughout) and
// the step number, an input live until the last update: inputs at the max-
// live step are x 256 + step (8 -> 256) = 512. Each update runs as soon as
// its gradient is final: w1's (1024) is applied before w0's gradient exists,
// so the peak (w1's gradient computed, h and gelu(h) still saved) holds one
// gradient, not both: 3072 + 6144 + 512 + 1024 + 1024 saved + 1024
// temporaries = 12800 (13568 with every update after the backward).
// Each update costs 14 FLOPs per element: 14 * (512 + 256) = 10752.
// RUN: weft-compile %S/Inputs/mlp.mlir --entry forward --train --optimizer=adamw --memory-report=%t.adamw.json -o %t.adamw.mlir
// RUN: FileCheck %s --check-prefix=ADAMW < %t.adamw.json
// ADAMW:      "peak_bytes": 12800,
// ADAMW:      "parameters": 3072,
// ADAMW-NEXT: "optimizer_state": 6144,
// ADAMW-NEXT: "inputs": 512,
// ADAMW-NEXT: "gradients": 1024,
// ADAMW-NEXT: "saved_activations": 1024,
// ADAMW-NEXT: "temporaries": 1024,
// ADAMW:      "forward_flops": 7584,
// ADAMW-NEXT: "backward_flops": 10432,
// ADAMW-NEXT: "recompute_flops": 0,
// ADAMW-NEXT: "optimizer_flops": 10752,

// weft-opt's named pipeline is the same definition: the same IR.
// RUN: weft-opt %S/Inputs/mlp.mlir --weft-train-pipeline="entry=forward optimizer=adamw" -o %t.opt.mlir
// RUN: diff %t.adamw.mlir %t.opt.mlir

// The planned step runs in the reference interpreter: the loss, then the
// updated parameters and moments (tied to their arguments).
// RUN: weft-run %t.adamw.mlir --entry forward_step --random-inputs | FileCheck %s --check-prefix=STEP
// STEP: res0: tensor<f32> sum=
// STEP-NEXT: res1: tensor<32x16xf32> sum=
// STEP: res6: tensor<8x32xf32> sum=

// remat=full keeps each layer's input and recomputes what the backward reads
// inside the layer: layer 0's h (gelu_grad reads it) from x, one linear of
// 4096 FLOPs; layer 1's input gelu(h) is kept. h is no longer saved: layer 0
// saves 512. The peak step does not hold h, so the peak stays 7168.
// RUN: weft-compile %S/Inputs/mlp.mlir --entry forward --train --remat=full --memory-report=%t.full.json | FileCheck %s --check-prefix=FULL-IR
// RUN: FileCheck %s --check-prefix=FULL < %t.full.json
// FULL-IR-LABEL: func.func @forward_step
// FULL-IR: weft.linear %arg2, %arg0 {{.*}}weft.recompute{{.*}} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
// FULL-IR-NEXT: weft.gelu_grad
// FULL:      "remat_policy": "full",
// FULL-NEXT: "peak_bytes": 7168,
// FULL:      "recompute_flops": 4096,
// FULL:      "recomputed_ops": 1,
// FULL:      "layer": 0,
// FULL-NEXT: "saved_bytes": 512,
// FULL-NEXT: "recomputed_ops": 1,
// FULL-NEXT: "recompute_flops": 4096

// Every pass of the pipeline keeps the results: --weft-diff-each-pass runs
// @forward and, from weft-autodiff on, @forward_step after each pass.
// RUN: weft-compile %S/Inputs/mlp.mlir --entry forward --train --optimizer=adamw --remat=full --weft-diff-each-pass -o /dev/null
