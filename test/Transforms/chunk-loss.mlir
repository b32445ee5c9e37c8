// RUN: weft-opt %s --split-input-file --weft-chunk-loss="chunks=2" | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-chunk-loss{chunks=3}))' --weft-diff-each-pass -o /dev/null
// RUN: weft-opt %s --split-input-file --weft-chunk-loss="chunks=0 budget=1KiB" | FileCheck %s --check-prefix=AUTO
// RUN: weft-opt %s --split-input-file --weft-chunk-loss="chunks=0" | FileCheck %s --check-prefix=WHOLE
// RUN: weft-opt %s --split-input-file --weft-chunk-loss="chunks=0 budget=1MiB" | FileCheck %s --check-prefix=ROOMY
// RUN: not weft-opt %s --split-input-file --weft-chunk-loss="chunks=0 budget=lots" 2>&1 | FileCheck %s --check-prefix=BAD

// nanoGPT's head: linear on [b, t, c], the logits viewed as [rows, vocab].
// Two linears on row halves of x (one split view), each loss its share of
// the mean over all 16 labels, summed (as [1] tensors: a 0-d add has no GPU
// kernel domain).
// CHECK-LABEL: func.func @head
// CHECK-SAME: weft.loss_chunks = 2
// CHECK: %[[X:.*]] = weft.reshape %arg0 : (tensor<2x8x4xf64>) -> tensor<16x4xf64>
// CHECK-NOT: weft.reshape %arg3
// CHECK: %[[XS:.*]]:2 = weft.split %[[X]] {dim = 0 : i64, sizes = array<i64: 8, 8>}
// CHECK: %[[YS:.*]]:2 = weft.split %arg3 {dim = 0 : i64, sizes = array<i64: 8, 8>}
// CHECK: %[[L0:.*]] = weft.linear %[[XS]]#0, %arg1, %arg2 : (tensor<8x4xf64>, tensor<6x4xf64>, tensor<6xf64>) -> tensor<8x6xf64>
// CHECK: %[[C0:.*]] = weft.cross_entropy %[[L0]], %[[YS]]#0, %arg3 {ignore_index = -1 : i64} : (tensor<8x6xf64>, tensor<8xi64>, tensor<16xi64>) -> tensor<f64>
// CHECK: %[[V0:.*]] = weft.reshape %[[C0]] : (tensor<f64>) -> tensor<1xf64>
// CHECK: %[[L1:.*]] = weft.linear %[[XS]]#1, %arg1, %arg2
// CHECK: %[[C1:.*]] = weft.cross_entropy %[[L1]], %[[YS]]#1, %arg3 {ignore_index = -1 : i64}
// CHECK: %[[V1:.*]] = weft.reshape %[[C1]] : (tensor<f64>) -> tensor<1xf64>
// CHECK: %[[S:.*]] = weft.add %[[V0]], %[[V1]]
// CHECK: %[[T:.*]] = weft.reshape %[[S]] : (tensor<1xf64>) -> tensor<f64>
// CHECK: return %[[T]]
// WHOLE-LABEL: func.func @head
// WHOLE-NOT: weft.loss_chunks
// WHOLE-NOT: weft.split
// WHOLE: weft.cross_entropy %{{.*}}, %arg3 {ignore_index
// WHOLE-NEXT: return
func.func @head(%x: tensor<2x8x4xf64> {weft.param}, %w: tensor<6x4xf64> {weft.param},
                %b: tensor<6xf64> {weft.param},
                %y: tensor<16xi64> {weft.range = array<i64: -1, 1>}) -> tensor<f64> {
  %l = weft.linear %x, %w, %b : (tensor<2x8x4xf64>, tensor<6x4xf64>, tensor<6xf64>) -> tensor<2x8x6xf64>
  %v = weft.reshape %l : (tensor<2x8x6xf64>) -> tensor<16x6xf64>
  %c = weft.cross_entropy %v, %y {ignore_index = -1 : i64} : (tensor<16x6xf64>, tensor<16xi64>) -> tensor<f64>
  return %c : tensor<f64>
}

// -----

// The logits have another reader: the loss stays whole.
// CHECK-LABEL: func.func @logits_kept
// CHECK-NOT: weft.split
// CHECK-COUNT-1: weft.cross_entropy
func.func @logits_kept(%x: tensor<8x4xf64>, %w: tensor<6x4xf64> {weft.param},
                       %y: tensor<8xi64>) -> (tensor<f64>, tensor<8x6xf64>) {
  %l = weft.linear %x, %w : (tensor<8x4xf64>, tensor<6x4xf64>) -> tensor<8x6xf64>
  %c = weft.cross_entropy %l, %y : (tensor<8x6xf64>, tensor<8xi64>) -> tensor<f64>
  return %c, %l : tensor<f64>, tensor<8x6xf64>
}

// -----

// chunks=0 picks from the budget: 256 rows of 6 f64 logits are 48 bytes a
// row; 1KiB / 16 = 64 bytes would want 256 one-row chunks, but no chunk has
// fewer than 64 rows: 4 chunks. With 1MiB (64KiB a chunk) the 12KiB of
// logits stay whole.
// AUTO-LABEL: func.func @tall
// AUTO-SAME: weft.loss_chunks = 4
// AUTO-COUNT-4: weft.cross_entropy {{.*}} : (tensor<64x6xf64>, tensor<64xi64>, tensor<256xi64>) -> tensor<f64>
// ROOMY-LABEL: func.func @tall
// ROOMY-NOT: weft.split
// BAD: error: 'weft.cross_entropy' op weft-chunk-loss: budget 'lots' is not a positive size
func.func @tall(%x: tensor<256x4xf64>, %w: tensor<6x4xf64> {weft.param},
                %y: tensor<256xi64>) -> tensor<f64> {
  %l = weft.linear %x, %w : (tensor<256x4xf64>, tensor<6x4xf64>) -> tensor<256x6xf64>
  %c = weft.cross_entropy %l, %y : (tensor<256x6xf64>, tensor<256xi64>) -> tensor<f64>
  return %c : tensor<f64>
}
