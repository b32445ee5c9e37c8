// weft.attention's causal is bottom-right aligned; the tiled nest skips key
// blocks top-left, so a causal op with q_len != k_len is refused at its
// location (the reference interpreter runs it untiled).
// RUN: not weft-opt %s --weft-tile-attention 2>&1 | FileCheck %s

// CHECK: tile-attention-causal-decode.mlir:[[@LINE+2]]:8: error: weft-tile-attention tiles causal attention with equal q and k lengths only, got q 'tensor<1x4x2x8xf32>' and k 'tensor<1x2x16x8xf32>'
func.func @decode(%q: tensor<1x4x2x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) -> tensor<1x4x2x8xf32> {
  %o = weft.attention %q, %k, %v {causal} : (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x2x8xf32>
  return %o : tensor<1x4x2x8xf32>
}
