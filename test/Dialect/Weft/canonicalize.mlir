// The weft folders: scale by 1, convert to the same type, reshape to the same
// type and reshape of reshape, identity transpose and transpose of transpose;
// and the cases that must not fold.
// RUN: weft-opt %s --canonicalize --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @scale_by_one
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NOT: weft.scale
// CHECK: return %[[X]]
func.func @scale_by_one(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = weft.scale %x {value = 1.0 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @scale_not_one
// CHECK: %[[A:.+]] = weft.scale %{{.+}} {value = 2.000000e+00 : f64}
// CHECK: %[[B:.+]] = weft.scale %{{.+}} {value = -1.000000e+00 : f64}
// CHECK: %[[C:.+]] = weft.scale %{{.+}} {value = 0.000000e+00 : f64}
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @scale_not_one(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = weft.scale %x {value = 2.0 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = weft.scale %x {value = -1.0 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // Scaling by zero is not folded to a constant (x may hold inf or nan).
  %2 = weft.scale %x {value = 0.0 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @convert_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xbf16>)
// CHECK-NOT: weft.convert
// CHECK: return %[[X]]
func.func @convert_same_type(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = weft.convert %x : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// A round trip through a narrower type rounds: it is not the identity.
// CHECK-LABEL: func.func @convert_round_trip
// CHECK: %[[N:.+]] = weft.convert %{{.+}} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK: %[[W:.+]] = weft.convert %[[N]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: return %[[W]]
func.func @convert_round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = weft.convert %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %1 = weft.convert %0 : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>)
// CHECK-NOT: weft.reshape
// CHECK: return %[[X]]
func.func @reshape_same_type(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = weft.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// Only the final shape matters: reshape(reshape(x)) is one reshape of x.
// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[R:.+]] = weft.reshape %[[X]] : (tensor<2x4x8xf32>) -> tensor<64xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x4x8xf32>) -> tensor<64xf32> {
  %0 = weft.reshape %x : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %1 = weft.reshape %0 : (tensor<8x8xf32>) -> tensor<64xf32>
  return %1 : tensor<64xf32>
}

// -----

// Back to the original shape: the chain disappears.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xi64>)
// CHECK-NOT: weft.reshape
// CHECK: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x4x8xi64>) -> tensor<2x4x8xi64> {
  %0 = weft.reshape %x : (tensor<2x4x8xi64>) -> tensor<64xi64>
  %1 = weft.reshape %0 : (tensor<64xi64>) -> tensor<8x8xi64>
  %2 = weft.reshape %1 : (tensor<8x8xi64>) -> tensor<2x4x8xi64>
  return %2 : tensor<2x4x8xi64>
}

// -----

// The inner reshape has another use: it stays, the outer one reads x.
// CHECK-LABEL: func.func @reshape_of_reshape_shared
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>)
// CHECK-DAG: %[[INNER:.+]] = weft.reshape %[[X]] : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
// CHECK-DAG: %[[OUTER:.+]] = weft.reshape %[[X]] : (tensor<2x4x8xf32>) -> tensor<64xf32>
// CHECK: return %[[INNER]], %[[OUTER]]
func.func @reshape_of_reshape_shared(%x: tensor<2x4x8xf32>) -> (tensor<8x8xf32>, tensor<64xf32>) {
  %0 = weft.reshape %x : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %1 = weft.reshape %0 : (tensor<8x8xf32>) -> tensor<64xf32>
  return %0, %1 : tensor<8x8xf32>, tensor<64xf32>
}

// -----

// A reshape of something else than a reshape stays.
// CHECK-LABEL: func.func @reshape_of_transpose
// CHECK: %[[T:.+]] = weft.transpose
// CHECK: weft.reshape %[[T]] : (tensor<8x4xf32>) -> tensor<32xf32>
func.func @reshape_of_transpose(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %0 = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = weft.reshape %0 : (tensor<8x4xf32>) -> tensor<32xf32>
  return %1 : tensor<32xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NOT: weft.transpose
// CHECK: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = weft.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// A non-identity perm that keeps the shape (equal dims) must not fold.
// CHECK-LABEL: func.func @transpose_square
// CHECK: %[[T:.+]] = weft.transpose %{{.+}} {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: return %[[T]]
func.func @transpose_square(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Result dim i of transpose(transpose(x, p1), p2) is x's dim p1[p2[i]]:
// p1 = [1, 0, 2], p2 = [0, 2, 1] compose to [1, 2, 0].
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.+]] = weft.transpose %[[X]] {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = weft.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = weft.transpose %0 {perm = array<i64: 0, 2, 1>} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  return %1 : tensor<3x4x2xf32>
}

// -----

// p1 = [1, 2, 0] then p2 = [2, 0, 1]: [p1[2], p1[0], p1[1]] = [0, 1, 2], the
// identity, so both transposes disappear.
// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NOT: weft.transpose
// CHECK: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = weft.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = weft.transpose %0 {perm = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// The inner transpose has another use: it stays, the outer one reads x.
// CHECK-LABEL: func.func @transpose_of_transpose_shared
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK: %[[INNER:.+]] = weft.transpose %[[X]] {perm = array<i64: 1, 0>}
// CHECK: return %[[INNER]], %[[X]]
func.func @transpose_of_transpose_shared(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %0 = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = weft.transpose %0 {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<2x3xf32>
}

// -----

// Ops without folders are left alone (only unused pure ops are erased).
// CHECK-LABEL: func.func @no_fold
// CHECK: %[[G:.+]] = weft.gelu
// CHECK-NOT: weft.silu
// CHECK: return %[[G]]
func.func @no_fold(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = weft.gelu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = weft.silu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
