// weft-tile-attention's nest indexes [b, h, s, d]: a seq_major op (made for
// the GPU kernels by weft-fold-attention-layout) is refused at its location.
// RUN: not weft-opt %s --weft-tile-attention 2>&1 | FileCheck %s

// CHECK: tile-attention-seq-major.mlir:[[@LINE+2]]:8: error: weft-tile-attention takes [b, h, s, d] operands; this weft.attention is seq_major
func.func @attention(%q: tensor<1x8x1x4xf32>, %k: tensor<1x8x1x4xf32>, %v: tensor<1x8x1x4xf32>) -> tensor<1x8x1x4xf32> {
  %o = weft.attention %q, %k, %v {seq_major} : (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>) -> tensor<1x8x1x4xf32>
  return %o : tensor<1x8x1x4xf32>
}
