// RUN: weft-opt %s --canonicalize --split-input-file | FileCheck %s
// A group whose body folds down to yielding its arguments (an identity
// convert) forwards its inputs instead of leaving an empty, invalid group
// (found by weft-fuzz); a group with work left stays.

// CHECK-LABEL: func.func @identity_convert
// CHECK-NOT: weft.fused
// CHECK: return %arg0
func.func @identity_convert(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %y = weft.fused %x {kind = "convert"} : (tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  ^bb0(%a: tensor<4x8xbf16>):
    %g = weft.convert %a : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
    weft.yield %g : tensor<4x8xbf16>
  }
  return %y : tensor<4x8xbf16>
}

// -----

// CHECK-LABEL: func.func @gelu_stays
// CHECK: weft.fused
// CHECK: weft.gelu
func.func @gelu_stays(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %y = weft.fused %x {kind = "convert+gelu"} : (tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  ^bb0(%a: tensor<4x8xbf16>):
    %c = weft.convert %a : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
    %g = weft.gelu %c : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
    weft.yield %g : tensor<4x8xbf16>
  }
  return %y : tensor<4x8xbf16>
}
