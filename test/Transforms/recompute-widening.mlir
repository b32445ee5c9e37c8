// RUN: weft-opt %s --split-input-file --weft-recompute-widening | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --weft-recompute-widening --weft-fuse-elementwise | FileCheck %s --check-prefix=FUSED
// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-recompute-widening))' --weft-diff-each-pass -o /dev/null

// GPT-2's GELU under autocast reads its bf16 pre-activation widened to f32,
// and so does its gradient: the gradient gets a convert of its own, so the
// step keeps the bf16 value (2 bytes an element) for the backward instead
// of the f32 copy (4), and the forward's kernel never writes the f32 copy.
// CHECK-LABEL: func.func @gelu_widened
// CHECK: %[[W:.*]] = weft.convert %arg0 : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
// CHECK: weft.gelu %[[W]]
// CHECK: weft.gelu_grad %arg2, %arg3
// CHECK-NEXT: %[[W2:.*]] = weft.convert %arg0 : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
// CHECK-NEXT: weft.gelu_grad %arg1, %[[W2]]
// FUSED-LABEL: func.func @gelu_widened
// FUSED: weft.fused %arg0 {kind = "convert+gelu"} : (tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
// FUSED: weft.fused %arg0, %arg1 {kind = "convert+gelu_grad"} : (tensor<2x4x16xbf16>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
func.func @gelu_widened(%u: tensor<2x4x16xbf16>, %dy: tensor<2x4x16xf32>, %dz: tensor<2x4x16xf32>, %z: tensor<2x4x16xf32>)
    -> (tensor<2x4x16xbf16>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  %w = weft.convert %u : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
  %g = weft.gelu %w {approximate = "tanh"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %h = weft.convert %g : (tensor<2x4x16xf32>) -> tensor<2x4x16xbf16>
  %dz2 = weft.gelu_grad %dz, %z {approximate = "tanh"} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %du = weft.gelu_grad %dy, %w {approximate = "tanh"} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %h, %du, %dz2 : tensor<2x4x16xbf16>, tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

// -----

// A narrowing convert (a weight's bf16 copy) and a widening read by a
// backward GEMM stay as they are: the GEMM cannot take the widening in.
// CHECK-LABEL: func.func @not_widened
// CHECK-COUNT-2: weft.convert
// CHECK-NOT: weft.convert
func.func @not_widened(%u: tensor<8x16xbf16>, %p: tensor<16x16xf32>, %dy: tensor<8x16xf32>, %z: tensor<8x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>) {
  %w = weft.convert %u : (tensor<8x16xbf16>) -> tensor<8x16xf32>
  %c = weft.convert %p : (tensor<16x16xf32>) -> tensor<16x16xbf16>
  %m = weft.matmul %u, %c : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
  %dz = weft.gelu_grad %dy, %z {approximate = "tanh"} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %dw = weft.matmul %w, %dz {transpose_a} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  return %w, %dz, %dw : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>
}
