// weft-build-plan's launches of ElementwiseToNVVM kernels: grids and blocks
// as the kernels were built for, several kernels from one image where an op
// needs them, and a warning (kernel kept without an image) for an op no
// GPU kernel implements.
// RUN: weft-opt %s --weft-plan-memory --weft-build-plan 2>&1 | FileCheck %s

// A reduce_sum over a middle dim has no kernel: warned at the op, declared
// imageless. Over the last dim it is a row kernel (a CTA per row).
// CHECK: warning: no GPU kernel image for weft.reduce_sum (weft_reduce_sum_4): weft.reduce_sum over dims that are not the leading ones
// CHECK-LABEL: weft_plan.step @step_plan
// The layer_norm_grad image holds three kernels with the op's arguments.
// CHECK-DAG: weft_plan.kernel @weft_layer_norm_grad_1_stats image "weft_layer_norm_grad_1" entry "weft_layer_norm_grad_1_stats" params ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr"]
// CHECK-DAG: weft_plan.kernel @weft_layer_norm_grad_1_colsum image "weft_layer_norm_grad_1"
// CHECK-DAG: weft_plan.kernel @weft_layer_norm_grad_1 image "weft_layer_norm_grad_1"
// CHECK-DAG: weft_plan.kernel @weft_dropout_0 image "weft_dropout_0"
// CHECK-DAG: weft_plan.kernel @weft_cross_entropy_2 image "weft_cross_entropy_2" entry "weft_cross_entropy_2" params ["ptr", "ptr", "ptr"]
// Rows kernels: one CTA per row (64), an 8 x bf16 vector per thread:
// 1024 / 8 = 128 threads; the column sums: ceil(1024 / 32) = 32 CTAs of
// 32 x 32 threads; all in schedule order at the op's index.
// CHECK: weft_plan.launch @weft_layer_norm_grad_1_stats [{{.*}}] grid [64, 1, 1] block [128, 1, 1] smem 0 stream 0 at 1
// CHECK-NEXT: weft_plan.launch @weft_layer_norm_grad_1_colsum [{{.*}}] grid [32, 1, 1] block [1024, 1, 1] smem 0 stream 0 at 1
// CHECK-NEXT: weft_plan.launch @weft_layer_norm_grad_1 [{{.*}}] grid [64, 1, 1] block [128, 1, 1] smem 0 stream 0 at 1
// The loss: min(64 rows, 264) CTAs; f32 logits go 4 per vector: 1000 / 4
// = 250 -> 256 threads.
// CHECK-NEXT: weft_plan.launch @weft_cross_entropy_2 [{{.*}}] grid [64, 1, 1] block [256, 1, 1] smem 0 stream 0 at 2
// CHECK-NEXT: weft_plan.launch @weft_reduce_sum_3 [{{.*}}] grid [64, 1, 1] block [256, 1, 1] smem 0 stream 0 at 3
func.func @step(%x: tensor<64x1024xbf16>, %seed: tensor<i64>, %dy: tensor<64x1024xbf16>, %g: tensor<1024xbf16>, %logits: tensor<64x1000xf32>, %labels: tensor<64xi64>, %x3: tensor<4x16x64xbf16>) -> (tensor<64x1024xbf16>, tensor<64x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>, tensor<f32>, tensor<64xbf16>, tensor<4x64xbf16>) {
  %d = weft.dropout %x, %seed {p = 0.5 : f64, weft.rng_id = 1 : i64} : (tensor<64x1024xbf16>, tensor<i64>) -> tensor<64x1024xbf16>
  %dx, %dg, %db = weft.layer_norm_grad %dy, %d, %g : (tensor<64x1024xbf16>, tensor<64x1024xbf16>, tensor<1024xbf16>) -> (tensor<64x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>)
  %loss = weft.cross_entropy %logits, %labels : (tensor<64x1000xf32>, tensor<64xi64>) -> tensor<f32>
  %rows = weft.reduce_sum %x {dims = array<i64: 1>} : (tensor<64x1024xbf16>) -> tensor<64xbf16>
  %mid = weft.reduce_sum %x3 {dims = array<i64: 1>} : (tensor<4x16x64xbf16>) -> tensor<4x64xbf16>
  return %d, %dx, %dg, %db, %loss, %rows, %mid : tensor<64x1024xbf16>, tensor<64x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>, tensor<f32>, tensor<64xbf16>, tensor<4x64xbf16>
}
