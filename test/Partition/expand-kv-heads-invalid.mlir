// weft-expand-kv-heads expands kv heads only where it finds the fused QKV
// projection they come from; otherwise it says so at the attention.
// RUN: weft-opt %s --weft-expand-kv-heads=tp=4 --verify-diagnostics

func.func @separate(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'weft.attention' op reads kv heads that tp=4 must replicate, but not from a fused QKV projection (linear -> [b, s, kv_heads, group + 2, d] -> split) it can expand}}
  %o = weft.attention %q, %k, %v {causal} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %o : tensor<1x4x8x8xf32>
}
