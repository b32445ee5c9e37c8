// Every weft op, with each optional operand, result and attribute variant,
// survives printing and parsing in both the custom and the generic form.
// RUN: weft-opt %s | weft-opt | FileCheck %s
// RUN: weft-opt %s --mlir-print-op-generic | weft-opt | FileCheck %s

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @linear_bias
// CHECK: weft.linear %arg0, %arg1, %arg2 : (tensor<2x128x512xbf16>, tensor<1536x512xbf16>, tensor<1536xbf16>) -> tensor<2x128x1536xbf16>
func.func @linear_bias(%x: tensor<2x128x512xbf16>, %w: tensor<1536x512xbf16>, %b: tensor<1536xbf16>) -> tensor<2x128x1536xbf16> {
  %y = weft.linear %x, %w, %b : (tensor<2x128x512xbf16>, tensor<1536x512xbf16>, tensor<1536xbf16>) -> tensor<2x128x1536xbf16>
  return %y : tensor<2x128x1536xbf16>
}

// CHECK-LABEL: func.func @linear_no_bias
// CHECK: weft.linear %arg0, %arg1 : (tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<16x8xf32>
func.func @linear_no_bias(%x: tensor<16x32xf32>, %w: tensor<8x32xf32>) -> tensor<16x8xf32> {
  %y = weft.linear %x, %w : (tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @linear_1d
// CHECK: weft.linear %arg0, %arg1 : (tensor<32xf64>, tensor<8x32xf64>) -> tensor<8xf64>
func.func @linear_1d(%x: tensor<32xf64>, %w: tensor<8x32xf64>) -> tensor<8xf64> {
  %y = weft.linear %x, %w : (tensor<32xf64>, tensor<8x32xf64>) -> tensor<8xf64>
  return %y : tensor<8xf64>
}

// CHECK-LABEL: func.func @matmul
// CHECK: weft.matmul %arg0, %arg1 : (tensor<2x8x16x32xf32>, tensor<2x8x32x4xf32>) -> tensor<2x8x16x4xf32>
// CHECK: weft.matmul %arg0, %arg0 {transpose_b} : (tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32>) -> tensor<2x8x16x16xf32>
// CHECK: weft.matmul %arg0, %arg0 {transpose_a} : (tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32>) -> tensor<2x8x32x32xf32>
// CHECK: weft.matmul %arg1, %arg2 {transpose_a, transpose_b} : (tensor<2x8x32x4xf32>, tensor<5x32xf32>) -> tensor<2x8x4x5xf32>
func.func @matmul(%a: tensor<2x8x16x32xf32>, %b: tensor<2x8x32x4xf32>, %w: tensor<5x32xf32>) -> (tensor<2x8x16x4xf32>, tensor<2x8x16x16xf32>, tensor<2x8x32x32xf32>, tensor<2x8x4x5xf32>) {
  %0 = weft.matmul %a, %b : (tensor<2x8x16x32xf32>, tensor<2x8x32x4xf32>) -> tensor<2x8x16x4xf32>
  %1 = weft.matmul %a, %a {transpose_b} : (tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32>) -> tensor<2x8x16x16xf32>
  %2 = weft.matmul %a, %a {transpose_a} : (tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32>) -> tensor<2x8x32x32xf32>
  // A shared 2-d b with both transposes: a^T is [.., 4, 32], b^T is [32, 5].
  %3 = weft.matmul %b, %w {transpose_a, transpose_b} : (tensor<2x8x32x4xf32>, tensor<5x32xf32>) -> tensor<2x8x4x5xf32>
  return %0, %1, %2, %3 : tensor<2x8x16x4xf32>, tensor<2x8x16x16xf32>, tensor<2x8x32x32xf32>, tensor<2x8x4x5xf32>
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @attention
// CHECK: weft.attention %arg0, %arg1, %arg2 {causal, scale = 1.250000e-01 : f32} : (tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> tensor<2x8x128x64xbf16>
// CHECK: weft.attention %arg0, %arg1, %arg2 : (tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>)
// CHECK: weft.attention %arg0, %arg1, %arg2, %arg3 {causal, dropout_p = 1.000000e-01 : f64, weft.rng_id = 7 : i64} : (tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<i64>) -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>)
func.func @attention(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x128x64xbf16>, %v: tensor<2x2x128x64xbf16>, %seed: tensor<i64>) -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>, tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>) {
  %o = weft.attention %q, %k, %v {causal, scale = 0.125 : f32} : (tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> tensor<2x8x128x64xbf16>
  // With the log-sum-exp result.
  %o1, %lse1 = weft.attention %q, %k, %v : (tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>)
  // With seed and dropout.
  %o2, %lse2 = weft.attention %q, %k, %v, %seed {causal, dropout_p = 0.1 : f64, weft.rng_id = 7 : i64} : (tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<i64>) -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>)
  return %o1, %lse1, %o2, %lse2 : tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>, tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
}

// CHECK-LABEL: func.func @attention_mqa
// CHECK: weft.attention %arg0, %arg1, %arg2 : (tensor<1x4x16x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x32x16xf32>) -> tensor<1x4x16x16xf32>
func.func @attention_mqa(%q: tensor<1x4x16x8xf32>, %k: tensor<1x1x32x8xf32>, %v: tensor<1x1x32x16xf32>) -> tensor<1x4x16x16xf32> {
  // One kv head (MQA), sk != sq and dv != d.
  %o = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x32x16xf32>) -> tensor<1x4x16x16xf32>
  return %o : tensor<1x4x16x16xf32>
}

// CHECK-LABEL: func.func @attention_grad
// CHECK: weft.attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {causal} : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
// CHECK: weft.attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6 {dropout_p = 2.500000e-01 : f64, scale = 5.000000e-01 : f32, weft.rng_id = 3 : i64} : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>, tensor<i64>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
func.func @attention_grad(%do: tensor<1x4x16x8xf32>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>, %seed: tensor<i64>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal} : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  %dq2, %dk2, %dv2 = weft.attention_grad %do, %q, %k, %v, %o, %lse, %seed {dropout_p = 0.25 : f64, scale = 0.5 : f32, weft.rng_id = 3 : i64} : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>, tensor<i64>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return %dq2, %dk, %dv2 : tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}

//===----------------------------------------------------------------------===//
// Normalization, activations, softmax
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @norms
// CHECK: weft.layer_norm %arg0, %arg1, %arg2 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: weft.layer_norm %arg0, %arg1, %arg2 {eps = 1.000000e-03 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: weft.layer_norm_grad %arg0, %arg0, %arg1 {eps = 1.000000e-03 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: weft.rms_norm %arg0, %arg1 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: weft.rms_norm %arg0, %arg1 {eps = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: weft.rms_norm_grad %arg0, %arg0, %arg1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
func.func @norms(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // The default eps (1e-5 for LayerNorm, 1e-6 for RMSNorm) is not printed.
  %0 = weft.layer_norm %x, %g, %b {eps = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %1 = weft.layer_norm %x, %g, %b {eps = 1.0e-03 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %dx, %dg, %db = weft.layer_norm_grad %x, %x, %g {eps = 1.0e-03 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %2 = weft.rms_norm %x, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %3 = weft.rms_norm %x, %g {eps = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %rdx, %rdg = weft.rms_norm_grad %x, %x, %g : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return
}

// CHECK-LABEL: func.func @softmax
// CHECK: weft.softmax %arg0 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
// CHECK: weft.softmax %arg0 {dim = 1 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
// CHECK: weft.softmax_grad %arg0, %arg0 {dim = -2 : i64} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
// CHECK: weft.softmax_grad %arg0, %arg0 : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
func.func @softmax(%s: tensor<2x8x8xf32>) {
  %0 = weft.softmax %s {dim = -1 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %1 = weft.softmax %s {dim = 1 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %2 = weft.softmax_grad %s, %s {dim = -2 : i64} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %3 = weft.softmax_grad %s, %s : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return
}

// CHECK-LABEL: func.func @activations
// CHECK: weft.gelu %arg0 : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: weft.gelu %arg0 {approximate = "tanh"} : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: weft.gelu_grad %arg0, %arg0 {approximate = "tanh"} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: weft.gelu_grad %arg0, %arg0 : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: weft.silu %arg0 : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: weft.silu_grad %arg0, %arg0 : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
func.func @activations(%x: tensor<4x8xbf16>) {
  %0 = weft.gelu %x : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %1 = weft.gelu %x {approximate = "tanh"} : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %2 = weft.gelu_grad %x, %x {approximate = "tanh"} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %3 = weft.gelu_grad %x, %x {approximate = "none"} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %4 = weft.silu %x : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %5 = weft.silu_grad %x, %x : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary
// CHECK: weft.add %arg0, %arg1 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: weft.sub %arg1, %arg0 : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: weft.mul %arg2, %arg0 : (tensor<2x1x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: weft.mul %arg2, %arg3 : (tensor<2x1x8xf32>, tensor<4x1xf32>) -> tensor<2x4x8xf32>
func.func @binary(%x: tensor<2x4x8xf32>, %b: tensor<8xf32>, %c: tensor<2x1x8xf32>, %d: tensor<4x1xf32>) {
  %0 = weft.add %x, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %1 = weft.sub %b, %x : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %2 = weft.mul %c, %x : (tensor<2x1x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // Both operands stretch: [2, 1, 8] and [4, 1] broadcast to [2, 4, 8].
  %3 = weft.mul %c, %d : (tensor<2x1x8xf32>, tensor<4x1xf32>) -> tensor<2x4x8xf32>
  return
}

// CHECK-LABEL: func.func @pointwise
// CHECK: weft.scale %arg0 {value = 1.250000e-01 : f64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK: weft.dropout %arg0, %arg1 {p = 1.000000e-01 : f64, weft.rng_id = 3 : i64} : (tensor<4x8xf16>, tensor<i64>) -> tensor<4x8xf16>
// CHECK: weft.causal_mask %arg0 : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK: weft.causal_mask %arg0 {fill = 0.000000e+00 : f64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK: weft.where %arg2, %arg0, %arg3 : (tensor<4x8xi1>, tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
// CHECK: weft.convert %arg0 : (tensor<4x8xf16>) -> tensor<4x8xf32>
// CHECK: weft.convert %arg0 : (tensor<4x8xf16>) -> tensor<4x8xbf16>
func.func @pointwise(%x: tensor<4x8xf16>, %seed: tensor<i64>, %c: tensor<4x8xi1>, %r: tensor<8xf16>) {
  %0 = weft.scale %x {value = 0.125 : f64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  %1 = weft.dropout %x, %seed {p = 0.1 : f64, weft.rng_id = 3 : i64} : (tensor<4x8xf16>, tensor<i64>) -> tensor<4x8xf16>
  %2 = weft.causal_mask %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
  %3 = weft.causal_mask %x {fill = 0.0 : f64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  %4 = weft.where %c, %x, %r : (tensor<4x8xi1>, tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
  %5 = weft.convert %x : (tensor<4x8xf16>) -> tensor<4x8xf32>
  %6 = weft.convert %x : (tensor<4x8xf16>) -> tensor<4x8xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Reductions and shapes
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce
// CHECK: weft.reduce_sum %arg0 {dims = array<i64: 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8xf32>
// CHECK: weft.reduce_sum %arg0 {dims = array<i64: -1>, keepdim} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
// CHECK: weft.reduce_mean %arg0 {dims = array<i64: 1>} : (tensor<2x4x8xf32>) -> tensor<2x8xf32>
// CHECK: weft.reduce_mean %arg0 {dims = array<i64: 0, 2>, keepdim} : (tensor<2x4x8xf32>) -> tensor<1x4x1xf32>
// CHECK: weft.reduce_sum %arg0 {dims = array<i64: 0, 1, 2>} : (tensor<2x4x8xf32>) -> tensor<f32>
func.func @reduce(%x: tensor<2x4x8xf32>) {
  %0 = weft.reduce_sum %x {dims = array<i64: 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8xf32>
  %1 = weft.reduce_sum %x {dims = array<i64: -1>, keepdim} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %2 = weft.reduce_mean %x {dims = array<i64: 1>} : (tensor<2x4x8xf32>) -> tensor<2x8xf32>
  %3 = weft.reduce_mean %x {dims = array<i64: 0, 2>, keepdim} : (tensor<2x4x8xf32>) -> tensor<1x4x1xf32>
  %4 = weft.reduce_sum %x {dims = array<i64: 0, 1, 2>} : (tensor<2x4x8xf32>) -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @shapes
// CHECK: weft.reshape %arg0 : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
// CHECK: weft.reshape %arg1 : (tensor<2x16xi64>) -> tensor<32xi64>
// CHECK: weft.transpose %arg0 {perm = array<i64: 2, 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8x2x4xf32>
// CHECK: weft.transpose %arg2 {perm = array<i64: 1, 0>} : (tensor<4x8xi1>) -> tensor<8x4xi1>
func.func @shapes(%x: tensor<2x4x8xf32>, %ids: tensor<2x16xi64>, %mask: tensor<4x8xi1>) {
  %0 = weft.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %1 = weft.reshape %ids : (tensor<2x16xi64>) -> tensor<32xi64>
  %2 = weft.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8x2x4xf32>
  %3 = weft.transpose %mask {perm = array<i64: 1, 0>} : (tensor<4x8xi1>) -> tensor<8x4xi1>
  return
}

// CHECK-LABEL: func.func @split_concat
// CHECK: %[[A:.+]]:2 = weft.split %arg0 {dim = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>)
// CHECK: %[[P:.+]]:3 = weft.split %arg0 {dim = -1 : i64, sizes = array<i64: 2, 2, 4>} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>)
// CHECK: %[[S:.+]] = weft.split %arg0 {dim = 0 : i64, sizes = array<i64: 4>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.concat %[[A]]#0, %[[A]]#1 {dim = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
// CHECK: weft.concat %[[P]]#0, %[[P]]#1, %[[P]]#2 {dim = -1 : i64} : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
// CHECK: weft.concat %[[S]], %[[S]] {dim = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK: weft.concat %arg0 {dim = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @split_concat(%x: tensor<4x8xf32>) {
  %a, %b = weft.split %x {dim = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>)
  %p:3 = weft.split %x {dim = -1 : i64, sizes = array<i64: 2, 2, 4>} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>)
  %s = weft.split %x {dim = 0 : i64, sizes = array<i64: 4>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = weft.concat %a, %b {dim = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  %1 = weft.concat %p#0, %p#1, %p#2 {dim = -1 : i64} : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %2 = weft.concat %s, %s {dim = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %3 = weft.concat %x {dim = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Embedding, loss, position encoding, optimizer
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @embedding
// CHECK: weft.embedding %arg0, %arg1 : (tensor<2x16xi64>, tensor<100x32xf32>) -> tensor<2x16x32xf32>
// CHECK: weft.embedding_grad %arg2, %arg0 : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<100x32xf32>
func.func @embedding(%ids: tensor<2x16xi64>, %table: tensor<100x32xf32>, %dy: tensor<2x16x32xf32>) {
  %0 = weft.embedding %ids, %table : (tensor<2x16xi64>, tensor<100x32xf32>) -> tensor<2x16x32xf32>
  %1 = weft.embedding_grad %dy, %ids : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<100x32xf32>
  return
}

// CHECK-LABEL: func.func @cross_entropy
// CHECK: weft.cross_entropy %arg0, %arg1 : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
// CHECK: weft.cross_entropy_grad %arg2, %arg0, %arg1 : (tensor<f32>, tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<2x16x100xf32>
func.func @cross_entropy(%logits: tensor<2x16x100xf32>, %labels: tensor<2x16xi64>, %dloss: tensor<f32>) {
  %0 = weft.cross_entropy %logits, %labels : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
  %1 = weft.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<2x16x100xf32>
  return
}

// bf16 logits, f32 loss and dloss: f32 math, dlogits in the logits' type.
// CHECK-LABEL: func.func @cross_entropy_bf16_logits
// CHECK: weft.cross_entropy %arg0, %arg1 : (tensor<2x16x100xbf16>, tensor<2x16xi64>) -> tensor<f32>
// CHECK: weft.cross_entropy_grad %arg2, %arg0, %arg1 : (tensor<f32>, tensor<2x16x100xbf16>, tensor<2x16xi64>) -> tensor<2x16x100xbf16>
func.func @cross_entropy_bf16_logits(%logits: tensor<2x16x100xbf16>, %labels: tensor<2x16xi64>, %dloss: tensor<f32>) {
  %0 = weft.cross_entropy %logits, %labels : (tensor<2x16x100xbf16>, tensor<2x16xi64>) -> tensor<f32>
  %1 = weft.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<2x16x100xbf16>, tensor<2x16xi64>) -> tensor<2x16x100xbf16>
  return
}

// CHECK-LABEL: func.func @rope
// CHECK: weft.rope %arg0, %arg1, %arg2 : (tensor<1x4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16x8xf32>
// CHECK: weft.rope %arg0, %arg1, %arg2 {inverse} : (tensor<1x4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16x8xf32>
func.func @rope(%x: tensor<1x4x16x8xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xf32>) {
  %0 = weft.rope %x, %cos, %sin : (tensor<1x4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16x8xf32>
  %1 = weft.rope %x, %cos, %sin {inverse} : (tensor<1x4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// CHECK-LABEL: func.func @adamw
// CHECK: weft.adamw %arg0, %arg1, %arg2, %arg3, %arg4 {lr = 1.000000e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: weft.adamw %arg0, %arg1, %arg2, %arg3, %arg4 {beta1 = 5.000000e-01 : f64, beta2 = 7.500000e-01 : f64, eps = 2.500000e-01 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
func.func @adamw(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // The PyTorch defaults (0.9, 0.999, 1e-8, 0.01) are not printed.
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %p2, %m2, %v2 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64, beta1 = 0.5 : f64, beta2 = 0.75 : f64, eps = 0.25 : f64, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Dialect attributes
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @dialect_attrs
// CHECK-SAME: %arg0: tensor<8x8xf32> {weft.param}
// CHECK-SAME: %arg1: tensor<2x16xi64> {weft.range = array<i64: 0, 100>}
// CHECK: weft.gelu %arg0 {weft.layer = 2 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
func.func @dialect_attrs(%w: tensor<8x8xf32> {weft.param}, %ids: tensor<2x16xi64> {weft.range = array<i64: 0, 100>}) -> tensor<8x8xf32> {
  %0 = weft.gelu %w {weft.layer = 2 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
