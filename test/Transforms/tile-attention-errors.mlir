// weft-tile-attention rejects tile sizes that are not positive.
// RUN: not weft-opt %s --weft-tile-attention="block-q=0 block-k=32" 2>&1 | FileCheck %s

// CHECK: error: weft-tile-attention expects positive tile sizes, got block-q=0 block-k=32
func.func @attention(%q: tensor<1x1x8x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
  %o = weft.attention %q, %k, %v : (tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}
