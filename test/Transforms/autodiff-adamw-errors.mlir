// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-autodiff="optimizer=adamw"
// RUN: not weft-opt %s --split-input-file --weft-autodiff="optimizer=sgd" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not weft-opt %s --split-input-file --weft-autodiff="optimizer=adamw lr=-1" 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not weft-opt %s --split-input-file --weft-autodiff="optimizer=adamw beta2=1" 2>&1 | FileCheck %s --check-prefix=BETA2
// RUN: not weft-opt %s --split-input-file --weft-autodiff="optimizer=adamw eps=0" 2>&1 | FileCheck %s --check-prefix=EPS
// RUN: not weft-opt %S/../Tools/weft-compile/Inputs/mlp.mlir --weft-autodiff="optimizer=adamw weight-copies=carried converted-params=7" 2>&1 | FileCheck %s --check-prefix=CONVERTED
// RUN: not weft-opt %S/../Tools/weft-compile/Inputs/mlp.mlir --weft-autodiff="optimizer=adamw converted-params=0" 2>&1 | FileCheck %s --check-prefix=NOTCARRIED
// The optimizer's diagnostics: its options, checked before anything is
// built, and the seed its signature separates from the batch.

// OPTIMIZER: error: weft-autodiff: unknown optimizer 'sgd' (expected none or adamw)
// LR: error: weft-autodiff: option lr = -1.000000e+00 must be finite and >= 0
// BETA2: error: weft-autodiff: option beta2 = 1.000000e+00 must be in [0, 1)
// EPS: error: weft-autodiff: option eps = 0.000000e+00 must be positive and finite
// CONVERTED: error: weft-autodiff: converted-params names parameter 7, but @forward has 2 parameters (weft.param arguments, counted from 0)
// NOTCARRIED: error: weft-autodiff: converted-params keeps some copies converted among carried ones; it needs weight-copies=carried

// The step has one seed argument: two random ops seeded by different
// arguments are refused.
// expected-error @+1 {{'func.func' op expects one seed argument for its random ops, got arguments #1 and #2}}
func.func @forward(%x: tensor<4xf32> {weft.param}, %s0: tensor<i64>, %s1: tensor<i64>) -> tensor<f32> {
  %a = weft.dropout %x, %s0 {p = 0.1 : f64, weft.rng_id = 1 : i64} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %b = weft.dropout %a, %s1 {p = 0.1 : f64, weft.rng_id = 2 : i64} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %l = weft.reduce_sum %b {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
