// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-inference-step
// Every diagnostic of weft-inference-step.

// expected-error @+1 {{weft-inference-step: no function @forward to package (set the entry option)}}
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = weft.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'func.func' op result 1 is argument 0 unchanged; an inference step returns values it computes (the caller already holds its arguments)}}
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = weft.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y, %x : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result 1 is the value of result 0 again; an inference step returns each value once}}
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = weft.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y, %y : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op returns nothing; an inference step needs at least one output}}
func.func @forward(%x: tensor<4xf32>) {
  return
}

// -----

// expected-error @+1 {{'func.func' op is a declaration; weft-inference-step needs the forward's body}}
func.func private @forward(%x: tensor<4xf32>) -> tensor<4xf32>

// -----

func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = weft.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
// expected-error @+1 {{'func.func' op is named @forward_step, the name weft-inference-step gives the step of @forward}}
func.func @forward_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
