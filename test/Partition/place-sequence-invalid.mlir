// Sequence parallelism needs the sequence divisible by tp.
// RUN: not weft-opt %s --weft-place="grid=tp=4 sequence-parallel" 2>&1 | FileCheck %s

// CHECK: error: 'func.func' op argument #1 ('tensor<2x6x8xf32>'): sequence length 6 is not divisible by tp=4 (grid tp=4) for sequence parallelism
func.func @seq(%w: tensor<8x8xf32> {weft.param}, %x: tensor<2x6x8xf32>) -> tensor<f32> {
  %y = weft.linear %x, %w : (tensor<2x6x8xf32>, tensor<8x8xf32>) -> tensor<2x6x8xf32>
  %l = weft.reduce_mean %y {dims = array<i64: 0, 1, 2>} : (tensor<2x6x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
