// weft-place and weft-partition refuse placements that do not divide, naming
// the tensor, the dimension and the grid.
// RUN: not weft-opt %S/Inputs/gpt_2layer.mlir --weft-autodiff=optimizer=adamw --weft-place=grid=tp=8 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not weft-opt %S/Inputs/gpt_2layer.mlir --weft-place=grid=pp=2 2>&1 | FileCheck %s --check-prefix=GRID
// RUN: not weft-opt %S/Inputs/gpt_2layer.mlir --weft-place=grid=dp=2 2>&1 | FileCheck %s --check-prefix=NOTP
// RUN: not weft-opt %s --split-input-file --weft-place=grid=tp=4 2>&1 | FileCheck %s

// HEADS: error: 'weft.attention' op has 4 query heads and 4 kv heads; tp=8 (grid tp=8) must divide both (weft-expand-kv-heads replicates kv heads that tp exceeds
// GRID: error: weft-place: grid entry 'pp=2' is not dp=N or tp=N
// NOTP: error: weft-place: grid 'dp=2' has no tp axis

// CHECK: error: 'weft.linear' op cannot be column-parallel: its argument #0 ('tensor<6x8xf32>') has dimension 0 of size 6, not divisible by tp=4 (grid tp=4)
func.func @hidden(%w: tensor<6x8xf32> {weft.param}, %x: tensor<2x4x8xf32>) -> tensor<f32> {
  %y = weft.linear %x, %w : (tensor<2x4x8xf32>, tensor<6x8xf32>) -> tensor<2x4x6xf32>
  %l = weft.reduce_mean %y {dims = array<i64: 0, 1, 2>} : (tensor<2x4x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK: error: 'weft.embedding' op cannot be vocabulary-parallel: its argument #0 ('tensor<30x8xf32>') has dimension 0 of size 30, not divisible by tp=4 (grid tp=4)
func.func @vocab(%t: tensor<30x8xf32> {weft.param}, %ids: tensor<2x4xi64>) -> tensor<f32> {
  %e = weft.embedding %ids, %t : (tensor<2x4xi64>, tensor<30x8xf32>) -> tensor<2x4x8xf32>
  %l = weft.reduce_mean %e {dims = array<i64: 0, 1, 2>} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
