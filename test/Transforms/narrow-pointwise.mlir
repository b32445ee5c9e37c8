// RUN: weft-opt %s --split-input-file --weft-narrow-pointwise | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-narrow-pointwise))' --weft-diff-each-pass -o /dev/null
// RUN: sed -n '/^func.func @forward/,/^}/p' %s | weft-opt --weft-narrow-pointwise --weft-autodiff --weft-fuse-gemm-epilogue | FileCheck %s --check-prefix=GEMM

// HF GPT-2's MLP under autocast: the linear's bf16 output viewed, widened,
// the tanh GELU in f32, viewed back and narrowed for the next GEMM. The GELU
// runs on the linear's bf16 output itself, on its shape; no convert is left.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: weft.convert
// CHECK: %[[U:.*]] = weft.linear %arg0, %arg1, %arg2
// CHECK-NEXT: %[[G:.*]] = weft.gelu %[[U]] {approximate = "tanh"} : (tensor<16x64xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT: %[[Y:.*]] = weft.linear %[[G]], %arg3, %arg4
// CHECK-NEXT: weft.convert %[[Y]] : (tensor<16x32xbf16>) -> tensor<16x32xf32>
// So the GELU joins the linear's cuBLASLt epilogue, and its gradient the
// data-gradient GEMM's.
// GEMM-LABEL: func.func @forward_step
// GEMM: kind = "linear+gelu"
// GEMM: kind = "matmul+gelu_grad"
func.func @forward(%x: tensor<16x32xbf16>, %w1: tensor<64x32xbf16> {weft.param},
                   %b1: tensor<64xbf16> {weft.param}, %w2: tensor<32x64xbf16> {weft.param},
                   %b2: tensor<32xbf16> {weft.param}) -> tensor<f32> {
  %u = weft.linear %x, %w1, %b1 : (tensor<16x32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %v = weft.reshape %u : (tensor<16x64xbf16>) -> tensor<2x8x64xbf16>
  %w = weft.convert %v : (tensor<2x8x64xbf16>) -> tensor<2x8x64xf32>
  %g = weft.gelu %w {approximate = "tanh"} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %r = weft.reshape %g : (tensor<2x8x64xf32>) -> tensor<16x64xf32>
  %n = weft.convert %r : (tensor<16x64xf32>) -> tensor<16x64xbf16>
  %y = weft.linear %n, %w2, %b2 : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  %f = weft.convert %y : (tensor<16x32xbf16>) -> tensor<16x32xf32>
  %s = weft.reduce_sum %f {dims = array<i64: 0, 1>} : (tensor<16x32xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// The f32 GELU is read twice (narrowed for a GEMM and kept in f32): the
// chain stays, its f32 values needed.
// CHECK-LABEL: func.func @kept
// CHECK: weft.convert %arg0 : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: weft.gelu %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.convert %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
func.func @kept(%x: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xf32>) {
  %w = weft.convert %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %g = weft.gelu %w {approximate = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = weft.convert %g : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return %n, %g : tensor<4x8xbf16>, tensor<4x8xf32>
}

// -----

// Narrowed to another type than the one widened (bf16 -> f32 -> f16): kept.
// CHECK-LABEL: func.func @other_type
// CHECK: weft.exp %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @other_type(%x: tensor<4x8xbf16>) -> tensor<4x8xf16> {
  %w = weft.convert %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %e = weft.exp %w : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = weft.convert %e : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return %n : tensor<4x8xf16>
}
