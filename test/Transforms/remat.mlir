// weft-remat on small training steps made by weft-autodiff: which forward ops
// each policy clones into the backward, that clones carry weft.recompute and
// keep weft.rng_id, and where they go (right before the first backward use).
// The first step has one layer with fused weft.attention; the second has 2
// isomorphic layers of LayerNorm, q/k/v projections, unfused causal
// attention with dropout (rng_id 1 and 3), an output projection with dropout
// (rng_id 2 and 4) and a GELU MLP. The report describes the last chunk.
//
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat=policy=none | FileCheck %s --check-prefix=NONE
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat=policy=selective | FileCheck %s --check-prefix=SEL
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat=policy=full | FileCheck %s --check-prefix=FULL
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat="policy=block num-layers=1" | FileCheck %s --check-prefix=BLOCK
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat="policy=uniform num-layers=2" | FileCheck %s --check-prefix=UNI
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat="policy=budget budget=14848" | FileCheck %s --check-prefix=ROOMY
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat="policy=budget budget=14600" | FileCheck %s --check-prefix=MID
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat="policy=budget budget=14KiB" | FileCheck %s --check-prefix=TIGHT
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-remat="policy=selective report=%t.json" -o /dev/null
// RUN: FileCheck %s --input-file=%t.json --check-prefix=REPORT

// Fused attention: selective has nothing to do (attention_grad recomputes the
// probabilities itself); full clones weft.attention with both results and
// its rng_id, and attention_grad reads the clones.
// NONE-LABEL: func.func @forward_step(
// NONE-NOT: weft.recompute
// SEL-LABEL: func.func @forward_step(
// SEL-NOT: weft.recompute
// FULL-LABEL: func.func @forward_step(
// FULL: weft.cross_entropy_grad
// FULL: weft.layer_norm %arg6, %arg0, %arg1 {weft.layer = 0 : i64, weft.recompute}
// FULL-COUNT-6: weft.recompute
// FULL-NEXT: %[[O:.*]], %[[LSE:.*]] = weft.attention %[[Q:.*]], %[[K:.*]], %[[V:.*]], %arg8 {causal, dropout_p = 1.000000e-01 : f64, scale = 0.353553385 : f32, weft.layer = 0 : i64, weft.recompute, weft.rng_id = 7 : i64}
// FULL-NEXT: weft.attention_grad %{{.*}}, %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %arg8
// FULL-NOT: weft.recompute
// BLOCK-LABEL: func.func @forward_step(
// BLOCK-COUNT-8: weft.recompute
// BLOCK-NOT: weft.recompute
// UNI-LABEL: func.func @forward_step(
// UNI-COUNT-8: weft.recompute
// UNI-NOT: weft.recompute
// ROOMY-LABEL: func.func @forward_step(
// ROOMY-NOT: weft.recompute
// MID-LABEL: func.func @forward_step(
// MID-NOT: weft.recompute
// TIGHT-LABEL: func.func @forward_step(
// TIGHT-NOT: weft.recompute

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

// -----

// The forward itself is never touched, only @*_step.
// NONE-LABEL: func.func @forward(
// NONE-NOT: weft.recompute
// NONE-LABEL: func.func @forward_step(
// NONE-NOT: weft.recompute

// selective: per layer, QK^T, scale, mask, softmax and dropout are rebuilt
// from the saved q and k right before the dV matmul reads the dropped
// probabilities; softmax_grad reads the recomputed softmax. The matmul with
// V is not re-run: its output is the saved input of the output projection.
// SEL-LABEL: func.func @forward_step(
// SEL: %[[Q0:.*]] = weft.linear %[[N0:.*]], %arg2 {weft.layer = 0 : i64}
// SEL-NEXT: %[[K0:.*]] = weft.linear %[[N0]], %arg3 {weft.layer = 0 : i64}
// SEL: %[[Q1:.*]] = weft.linear %[[N1:.*]], %arg12 {weft.layer = 1 : i64}
// SEL-NEXT: %[[K1:.*]] = weft.linear %[[N1]], %arg13 {weft.layer = 1 : i64}
// SEL: weft.cross_entropy_grad
// SEL-NOT: weft.recompute
// SEL: %[[S1:.*]] = weft.matmul %[[Q1]], %[[K1]] {transpose_b, weft.layer = 1 : i64, weft.recompute}
// SEL-NEXT: %[[T1:.*]] = weft.scale %[[S1]] {value = 0.35355339059327373 : f64, weft.layer = 1 : i64, weft.recompute}
// SEL-NEXT: %[[M1:.*]] = weft.causal_mask %[[T1]] {weft.layer = 1 : i64, weft.recompute}
// SEL-NEXT: %[[P1:.*]] = weft.softmax %[[M1]] {weft.layer = 1 : i64, weft.recompute}
// SEL-NEXT: %[[D1:.*]] = weft.dropout %[[P1]], %arg23 {p = 1.000000e-01 : f64, weft.layer = 1 : i64, weft.recompute, weft.rng_id = 3 : i64}
// SEL-NEXT: weft.matmul %[[D1]], %{{.*}} {transpose_a, weft.layer = 1 : i64}
// SEL-NOT: weft.recompute
// SEL: weft.softmax_grad %{{.*}}, %[[P1]] {weft.layer = 1 : i64}
// SEL-NOT: weft.recompute
// SEL: %[[S0:.*]] = weft.matmul %[[Q0]], %[[K0]] {transpose_b, weft.layer = 0 : i64, weft.recompute}
// SEL-COUNT-3: weft.recompute
// SEL-NEXT: %[[D0:.*]] = weft.dropout %{{.*}}, %arg23 {p = 1.000000e-01 : f64, weft.layer = 0 : i64, weft.recompute, weft.rng_id = 1 : i64}
// SEL-NEXT: weft.matmul %[[D0]], %{{.*}} {transpose_a, weft.layer = 0 : i64}
// SEL-NOT: weft.recompute
// SEL: return

// full: each layer keeps only its input; its 16 needed forward ops (all but
// the last projection and residual add, whose outputs the backward never
// reads) are recomputed as one segment before the layer's first backward op.
// FULL-LABEL: func.func @forward_step(
// FULL: weft.layer_norm %[[IN1:[0-9]+]], %arg10, %arg11 {weft.layer = 1 : i64}
// FULL: weft.cross_entropy_grad
// FULL-NOT: weft.recompute
// FULL: weft.layer_norm %[[IN1]], %arg10, %arg11 {weft.layer = 1 : i64, weft.recompute}
// FULL-COUNT-7: weft.recompute
// FULL-NEXT: weft.dropout %{{.*}}, %arg23 {p = 1.000000e-01 : f64, weft.layer = 1 : i64, weft.recompute, weft.rng_id = 3 : i64}
// FULL-COUNT-2: weft.recompute
// FULL-NEXT: weft.dropout %{{.*}}, %arg23 {p = 1.000000e-01 : f64, weft.layer = 1 : i64, weft.recompute, weft.rng_id = 4 : i64}
// FULL-COUNT-3: weft.recompute
// FULL-NEXT: %[[G1:.*]] = weft.gelu %{{.*}} {approximate = "tanh", weft.layer = 1 : i64, weft.recompute}
// FULL-NEXT: weft.reshape %[[G1]] {weft.layer = 1 : i64}
// FULL-NOT: weft.recompute
// FULL: weft.layer_norm_grad %{{.*}}, %[[IN1]], %arg10 {weft.layer = 1 : i64}
// FULL-NOT: weft.recompute
// FULL: weft.layer_norm %arg21, %arg0, %arg1 {weft.layer = 0 : i64, weft.recompute}
// FULL-COUNT-15: weft.recompute
// FULL-NOT: weft.recompute
// FULL: return

// block with one layer: only layer 0 (the first) is recomputed.
// BLOCK-LABEL: func.func @forward_step(
// BLOCK-NOT: weft.layer = 1 : i64, weft.recompute
// BLOCK: weft.layer_norm %arg21, %arg0, %arg1 {weft.layer = 0 : i64, weft.recompute}
// BLOCK-COUNT-15: weft.recompute
// BLOCK-NOT: weft.recompute
// BLOCK: return

// uniform with chunks of 2 layers: both layers are one chunk; only its input
// (the step's %arg21) stays, and layer 0's output is recomputed too.
// UNI-LABEL: func.func @forward_step(
// UNI: weft.cross_entropy_grad
// UNI-NOT: weft.recompute
// UNI: weft.layer_norm %arg21, %arg0, %arg1 {weft.layer = 0 : i64, weft.recompute}
// UNI-COUNT-33: weft.recompute
// UNI-NOT: weft.recompute
// UNI: return

// budget: with room for everything nothing is recomputed; 14600 bytes (256
// under) regenerates only the two attention dropouts from the saved softmax
// outputs (cheapest per byte, the masks bit-identical by rng_id); at 14 KiB,
// the smallest peak this step can reach, LayerNorms and the attention output
// are recomputed too.
// ROOMY-LABEL: func.func @forward_step(
// ROOMY-NOT: weft.recompute
// MID-LABEL: func.func @forward_step(
// MID: weft.dropout %{{.*}}, %arg23 {p = 1.000000e-01 : f64, weft.layer = 1 : i64, weft.recompute, weft.rng_id = 3 : i64}
// MID-NOT: weft.recompute
// MID: weft.dropout %{{.*}}, %arg23 {p = 1.000000e-01 : f64, weft.layer = 0 : i64, weft.recompute, weft.rng_id = 1 : i64}
// MID-NOT: weft.recompute
// MID: return
// TIGHT-LABEL: func.func @forward_step(
// TIGHT: weft.layer_norm {{.*}}weft.layer = 1 : i64, weft.recompute
// TIGHT: weft.dropout {{.*}}weft.layer = 1 : i64, weft.recompute, weft.rng_id = 3 : i64
// TIGHT-NEXT: weft.matmul {{.*}}weft.layer = 1 : i64, weft.recompute
// TIGHT: weft.layer_norm {{.*}}weft.layer = 1 : i64, weft.recompute
// TIGHT: weft.layer_norm {{.*}}weft.layer = 0 : i64, weft.recompute
// TIGHT: weft.dropout {{.*}}weft.layer = 0 : i64, weft.recompute, weft.rng_id = 1 : i64
// TIGHT-NEXT: weft.matmul {{.*}}weft.layer = 0 : i64, weft.recompute
// TIGHT: weft.layer_norm {{.*}}weft.layer = 0 : i64, weft.recompute
// TIGHT-NOT: weft.recompute
// TIGHT: return

// The report of selective: per layer, QK^T 2*4*4*8 = 256 FLOPs, scale 16,
// causal_mask 16, softmax 5*16 = 80, dropout 2*16 = 32: 400, twice (with
// --split-input-file each chunk rewrites the report; this is the last).
// Every op is memory-bound on an H100: per layer
// 320 + 3*128 + 136 = 840 bytes at 3.35e12 B/s, 2.5075e-10 s, twice.
// REPORT: "forward_step": {
// REPORT: "policy": "selective",
// REPORT: "recompute_seconds": 5.01492537313{{[0-9]*}}e-10,
// REPORT-NEXT: "recompute_flops": 800,
// REPORT-NEXT: "cloned_ops": 10,
// REPORT-NEXT: "segments": 2,
// REPORT-NEXT: "layers": 2,

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
