// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-autodiff
// Every diagnostic of weft-autodiff: bad entries, explicit collectives, ops
// without a gradient rule (autodiff-adamw-errors.mlir: the optimizer's).

// expected-error @+1 {{weft-autodiff: no function @forward to differentiate (set the entry option)}}
module {
  func.func @main(%x: tensor<4xf32> {weft.param}) -> tensor<f32> {
    %l = weft.reduce_sum %x {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'func.func' op expects a single 0-d loss result to differentiate, got 2 results 'tensor<f32>', 'tensor<f32>'}}
func.func @forward(%x: tensor<4xf32> {weft.param}) -> (tensor<f32>, tensor<f32>) {
  %l = weft.reduce_sum %x {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l, %l : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op expects a single 0-d loss result to differentiate, got 0 results}}
func.func @forward(%x: tensor<4xf32> {weft.param}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects the loss to be a 0-d floating-point tensor, got 'tensor<4xf32>'}}
func.func @forward(%x: tensor<4xf32> {weft.param}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op expects the loss to be a 0-d floating-point tensor, got 'tensor<i64>'}}
func.func @forward(%x: tensor<i64>) -> tensor<i64> {
  return %x : tensor<i64>
}

// -----

// expected-error @+1 {{'func.func' op is a declaration; weft-autodiff needs the forward's body}}
func.func private @forward(%x: tensor<4xf32> {weft.param}) -> tensor<f32>

// -----

// expected-error @+1 {{'func.func' op is named @forward_step, the name weft-autodiff gives the step of @forward}}
func.func @forward_step(%x: tensor<4xf32>) -> tensor<f32> {
  %l = weft.reduce_sum %x {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func @forward(%x: tensor<4xf32> {weft.param}) -> tensor<f32> {
  %l = weft.reduce_sum %x {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Explicit collectives: autodiff works on the global graph.
shard.grid @grid(shape = 2)
func.func @forward(%x: tensor<4xf32> {weft.param}) -> tensor<f32> {
  // expected-error @+1 {{'shard.all_reduce' op is an explicit collective; weft-autodiff differentiates the global (unsharded) graph, and partitioning the step afterwards places the collectives and their adjoints}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %l = weft.reduce_sum %r {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Gradient ops and adamw have no gradient rule.
func.func @forward(%x: tensor<4x8xf32> {weft.param}, %dy: tensor<4x8xf32>) -> tensor<f32> {
  // expected-error @+1 {{'weft.gelu_grad' op cannot differentiate 'weft.gelu_grad': it has no gradient rule, and the loss depends on its operand #1 ('tensor<4x8xf32>') through it}}
  %g = weft.gelu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %g {dims = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @forward(%p: tensor<8xf32> {weft.param}, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) -> tensor<f32> {
  // expected-error @+1 {{'weft.adamw' op cannot differentiate 'weft.adamw': it has no gradient rule, and the loss depends on its operand #0 ('tensor<8xf32>') through it}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %l = weft.reduce_sum %p1 {dims = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op of another dialect on the path from a parameter to the loss.
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @forward(%x: tensor<4xf32> {weft.param}) -> tensor<f32> {
  // expected-error @+1 {{'func.call' op cannot differentiate 'func.call': it has no gradient rule, and the loss depends on its operand #0 ('tensor<4xf32>') through it}}
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %l = weft.reduce_sum %y {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// attention_grad takes the gradient of the output only.
func.func @forward(%q: tensor<1x2x4x8xf32> {weft.param}, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<f32> {
  // expected-error @+1 {{'weft.attention' op cannot differentiate through its lse result ('tensor<1x2x4xf32>'): attention_grad takes the gradient of the output only}}
  %o, %lse = weft.attention %q, %k, %v : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  %l = weft.reduce_sum %lse {dims = array<i64: 0, 1, 2>} : (tensor<1x2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A gradient op whose inputs do not depend on a parameter is a constant of
// the step: nothing to differentiate, no error.
func.func @forward(%w: tensor<4x8xf32> {weft.param}, %x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<f32> {
  %g = weft.gelu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = weft.mul %g, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %p {dims = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op expects parameter #1 to have a static shape, got 'tensor<?xf32>'}}
func.func @forward(%x: tensor<4xf32> {weft.param}, %y: tensor<?xf32> {weft.param}) -> tensor<f32> {
  %l = weft.reduce_sum %x {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
