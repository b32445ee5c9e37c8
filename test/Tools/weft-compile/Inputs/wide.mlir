// Two layers whose activations (128x64xf32 = 32 KiB each) outweigh the
// parameters: remat has something to trade (budget.mlir).
func.func @forward(%w0: tensor<64x16xf32> {weft.param}, %w1: tensor<64x64xf32> {weft.param}, %w2: tensor<8x64xf32> {weft.param}, %x: tensor<128x16xf32>, %y: tensor<128xi64> {weft.range = array<i64: 0, 8>}) -> tensor<f32> {
  %h0 = weft.linear %x, %w0 {weft.layer = 0 : i64} : (tensor<128x16xf32>, tensor<64x16xf32>) -> tensor<128x64xf32>
  %a0 = weft.gelu %h0 {weft.layer = 0 : i64} : (tensor<128x64xf32>) -> tensor<128x64xf32>
  %h1 = weft.linear %a0, %w1 {weft.layer = 1 : i64} : (tensor<128x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32>
  %a1 = weft.gelu %h1 {weft.layer = 1 : i64} : (tensor<128x64xf32>) -> tensor<128x64xf32>
  %z = weft.linear %a1, %w2 : (tensor<128x64xf32>, tensor<8x64xf32>) -> tensor<128x8xf32>
  %l = weft.cross_entropy %z, %y : (tensor<128x8xf32>, tensor<128xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
