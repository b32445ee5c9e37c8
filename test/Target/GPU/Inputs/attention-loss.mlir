// A bf16 causal GQA attention and a mean loss: autodiff makes @forward_step
// with the attention (with lse) and its attention_grad (emit-kernels-train.mlir).
func.func @forward(%q: tensor<1x2x128x64xbf16> {weft.param}, %k: tensor<1x1x128x64xbf16> {weft.param}, %v: tensor<1x1x128x64xbf16> {weft.param}) -> tensor<f32> {
  %o = weft.attention %q, %k, %v {causal} : (tensor<1x2x128x64xbf16>, tensor<1x1x128x64xbf16>, tensor<1x1x128x64xbf16>) -> tensor<1x2x128x64xbf16>
  %f = weft.convert %o : (tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xf32>
  %l = weft.reduce_mean %f {dims = array<i64: 0, 1, 2, 3>} : (tensor<1x2x128x64xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
