// A two-layer MLP with a cross-entropy loss: small enough that every number
// of the training step's plan and report can be derived by hand (train.mlir).
func.func @forward(%w0: tensor<32x16xf32> {weft.param}, %w1: tensor<8x32xf32> {weft.param}, %x: tensor<4x16xf32>, %y: tensor<4xi64> {weft.range = array<i64: 0, 8>}) -> tensor<f32> {
  %h = weft.linear %x, %w0 {weft.layer = 0 : i64} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %a = weft.gelu %h {weft.layer = 0 : i64} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %z = weft.linear %a, %w1 {weft.layer = 1 : i64} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
  %l = weft.cross_entropy %z, %y : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
