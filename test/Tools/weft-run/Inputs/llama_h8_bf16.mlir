// LLaMA-style block written by `python -m weft.models --preset llama_block --emit-only --layers 1 --hidden 512 --heads 8 --kv-heads 2 --seq 64 --batch 1 --ffn-hidden 512 --dtype bf16 --dropout 0.0 --loss mean_square`.
// layers 1, batch 1, seq 64, hidden 512, heads 8 (kv 2), ffn 512, vocab 128, bf16;
// norm rmsnorm, mlp swiglu, rope on, attention fused, dropout 0.0.
// Arguments: parameters {weft.param} named as in the PyTorch module, then x (hidden states; loss mean(x_out^2)),
// RoPE cos/sin tables, the dropout seed; the comment names each one's .npz key.

func.func @forward(
    %p.layers.0.norm1.weight: tensor<512xbf16> {weft.param},  // arg0
    %p.layers.0.attn.qkv.weight: tensor<768x512xbf16> {weft.param},  // arg1
    %p.layers.0.attn.proj.weight: tensor<512x512xbf16> {weft.param},  // arg2
    %p.layers.0.norm2.weight: tensor<512xbf16> {weft.param},  // arg3
    %p.layers.0.mlp.gate.weight: tensor<512x512xbf16> {weft.param},  // arg4
    %p.layers.0.mlp.up.weight: tensor<512x512xbf16> {weft.param},  // arg5
    %p.layers.0.mlp.down.weight: tensor<512x512xbf16> {weft.param},  // arg6
    %x: tensor<1x64x512xbf16>,  // arg7
    %rope_cos: tensor<64x64xbf16>,  // arg8
    %rope_sin: tensor<64x64xbf16>,  // arg9
    %seed: tensor<i64>  // arg10
  ) -> tensor<f32> {
  // layer 0: attention
  %l0.norm1 = weft.rms_norm %x, %p.layers.0.norm1.weight {eps = 1.0e-06 : f64, weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<512xbf16>) -> tensor<1x64x512xbf16>
  // fused QKV projection, rows per head [kv_heads, 4 q + k + v, head_dim] (Megatron-LM)
  %l0.qkv = weft.linear %l0.norm1, %p.layers.0.attn.qkv.weight {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<768x512xbf16>) -> tensor<1x64x768xbf16>
  %l0.qkv.heads = weft.reshape %l0.qkv {weft.layer = 0 : i64} : (tensor<1x64x768xbf16>) -> tensor<1x64x2x6x64xbf16>
  %l0.qkv.split.0, %l0.qkv.split.1, %l0.qkv.split.2 = weft.split %l0.qkv.heads {dim = 3 : i64, sizes = array<i64: 4, 1, 1>, weft.layer = 0 : i64} : (tensor<1x64x2x6x64xbf16>) -> (tensor<1x64x2x4x64xbf16>, tensor<1x64x2x1x64xbf16>, tensor<1x64x2x1x64xbf16>)
  %l0.q.bshd = weft.reshape %l0.qkv.split.0 {weft.layer = 0 : i64} : (tensor<1x64x2x4x64xbf16>) -> tensor<1x64x8x64xbf16>
  %l0.k.bshd = weft.reshape %l0.qkv.split.1 {weft.layer = 0 : i64} : (tensor<1x64x2x1x64xbf16>) -> tensor<1x64x2x64xbf16>
  %l0.v.bshd = weft.reshape %l0.qkv.split.2 {weft.layer = 0 : i64} : (tensor<1x64x2x1x64xbf16>) -> tensor<1x64x2x64xbf16>
  // q, k, v as [batch, heads, seq, head_dim]
  %l0.q = weft.transpose %l0.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x64x8x64xbf16>) -> tensor<1x8x64x64xbf16>
  %l0.k = weft.transpose %l0.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x64x2x64xbf16>) -> tensor<1x2x64x64xbf16>
  %l0.v = weft.transpose %l0.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x64x2x64xbf16>) -> tensor<1x2x64x64xbf16>
  %l0.q.rope = weft.rope %l0.q, %rope_cos, %rope_sin {weft.layer = 0 : i64} : (tensor<1x8x64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x8x64x64xbf16>
  %l0.k.rope = weft.rope %l0.k, %rope_cos, %rope_sin {weft.layer = 0 : i64} : (tensor<1x2x64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<1x2x64x64xbf16>
  // causal attention, GQA 8 q / 2 kv heads
  %l0.attn = weft.attention %l0.q.rope, %l0.k.rope, %l0.v {causal, weft.layer = 0 : i64} : (tensor<1x8x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) -> tensor<1x8x64x64xbf16>
  // merge heads, output projection
  %l0.o.bshd = weft.transpose %l0.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x8x64x64xbf16>) -> tensor<1x64x8x64xbf16>
  %l0.o = weft.reshape %l0.o.bshd {weft.layer = 0 : i64} : (tensor<1x64x8x64xbf16>) -> tensor<1x64x512xbf16>
  %l0.proj = weft.linear %l0.o, %p.layers.0.attn.proj.weight {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<512x512xbf16>) -> tensor<1x64x512xbf16>
  %l0.resid1 = weft.add %x, %l0.proj {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<1x64x512xbf16>) -> tensor<1x64x512xbf16>
  // layer 0: mlp
  %l0.norm2 = weft.rms_norm %l0.resid1, %p.layers.0.norm2.weight {eps = 1.0e-06 : f64, weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<512xbf16>) -> tensor<1x64x512xbf16>
  %l0.gate = weft.linear %l0.norm2, %p.layers.0.mlp.gate.weight {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<512x512xbf16>) -> tensor<1x64x512xbf16>
  %l0.up = weft.linear %l0.norm2, %p.layers.0.mlp.up.weight {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<512x512xbf16>) -> tensor<1x64x512xbf16>
  %l0.gate.silu = weft.silu %l0.gate {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>) -> tensor<1x64x512xbf16>
  %l0.swiglu = weft.mul %l0.gate.silu, %l0.up {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<1x64x512xbf16>) -> tensor<1x64x512xbf16>
  %l0.down = weft.linear %l0.swiglu, %p.layers.0.mlp.down.weight {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<512x512xbf16>) -> tensor<1x64x512xbf16>
  %l0.resid2 = weft.add %l0.resid1, %l0.down {weft.layer = 0 : i64} : (tensor<1x64x512xbf16>, tensor<1x64x512xbf16>) -> tensor<1x64x512xbf16>
  // loss: mean of squares in f32 (the remat anchor's)
  %out.wide = weft.convert %l0.resid2 : (tensor<1x64x512xbf16>) -> tensor<1x64x512xf32>
  %out.sq = weft.mul %out.wide, %out.wide : (tensor<1x64x512xf32>, tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %loss = weft.reduce_mean %out.sq {dims = array<i64: 0, 1, 2>} : (tensor<1x64x512xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
