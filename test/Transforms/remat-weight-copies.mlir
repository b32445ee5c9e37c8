// weft-remat's weight-copies option on a mixed-precision step (bf16 model,
// f32 masters, weft-autodiff optimizer=adamw). weft-autodiff converts each
// master right before its copy's first reader and runs each update as soon
// as its gradient is final; w1's copy is read again in the backward (dX of
// layer 1), w0's is not (x needs no gradient). Peaks: 131584 bytes keeping
// the copy, 123392 converting it again in the backward, 119296 with full.
//
// RUN: weft-opt %s --weft-autodiff=optimizer=adamw --weft-remat=policy=none | FileCheck %s --check-prefix=NONE
// RUN: weft-opt %s --weft-autodiff=optimizer=adamw --weft-remat=policy=full | FileCheck %s --check-prefix=FULL
// RUN: weft-opt %s --weft-autodiff=optimizer=adamw --weft-remat="policy=full weight-copies=keep" | FileCheck %s --check-prefix=KEEP
// RUN: weft-opt %s --weft-autodiff=optimizer=adamw --weft-remat="policy=none weight-copies=recompute report=%t.copies.json" | FileCheck %s --check-prefix=COPIES
// RUN: FileCheck %s --input-file=%t.copies.json --check-prefix=COPIES-REPORT
// RUN: weft-opt %s --weft-autodiff=optimizer=adamw --weft-remat="policy=budget budget=123392 report=%t.budget.json" | FileCheck %s --check-prefix=COPIES
// RUN: FileCheck %s --input-file=%t.budget.json --check-prefix=BUDGET-REPORT
// RUN: not weft-opt %s --weft-autodiff=optimizer=adamw --weft-remat="policy=budget budget=123392 weight-copies=keep" 2>&1 | FileCheck %s --check-prefix=KEEP-BUDGET
// RUN: not weft-opt %s --weft-autodiff=optimizer=adamw --weft-remat="policy=budget budget=119000" 2>&1 | FileCheck %s --check-prefix=TOO-SMALL
// RUN: not weft-opt %s --weft-autodiff=optimizer=adamw --weft-remat="policy=none weight-copies=always" 2>&1 | FileCheck %s --check-prefix=BAD

// NONE-LABEL: func.func @forward_step(
// NONE: %[[W0:.*]] = weft.convert %arg0 : (tensor<64x64xf32>) -> tensor<64x64xbf16>
// NONE-NEXT: weft.linear %arg6, %[[W0]]
// NONE-NEXT: weft.gelu
// NONE-NEXT: %[[W1:.*]] = weft.convert %arg1 : (tensor<64x64xf32>) -> tensor<64x64xbf16>
// NONE-NEXT: weft.linear %{{.*}}, %[[W1]]
// NONE: weft.matmul %{{.*}}, %[[W1]] {weft.layer = 1 : i64}
// NONE-NEXT: %[[DW1:.*]] = weft.matmul {{.*}} {transpose_a, weft.layer = 1 : i64} {{.*}} -> tensor<64x64xbf16>
// NONE-NEXT: weft.adamw %arg1, %[[DW1]], %arg3, %arg5, %arg7
// NONE-NEXT: weft.gelu_grad
// NONE-NEXT: %[[DW0:.*]] = weft.matmul
// NONE-NEXT: weft.adamw %arg0, %[[DW0]], %arg2, %arg4, %arg7
// NONE-NOT: weft.recompute

// full converts each master again right before the backward's first reader
// of its copy, the layer's recomputed linear (w0's copy too: layer 0's
// recompute reads it), and before the master's in-place update.
// FULL-LABEL: func.func @forward_step(
// FULL: %[[W1:.*]] = weft.convert %arg1 {weft.recompute}
// FULL-NEXT: weft.linear %{{.*}}, %[[W1]] {weft.layer = 1 : i64, weft.recompute}
// FULL-NEXT: weft.gelu_grad
// FULL-NEXT: weft.matmul %{{.*}}, %[[W1]] {weft.layer = 1 : i64}
// FULL-NEXT: weft.matmul
// FULL-NEXT: weft.adamw %arg1
// FULL-NEXT: %[[W0:.*]] = weft.convert %arg0 {weft.recompute}
// FULL-NEXT: weft.linear %arg6, %[[W0]] {weft.layer = 0 : i64, weft.recompute}
// FULL: weft.adamw %arg0

// KEEP-LABEL: func.func @forward_step(
// KEEP-NOT: weft.convert %arg{{[0-9]+}} {weft.recompute}
// KEEP: weft.linear {{.*}}weft.recompute
// KEEP-NOT: weft.convert %arg{{[0-9]+}} {weft.recompute}

// COPIES-LABEL: func.func @forward_step(
// COPIES: weft.gelu_grad
// COPIES-NEXT: %[[W1:.*]] = weft.convert %arg1 {weft.recompute}
// COPIES-NEXT: weft.matmul %{{.*}}, %[[W1]] {weft.layer = 1 : i64}
// COPIES-NOT: weft.recompute

// COPIES-REPORT: "planned_peak_bytes": 123392,
// COPIES-REPORT: "cloned_ops": 1,
// COPIES-REPORT: "recomputed_weight_copies": 1,

// The budget's cheapest fit converts the copy again and recomputes no layer.
// BUDGET-REPORT: "policy": "budget",
// BUDGET-REPORT: "planned_peak_bytes": 123392,
// BUDGET-REPORT: "cloned_ops": 1,
// BUDGET-REPORT: "recomputed_weight_copies": 1,

// KEEP-BUDGET: error: weft-remat: the budget of 123392 bytes (120.50 KiB) is infeasible for @forward_step: the smallest peak Weft can reach is 131584 bytes (128.50 KiB) ({{.*}} layers, 2 classes of isomorphic layers)
// TOO-SMALL: error: weft-remat: the budget of 119000 bytes {{.*}} the smallest peak Weft can reach is 119296 bytes {{.*}}, weight copies kept or recomputed)
// BAD: error: weft-remat: unknown weight-copies 'always' (expected keep, recompute or auto)

func.func @forward(%w0: tensor<64x64xbf16> {weft.param}, %w1: tensor<64x64xbf16> {weft.param},
                   %x: tensor<16x64xbf16>) -> tensor<f32> {
  %h = weft.linear %x, %w0 {weft.layer = 0 : i64} : (tensor<16x64xbf16>, tensor<64x64xbf16>) -> tensor<16x64xbf16>
  %a = weft.gelu %h {weft.layer = 0 : i64} : (tensor<16x64xbf16>) -> tensor<16x64xbf16>
  %z = weft.linear %a, %w1 {weft.layer = 1 : i64} : (tensor<16x64xbf16>, tensor<64x64xbf16>) -> tensor<16x64xbf16>
  %g = weft.gelu %z {weft.layer = 1 : i64} : (tensor<16x64xbf16>) -> tensor<16x64xbf16>
  %f = weft.convert %g : (tensor<16x64xbf16>) -> tensor<16x64xf32>
  %s = weft.mul %f, %f : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %l = weft.reduce_mean %s {dims = array<i64: 0, 1>} : (tensor<16x64xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
