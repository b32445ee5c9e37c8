// The training step of the chunked loss against the whole one, in the f64
// interpreter: the loss and every gradient (x, w, bias) agree. Labels are
// drawn from [-1, 1) with ignore_index = -1, so chunks of 2 rows are often
// all ignored (their share is 0, not NaN) and the mean is over the kept
// labels of all chunks. 16 rows in 8 and in 3 (uneven: 6, 5, 5) chunks.
// RUN: weft-opt %s --weft-autodiff=entry=head > %t.whole.mlir
// RUN: weft-run %t.whole.mlir --entry head_step --random-inputs --seed 5 --save-inputs %t.in.npz --outputs %t.whole.npz
// RUN: weft-opt %s --pass-pipeline='builtin.module(func.func(weft-chunk-loss{chunks=8}),weft-autodiff{entry=head})' > %t.chunk8.mlir
// RUN: weft-run %t.chunk8.mlir --entry head_step --inputs %t.in.npz --expect %t.whole.npz --rtol 1e-12 --atol 1e-14 | FileCheck %s
// RUN: weft-opt %s --pass-pipeline='builtin.module(func.func(weft-chunk-loss{chunks=3}),weft-autodiff{entry=head})' > %t.chunk3.mlir
// RUN: weft-run %t.chunk3.mlir --entry head_step --inputs %t.in.npz --expect %t.whole.npz --rtol 1e-12 --atol 1e-14 | FileCheck %s
// The backward holds one chunk's logits gradient at a time: 8 of them.
// RUN: FileCheck %s --check-prefix=GRAD < %t.chunk8.mlir
// CHECK: expect: all results match
// GRAD-LABEL: func.func @head_step
// GRAD-COUNT-8: weft.cross_entropy_grad {{.*}} {ignore_index = -1 : i64} : (tensor<f64>, tensor<2x6xf64>, tensor<2xi64>, tensor<16xi64>) -> tensor<2x6xf64>
func.func @head(%x: tensor<2x8x4xf64> {weft.param}, %w: tensor<6x4xf64> {weft.param},
                %b: tensor<6xf64> {weft.param},
                %y: tensor<16xi64> {weft.range = array<i64: -1, 1>}) -> tensor<f64> {
  %l = weft.linear %x, %w, %b : (tensor<2x8x4xf64>, tensor<6x4xf64>, tensor<6xf64>) -> tensor<2x8x6xf64>
  %v = weft.reshape %l : (tensor<2x8x6xf64>) -> tensor<16x6xf64>
  %c = weft.cross_entropy %v, %y {ignore_index = -1 : i64} : (tensor<16x6xf64>, tensor<16xi64>) -> tensor<f64>
  return %c : tensor<f64>
}
