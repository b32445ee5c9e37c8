// RUN: weft-opt %s --split-input-file --weft-autodiff | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-autodiff="optimizer=adamw lr=0.01 weight-decay=0.1" | FileCheck %s --check-prefix=ADAMW

// The spec's example: one gradient per weft.param argument, after the loss;
// the forward is kept. dW of a batched linear is one GEMM over the stacked
// rows (transpose_a), dx is skipped (x is data, not a parameter).

// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @forward_step(
// CHECK-SAME: %[[W:.*]]: tensor<4x4xf32> {weft.param}, %[[X:.*]]: tensor<2x4xf32>, %[[Y:.*]]: tensor<2xi64>) -> (tensor<f32>, tensor<4x4xf32> {weft.grad_of = 0 : i64})
// CHECK: %[[H:.*]] = weft.linear %[[X]], %[[W]]
// CHECK: %[[L:.*]] = weft.cross_entropy %[[H]], %[[Y]]
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DH:.*]] = weft.cross_entropy_grad %[[ONE]], %[[H]], %[[Y]]
// CHECK-NOT: weft.matmul %[[DH]], %[[W]]
// CHECK: %[[DW:.*]] = weft.matmul %[[DH]], %[[X]] {transpose_a} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK: return %[[L]], %[[DW]] : tensor<f32>, tensor<4x4xf32>

// ADAMW-LABEL: func.func @forward_step(
// ADAMW-SAME: %[[W:.*]]: tensor<4x4xf32> {weft.param}, %[[M:.*]]: tensor<4x4xf32>, %[[V:.*]]: tensor<4x4xf32>, %[[X:.*]]: tensor<2x4xf32>, %[[Y:.*]]: tensor<2xi64>, %[[T:.*]]: tensor<i64> {weft.range = array<i64: 1, 2147483648>}, %{{.*}}: tensor<i64>)
// ADAMW-SAME: -> (tensor<f32>, tensor<4x4xf32> {weft.alias = 0 : i64}, tensor<4x4xf32> {weft.alias = 1 : i64}, tensor<4x4xf32> {weft.alias = 2 : i64})
// ADAMW: %[[DW:.*]] = weft.matmul
// ADAMW: weft.adamw %[[W]], %[[DW]], %[[M]], %[[V]], %[[T]] {lr = 1.000000e-02 : f64, weight_decay = 1.000000e-01 : f64}
func.func @forward(%w: tensor<4x4xf32> {weft.param}, %x: tensor<2x4xf32>, %y: tensor<2xi64>) -> tensor<f32> {
  %h = weft.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = weft.cross_entropy %h, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Attention without an lse result is rebuilt with one (the backward reads
// it); attention_grad carries the forward's attributes, seed and rng_id, and
// every gradient op carries its forward op's weft.layer.

// CHECK-LABEL: func.func @forward_step(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<1x4x8x8xf32> {weft.param}, %[[K:[^:]*]]: tensor<1x2x8x8xf32> {weft.param}, %[[V:[^:]*]]: tensor<1x2x8x8xf32> {weft.param}, %[[S:[^:]*]]: tensor<i64>
// CHECK: %[[O:.*]], %[[LSE:.*]] = weft.attention %[[Q]], %[[K]], %[[V]], %[[S]] {causal, dropout_p = 1.000000e-01 : f64, scale = 2.500000e-01 : f32, weft.layer = 3 : i64, weft.rng_id = 7 : i64} : {{.*}} -> (tensor<1x4x8x8xf32>, tensor<1x4x8xf32>)
// CHECK: arith.constant dense<1.000000e+00>
// CHECK: %[[DO:.*]] = weft.mul %{{.*}}, %{{.*}} {weft.layer = 3 : i64}
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = weft.attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %[[S]] {causal, dropout_p = 1.000000e-01 : f64, scale = 2.500000e-01 : f32, weft.layer = 3 : i64, weft.rng_id = 7 : i64}
// CHECK: return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]]

// ADAMW-LABEL: func.func @forward(%{{[^:]*}}: tensor<1x4x8x8xf32> {weft.param}
// ADAMW: func.func @forward_step(
// ADAMW-SAME: %[[S:[^:]*]]: tensor<i64>) -> (tensor<f32>,
// ADAMW: weft.attention {{.*}}, %[[S]] {causal
// ADAMW: weft.attention_grad {{.*}}, %[[S]] {causal
func.func @forward(%q: tensor<1x4x8x8xf32> {weft.param}, %k: tensor<1x2x8x8xf32> {weft.param},
                   %v: tensor<1x2x8x8xf32> {weft.param}, %seed: tensor<i64>, %w: tensor<1x4x8x8xf32>) -> tensor<f32> {
  %o = weft.attention %q, %k, %v, %seed {causal, scale = 0.25 : f32, dropout_p = 0.1 : f64, weft.rng_id = 7 : i64, weft.layer = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<i64>) -> tensor<1x4x8x8xf32>
  %p = weft.mul %o, %w {weft.layer = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %l = weft.reduce_sum %p {dims = array<i64: 0, 1, 2, 3>} : (tensor<1x4x8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Dropout's gradient is dropout with the same seed, p and rng_id (the same
// mask and 1/(1-p)); causal_mask's is causal_mask with fill 0.0; softmax's
// rule reads the forward's output.

// CHECK-LABEL: func.func @forward_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x4xf32> {weft.param}, %[[S:[^:]*]]: tensor<i64>)
// CHECK: %[[M:.*]] = weft.causal_mask %[[X]] :
// CHECK: %[[P:.*]] = weft.softmax %[[M]]
// CHECK: %[[D:.*]] = weft.dropout %[[P]], %[[S]] {p = 2.500000e-01 : f64, weft.rng_id = 5 : i64}
// CHECK: %[[DD:.*]] = weft.dropout %{{.*}}, %[[S]] {p = 2.500000e-01 : f64, weft.rng_id = 5 : i64}
// CHECK: %[[DP:.*]] = weft.softmax_grad %[[DD]], %[[P]] :
// CHECK: %[[DM:.*]] = weft.causal_mask %[[DP]] {fill = 0.000000e+00 : f64}
// CHECK: return %{{.*}}, %[[DM]]
func.func @forward(%x: tensor<2x4x4xf32> {weft.param}, %seed: tensor<i64>) -> tensor<f32> {
  %m = weft.causal_mask %x : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = weft.softmax %m {dim = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %d = weft.dropout %p, %seed {p = 0.25 : f64, weft.rng_id = 5 : i64} : (tensor<2x4x4xf32>, tensor<i64>) -> tensor<2x4x4xf32>
  %g = weft.gelu %d : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %l = weft.reduce_mean %g {dims = array<i64: 0, 1, 2>} : (tensor<2x4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Broadcasting: the bias's gradient sums the stretched dims and is reshaped
// back to [4, 1]; the loss's gradient (a 0-d 1) is broadcast by reduce_mean's
// rule, scaled by 1/24. A value with two uses accumulates with weft.add.

// CHECK-LABEL: func.func @forward_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x3xf32> {weft.param}, %[[B:[^:]*]]: tensor<4x1xf32> {weft.param})
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[R:.*]] = weft.reshape %[[ONE]] : (tensor<f32>) -> tensor<1x1x1xf32>
// CHECK: %[[SC:.*]] = weft.scale %[[R]] {value = 0.041666666666666664 : f64}
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<2x4x3xf32>
// CHECK: %[[DY:.*]] = weft.add %[[SC]], %[[Z]] : (tensor<1x1x1xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
// CHECK: %[[DB:.*]] = weft.reduce_sum %[[DY]] {dims = array<i64: 0, 2>} : (tensor<2x4x3xf32>) -> tensor<4xf32>
// CHECK: %[[DBR:.*]] = weft.reshape %[[DB]] : (tensor<4xf32>) -> tensor<4x1xf32>
// CHECK: %[[D1:.*]] = weft.mul %[[DY]], %[[X]]
// CHECK: %[[D2:.*]] = weft.mul %[[DY]], %[[X]]
// CHECK: %[[DX:.*]] = weft.add %[[D1]], %[[D2]] : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[DBR]]
func.func @forward(%x: tensor<2x4x3xf32> {weft.param}, %b: tensor<4x1xf32> {weft.param}) -> tensor<f32> {
  %sq = weft.mul %x, %x : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %y = weft.add %sq, %b : (tensor<2x4x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
  %l = weft.reduce_mean %y {dims = array<i64: 0, 1, 2>} : (tensor<2x4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Only what the backward reads stays live: the forward value the loss does
// not depend on (the silu) is gone from the step; a parameter the loss does
// not read gets a zero gradient; the integer ids get none.

// CHECK-LABEL: func.func @forward(
// CHECK: weft.silu
// CHECK-LABEL: func.func @forward_step(
// CHECK-SAME: -> (tensor<f32>, tensor<10x4xf32> {weft.grad_of = 0 : i64}, tensor<3xf32> {weft.grad_of = 1 : i64})
// CHECK-NOT: weft.silu
// CHECK: %[[DT:.*]] = weft.embedding_grad %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.*}}, %[[DT]], %[[Z]]
func.func @forward(%table: tensor<10x4xf32> {weft.param}, %unused: tensor<3xf32> {weft.param},
                   %ids: tensor<2x3xi64> {weft.range = array<i64: 0, 10>}) -> tensor<f32> {
  %e = weft.embedding %ids, %table : (tensor<2x3xi64>, tensor<10x4xf32>) -> tensor<2x3x4xf32>
  %dead = weft.silu %e : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %l = weft.reduce_sum %e {dims = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// bf16 parameters train f32 master weights: the step converts each master
// to bf16 for the forward; adamw reads the bf16 gradient (it computes in f32
// whatever its operands' types) and runs as soon as the gradient is final
// (w's before g's gradient exists), never before a read of its master. The
// entry's unused tensor<i64> (a model built with dropout 0) is its seed and
// stays last; the rope tables are batch data.

// ADAMW-LABEL: func.func @forward(%{{[^:]*}}: tensor<8xbf16> {weft.param}
// ADAMW: func.func @forward_step(
// ADAMW-SAME: %[[G:[^:]*]]: tensor<8xf32> {weft.param}, %[[W:[^:]*]]: tensor<8x8xf32> {weft.param}, %[[MG:[^:]*]]: tensor<8xf32>, %[[MW:[^:]*]]: tensor<8x8xf32>, %[[VG:[^:]*]]: tensor<8xf32>, %[[VW:[^:]*]]: tensor<8x8xf32>,
// ADAMW-SAME: %[[X:[^:]*]]: tensor<1x2x4x8xbf16>, %[[COS:[^:]*]]: tensor<4x8xbf16>, %[[SIN:[^:]*]]: tensor<4x8xbf16>, %[[T:[^:]*]]: tensor<i64> {weft.range = array<i64: 1, 2147483648>}, %[[S:[^:]*]]: tensor<i64> {weft.range = array<i64: 0, 100>})
// ADAMW-SAME: -> (tensor<bf16>, tensor<8xf32> {weft.alias = 0 : i64}, tensor<8x8xf32> {weft.alias = 1 : i64}, tensor<8xf32> {weft.alias = 2 : i64}, tensor<8x8xf32> {weft.alias = 3 : i64}, tensor<8xf32> {weft.alias = 4 : i64}, tensor<8x8xf32> {weft.alias = 5 : i64})
// ADAMW-DAG: %[[G16:.*]] = weft.convert %[[G]] : (tensor<8xf32>) -> tensor<8xbf16>
// ADAMW-DAG: %[[W16:.*]] = weft.convert %[[W]] : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// ADAMW: weft.rope %{{.*}}, %[[COS]], %[[SIN]] {inverse}
// ADAMW-NOT: -> tensor<8x8xf32>
// ADAMW: %[[DW:.*]] = weft.matmul %{{.*}} {transpose_a} : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
// ADAMW-NEXT: %[[NW:.*]], %[[NWM:.*]], %[[NWV:.*]] = weft.adamw %[[W]], %[[DW]], %[[MW]], %[[VW]], %[[T]] {{.*}} : (tensor<8x8xf32>, tensor<8x8xbf16>,
// ADAMW-NEXT: %{{.*}}, %[[DG:.*]] = weft.rms_norm_grad
// ADAMW-NEXT: %[[NG:.*]], %[[NGM:.*]], %[[NGV:.*]] = weft.adamw %[[G]], %[[DG]], %[[MG]], %[[VG]], %[[T]] {{.*}} : (tensor<8xf32>, tensor<8xbf16>,
// ADAMW: return %{{.*}}, %[[NG]], %[[NW]], %[[NGM]], %[[NWM]], %[[NGV]], %[[NWV]] :
func.func @forward(%g: tensor<8xbf16> {weft.param}, %w: tensor<8x8xbf16> {weft.param},
                   %x: tensor<1x2x4x8xbf16>, %cos: tensor<4x8xbf16>, %sin: tensor<4x8xbf16>,
                   %seed: tensor<i64> {weft.range = array<i64: 0, 100>}) -> tensor<bf16> {
  %n = weft.rms_norm %x, %g : (tensor<1x2x4x8xbf16>, tensor<8xbf16>) -> tensor<1x2x4x8xbf16>
  %h = weft.linear %n, %w : (tensor<1x2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<1x2x4x8xbf16>
  %r = weft.rope %h, %cos, %sin : (tensor<1x2x4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<1x2x4x8xbf16>
  %l = weft.reduce_mean %r {dims = array<i64: 0, 1, 2, 3>} : (tensor<1x2x4x8xbf16>) -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// A forward without weft.param arguments gets a step returning the loss.

// CHECK-LABEL: func.func @forward_step(%{{.*}}: tensor<2xf64>) -> tensor<f64>
// CHECK-NEXT: %[[L:.*]] = weft.reduce_sum
// CHECK-NEXT: return %[[L]] : tensor<f64>
func.func @forward(%x: tensor<2xf64>) -> tensor<f64> {
  %l = weft.reduce_sum %x {dims = array<i64: 0>} : (tensor<2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// cross_entropy_grad keeps the forward's ignore_index, so ignored positions
// get no gradient and the mean is over the counted ones.

// CHECK-LABEL: func.func @forward_step(
// CHECK: %[[L:.*]] = weft.cross_entropy %[[H:.*]], %[[Y:.*]] {ignore_index = -100 : i64}
// CHECK: weft.cross_entropy_grad %{{.*}}, %[[H]], %[[Y]] {ignore_index = -100 : i64}
func.func @forward(%w: tensor<4x4xf32> {weft.param}, %x: tensor<2x4xf32>, %y: tensor<2xi64>) -> tensor<f32> {
  %h = weft.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = weft.cross_entropy %h, %y {ignore_index = -100 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The rules of div, log, sqrt, sigmoid and pow (test_formulas.py checks
// their values against torch.autograd): d(x/w)/dw = -dz z / w reads the
// forward's z; sqrt's and sigmoid's rules read the forward's y; pow's
// reads x^(c-1).

// CHECK-LABEL: func.func @forward_step(
// CHECK: %[[Z:.*]] = weft.div %[[X:.*]], %[[W:.*]] : (tensor<4xf64>, tensor<4xf64>)
// CHECK: %[[LOG:.*]] = weft.log %[[Z]]
// CHECK: %[[SQRT:.*]] = weft.sqrt %[[LOG]]
// CHECK: %[[SIG:.*]] = weft.sigmoid %[[SQRT]]
// CHECK: weft.pow %[[SIG]] {exponent = 3.000000e+00 : f64}
// CHECK: weft.pow %[[SIG]] {exponent = 2.000000e+00 : f64}
// CHECK: weft.scale %{{.*}} {value = 3.000000e+00 : f64}
// CHECK: weft.mul %{{.*}}, %[[SIG]]
// CHECK: weft.div %{{.*}}, %[[SQRT]]
// CHECK: weft.scale %{{.*}} {value = 5.000000e-01 : f64}
// CHECK: weft.div %{{.*}}, %[[Z]]
// CHECK: %[[DZZ:.*]] = weft.mul %{{.*}}, %[[Z]]
// CHECK: weft.div %[[DZZ]], %[[W]]
// CHECK: weft.scale %{{.*}} {value = -1.000000e+00 : f64}
func.func @forward(%w: tensor<4xf64> {weft.param}, %x: tensor<4xf64>) -> tensor<f64> {
  %z = weft.div %x, %w : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %log = weft.log %z : (tensor<4xf64>) -> tensor<4xf64>
  %sqrt = weft.sqrt %log : (tensor<4xf64>) -> tensor<4xf64>
  %sig = weft.sigmoid %sqrt : (tensor<4xf64>) -> tensor<4xf64>
  %cube = weft.pow %sig {exponent = 3.0 : f64} : (tensor<4xf64>) -> tensor<4xf64>
  %l = weft.reduce_sum %cube {dims = array<i64: 0>} : (tensor<4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}
