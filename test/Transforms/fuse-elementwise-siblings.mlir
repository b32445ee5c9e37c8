// RUN: weft-opt %s --split-input-file --weft-fuse-elementwise | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --weft-fuse-elementwise --weft-diff-each-pass -o /dev/null

// SwiGLU's backward: dh (a GEMM's result) feeds the gate's silu_grad term
// and the up projection's gradient dh * silu(g); the two pointwise groups are
// siblings through dh and become one kernel that reads dh once, yielding
// both. (The silu_grad first starts the backward phase.)
// CHECK-LABEL: func.func @swiglu_backward
// CHECK: weft.fused %arg0, %arg1 {kind = "silu_grad"}
// CHECK: %[[DH:.*]] = weft.matmul
// CHECK: %[[G:.*]]:2 = weft.fused %[[DH]], %arg3, %arg4, %arg5 {kind = "mul+silu_grad"}
// CHECK-NOT: weft.fused
// CHECK: return %{{.*}}, %[[G]]#0, %[[G]]#1
func.func @swiglu_backward(%dy: tensor<4x32xbf16>, %x: tensor<4x32xbf16>, %w: tensor<32x64xbf16>,
                           %up: tensor<4x64xbf16>, %g: tensor<4x64xbf16>, %sg: tensor<4x64xbf16>)
    -> (tensor<4x32xbf16>, tensor<4x64xbf16>, tensor<4x64xbf16>) {
  %t = weft.silu_grad %dy, %x : (tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16>
  %dh = weft.matmul %t, %w : (tensor<4x32xbf16>, tensor<32x64xbf16>) -> tensor<4x64xbf16>
  %dsg = weft.mul %dh, %up : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %dg = weft.silu_grad %dsg, %g : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %dup = weft.mul %dh, %sg : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
  return %t, %dg, %dup : tensor<4x32xbf16>, tensor<4x64xbf16>, tensor<4x64xbf16>
}

// -----

// A row op (rms_norm) reading the same value is no sibling: its group keeps
// its kernel shape; the pointwise readers of x still pair up.
// CHECK-LABEL: func.func @row_sibling
// CHECK: weft.fused %arg0, %arg1 {kind = "rms_norm"}
// CHECK: weft.fused %arg0 {kind = "neg+exp"}
// CHECK-NOT: weft.fused
func.func @row_sibling(%x: tensor<4x64xf32>, %gamma: tensor<64xf32>)
    -> (tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>) {
  %n = weft.rms_norm %x, %gamma {eps = 1.0e-06 : f64} : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  %a = weft.neg %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %b = weft.exp %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %n, %a, %b : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>
}
