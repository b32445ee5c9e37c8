// The AOT example's attention: one causal GQA attention (4 query heads over 2
// kv heads) with its log-sum-exp, and its gradient, in bf16. weft-compile
// --emit=kernels turns it into units example_attention_0 and
// example_attention_grad_0, which attention_example.c launches.
func.func @example(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>, %dout: tensor<1x4x256x64xbf16>) -> (tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>, tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  %out, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> (tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>)
  %dq, %dk, %dv = weft.attention_grad %dout, %q, %k, %v, %out, %lse {causal} : (tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>) -> (tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
  return %out, %lse, %dq, %dk, %dv : tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>, tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}
