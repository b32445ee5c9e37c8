// RUN: weft-opt %s --split-input-file --weft-fuse-bias-grad | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --weft-fuse-elementwise | FileCheck %s --check-prefix=ELEM
// RUN: weft-opt %s --split-input-file --weft-fuse-elementwise=bias-grad=false | FileCheck %s --check-prefix=OFF

// A linear's backward: dW = dY^T X over dY flattened to [tokens, out], db =
// dY summed over batch and seq. The group takes dY itself (the reshape is
// cloned into it) and X, sits at the matmul and yields (dW, db); the outer
// reshape stays for the data-gradient matmul that also reads it.
// CHECK-LABEL: func.func @linear_backward
// CHECK: %[[DY2:.*]] = weft.reshape %arg0
// CHECK: %[[G:.*]]:2 = weft.fused %arg0, %arg1 {kind = "matmul+reduce_sum", weft.layer = 3 : i64} : (tensor<2x8x32xbf16>, tensor<16x24xbf16>) -> (tensor<32x24xbf16>, tensor<32xbf16>)
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<2x8x32xbf16>, %[[A1:.*]]: tensor<16x24xbf16>):
// CHECK-NEXT: %[[R:.*]] = weft.reshape %[[A0]]
// CHECK-NEXT: %[[W:.*]] = weft.matmul %[[R]], %[[A1]] {transpose_a
// CHECK-NEXT: %[[S:.*]] = weft.reduce_sum %[[A0]] {dims = array<i64: 0, 1>
// CHECK-NEXT: weft.yield %[[W]], %[[S]]
// CHECK: %[[DX:.*]] = weft.matmul %[[DY2]], %arg2
// CHECK-NOT: weft.reduce_sum
// CHECK: return %[[G]]#0, %[[G]]#1, %[[DX]]
// ELEM-LABEL: func.func @linear_backward
// ELEM: kind = "matmul+reduce_sum"
// OFF-LABEL: func.func @linear_backward
// OFF-NOT: weft.fused
// OFF: weft.reduce_sum %arg0
func.func @linear_backward(%dy: tensor<2x8x32xbf16>, %x: tensor<16x24xbf16>, %w: tensor<32x24xbf16>)
    -> (tensor<32x24xbf16>, tensor<32xbf16>, tensor<16x24xbf16>) {
  %dy2 = weft.reshape %dy : (tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
  %dw = weft.matmul %dy2, %x {transpose_a, weft.layer = 3 : i64} : (tensor<16x32xbf16>, tensor<16x24xbf16>) -> tensor<32x24xbf16>
  %dx = weft.matmul %dy2, %w : (tensor<16x32xbf16>, tensor<32x24xbf16>) -> tensor<16x24xbf16>
  %db = weft.reduce_sum %dy {dims = array<i64: 0, 1>} : (tensor<2x8x32xbf16>) -> tensor<32xbf16>
  return %dw, %db, %dx : tensor<32x24xbf16>, tensor<32xbf16>, tensor<16x24xbf16>
}

// -----

// 2-d dY (f16), the reduce_sum first: the group sits at the reduce_sum (X is
// already defined there), no reshape in its body, and the now unused outer
// view is gone.
// CHECK-LABEL: func.func @two_d_sum_first
// CHECK-NEXT: %[[G:.*]]:2 = weft.fused %arg0, %arg1 {kind = "matmul+reduce_sum"}
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<16x32xf16>, %[[A1:.*]]: tensor<16x8xf16>):
// CHECK-NEXT: %[[W:.*]] = weft.matmul %[[A0]], %[[A1]] {transpose_a}
// CHECK-NEXT: %[[S:.*]] = weft.reduce_sum %[[A0]] {dims = array<i64: 0>}
// CHECK-NEXT: weft.yield %[[W]], %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[U:.*]] = weft.scale %[[G]]#1
// CHECK-NEXT: return %[[G]]#0, %[[U]]
func.func @two_d_sum_first(%dy: tensor<16x32xf16>, %x: tensor<16x8xf16>) -> (tensor<32x8xf16>, tensor<32xf16>) {
  %db = weft.reduce_sum %dy {dims = array<i64: 0>} : (tensor<16x32xf16>) -> tensor<32xf16>
  %u = weft.scale %db {value = 2.0 : f64} : (tensor<32xf16>) -> tensor<32xf16>
  %dw = weft.matmul %dy, %x {transpose_a} : (tensor<16x32xf16>, tensor<16x8xf16>) -> tensor<32x8xf16>
  return %dw, %u : tensor<32x8xf16>, tensor<32xf16>
}

// -----

// Left alone: f32 (cuBLASLt's bias-gradient GEMM here is bf16 / f16), a sum
// over the batch dim only (not every leading dim), dW = X^T dY (the sum is
// over B's columns, not A's rows), and a sum first whose matmul reads an X
// computed after it (the group could not sit at the sum).
// CHECK-LABEL: func.func @not_bias_grads
// CHECK-NOT: weft.fused
// CHECK-COUNT-4: weft.reduce_sum
// CHECK-NOT: weft.fused
// CHECK: return
func.func @not_bias_grads(%dy: tensor<16x32xf32>, %x: tensor<16x8xf32>,
                          %dyb: tensor<2x8x32xbf16>, %xb: tensor<16x8xbf16>,
                          %dyc: tensor<16x32xbf16>)
    -> (tensor<32x8xf32>, tensor<32xf32>, tensor<32x8xbf16>, tensor<8x32xbf16>,
        tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<32xbf16>, tensor<32x8xbf16>, tensor<32xbf16>) {
  %dw = weft.matmul %dy, %x {transpose_a} : (tensor<16x32xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
  %db = weft.reduce_sum %dy {dims = array<i64: 0>} : (tensor<16x32xf32>) -> tensor<32xf32>
  %dyb2 = weft.reshape %dyb : (tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
  %dwb = weft.matmul %dyb2, %xb {transpose_a} : (tensor<16x32xbf16>, tensor<16x8xbf16>) -> tensor<32x8xbf16>
  %dbb = weft.reduce_sum %dyb {dims = array<i64: 0>} : (tensor<2x8x32xbf16>) -> tensor<8x32xbf16>
  %dwt = weft.matmul %xb, %dyc {transpose_a} : (tensor<16x8xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  %dbt = weft.reduce_sum %dyc {dims = array<i64: 0>} : (tensor<16x32xbf16>) -> tensor<32xbf16>
  %late_db = weft.reduce_sum %dyc {dims = array<i64: 0>} : (tensor<16x32xbf16>) -> tensor<32xbf16>
  %xl = weft.scale %xb {value = 2.0 : f64} : (tensor<16x8xbf16>) -> tensor<16x8xbf16>
  %late_dw = weft.matmul %dyc, %xl {transpose_a} : (tensor<16x32xbf16>, tensor<16x8xbf16>) -> tensor<32x8xbf16>
  return %dw, %db, %dwb, %dbb, %dwt, %dwt, %dbt, %late_dw, %late_db
      : tensor<32x8xf32>, tensor<32xf32>, tensor<32x8xbf16>, tensor<8x32xbf16>,
        tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<32xbf16>, tensor<32x8xbf16>, tensor<32xbf16>
}

// -----

// dY is itself a view (the packed gradient of grouped q/k/v heads, reshaped
// to [b, s, n]) and dW's flattening reshapes its source: the same bytes, so
// the pair still forms a group, whose body flattens its own dY.
// CHECK-LABEL: func.func @view_of_view
// CHECK: %[[G:.*]]:2 = weft.fused %[[DY:.*]], %{{.*}} {kind = "matmul+reduce_sum"}
// CHECK: ^bb0(%[[A:.*]]: tensor<2x16x384xbf16>, %{{.*}}: tensor<32x128xbf16>):
// CHECK: weft.reshape %[[A]] : (tensor<2x16x384xbf16>) -> tensor<32x384xbf16>
// CHECK: weft.reduce_sum %[[A]]
// CHECK: weft.yield
// CHECK-NOT: weft.reduce_sum
// CHECK: return %[[G]]#0, %[[G]]#1
func.func @view_of_view(%g: tensor<2x16x2x3x64xbf16>, %x: tensor<32x128xbf16>) -> (tensor<384x128xbf16>, tensor<384xbf16>) {
  %dy = weft.reshape %g : (tensor<2x16x2x3x64xbf16>) -> tensor<2x16x384xbf16>
  %a = weft.reshape %g : (tensor<2x16x2x3x64xbf16>) -> tensor<32x384xbf16>
  %dw = weft.matmul %a, %x {transpose_a} : (tensor<32x384xbf16>, tensor<32x128xbf16>) -> tensor<384x128xbf16>
  %db = weft.reduce_sum %dy {dims = array<i64: 0, 1>} : (tensor<2x16x384xbf16>) -> tensor<384xbf16>
  return %dw, %db : tensor<384x128xbf16>, tensor<384xbf16>
}
