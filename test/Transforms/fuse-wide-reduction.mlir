// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-fuse-elementwise))' | FileCheck %s
// A whole-tensor reduction of at least 65536 elements is one row to a
// kernel (one CTA over every element): weft-fuse-elementwise splits it into
// the column sums, then the (scaled, for a mean) row of column sums.

// CHECK-LABEL: func.func @wide_mean
// CHECK: %[[C:.*]] = weft.reduce_sum %{{.*}} {dims = array<i64: 0, 1>} : (tensor<1x256x256xf32>) -> tensor<256xf32>
// CHECK: weft.scale %{{.*}} {value = 1.52587890625E-5 : f64} : (tensor<256xf32>) -> tensor<256xf32>
// CHECK: weft.reduce_sum %{{.*}} {dims = array<i64: 0>} : (tensor<256xf32>) -> tensor<f32>
// CHECK-NOT: weft.reduce_mean
func.func @wide_mean(%x: tensor<1x256x256xf32>) -> tensor<f32> {
  %m = weft.reduce_mean %x {dims = array<i64: 0, 1, 2>} : (tensor<1x256x256xf32>) -> tensor<f32>
  return %m : tensor<f32>
}

// -----

// Below 65536 elements, and a reduction that keeps a dimension, stay whole.
// CHECK-LABEL: func.func @narrow_and_partial
// CHECK: weft.reduce_mean %{{.*}} {dims = array<i64: 0, 1, 2>} : (tensor<1x16x256xf32>) -> tensor<f32>
// CHECK: weft.reduce_sum %{{.*}} {dims = array<i64: 0, 1>} : (tensor<1x256x256xf32>) -> tensor<256xf32>
// CHECK-NOT: weft.scale
func.func @narrow_and_partial(%x: tensor<1x16x256xf32>, %y: tensor<1x256x256xf32>) -> (tensor<f32>, tensor<256xf32>) {
  %m = weft.reduce_mean %x {dims = array<i64: 0, 1, 2>} : (tensor<1x16x256xf32>) -> tensor<f32>
  %s = weft.reduce_sum %y {dims = array<i64: 0, 1>} : (tensor<1x256x256xf32>) -> tensor<256xf32>
  return %m, %s : tensor<f32>, tensor<256xf32>
}
