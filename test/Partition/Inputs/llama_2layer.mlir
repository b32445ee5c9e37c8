// LLaMA-style transformer written by `python -m weft.models` (PYTHONPATH=python).
// layers 2, batch 2, seq 8, hidden 32, heads 4 (kv 2), ffn 48, vocab 32, f64;
// norm rmsnorm, mlp swiglu, rope on, attention fused, dropout 0.1.
// Arguments: parameters {weft.param} named as in the PyTorch module, then ids,
// labels, RoPE cos/sin tables, the dropout seed; the comment names each one's .npz key.

func.func @forward(
    %p.tok_emb.weight: tensor<32x32xf64> {weft.param},  // arg0
    %p.layers.0.norm1.weight: tensor<32xf64> {weft.param},  // arg1
    %p.layers.0.attn.qkv.weight: tensor<64x32xf64> {weft.param},  // arg2
    %p.layers.0.attn.proj.weight: tensor<32x32xf64> {weft.param},  // arg3
    %p.layers.0.norm2.weight: tensor<32xf64> {weft.param},  // arg4
    %p.layers.0.mlp.gate.weight: tensor<48x32xf64> {weft.param},  // arg5
    %p.layers.0.mlp.up.weight: tensor<48x32xf64> {weft.param},  // arg6
    %p.layers.0.mlp.down.weight: tensor<32x48xf64> {weft.param},  // arg7
    %p.layers.1.norm1.weight: tensor<32xf64> {weft.param},  // arg8
    %p.layers.1.attn.qkv.weight: tensor<64x32xf64> {weft.param},  // arg9
    %p.layers.1.attn.proj.weight: tensor<32x32xf64> {weft.param},  // arg10
    %p.layers.1.norm2.weight: tensor<32xf64> {weft.param},  // arg11
    %p.layers.1.mlp.gate.weight: tensor<48x32xf64> {weft.param},  // arg12
    %p.layers.1.mlp.up.weight: tensor<48x32xf64> {weft.param},  // arg13
    %p.layers.1.mlp.down.weight: tensor<32x48xf64> {weft.param},  // arg14
    %p.norm_f.weight: tensor<32xf64> {weft.param},  // arg15
    %p.lm_head.weight: tensor<32x32xf64> {weft.param},  // arg16
    %ids: tensor<2x8xi64> {weft.range = array<i64: 0, 32>},  // arg17
    %labels: tensor<2x8xi64> {weft.range = array<i64: 0, 32>},  // arg18
    %rope_cos: tensor<8x8xf64>,  // arg19
    %rope_sin: tensor<8x8xf64>,  // arg20
    %seed: tensor<i64>  // arg21
  ) -> tensor<f64> {
  // embeddings
  %tok_emb = weft.embedding %ids, %p.tok_emb.weight : (tensor<2x8xi64>, tensor<32x32xf64>) -> tensor<2x8x32xf64>
  %emb.drop = weft.dropout %tok_emb, %seed {p = 0.1 : f64, weft.rng_id = 0 : i64} : (tensor<2x8x32xf64>, tensor<i64>) -> tensor<2x8x32xf64>
  // layer 0: attention
  %l0.norm1 = weft.rms_norm %emb.drop, %p.layers.0.norm1.weight {eps = 1.0e-06 : f64, weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<32xf64>) -> tensor<2x8x32xf64>
  // fused QKV projection, rows per head [kv_heads, 2 q + k + v, head_dim] (Megatron-LM)
  %l0.qkv = weft.linear %l0.norm1, %p.layers.0.attn.qkv.weight {weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<64x32xf64>) -> tensor<2x8x64xf64>
  %l0.qkv.heads = weft.reshape %l0.qkv {weft.layer = 0 : i64} : (tensor<2x8x64xf64>) -> tensor<2x8x2x4x8xf64>
  %l0.qkv.split.0, %l0.qkv.split.1, %l0.qkv.split.2 = weft.split %l0.qkv.heads {dim = 3 : i64, sizes = array<i64: 2, 1, 1>, weft.layer = 0 : i64} : (tensor<2x8x2x4x8xf64>) -> (tensor<2x8x2x2x8xf64>, tensor<2x8x2x1x8xf64>, tensor<2x8x2x1x8xf64>)
  %l0.q.bshd = weft.reshape %l0.qkv.split.0 {weft.layer = 0 : i64} : (tensor<2x8x2x2x8xf64>) -> tensor<2x8x4x8xf64>
  %l0.k.bshd = weft.reshape %l0.qkv.split.1 {weft.layer = 0 : i64} : (tensor<2x8x2x1x8xf64>) -> tensor<2x8x2x8xf64>
  %l0.v.bshd = weft.reshape %l0.qkv.split.2 {weft.layer = 0 : i64} : (tensor<2x8x2x1x8xf64>) -> tensor<2x8x2x8xf64>
  // q, k, v as [batch, heads, seq, head_dim]
  %l0.q = weft.transpose %l0.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<2x8x4x8xf64>) -> tensor<2x4x8x8xf64>
  %l0.k = weft.transpose %l0.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<2x8x2x8xf64>) -> tensor<2x2x8x8xf64>
  %l0.v = weft.transpose %l0.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<2x8x2x8xf64>) -> tensor<2x2x8x8xf64>
  %l0.q.rope = weft.rope %l0.q, %rope_cos, %rope_sin {weft.layer = 0 : i64} : (tensor<2x4x8x8xf64>, tensor<8x8xf64>, tensor<8x8xf64>) -> tensor<2x4x8x8xf64>
  %l0.k.rope = weft.rope %l0.k, %rope_cos, %rope_sin {weft.layer = 0 : i64} : (tensor<2x2x8x8xf64>, tensor<8x8xf64>, tensor<8x8xf64>) -> tensor<2x2x8x8xf64>
  // causal attention, GQA 4 q / 2 kv heads
  %l0.attn = weft.attention %l0.q.rope, %l0.k.rope, %l0.v, %seed {causal, dropout_p = 0.1 : f64, weft.rng_id = 1 : i64, weft.layer = 0 : i64} : (tensor<2x4x8x8xf64>, tensor<2x2x8x8xf64>, tensor<2x2x8x8xf64>, tensor<i64>) -> tensor<2x4x8x8xf64>
  // merge heads, output projection
  %l0.o.bshd = weft.transpose %l0.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<2x4x8x8xf64>) -> tensor<2x8x4x8xf64>
  %l0.o = weft.reshape %l0.o.bshd {weft.layer = 0 : i64} : (tensor<2x8x4x8xf64>) -> tensor<2x8x32xf64>
  %l0.proj = weft.linear %l0.o, %p.layers.0.attn.proj.weight {weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<32x32xf64>) -> tensor<2x8x32xf64>
  %l0.proj.drop = weft.dropout %l0.proj, %seed {p = 0.1 : f64, weft.rng_id = 2 : i64, weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<i64>) -> tensor<2x8x32xf64>
  %l0.resid1 = weft.add %emb.drop, %l0.proj.drop {weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<2x8x32xf64>) -> tensor<2x8x32xf64>
  // layer 0: mlp
  %l0.norm2 = weft.rms_norm %l0.resid1, %p.layers.0.norm2.weight {eps = 1.0e-06 : f64, weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<32xf64>) -> tensor<2x8x32xf64>
  %l0.gate = weft.linear %l0.norm2, %p.layers.0.mlp.gate.weight {weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<48x32xf64>) -> tensor<2x8x48xf64>
  %l0.up = weft.linear %l0.norm2, %p.layers.0.mlp.up.weight {weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<48x32xf64>) -> tensor<2x8x48xf64>
  %l0.gate.silu = weft.silu %l0.gate {weft.layer = 0 : i64} : (tensor<2x8x48xf64>) -> tensor<2x8x48xf64>
  %l0.swiglu = weft.mul %l0.gate.silu, %l0.up {weft.layer = 0 : i64} : (tensor<2x8x48xf64>, tensor<2x8x48xf64>) -> tensor<2x8x48xf64>
  %l0.down = weft.linear %l0.swiglu, %p.layers.0.mlp.down.weight {weft.layer = 0 : i64} : (tensor<2x8x48xf64>, tensor<32x48xf64>) -> tensor<2x8x32xf64>
  %l0.mlp.drop = weft.dropout %l0.down, %seed {p = 0.1 : f64, weft.rng_id = 3 : i64, weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<i64>) -> tensor<2x8x32xf64>
  %l0.resid2 = weft.add %l0.resid1, %l0.mlp.drop {weft.layer = 0 : i64} : (tensor<2x8x32xf64>, tensor<2x8x32xf64>) -> tensor<2x8x32xf64>
  // layer 1: attention
  %l1.norm1 = weft.rms_norm %l0.resid2, %p.layers.1.norm1.weight {eps = 1.0e-06 : f64, weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<32xf64>) -> tensor<2x8x32xf64>
  // fused QKV projection, rows per head [kv_heads, 2 q + k + v, head_dim] (Megatron-LM)
  %l1.qkv = weft.linear %l1.norm1, %p.layers.1.attn.qkv.weight {weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<64x32xf64>) -> tensor<2x8x64xf64>
  %l1.qkv.heads = weft.reshape %l1.qkv {weft.layer = 1 : i64} : (tensor<2x8x64xf64>) -> tensor<2x8x2x4x8xf64>
  %l1.qkv.split.0, %l1.qkv.split.1, %l1.qkv.split.2 = weft.split %l1.qkv.heads {dim = 3 : i64, sizes = array<i64: 2, 1, 1>, weft.layer = 1 : i64} : (tensor<2x8x2x4x8xf64>) -> (tensor<2x8x2x2x8xf64>, tensor<2x8x2x1x8xf64>, tensor<2x8x2x1x8xf64>)
  %l1.q.bshd = weft.reshape %l1.qkv.split.0 {weft.layer = 1 : i64} : (tensor<2x8x2x2x8xf64>) -> tensor<2x8x4x8xf64>
  %l1.k.bshd = weft.reshape %l1.qkv.split.1 {weft.layer = 1 : i64} : (tensor<2x8x2x1x8xf64>) -> tensor<2x8x2x8xf64>
  %l1.v.bshd = weft.reshape %l1.qkv.split.2 {weft.layer = 1 : i64} : (tensor<2x8x2x1x8xf64>) -> tensor<2x8x2x8xf64>
  // q, k, v as [batch, heads, seq, head_dim]
  %l1.q = weft.transpose %l1.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<2x8x4x8xf64>) -> tensor<2x4x8x8xf64>
  %l1.k = weft.transpose %l1.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<2x8x2x8xf64>) -> tensor<2x2x8x8xf64>
  %l1.v = weft.transpose %l1.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<2x8x2x8xf64>) -> tensor<2x2x8x8xf64>
  %l1.q.rope = weft.rope %l1.q, %rope_cos, %rope_sin {weft.layer = 1 : i64} : (tensor<2x4x8x8xf64>, tensor<8x8xf64>, tensor<8x8xf64>) -> tensor<2x4x8x8xf64>
  %l1.k.rope = weft.rope %l1.k, %rope_cos, %rope_sin {weft.layer = 1 : i64} : (tensor<2x2x8x8xf64>, tensor<8x8xf64>, tensor<8x8xf64>) -> tensor<2x2x8x8xf64>
  // causal attention, GQA 4 q / 2 kv heads
  %l1.attn = weft.attention %l1.q.rope, %l1.k.rope, %l1.v, %seed {causal, dropout_p = 0.1 : f64, weft.rng_id = 4 : i64, weft.layer = 1 : i64} : (tensor<2x4x8x8xf64>, tensor<2x2x8x8xf64>, tensor<2x2x8x8xf64>, tensor<i64>) -> tensor<2x4x8x8xf64>
  // merge heads, output projection
  %l1.o.bshd = weft.transpose %l1.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<2x4x8x8xf64>) -> tensor<2x8x4x8xf64>
  %l1.o = weft.reshape %l1.o.bshd {weft.layer = 1 : i64} : (tensor<2x8x4x8xf64>) -> tensor<2x8x32xf64>
  %l1.proj = weft.linear %l1.o, %p.layers.1.attn.proj.weight {weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<32x32xf64>) -> tensor<2x8x32xf64>
  %l1.proj.drop = weft.dropout %l1.proj, %seed {p = 0.1 : f64, weft.rng_id = 5 : i64, weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<i64>) -> tensor<2x8x32xf64>
  %l1.resid1 = weft.add %l0.resid2, %l1.proj.drop {weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<2x8x32xf64>) -> tensor<2x8x32xf64>
  // layer 1: mlp
  %l1.norm2 = weft.rms_norm %l1.resid1, %p.layers.1.norm2.weight {eps = 1.0e-06 : f64, weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<32xf64>) -> tensor<2x8x32xf64>
  %l1.gate = weft.linear %l1.norm2, %p.layers.1.mlp.gate.weight {weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<48x32xf64>) -> tensor<2x8x48xf64>
  %l1.up = weft.linear %l1.norm2, %p.layers.1.mlp.up.weight {weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<48x32xf64>) -> tensor<2x8x48xf64>
  %l1.gate.silu = weft.silu %l1.gate {weft.layer = 1 : i64} : (tensor<2x8x48xf64>) -> tensor<2x8x48xf64>
  %l1.swiglu = weft.mul %l1.gate.silu, %l1.up {weft.layer = 1 : i64} : (tensor<2x8x48xf64>, tensor<2x8x48xf64>) -> tensor<2x8x48xf64>
  %l1.down = weft.linear %l1.swiglu, %p.layers.1.mlp.down.weight {weft.layer = 1 : i64} : (tensor<2x8x48xf64>, tensor<32x48xf64>) -> tensor<2x8x32xf64>
  %l1.mlp.drop = weft.dropout %l1.down, %seed {p = 0.1 : f64, weft.rng_id = 6 : i64, weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<i64>) -> tensor<2x8x32xf64>
  %l1.resid2 = weft.add %l1.resid1, %l1.mlp.drop {weft.layer = 1 : i64} : (tensor<2x8x32xf64>, tensor<2x8x32xf64>) -> tensor<2x8x32xf64>
  // head: final norm, output projection, mean cross-entropy
  %norm_f = weft.rms_norm %l1.resid2, %p.norm_f.weight {eps = 1.0e-06 : f64} : (tensor<2x8x32xf64>, tensor<32xf64>) -> tensor<2x8x32xf64>
  %logits = weft.linear %norm_f, %p.lm_head.weight : (tensor<2x8x32xf64>, tensor<32x32xf64>) -> tensor<2x8x32xf64>
  %loss = weft.cross_entropy %logits, %labels : (tensor<2x8x32xf64>, tensor<2x8xi64>) -> tensor<f64>
  return %loss : tensor<f64>
}
