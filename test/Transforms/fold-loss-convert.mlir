// RUN: weft-opt %s --split-input-file --weft-fold-loss-convert | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-fold-loss-convert))' --weft-diff-each-pass -o /dev/null
// RUN: weft-opt %s --split-input-file --weft-fold-loss-convert --weft-autodiff | FileCheck %s --check-prefix=GRAD

// The loss reads the bf16 logits; the f32 copy is gone.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: weft.convert
// CHECK: weft.cross_entropy %arg0, %arg1 : (tensor<16x100xbf16>, tensor<16xi64>) -> tensor<f32>
// Its gradient is bf16, written once: no f32 [16, 100] buffer, no convert.
// GRAD-LABEL: func.func @forward_step
// GRAD-NOT: weft.convert
// GRAD: weft.cross_entropy_grad %{{.*}}, %arg0, %arg1 : (tensor<f32>, tensor<16x100xbf16>, tensor<16xi64>) -> tensor<16x100xbf16>
// GRAD-NOT: weft.convert
func.func @forward(%logits: tensor<16x100xbf16> {weft.param}, %labels: tensor<16xi64>) -> tensor<f32> {
  %f = weft.convert %logits : (tensor<16x100xbf16>) -> tensor<16x100xf32>
  %l = weft.cross_entropy %f, %labels : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// nanoGPT's form, logits.view(-1, V) after the convert: the view is rebuilt on
// the bf16 tensor; ignore_index stays.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: weft.convert
// CHECK: %[[V:.*]] = weft.reshape %arg0 : (tensor<2x8x100xbf16>) -> tensor<16x100xbf16>
// CHECK: weft.cross_entropy %[[V]], %arg1 {ignore_index = -100 : i64} : (tensor<16x100xbf16>, tensor<16xi64>) -> tensor<f32>
// GRAD-LABEL: func.func @forward_step
// GRAD-NOT: weft.convert
// GRAD: weft.cross_entropy_grad {{.*}} {ignore_index = -100 : i64} : (tensor<f32>, tensor<16x100xbf16>, tensor<16xi64>) -> tensor<16x100xbf16>
func.func @forward(%logits: tensor<2x8x100xbf16> {weft.param}, %labels: tensor<16xi64>) -> tensor<f32> {
  %f = weft.convert %logits : (tensor<2x8x100xbf16>) -> tensor<2x8x100xf32>
  %v = weft.reshape %f : (tensor<2x8x100xf32>) -> tensor<16x100xf32>
  %l = weft.cross_entropy %v, %labels {ignore_index = -100 : i64} : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
