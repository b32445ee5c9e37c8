// RUN: weft-opt %s --split-input-file --verify-diagnostics

// A GEMM group must be exactly a linear's dW and db: here the matmul
// transposes b (dY^T X^T), which no bias-gradient epilogue computes.
func.func @transposed_b(%dy: tensor<16x32xbf16>, %x: tensor<8x16xbf16>) -> (tensor<32x8xbf16>, tensor<32xbf16>) {
  // expected-error @+1 {{is not a bias-gradient GEMM group (dW = dY^T X with db = dY summed over its leading dims): the matmul is not dY^T X (transpose_a, no transpose_b)}}
  %r:2 = weft.fused %dy, %x {kind = "matmul+reduce_sum"} : (tensor<16x32xbf16>, tensor<8x16xbf16>) -> (tensor<32x8xbf16>, tensor<32xbf16>) {
  ^bb0(%a: tensor<16x32xbf16>, %b: tensor<8x16xbf16>):
    %w = weft.matmul %a, %b {transpose_a, transpose_b} : (tensor<16x32xbf16>, tensor<8x16xbf16>) -> tensor<32x8xbf16>
    %s = weft.reduce_sum %a {dims = array<i64: 0>} : (tensor<16x32xbf16>) -> tensor<32xbf16>
    weft.yield %w, %s : tensor<32x8xbf16>, tensor<32xbf16>
  }
  return %r#0, %r#1 : tensor<32x8xbf16>, tensor<32xbf16>
}

// -----

// The element types must be one of cuBLASLt's bias-gradient GEMMs'.
func.func @f32(%dy: tensor<16x32xf32>, %x: tensor<16x8xf32>) -> (tensor<32x8xf32>, tensor<32xf32>) {
  // expected-error @+1 {{the element type is f32; the cuBLASLt bias-gradient GEMM takes bf16 or f16}}
  %r:2 = weft.fused %dy, %x {kind = "matmul+reduce_sum"} : (tensor<16x32xf32>, tensor<16x8xf32>) -> (tensor<32x8xf32>, tensor<32xf32>) {
  ^bb0(%a: tensor<16x32xf32>, %b: tensor<16x8xf32>):
    %w = weft.matmul %a, %b {transpose_a} : (tensor<16x32xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    %s = weft.reduce_sum %a {dims = array<i64: 0>} : (tensor<16x32xf32>) -> tensor<32xf32>
    weft.yield %w, %s : tensor<32x8xf32>, tensor<32xf32>
  }
  return %r#0, %r#1 : tensor<32x8xf32>, tensor<32xf32>
}

// -----

// A well-formed group under another kind name is refused too (the planner
// picks the GEMM path by kind).
func.func @wrong_kind(%dy: tensor<16x32xbf16>, %x: tensor<16x8xbf16>) -> (tensor<32x8xbf16>, tensor<32xbf16>) {
  // expected-error @+1 {{is a bias-gradient GEMM group but has kind 'matmul', expected 'matmul+reduce_sum'}}
  %r:2 = weft.fused %dy, %x {kind = "matmul"} : (tensor<16x32xbf16>, tensor<16x8xbf16>) -> (tensor<32x8xbf16>, tensor<32xbf16>) {
  ^bb0(%a: tensor<16x32xbf16>, %b: tensor<16x8xbf16>):
    %w = weft.matmul %a, %b {transpose_a} : (tensor<16x32xbf16>, tensor<16x8xbf16>) -> tensor<32x8xbf16>
    %s = weft.reduce_sum %a {dims = array<i64: 0>} : (tensor<16x32xbf16>) -> tensor<32xbf16>
    weft.yield %w, %s : tensor<32x8xbf16>, tensor<32xbf16>
  }
  return %r#0, %r#1 : tensor<32x8xbf16>, tensor<32xbf16>
}
