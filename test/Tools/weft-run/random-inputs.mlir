// Random integers come from the range the IR states; results print one line
// each (rank-prefixed for SPMD functions) and round-trip through .npz.

// weft.range = [3, 4) admits only 3: sum = 4 * 3, l2 = sqrt(4 * 9).
// RUN: weft-run %s --entry fixed --random-inputs --seed 7 --outputs %t.fixed.npz | FileCheck %s --check-prefix=FIXED
// FIXED: res0: tensor<4xi64> sum=12 l2=6{{$}}
// FIXED-NEXT: res1: tensor<f32> sum={{.*}} l2=

// Ranges inferred from uses: embedding ids in [0, rows), dropout seeds in
// [0, 2^31), cross-entropy labels in [0, vocab), the AdamW step in [1, 1000];
// through a reshape too. An id out of range would fail the run.
// RUN: weft-run %s --entry inferred --random-inputs | FileCheck %s --check-prefix=INFERRED
// INFERRED: res0: tensor<3x2xf64> sum=
// INFERRED-NEXT: res1: tensor<f32> sum=
// INFERRED-NEXT: res2: tensor<4xf32> sum={{-?[0-9]}}

// weft.range overrides what the uses say; ids outside the table are the
// interpreter's runtime error (exit 1).
// RUN: sh -c 'weft-run %s --entry override --random-inputs 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=OVERRIDE
// OVERRIDE: error: 'weft.embedding' op has id {{[5-8]}} at position [0], outside [0, 5)
// OVERRIDE: exit 1

// Two ranks: every rank gets the same draw, so the all-reduce doubles it.
// RUN: weft-run %s --entry spmd --random-inputs --save-inputs %t.spmd-in.npz --outputs %t.spmd.npz | FileCheck %s --check-prefix=SPMD
// SPMD: rank0 res0: tensor<3xi64> sum=12 l2=6.9282032302755088
// SPMD-NEXT: rank1 res0: tensor<3xi64> sum=12 l2=6.9282032302755088
// RUN: weft-run %s --entry spmd --inputs %t.spmd-in.npz --expect %t.spmd.npz | FileCheck %s --check-prefix=SPMD-EXPECT
// SPMD-EXPECT: expect: all results match

// The same seed gives the same inputs.
// RUN: weft-run %s --entry normal --random-inputs --seed 11 --outputs %t.normal.npz
// RUN: weft-run %s --entry normal --random-inputs --seed 11 --expect %t.normal.npz --rtol 0 --atol 0

shard.grid @grid(shape = 2)

func.func @fixed(%n: tensor<4xi64> {weft.range = array<i64: 3, 4>}, %x: tensor<f32>) -> (tensor<4xi64>, tensor<f32>) {
  return %n, %x : tensor<4xi64>, tensor<f32>
}

func.func @inferred(%ids: tensor<1x3xi64>, %table: tensor<5x2xf64>, %seed: tensor<i64>,
                    %logits: tensor<2x7xf32>, %labels: tensor<2xi64>,
                    %p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %step: tensor<i64>)
    -> (tensor<3x2xf64>, tensor<f32>, tensor<4xf32>) {
  %flat = weft.reshape %ids : (tensor<1x3xi64>) -> tensor<3xi64>
  %e = weft.embedding %flat, %table : (tensor<3xi64>, tensor<5x2xf64>) -> tensor<3x2xf64>
  %d = weft.dropout %e, %seed {p = 0.5 : f64, weft.rng_id = 1 : i64} : (tensor<3x2xf64>, tensor<i64>) -> tensor<3x2xf64>
  %l = weft.cross_entropy %logits, %labels : (tensor<2x7xf32>, tensor<2xi64>) -> tensor<f32>
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %step {lr = 1.0e-03 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %d, %l, %p1 : tensor<3x2xf64>, tensor<f32>, tensor<4xf32>
}

func.func @override(%ids: tensor<3xi64> {weft.range = array<i64: 5, 9>}, %table: tensor<5x2xf64>) -> tensor<3x2xf64> {
  %e = weft.embedding %ids, %table : (tensor<3xi64>, tensor<5x2xf64>) -> tensor<3x2xf64>
  return %e : tensor<3x2xf64>
}

func.func @spmd(%n: tensor<3xi64> {weft.range = array<i64: 2, 3>}) -> tensor<3xi64> {
  %r = shard.all_reduce %n on @grid grid_axes = [0] : tensor<3xi64> -> tensor<3xi64>
  return %r : tensor<3xi64>
}

func.func @normal(%x: tensor<4x4xbf16>, %y: tensor<3xf16>) -> (tensor<4x4xbf16>, tensor<3xf16>) {
  return %x, %y : tensor<4x4xbf16>, tensor<3xf16>
}
