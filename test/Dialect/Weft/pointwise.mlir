// The generic pointwise ops (Weft_UnaryPointwiseOp): round trip in the custom
// and the generic form, the traits that are their verifier, and their
// formulas as weft-test-print-formulas prints them.
// RUN: weft-opt %s --split-input-file --verify-diagnostics | weft-opt | FileCheck %s
// RUN: weft-opt %s --split-input-file --verify-diagnostics --mlir-print-op-generic | weft-opt | FileCheck %s
// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-test-print-formulas -o /dev/null | FileCheck %s --check-prefix=FORMULA

// CHECK-LABEL: func.func @unary
// CHECK: weft.tanh %arg0 : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: weft.exp %{{.*}} : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: weft.rsqrt %{{.*}} : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: weft.neg %{{.*}} : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
func.func @unary(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %tanh = weft.tanh %x : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %exp = weft.exp %tanh : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %rsqrt = weft.rsqrt %exp : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %neg = weft.neg %rsqrt : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %neg : tensor<4x8xbf16>
}

// Each formula as the interpreter evaluates it and the GPU kernels emit it.
// FORMULA-DAG: formula-op weft.tanh
// FORMULA-DAG: formula-op weft.exp
// FORMULA-DAG: formula-op weft.rsqrt
// FORMULA-DAG: formula-op weft.neg
// FORMULA: formula of weft.tanh
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = tanh %0
// FORMULA-NEXT: return %1
// FORMULA: formula of weft.exp
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = exp %0
// FORMULA-NEXT: return %1
// FORMULA: formula of weft.rsqrt
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = rsqrt %0
// FORMULA-NEXT: return %1
// FORMULA: formula of weft.neg
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = neg %0
// FORMULA-NEXT: return %1

// -----

func.func @tanh_type(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{'weft.tanh' op requires the same type for all operands and results}}
  %y = weft.tanh %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

func.func @exp_shape(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'weft.exp' op all non-scalar operands/results must have the same shape and base type}}
  %y = weft.exp %x : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @rsqrt_dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'weft.rsqrt' op expects static shapes, operand #0 is 'tensor<?x8xf32>'}}
  %y = weft.rsqrt %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @neg_int(%x: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // expected-error @+1 {{'weft.neg' op operand #0 must be ranked tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4x8xi64>'}}
  %y = weft.neg %x : (tensor<4x8xi64>) -> tensor<4x8xi64>
  return %y : tensor<4x8xi64>
}
