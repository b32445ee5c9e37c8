// One attention block (GQA, causal) in f32 with a mean loss, its q/k/v transposed from the qkv linear as a PyTorch model writes it.
func.func @forward(%x: tensor<1x16x32xf32>, %w: tensor<64x32xf32> {weft.param}, %wo: tensor<32x32xf32> {weft.param}) -> tensor<f32> {
  %qkv = weft.linear %x, %w : (tensor<1x16x32xf32>, tensor<64x32xf32>) -> tensor<1x16x64xf32>
  %q2, %k2, %v2 = weft.split %qkv {dim = 2 : i64, sizes = array<i64: 32, 16, 16>} : (tensor<1x16x64xf32>) -> (tensor<1x16x32xf32>, tensor<1x16x16xf32>, tensor<1x16x16xf32>)
  %q3 = weft.reshape %q2 : (tensor<1x16x32xf32>) -> tensor<1x16x4x8xf32>
  %k3 = weft.reshape %k2 : (tensor<1x16x16xf32>) -> tensor<1x16x2x8xf32>
  %v3 = weft.reshape %v2 : (tensor<1x16x16xf32>) -> tensor<1x16x2x8xf32>
  %q = weft.transpose %q3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %k = weft.transpose %k3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x8xf32>) -> tensor<1x2x16x8xf32>
  %v = weft.transpose %v3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x8xf32>) -> tensor<1x2x16x8xf32>
  %o = weft.attention %q, %k, %v {causal} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  %ot = weft.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x16x8xf32>) -> tensor<1x16x4x8xf32>
  %o2 = weft.reshape %ot : (tensor<1x16x4x8xf32>) -> tensor<1x16x32xf32>
  %y = weft.linear %o2, %wo : (tensor<1x16x32xf32>, tensor<32x32xf32>) -> tensor<1x16x32xf32>
  %l = weft.reduce_mean %y {dims = array<i64: 0, 1, 2>} : (tensor<1x16x32xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
