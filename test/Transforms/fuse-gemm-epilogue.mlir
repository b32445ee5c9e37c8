// RUN: weft-opt %s --split-input-file --weft-fuse-gemm-epilogue | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --weft-fuse-gemm-epilogue --weft-fuse-elementwise | FileCheck %s --check-prefix=ELEM

// The MLP of a GPT block, forward and backward. Forward: u is read by the
// gelu and by the backward's gelu_grad, so the group yields (gelu(u), u)
// (GELU_AUX_BIAS writes u as its aux matrix), sits at the linear and keeps
// its layer. Backward: dg = dz w2 is read only by the gelu_grad, so the
// group takes (dz, w2, u) and yields du alone: dg is no tensor any more.
// CHECK-LABEL: func.func @mlp
// CHECK-NEXT: %[[F:.*]]:2 = weft.fused %arg0, %arg1, %arg2 {kind = "linear+gelu", weft.layer = 2 : i64} : (tensor<2x8x32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<2x8x32xbf16>, %[[W:.*]]: tensor<64x32xbf16>, %[[B:.*]]: tensor<64xbf16>):
// CHECK-NEXT: %[[U:.*]] = weft.linear %[[X]], %[[W]], %[[B]]
// CHECK-NEXT: %[[G:.*]] = weft.gelu %[[U]] {approximate = "tanh"
// CHECK-NEXT: weft.yield %[[G]], %[[U]]
// CHECK: %[[Z:.*]] = weft.linear %[[F]]#0, %arg3
// CHECK: %[[D:.*]] = weft.fused %arg4, %arg3, %[[F]]#1 {kind = "matmul+gelu_grad"} : (tensor<2x8x16xbf16>, tensor<16x64xbf16>, tensor<2x8x64xbf16>) -> tensor<2x8x64xbf16>
// CHECK-NEXT: ^bb0(%[[DZ:.*]]: tensor<2x8x16xbf16>, %[[W2:.*]]: tensor<16x64xbf16>, %[[UA:.*]]: tensor<2x8x64xbf16>):
// CHECK-NEXT: %[[DG:.*]] = weft.matmul %[[DZ]], %[[W2]]
// CHECK-NEXT: %[[DU:.*]] = weft.gelu_grad %[[DG]], %[[UA]] {approximate = "tanh"
// CHECK-NEXT: weft.yield %[[DU]]
// CHECK-NOT: weft.gelu
// CHECK: return %[[Z]], %[[D]]
// The elementwise fuser leaves the GEMM groups alone (no gelu is taken
// into a kernel).
// ELEM-LABEL: func.func @mlp
// ELEM: kind = "linear+gelu"
// ELEM: kind = "matmul+gelu_grad"
func.func @mlp(%x: tensor<2x8x32xbf16>, %w1: tensor<64x32xbf16>, %b1: tensor<64xbf16>,
               %w2: tensor<16x64xbf16>, %dz: tensor<2x8x16xbf16>)
    -> (tensor<2x8x16xbf16>, tensor<2x8x64xbf16>) {
  %u = weft.linear %x, %w1, %b1 {weft.layer = 2 : i64} : (tensor<2x8x32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> tensor<2x8x64xbf16>
  %g = weft.gelu %u {approximate = "tanh"} : (tensor<2x8x64xbf16>) -> tensor<2x8x64xbf16>
  %z = weft.linear %g, %w2 : (tensor<2x8x64xbf16>, tensor<16x64xbf16>) -> tensor<2x8x16xbf16>
  %dg = weft.matmul %dz, %w2 : (tensor<2x8x16xbf16>, tensor<16x64xbf16>) -> tensor<2x8x64xbf16>
  %du = weft.gelu_grad %dg, %u {approximate = "tanh"} : (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>) -> tensor<2x8x64xbf16>
  return %z, %du : tensor<2x8x16xbf16>, tensor<2x8x64xbf16>
}

// -----

// Nothing else reads u: the group yields gelu(u) alone (plain GELU_BIAS, no
// aux), and a linear without bias fuses too (GELU). n = 36 is no multiple
// of 8, which only the aux matrix needs.
// CHECK-LABEL: func.func @no_aux
// CHECK-NEXT: %[[F:.*]] = weft.fused %arg0, %arg1 {kind = "linear+gelu"} : (tensor<4x32xf16>, tensor<36x32xf16>) -> tensor<4x36xf16>
// CHECK: weft.yield %{{.*}} : tensor<4x36xf16>
// CHECK: return %[[F]]
func.func @no_aux(%x: tensor<4x32xf16>, %w: tensor<36x32xf16>) -> tensor<4x36xf16> {
  %u = weft.linear %x, %w : (tensor<4x32xf16>, tensor<36x32xf16>) -> tensor<4x36xf16>
  %g = weft.gelu %u {approximate = "tanh"} : (tensor<4x36xf16>) -> tensor<4x36xf16>
  return %g : tensor<4x36xf16>
}

// -----

// Left unfused: an exact (erf) gelu; f32 operands; an aux matrix of 36
// columns (cuBLASLt's aux leading dimension is a multiple of 8); a dg that
// something else reads; a transposed a; an exact gelu_grad.
// CHECK-LABEL: func.func @unfit
// CHECK-NOT: weft.fused
// CHECK: return
func.func @unfit(%x: tensor<4x32xbf16>, %w: tensor<64x32xbf16>, %x32: tensor<4x32xf32>,
                 %w32: tensor<64x32xf32>, %w36: tensor<36x32xbf16>, %dz: tensor<4x16xbf16>,
                 %w2: tensor<16x64xbf16>, %dzt: tensor<16x4xbf16>)
    -> (tensor<4x64xbf16>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x36xbf16>,
        tensor<4x36xbf16>, tensor<4x64xbf16>, tensor<4x64xbf16>, tensor<4x64xbf16>,
        tensor<4x64xbf16>) {
  %u = weft.linear %x, %w : (tensor<4x32xbf16>, tensor<64x32xbf16>) -> tensor<4x64xbf16>
  %erf = weft.gelu %u : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %u32 = weft.linear %x32, %w32 : (tensor<4x32xf32>, tensor<64x32xf32>) -> tensor<4x64xf32>
  %g32 = weft.gelu %u32 {approximate = "tanh"} : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %u36 = weft.linear %x, %w36 : (tensor<4x32xbf16>, tensor<36x32xbf16>) -> tensor<4x36xbf16>
  %g36 = weft.gelu %u36 {approximate = "tanh"} : (tensor<4x36xbf16>) -> tensor<4x36xbf16>
  %dg = weft.matmul %dz, %w2 : (tensor<4x16xbf16>, tensor<16x64xbf16>) -> tensor<4x64xbf16>
  %du = weft.gelu_grad %dg, %u {approximate = "tanh"} : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %dgt = weft.matmul %dzt, %w2 {transpose_a} : (tensor<16x4xbf16>, tensor<16x64xbf16>) -> tensor<4x64xbf16>
  %dut = weft.gelu_grad %dgt, %u {approximate = "tanh"} : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %dg2 = weft.matmul %dz, %w2 : (tensor<4x16xbf16>, tensor<16x64xbf16>) -> tensor<4x64xbf16>
  %due = weft.gelu_grad %dg2, %u : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
  return %erf, %u32, %g32, %u36, %g36, %dg, %du, %dut, %due
      : tensor<4x64xbf16>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x36xbf16>,
        tensor<4x36xbf16>, tensor<4x64xbf16>, tensor<4x64xbf16>, tensor<4x64xbf16>,
        tensor<4x64xbf16>
}

// -----

// The backward group sits where the matmul was, so the weight is read when
// it was (a carried weight copy is updated in place after its last reader,
// here the adamw between the matmul and the gelu_grad).
// CHECK-LABEL: func.func @at_the_matmul
// CHECK-NEXT: %[[D:.*]] = weft.fused %arg0, %arg1, %arg2 {kind = "matmul+gelu_grad"}
// CHECK: weft.yield
// CHECK-NEXT: }
// CHECK-NEXT: weft.adamw
// CHECK-NOT: weft.gelu_grad
func.func @at_the_matmul(%dz: tensor<4x16xbf16>, %w: tensor<16x64xbf16>, %u: tensor<4x64xbf16>,
                         %p: tensor<16x64xf32>, %m: tensor<16x64xf32>, %v: tensor<16x64xf32>,
                         %t: tensor<i64>) -> (tensor<4x64xbf16>, tensor<16x64xf32>) {
  %dg = weft.matmul %dz, %w : (tensor<4x16xbf16>, tensor<16x64xbf16>) -> tensor<4x64xbf16>
  %p1, %m1, %v1 = weft.adamw %p, %p, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<i64>) -> (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>)
  %du = weft.gelu_grad %dg, %u {approximate = "tanh"} : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
  return %du, %p1 : tensor<4x64xbf16>, tensor<16x64xf32>
}
