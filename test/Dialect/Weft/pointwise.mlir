// The generic pointwise ops (Weft_UnaryPointwiseOp, pow, div): round trip in the custom
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
// FORMULA-DAG: formula-op weft.log
// FORMULA-DAG: formula-op weft.sqrt
// FORMULA-DAG: formula-op weft.cos
// FORMULA-DAG: formula-op weft.sin
// FORMULA-DAG: formula-op weft.sigmoid
// FORMULA-DAG: formula-op weft.pow
// FORMULA-DAG: formula-op weft.div
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

// CHECK-LABEL: func.func @log_sqrt_cos_sin_sigmoid_pow
// CHECK: weft.log %arg0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.sqrt %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.cos %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.sin %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.sigmoid %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.pow %{{.*}} {exponent = -1.500000e+00 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.div %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
func.func @log_sqrt_cos_sin_sigmoid_pow(%x: tensor<4x8xf32>, %d: tensor<8xf32>) -> tensor<4x8xf32> {
  %log = weft.log %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sqrt = weft.sqrt %log : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %cos = weft.cos %sqrt : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sin = weft.sin %cos : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sigmoid = weft.sigmoid %sin : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %pow = weft.pow %sigmoid {exponent = -1.5 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %div = weft.div %pow, %d : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %div : tensor<4x8xf32>
}

// FORMULA: formula of weft.log
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = log %0
// FORMULA-NEXT: return %1
// FORMULA: formula of weft.sqrt
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = sqrt %0
// FORMULA-NEXT: return %1
// FORMULA: formula of weft.cos
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = cos %0
// FORMULA-NEXT: return %1
// FORMULA: formula of weft.sin
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = sin %0
// FORMULA-NEXT: return %1
// FORMULA: formula of weft.sigmoid
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = sigmoid %0
// FORMULA-NEXT: return %1
// The exponent is the formula's constant.
// FORMULA: formula of weft.pow
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = constant -1.5
// FORMULA-NEXT: %2 = pow %0, %1
// FORMULA-NEXT: return %2
// FORMULA: formula of weft.div
// FORMULA-NEXT: %0 = operand 0
// FORMULA-NEXT: %1 = operand 1
// FORMULA-NEXT: %2 = div %0, %1
// FORMULA-NEXT: return %2

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

// -----

func.func @log_type(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'weft.log' op requires the same type for all operands and results}}
  %y = weft.log %x : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

func.func @sqrt_shape(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'weft.sqrt' op all non-scalar operands/results must have the same shape and base type}}
  %y = weft.sqrt %x : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @sigmoid_int(%x: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // expected-error @+1 {{'weft.sigmoid' op operand #0 must be ranked tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4x8xi64>'}}
  %y = weft.sigmoid %x : (tensor<4x8xi64>) -> tensor<4x8xi64>
  return %y : tensor<4x8xi64>
}

// -----

func.func @pow_nan(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'weft.pow' op expects a finite exponent, got nan}}
  %y = weft.pow %x {exponent = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @pow_no_exponent(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'weft.pow' op requires attribute 'exponent'}}
  %y = weft.pow %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @div_broadcast(%a: tensor<4x1xf32>, %b: tensor<8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'weft.div' op expects result to have shape [4, 8], got 'tensor<4x1xf32>'}}
  %0 = weft.div %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

func.func @div_types(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'weft.div' op expects lhs ('tensor<4x8xf32>') and rhs ('tensor<4x8xf16>') to have the same element type}}
  %0 = weft.div %a, %b : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
