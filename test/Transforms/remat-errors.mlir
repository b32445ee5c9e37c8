// weft-remat's diagnostics: options it cannot parse or honour, and a budget
// no recompute choice fits (the message names the smallest reachable peak).
// Each case is its own file (split-file), as each needs its own options.
//
// RUN: split-file %s %t
// RUN: weft-opt %t/bad-policy.mlir --weft-remat=policy=sometimes --verify-diagnostics
// RUN: weft-opt %t/bad-budget.mlir --weft-remat="policy=budget budget=12XB" --verify-diagnostics
// RUN: weft-opt %t/zero-budget.mlir --weft-remat="policy=budget budget=0.5" --verify-diagnostics
// RUN: weft-opt %t/two-dots.mlir --weft-remat="policy=budget budget=1.5.2GiB" --verify-diagnostics
// RUN: weft-opt %t/missing-budget.mlir --weft-remat=policy=budget --verify-diagnostics
// RUN: weft-opt %t/uniform-zero.mlir --weft-remat="policy=uniform num-layers=0" --verify-diagnostics
// RUN: weft-opt %t/block-negative.mlir --weft-remat="policy=block num-layers=-1" --verify-diagnostics
// RUN: weft-opt %t/alignment.mlir --weft-remat="policy=full alignment=100" --verify-diagnostics
// RUN: weft-opt %t/no-entry.mlir --weft-remat="policy=full entry=train_step" --verify-diagnostics
// RUN: weft-opt %t/infeasible.mlir --weft-autodiff --weft-remat="policy=budget budget=14000" --verify-diagnostics
// RUN: weft-opt %t/over-budget.mlir --weft-autodiff --weft-remat="policy=selective budget=5000" --verify-diagnostics

//--- bad-policy.mlir
// expected-error@+1 {{weft-remat: unknown policy 'sometimes' (expected none, full, selective, block, uniform or budget)}}
module {}

//--- bad-budget.mlir
// expected-error@+1 {{weft-remat: cannot parse budget '12XB': expected a positive byte count with an optional suffix B, KiB, MiB, GiB or TiB (e.g. 512MiB)}}
module {}

//--- zero-budget.mlir
// Half a byte rounds down to no budget at all.
// expected-error@+1 {{weft-remat: cannot parse budget '0.5'}}
module {}

//--- two-dots.mlir
// expected-error@+1 {{weft-remat: cannot parse budget '1.5.2GiB'}}
module {}

//--- missing-budget.mlir
// expected-error@+1 {{weft-remat: policy=budget needs budget=BYTES (e.g. budget=512MiB)}}
module {}

//--- uniform-zero.mlir
// expected-error@+1 {{weft-remat: num-layers must be at least 1 for policy=uniform, got 0}}
module {}

//--- block-negative.mlir
// expected-error@+1 {{weft-remat: num-layers must be at least 0 for policy=block, got -1}}
module {}

//--- alignment.mlir
// expected-error@+1 {{weft-remat: alignment must be a power of two, got 100}}
module {}

//--- no-entry.mlir
// expected-error@+1 {{weft-remat: no function with a body named 'train_step'}}
module {
  func.func private @train_step(tensor<f32>) -> tensor<f32>
}

//--- infeasible.mlir
// Two isomorphic layers (one class); the smallest planned peak over the 12
// Pareto-optimal choices is 14336 bytes (see remat.mlir, budget=14KiB).
// expected-error@+1 {{weft-remat: the budget of 14000 bytes (13.67 KiB) is infeasible for @forward_step: the smallest peak Weft can reach is 14336 bytes (14.00 KiB) (12 recompute choices over 2 layers, 1 class of isomorphic layers)}}
func.func @forward(
    %g1_0: tensor<8xf32> {weft.param},
    %b1_0: tensor<8xf32> {weft.param},
    %wq_0: tensor<8x8xf32> {weft.param},
    %wk_0: tensor<8x8xf32> {weft.param},
    %wv_0: tensor<8x8xf32> {weft.param},
    %wo_0: tensor<8x8xf32> {weft.param},
    %g2_0: tensor<8xf32> {weft.param},
    %b2_0: tensor<8xf32> {weft.param},
    %w1_0: tensor<16x8xf32> {weft.param},
    %w2_0: tensor<8x16xf32> {weft.param},
    %g1_1: tensor<8xf32> {weft.param},
    %b1_1: tensor<8xf32> {weft.param},
    %wq_1: tensor<8x8xf32> {weft.param},
    %wk_1: tensor<8x8xf32> {weft.param},
    %wv_1: tensor<8x8xf32> {weft.param},
    %wo_1: tensor<8x8xf32> {weft.param},
    %g2_1: tensor<8xf32> {weft.param},
    %b2_1: tensor<8xf32> {weft.param},
    %w1_1: tensor<16x8xf32> {weft.param},
    %w2_1: tensor<8x16xf32> {weft.param},
    %wout: tensor<8x8xf32> {weft.param},
    %x: tensor<1x4x8xf32>,
    %labels: tensor<1x4xi64> {weft.range = array<i64: 0, 8>},
    %seed: tensor<i64>) -> tensor<f32> {
  // layer 0
  %l0.n1 = weft.layer_norm %x, %g1_0, %b1_0 {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %l0.q = weft.linear %l0.n1, %wq_0 {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %l0.k = weft.linear %l0.n1, %wk_0 {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %l0.v = weft.linear %l0.n1, %wv_0 {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %l0.s = weft.matmul %l0.q, %l0.k {transpose_b, weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x4xf32>
  %l0.t = weft.scale %l0.s {value = 0.35355339059327373 : f64, weft.layer = 0 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %l0.m = weft.causal_mask %l0.t {weft.layer = 0 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %l0.p = weft.softmax %l0.m {dim = -1 : i64, weft.layer = 0 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %l0.d = weft.dropout %l0.p, %seed {p = 0.1 : f64, weft.rng_id = 1 : i64, weft.layer = 0 : i64} : (tensor<1x4x4xf32>, tensor<i64>) -> tensor<1x4x4xf32>
  %l0.a = weft.matmul %l0.d, %l0.v {weft.layer = 0 : i64} : (tensor<1x4x4xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %l0.o = weft.linear %l0.a, %wo_0 {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %l0.od = weft.dropout %l0.o, %seed {p = 0.1 : f64, weft.rng_id = 2 : i64, weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<i64>) -> tensor<1x4x8xf32>
  %l0.r = weft.add %x, %l0.od {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %l0.n2 = weft.layer_norm %l0.r, %g2_0, %b2_0 {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %l0.f = weft.linear %l0.n2, %w1_0 {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  %l0.g = weft.gelu %l0.f {approximate = "tanh", weft.layer = 0 : i64} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %l0.f2 = weft.linear %l0.g, %w2_0 {weft.layer = 0 : i64} : (tensor<1x4x16xf32>, tensor<8x16xf32>) -> tensor<1x4x8xf32>
  %l0.out = weft.add %l0.r, %l0.f2 {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  // layer 1
  %l1.n1 = weft.layer_norm %l0.out, %g1_1, %b1_1 {eps = 1.0e-05 : f64, weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %l1.q = weft.linear %l1.n1, %wq_1 {weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %l1.k = weft.linear %l1.n1, %wk_1 {weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %l1.v = weft.linear %l1.n1, %wv_1 {weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %l1.s = weft.matmul %l1.q, %l1.k {transpose_b, weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x4xf32>
  %l1.t = weft.scale %l1.s {value = 0.35355339059327373 : f64, weft.layer = 1 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %l1.m = weft.causal_mask %l1.t {weft.layer = 1 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %l1.p = weft.softmax %l1.m {dim = -1 : i64, weft.layer = 1 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %l1.d = weft.dropout %l1.p, %seed {p = 0.1 : f64, weft.rng_id = 3 : i64, weft.layer = 1 : i64} : (tensor<1x4x4xf32>, tensor<i64>) -> tensor<1x4x4xf32>
  %l1.a = weft.matmul %l1.d, %l1.v {weft.layer = 1 : i64} : (tensor<1x4x4xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %l1.o = weft.linear %l1.a, %wo_1 {weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %l1.od = weft.dropout %l1.o, %seed {p = 0.1 : f64, weft.rng_id = 4 : i64, weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<i64>) -> tensor<1x4x8xf32>
  %l1.r = weft.add %l0.out, %l1.od {weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %l1.n2 = weft.layer_norm %l1.r, %g2_1, %b2_1 {eps = 1.0e-05 : f64, weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %l1.f = weft.linear %l1.n2, %w1_1 {weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  %l1.g = weft.gelu %l1.f {approximate = "tanh", weft.layer = 1 : i64} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %l1.f2 = weft.linear %l1.g, %w2_1 {weft.layer = 1 : i64} : (tensor<1x4x16xf32>, tensor<8x16xf32>) -> tensor<1x4x8xf32>
  %l1.out = weft.add %l1.r, %l1.f2 {weft.layer = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  // head
  %logits = weft.linear %l1.out, %wout : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %loss = weft.cross_entropy %logits, %labels : (tensor<1x4x8xf32>, tensor<1x4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

//--- over-budget.mlir
// Fused attention leaves selective nothing to recompute: the peak stays at
// 5632 bytes (the attention_grad's workspace is 272 of them: 16 bytes of
// delta, then at byte 256 the 16-byte keep mask of its dropout).
// expected-error@+1 {{weft-remat: policy 'selective' gives @forward_step a planned peak of 5632 bytes (5.50 KiB), over the budget of 5000 bytes (4.88 KiB); policy=budget chooses what to recompute to fit}}
func.func @forward(%g: tensor<8xf32> {weft.param}, %bt: tensor<8xf32> {weft.param},
                   %wq: tensor<8x8xf32> {weft.param}, %wk: tensor<8x8xf32> {weft.param},
                   %wv: tensor<8x8xf32> {weft.param}, %wout: tensor<8x8xf32> {weft.param},
                   %x: tensor<1x4x8xf32>, %labels: tensor<1x4xi64> {weft.range = array<i64: 0, 8>},
                   %seed: tensor<i64>) -> tensor<f32> {
  %n = weft.layer_norm %x, %g, %bt {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %q = weft.linear %n, %wq {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k = weft.linear %n, %wk {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %v = weft.linear %n, %wv {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %q4 = weft.reshape %q {weft.layer = 0 : i64} : (tensor<1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %k4 = weft.reshape %k {weft.layer = 0 : i64} : (tensor<1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %v4 = weft.reshape %v {weft.layer = 0 : i64} : (tensor<1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %o4 = weft.attention %q4, %k4, %v4, %seed {causal, scale = 0.353553385 : f32, dropout_p = 0.1 : f64, weft.rng_id = 7 : i64, weft.layer = 0 : i64} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<i64>) -> tensor<1x1x4x8xf32>
  %o = weft.reshape %o4 {weft.layer = 0 : i64} : (tensor<1x1x4x8xf32>) -> tensor<1x4x8xf32>
  %r = weft.add %x, %o {weft.layer = 0 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %logits = weft.linear %r, %wout : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %loss = weft.cross_entropy %logits, %labels : (tensor<1x4x8xf32>, tensor<1x4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
