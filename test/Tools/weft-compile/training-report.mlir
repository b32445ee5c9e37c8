// weft-training-report on a hand-written step (what weft-remat would make of
// a two-layer MLP: the layer-0 linear recomputed in the backward), so every
// number below follows from the IR and the cost model alone.

// RUN: weft-opt %s --weft-plan-memory --weft-training-report="report=%t.json remat=full" | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// The pass only reads the IR (the plan stays as weft-plan-memory left it).
// IR-LABEL: func.func @forward_step
// IR-SAME: peak_bytes = 7168

// Arena (alignment 256). The max-live step is step 10, the final matmul (dW0):
// parameters w0 2048 + w1 1024 = 3072; inputs: x 256 (y's last reader is
// step 5); gradients dW1 1024 + dW0 2048 = 3072; temporaries: the loss (4
// bytes -> 256) and gelu_grad's 4x32xf32 = 512, so 768. Sum 7168 = peak: no
// fragmentation.
// JSON:      "function": "forward_step",
// JSON-NEXT: "remat_policy": "full",
// JSON-NEXT: "peak_bytes": 7168,
// JSON-NEXT: "budget_bytes": null,
// JSON-NEXT: "lower_bound_bytes": 7168,
// JSON-NEXT: "fragmentation": 0,
// JSON-NEXT: "alignment": 256,
// JSON-NEXT: "categories": {
// JSON-NEXT:   "parameters": 3072,
// JSON-NEXT:   "optimizer_state": 0,
// JSON-NEXT:   "inputs": 256,
// JSON-NEXT:   "gradients": 3072,
// JSON-NEXT:   "saved_activations": 0,
// JSON-NEXT:   "temporaries": 768,
// JSON-NEXT:   "workspaces": 0
// JSON-NEXT: },
// Over all buffers: inputs x 256 + y (32 -> 256); saved: gelu out 512 (read
// by dW1) + logits 4x8xf32 (128 -> 256) = 768; temporaries: h, loss, the
// constant 1, dlogits, dA, the recomputed h, dH = 512+256+256+256+512+512+512.
// JSON:      "category_totals": {
// JSON:        "inputs": 512,
// JSON:        "saved_activations": 768,
// JSON-NEXT:   "temporaries": 2816,

// FLOPs (multiply-add = 2). Forward: linear 2*4*32*16 = 4096, gelu 10*128 =
// 1280, linear 2*4*8*32 = 2048, cross_entropy 5*32 = 160: 7584. Backward
// (from the constant 1 after the loss on, recompute excluded):
// cross_entropy_grad 6*32 = 192, dA 2*4*32*8 = 2048, dW1 2*8*32*4 = 2048,
// gelu_grad 16*128 = 2048, dW0 2*32*16*4 = 4096: 10432. Recompute: the
// layer-0 linear again, 4096.
// JSON:      "forward_flops": 7584,
// JSON-NEXT: "backward_flops": 10432,
// JSON-NEXT: "recompute_flops": 4096,
// JSON-NEXT: "optimizer_flops": 0,
// JSON-NEXT: "recomputed_ops": 1,
// The recomputed linear is memory bound on an H100: it moves x 256 + w0 2048
// + h 512 = 2816 bytes, 2816 / 3.35e12 = 8.406e-10 s (its 4096 FLOPs take
// 4.1e-12 s at 989e12).
// JSON-NEXT: "recompute_time_estimate_s": 8.40597014925373{{[0-9]*}}e-10,
// JSON:      "flops_per_s": 989000000000000,
// JSON-NEXT: "bytes_per_s": 3350000000000
// Saved activations per layer: layer 0 keeps the gelu output (512; its input
// h is recomputed, so it is not saved), layer 1 the logits (128, unaligned).
// JSON:      "layers": [
// JSON-NEXT:   {
// JSON-NEXT:     "layer": 0,
// JSON-NEXT:     "saved_bytes": 512,
// JSON-NEXT:     "recomputed_ops": 1,
// JSON-NEXT:     "recompute_flops": 4096
// JSON-NEXT:   },
// JSON-NEXT:   {
// JSON-NEXT:     "layer": 1,
// JSON-NEXT:     "saved_bytes": 128,
// JSON-NEXT:     "recomputed_ops": 0,
// JSON-NEXT:     "recompute_flops": 0
// JSON-NEXT:   }
// JSON-NEXT: ],
// JSON-NEXT: "unlayered_saved_bytes": 0,
// JSON-NEXT: "loss_chunks": 1

// A budget below the planned peak is an error that names the peak and the
// lower bound; the report is still written.
// RUN: not weft-opt %s --weft-plan-memory --weft-training-report="report=%t.over.json budget=7000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OVER
// RUN: FileCheck %s --check-prefix=OVER-JSON < %t.over.json
// OVER: error: planned peak 7168 bytes (7.00 KiB) of @forward_step exceeds the memory budget of 7000 bytes (6.84 KiB)
// OVER: note: the lower bound for this schedule is 7168 bytes (7.00 KiB); weft-remat's budget policy (--remat=budget) chooses what to recompute to meet a budget
// OVER-JSON: "budget_bytes": 7000,
// The peak itself fits.
// RUN: weft-opt %s --weft-plan-memory --weft-training-report="budget=7168" -o /dev/null

// Without a plan there is nothing to report.
// RUN: not weft-opt %s --weft-training-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPLAN
// NOPLAN: error: @forward_step has no 'weft.memory_plan': run weft-plan-memory on it before reporting it
// RUN: not weft-opt %s --weft-plan-memory --weft-training-report="entry=nope" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOENTRY
// NOENTRY: error: weft-training-report: no function with a body named @nope
// An unwritable report is an error, not a crash.
// RUN: not weft-opt %s --weft-plan-memory --weft-training-report="report=%t.missing/dir/r.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOWRITE
// NOWRITE: error: weft-training-report cannot write '{{.*}}r.json'

func.func @forward_step(%w0: tensor<32x16xf32> {weft.param}, %w1: tensor<8x32xf32> {weft.param}, %x: tensor<4x16xf32>, %y: tensor<4xi64>) -> (tensor<f32>, tensor<32x16xf32>, tensor<8x32xf32>) {
  %0 = weft.linear %x, %w0 {weft.layer = 0 : i64} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %1 = weft.gelu %0 {weft.layer = 0 : i64} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %2 = weft.linear %1, %w1 {weft.layer = 1 : i64} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
  %3 = weft.cross_entropy %2, %y : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %4 = weft.cross_entropy_grad %one, %2, %y : (tensor<f32>, tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %5 = weft.matmul %4, %w1 {weft.layer = 1 : i64} : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %6 = weft.matmul %4, %1 {transpose_a, weft.layer = 1 : i64} : (tensor<4x8xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
  %7 = weft.linear %x, %w0 {weft.layer = 0 : i64, weft.recompute} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %8 = weft.gelu_grad %5, %7 {weft.layer = 0 : i64} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %9 = weft.matmul %8, %x {transpose_a, weft.layer = 0 : i64} : (tensor<4x32xf32>, tensor<4x16xf32>) -> tensor<32x16xf32>
  return %3, %9, %6 : tensor<f32>, tensor<32x16xf32>, tensor<8x32xf32>
}
