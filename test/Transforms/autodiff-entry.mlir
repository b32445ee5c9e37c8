// RUN: weft-opt %s --weft-autodiff="entry=loss_of_w" | FileCheck %s

// The entry option picks the forward; other functions get no step. A split
// piece the loss ignores contributes zeros to the concatenated gradient.

// CHECK-LABEL: func.func @loss_of_w_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x5xf64> {weft.param}) -> (tensor<f64>, tensor<3x5xf64> {weft.grad_of = 0 : i64})
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<2x3xf64>
// CHECK: %[[C:.*]] = weft.concat %[[Z]], %{{.*}} {dim = 0 : i64} : (tensor<2x3xf64>, tensor<3x3xf64>) -> tensor<5x3xf64>
// CHECK: %[[DW:.*]] = weft.transpose %[[C]] {perm = array<i64: 1, 0>} : (tensor<5x3xf64>) -> tensor<3x5xf64>
// CHECK: return %{{.*}}, %[[DW]]
// CHECK-NOT: func.func @forward_step
func.func @loss_of_w(%w: tensor<3x5xf64> {weft.param}) -> tensor<f64> {
  %t = weft.transpose %w {perm = array<i64: 1, 0>} : (tensor<3x5xf64>) -> tensor<5x3xf64>
  %s:2 = weft.split %t {dim = 0 : i64, sizes = array<i64: 2, 3>} : (tensor<5x3xf64>) -> (tensor<2x3xf64>, tensor<3x3xf64>)
  %l = weft.reduce_sum %s#1 {dims = array<i64: 0, 1>} : (tensor<3x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

func.func @forward(%x: tensor<2xf64>) -> tensor<f64> {
  %l = weft.reduce_sum %x {dims = array<i64: 0>} : (tensor<2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}
