// Each chunk's logits made where the backward reads them: after the pass the
// forward ends at the split of the last hidden state, and every chunk's
// linear, forward loss and the loss sum sit right before the chunk's
// cross_entropy_grad, so one chunk's logits live at a time. Only the order
// changes: the f64 interpreter gives the whole loss's values.
// RUN: weft-opt %s --weft-autodiff=entry=head > %t.whole.mlir
// RUN: weft-run %t.whole.mlir --entry head_step --random-inputs --seed 3 --save-inputs %t.in.npz --outputs %t.whole.npz
// RUN: weft-opt %s --pass-pipeline='builtin.module(func.func(weft-chunk-loss{chunks=2}),weft-autodiff{entry=head},func.func(weft-sink-loss-logits))' > %t.sunk.mlir
// RUN: FileCheck %s --input-file %t.sunk.mlir --enable-var-scope
// RUN: weft-run %t.sunk.mlir --entry head_step --inputs %t.in.npz --expect %t.whole.npz --rtol 1e-12 --atol 1e-14 | FileCheck %s --check-prefix=VALUES
// Without the pass the chunks' logits are made in the forward, before any
// gradient, and saved for the backward.
// RUN: weft-opt %s --pass-pipeline='builtin.module(func.func(weft-chunk-loss{chunks=2}),weft-autodiff{entry=head})' | FileCheck %s --check-prefix=SAVED
// RUN: weft-opt %s --weft-sink-loss-logits --weft-diff-each-pass -o /dev/null

// VALUES: expect: all results match
// CHECK-LABEL: func.func @head_step
// CHECK: weft.gelu
// CHECK: %[[XS:.*]]:2 = weft.split
// CHECK: %[[YS:.*]]:2 = weft.split %arg3
// CHECK-NOT: weft.linear
// CHECK: %[[L1:.*]] = weft.linear %[[XS]]#1, %arg2
// CHECK-NEXT: %[[C1:.*]] = weft.cross_entropy %[[L1]], %[[YS]]#1
// CHECK-NEXT: %[[V1:.*]] = weft.reshape %[[C1]]
// CHECK-NEXT: %[[D1:.*]] = weft.cross_entropy_grad %{{.*}}, %[[L1]], %[[YS]]#1
// CHECK: %[[L0:.*]] = weft.linear %[[XS]]#0, %arg2
// CHECK-NEXT: %[[C0:.*]] = weft.cross_entropy %[[L0]], %[[YS]]#0
// CHECK-NEXT: %[[V0:.*]] = weft.reshape %[[C0]]
// CHECK-NEXT: %[[S:.*]] = weft.add %[[V0]], %[[V1]]
// CHECK-NEXT: %[[T:.*]] = weft.reshape %[[S]]
// CHECK-NEXT: %[[D0:.*]] = weft.cross_entropy_grad %{{.*}}, %[[L0]], %[[YS]]#0
// CHECK: return %[[T]],
// SAVED-LABEL: func.func @head_step
// SAVED: weft.linear {{.*}} -> tensor<8x6xf64>
// SAVED: weft.linear {{.*}} -> tensor<8x6xf64>
// SAVED: weft.add
// SAVED: weft.cross_entropy_grad
func.func @head(%x: tensor<2x8x4xf64> {weft.param}, %w1: tensor<4x4xf64> {weft.param},
                %w: tensor<6x4xf64> {weft.param},
                %y: tensor<16xi64> {weft.range = array<i64: -1, 6>}) -> tensor<f64> {
  %h = weft.linear %x, %w1 : (tensor<2x8x4xf64>, tensor<4x4xf64>) -> tensor<2x8x4xf64>
  %g = weft.gelu %h : (tensor<2x8x4xf64>) -> tensor<2x8x4xf64>
  %l = weft.linear %g, %w : (tensor<2x8x4xf64>, tensor<6x4xf64>) -> tensor<2x8x6xf64>
  %v = weft.reshape %l : (tensor<2x8x6xf64>) -> tensor<16x6xf64>
  %c = weft.cross_entropy %v, %y {ignore_index = -1 : i64} : (tensor<16x6xf64>, tensor<16xi64>) -> tensor<f64>
  return %c : tensor<f64>
}
