// Losses weft-fold-loss-convert leaves reading f32 (or keeps a convert for).
// RUN: weft-opt %s --split-input-file --weft-fold-loss-convert | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-fold-loss-convert))' --weft-diff-each-pass -o /dev/null

// The f32 logits are also returned: the convert stays for that use.
// CHECK-LABEL: func.func @shared
// CHECK: %[[F:.*]] = weft.convert %arg0
// CHECK: weft.cross_entropy %arg0, %arg1 : (tensor<16x100xf16>, tensor<16xi64>) -> tensor<f32>
// CHECK: return %{{.*}}, %[[F]]
func.func @shared(%logits: tensor<16x100xf16>, %labels: tensor<16xi64>) -> (tensor<f32>, tensor<16x100xf32>) {
  %f = weft.convert %logits : (tensor<16x100xf16>) -> tensor<16x100xf32>
  %l = weft.cross_entropy %f, %labels : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<f32>
  return %l, %f : tensor<f32>, tensor<16x100xf32>
}

// -----

// Not a narrow-to-f32 convert: f32 -> f64 logits keep their convert.
// CHECK-LABEL: func.func @wide
// CHECK: %[[F:.*]] = weft.convert %arg0
// CHECK: weft.cross_entropy %[[F]], %arg1 : (tensor<16x100xf64>, tensor<16xi64>) -> tensor<f64>
func.func @wide(%logits: tensor<16x100xf32>, %labels: tensor<16xi64>) -> tensor<f64> {
  %f = weft.convert %logits : (tensor<16x100xf32>) -> tensor<16x100xf64>
  %l = weft.cross_entropy %f, %labels : (tensor<16x100xf64>, tensor<16xi64>) -> tensor<f64>
  return %l : tensor<f64>
}
