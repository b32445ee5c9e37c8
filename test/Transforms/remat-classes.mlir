// weft-remat's budget policy with layers that are not all alike: layers 0
// and 2 (MLP 8 -> 16 -> 8) are isomorphic and share one decision; layer 1
// (8 -> 64 -> 8) is a class of its own. Each layer saves fc1's output (the
// GELU input, for gelu_grad) and the dropped GELU output (for fc2's weight
// gradient); the two classes' Pareto sets are merged exactly.
//
// RUN: weft-opt %s --weft-autodiff --weft-remat="policy=budget budget=14336 report=%t.mid.json" | FileCheck %s --check-prefix=MID
// RUN: FileCheck %s --input-file=%t.mid.json --check-prefix=MID-REPORT
// RUN: weft-opt %s --weft-autodiff --weft-remat="policy=budget budget=14080 report=%t.min.json" | FileCheck %s --check-prefix=MIN
// RUN: FileCheck %s --input-file=%t.min.json --check-prefix=MIN-REPORT

// Without recomputation the planned peak is 14592 bytes. At 14336, both
// small layers recompute fc1 (a 4x16 f32 output, 256 bytes): 896 bytes
// moved, 2.6746e-10 s on an H100 each, cheaper than GELU plus dropout
// (1.528e-10 + 1.552e-10 s); the wide layer keeps both of its tensors.
// MID-LABEL: func.func @forward_step(
// MID-NOT: weft.recompute
// MID: weft.linear %{{.*}}, %arg4 {weft.layer = 2 : i64, weft.recompute}
// MID-NOT: weft.recompute
// MID: weft.linear %arg7, %arg0 {weft.layer = 0 : i64, weft.recompute}
// MID-NOT: weft.recompute
// MID: return
// MID-REPORT: "planned_peak_bytes": 14336,
// MID-REPORT: "classes": 2,
// MID-REPORT: "decisions": [
// MID-REPORT-NEXT: {
// MID-REPORT-NEXT: "layers": 2,
// MID-REPORT-NEXT: "units": 2,
// MID-REPORT-NEXT: "kept_units": 1,
// MID-REPORT-NEXT: "saved_bytes_per_layer": 256,
// MID-REPORT-NEXT: "recompute_seconds_per_layer": 2.674626{{[0-9]*}}e-10
// MID-REPORT: "layers": 1,
// MID-REPORT-NEXT: "units": 2,
// MID-REPORT-NEXT: "kept_units": 2,

// 14080 bytes is the smallest reachable peak: the small layers recompute
// both tensors (fc1, GELU, dropout: the mask regenerated from rng_id), the
// wide one its fc1 only.
// MIN-LABEL: func.func @forward_step(
// MIN: weft.linear %{{.*}}, %arg4 {weft.layer = 2 : i64, weft.recompute}
// MIN-NEXT: weft.gelu {{.*}}weft.layer = 2 : i64, weft.recompute
// MIN-NEXT: weft.dropout {{.*}}{p = 1.000000e-01 : f64, weft.layer = 2 : i64, weft.recompute, weft.rng_id = 2 : i64}
// MIN: weft.linear %{{.*}}, %arg2 {weft.layer = 1 : i64, weft.recompute}
// MIN-NOT: weft.layer = 1 : i64, weft.recompute
// MIN: weft.linear %arg7, %arg0 {weft.layer = 0 : i64, weft.recompute}
// MIN-NEXT: weft.gelu {{.*}}weft.layer = 0 : i64, weft.recompute
// MIN-NEXT: weft.dropout {{.*}}{p = 1.000000e-01 : f64, weft.layer = 0 : i64, weft.recompute, weft.rng_id = 0 : i64}
// MIN-NOT: weft.recompute
// MIN-REPORT: "planned_peak_bytes": 14080,
// MIN-REPORT: "kept_units": 0,
// MIN-REPORT: "kept_units": 1,

func.func @forward(%w1_0: tensor<16x8xf32> {weft.param},
    %w2_0: tensor<8x16xf32> {weft.param},
    %w1_1: tensor<64x8xf32> {weft.param},
    %w2_1: tensor<8x64xf32> {weft.param},
    %w1_2: tensor<16x8xf32> {weft.param},
    %w2_2: tensor<8x16xf32> {weft.param},
    %wout: tensor<8x8xf32> {weft.param},
    %x: tensor<4x8xf32>,
    %labels: tensor<4xi64> {weft.range = array<i64: 0, 8>},
    %seed: tensor<i64>) -> tensor<f32> {
  %f0 = weft.linear %x, %w1_0 {weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %g0 = weft.gelu %f0 {approximate = "tanh", weft.layer = 0 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %d0 = weft.dropout %g0, %seed {p = 0.1 : f64, weft.layer = 0 : i64, weft.rng_id = 0 : i64} : (tensor<4x16xf32>, tensor<i64>) -> tensor<4x16xf32>
  %h0 = weft.linear %d0, %w2_0 {weft.layer = 0 : i64} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r0 = weft.add %x, %h0 {weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %f1 = weft.linear %r0, %w1_1 {weft.layer = 1 : i64} : (tensor<4x8xf32>, tensor<64x8xf32>) -> tensor<4x64xf32>
  %g1 = weft.gelu %f1 {approximate = "tanh", weft.layer = 1 : i64} : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %d1 = weft.dropout %g1, %seed {p = 0.1 : f64, weft.layer = 1 : i64, weft.rng_id = 1 : i64} : (tensor<4x64xf32>, tensor<i64>) -> tensor<4x64xf32>
  %h1 = weft.linear %d1, %w2_1 {weft.layer = 1 : i64} : (tensor<4x64xf32>, tensor<8x64xf32>) -> tensor<4x8xf32>
  %r1 = weft.add %r0, %h1 {weft.layer = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %f2 = weft.linear %r1, %w1_2 {weft.layer = 2 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %g2 = weft.gelu %f2 {approximate = "tanh", weft.layer = 2 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %d2 = weft.dropout %g2, %seed {p = 0.1 : f64, weft.layer = 2 : i64, weft.rng_id = 2 : i64} : (tensor<4x16xf32>, tensor<i64>) -> tensor<4x16xf32>
  %h2 = weft.linear %d2, %w2_2 {weft.layer = 2 : i64} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r2 = weft.add %r1, %h2 {weft.layer = 2 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %logits = weft.linear %r2, %wout : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %loss = weft.cross_entropy %logits, %labels : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
