// LLaMA-style transformer written by `python -m weft.models --preset llama_block --emit-only` (PYTHONPATH=python).
// layers 1, batch 2, seq 16, hidden 64, heads 4 (kv 2), ffn 176, vocab 128, f32;
// norm rmsnorm, mlp swiglu, rope on, attention fused, dropout 0.0.
// Arguments: parameters {weft.param} named as in the PyTorch module, then ids,
// labels, RoPE cos/sin tables, the dropout seed; the comment names each one's .npz key.

func.func @forward(
    %p.tok_emb.weight: tensor<128x64xf32> {weft.param},  // arg0
    %p.layers.0.norm1.weight: tensor<64xf32> {weft.param},  // arg1
    %p.layers.0.attn.qkv.weight: tensor<128x64xf32> {weft.param},  // arg2
    %p.layers.0.attn.proj.weight: tensor<64x64xf32> {weft.param},  // arg3
    %p.layers.0.norm2.weight: tensor<64xf32> {weft.param},  // arg4
    %p.layers.0.mlp.gate.weight: tensor<176x64xf32> {weft.param},  // arg5
    %p.layers.0.mlp.up.weight: tensor<176x64xf32> {weft.param},  // arg6
    %p.layers.0.mlp.down.weight: tensor<64x176xf32> {weft.param},  // arg7
    %p.norm_f.weight: tensor<64xf32> {weft.param},  // arg8
    %p.lm_head.weight: tensor<128x64xf32> {weft.param},  // arg9
    %ids: tensor<2x16xi64> {weft.range = array<i64: 0, 128>},  // arg10
    %labels: tensor<2x16xi64> {weft.range = array<i64: 0, 128>},  // arg11
    %rope_cos: tensor<16x16xf32>,  // arg12
    %rope_sin: tensor<16x16xf32>,  // arg13
    %seed: tensor<i64>  // arg14
  ) -> tensor<f32> {
  // embeddings
  %tok_emb = weft.embedding %ids, %p.tok_emb.weight : (tensor<2x16xi64>, tensor<128x64xf32>) -> tensor<2x16x64xf32>
  // layer 0: attention
  %l0.norm1 = weft.rms_norm %tok_emb, %p.layers.0.norm1.weight {eps = 1.0e-06 : f64, weft.layer = 0 : i64} : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // fused QKV projection, rows per head [kv_heads, 2 q + k + v, head_dim] (Megatron-LM)
  %l0.qkv = weft.linear %l0.norm1, %p.layers.0.attn.qkv.weight {weft.layer = 0 : i64} : (tensor<2x16x64xf32>, tensor<128x64xf32>) -> tensor<2x16x128xf32>
  %l0.qkv.heads = weft.reshape %l0.qkv {weft.layer = 0 : i64} : (tensor<2x16x128xf32>) -> tensor<2x16x2x4x16xf32>
  %l0.qkv.split.0, %l0.qkv.split.1, %l0.qkv.split.2 = weft.split %l0.qkv.heads {dim = 3 : i64, sizes = array<i64: 2, 1, 1>, weft.layer = 0 : i64} : (tensor<2x16x2x4x16xf32>) -> (tensor<2x16x2x2x16xf32>, tensor<2x16x2x1x16xf32>, tensor<2x16x2x1x16xf32>)
  %l0.q.bshd = weft.reshape %l0.qkv.split.0 {weft.layer = 0 : i64} : (tensor<2x16x2x2x16xf32>) -> tensor<2x16x4x16xf32>
  %l0.k.bshd = weft.reshape %l0.qkv.split.1 {weft.layer = 0 : i64} : (tensor<2x16x2x1x16xf32>) -> tensor<2x16x2x16xf32>
  %l0.v.bshd = weft.reshape %l0.qkv.split.2 {weft.layer = 0 : i64} : (tensor<2x16x2x1x16xf32>) -> tensor<2x16x2x16xf32>
  // q, k, v as [batch, heads, seq, head_dim]
  %l0.q = weft.transpose %l0.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %l0.k = weft.transpose %l0.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
  %l0.v = weft.transpose %l0.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
  %l0.q.rope = weft.rope %l0.q, %rope_cos, %rope_sin {weft.layer = 0 : i64} : (tensor<2x4x16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %l0.k.rope = weft.rope %l0.k, %rope_cos, %rope_sin {weft.layer = 0 : i64} : (tensor<2x2x16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x2x16x16xf32>
  // causal attention, GQA 4 q / 2 kv heads
  %l0.attn = weft.attention %l0.q.rope, %l0.k.rope, %l0.v {causal, weft.layer = 0 : i64} : (tensor<2x4x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>) -> tensor<2x4x16x16xf32>
  // merge heads, output projection
  %l0.o.bshd = weft.transpose %l0.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
  %l0.o = weft.reshape %l0.o.bshd {weft.layer = 0 : i64} : (tensor<2x16x4x16xf32>) -> tensor<2x16x64xf32>
  %l0.proj = weft.linear %l0.o, %p.layers.0.attn.proj.weight {weft.layer = 0 : i64} : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %l0.resid1 = weft.add %tok_emb, %l0.proj {weft.layer = 0 : i64} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // layer 0: mlp
  %l0.norm2 = weft.rms_norm %l0.resid1, %p.layers.0.norm2.weight {eps = 1.0e-06 : f64, weft.layer = 0 : i64} : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %l0.gate = weft.linear %l0.norm2, %p.layers.0.mlp.gate.weight {weft.layer = 0 : i64} : (tensor<2x16x64xf32>, tensor<176x64xf32>) -> tensor<2x16x176xf32>
  %l0.up = weft.linear %l0.norm2, %p.layers.0.mlp.up.weight {weft.layer = 0 : i64} : (tensor<2x16x64xf32>, tensor<176x64xf32>) -> tensor<2x16x176xf32>
  %l0.gate.silu = weft.silu %l0.gate {weft.layer = 0 : i64} : (tensor<2x16x176xf32>) -> tensor<2x16x176xf32>
  %l0.swiglu = weft.mul %l0.gate.silu, %l0.up {weft.layer = 0 : i64} : (tensor<2x16x176xf32>, tensor<2x16x176xf32>) -> tensor<2x16x176xf32>
  %l0.down = weft.linear %l0.swiglu, %p.layers.0.mlp.down.weight {weft.layer = 0 : i64} : (tensor<2x16x176xf32>, tensor<64x176xf32>) -> tensor<2x16x64xf32>
  %l0.resid2 = weft.add %l0.resid1, %l0.down {weft.layer = 0 : i64} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // head: final norm, output projection, mean cross-entropy
  %norm_f = weft.rms_norm %l0.resid2, %p.norm_f.weight {eps = 1.0e-06 : f64} : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %logits = weft.linear %norm_f, %p.lm_head.weight : (tensor<2x16x64xf32>, tensor<128x64xf32>) -> tensor<2x16x128xf32>
  %loss = weft.cross_entropy %logits, %labels : (tensor<2x16x128xf32>, tensor<2x16xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
