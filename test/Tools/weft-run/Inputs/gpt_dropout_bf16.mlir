// GPT-2-style block written by `python -m weft.models --preset gpt_block --dtype bf16 --dropout 0.1 --hidden 128 --heads 2 --kv-heads 2 --vocab 64 --ffn-hidden 256 --batch 1 --seq 32 --emit-only`.
// layers 1, batch 1, seq 32, hidden 128, heads 2 (kv 2), ffn 256, vocab 64, bf16;
// norm layernorm, mlp gelu, rope off, attention fused, dropout 0.1.
// Arguments: parameters {weft.param} named as in the PyTorch module, then ids,
// labels, the dropout seed; the comment names each one's .npz key.

func.func @forward(
    %p.tok_emb.weight: tensor<64x128xbf16> {weft.param},  // arg0
    %p.pos_emb.weight: tensor<32x128xbf16> {weft.param},  // arg1
    %p.layers.0.norm1.weight: tensor<128xbf16> {weft.param},  // arg2
    %p.layers.0.norm1.bias: tensor<128xbf16> {weft.param},  // arg3
    %p.layers.0.attn.qkv.weight: tensor<384x128xbf16> {weft.param},  // arg4
    %p.layers.0.attn.qkv.bias: tensor<384xbf16> {weft.param},  // arg5
    %p.layers.0.attn.proj.weight: tensor<128x128xbf16> {weft.param},  // arg6
    %p.layers.0.attn.proj.bias: tensor<128xbf16> {weft.param},  // arg7
    %p.layers.0.norm2.weight: tensor<128xbf16> {weft.param},  // arg8
    %p.layers.0.norm2.bias: tensor<128xbf16> {weft.param},  // arg9
    %p.layers.0.mlp.fc1.weight: tensor<256x128xbf16> {weft.param},  // arg10
    %p.layers.0.mlp.fc1.bias: tensor<256xbf16> {weft.param},  // arg11
    %p.layers.0.mlp.fc2.weight: tensor<128x256xbf16> {weft.param},  // arg12
    %p.layers.0.mlp.fc2.bias: tensor<128xbf16> {weft.param},  // arg13
    %p.norm_f.weight: tensor<128xbf16> {weft.param},  // arg14
    %p.norm_f.bias: tensor<128xbf16> {weft.param},  // arg15
    %p.lm_head.weight: tensor<64x128xbf16> {weft.param},  // arg16
    %ids: tensor<1x32xi64> {weft.range = array<i64: 0, 64>},  // arg17
    %labels: tensor<1x32xi64> {weft.range = array<i64: 0, 64>},  // arg18
    %seed: tensor<i64>  // arg19
  ) -> tensor<bf16> {
  // embeddings
  %tok_emb = weft.embedding %ids, %p.tok_emb.weight : (tensor<1x32xi64>, tensor<64x128xbf16>) -> tensor<1x32x128xbf16>
  %emb = weft.add %tok_emb, %p.pos_emb.weight : (tensor<1x32x128xbf16>, tensor<32x128xbf16>) -> tensor<1x32x128xbf16>
  %emb.drop = weft.dropout %emb, %seed {p = 0.1 : f64, weft.rng_id = 0 : i64} : (tensor<1x32x128xbf16>, tensor<i64>) -> tensor<1x32x128xbf16>
  // layer 0: attention
  %l0.norm1 = weft.layer_norm %emb.drop, %p.layers.0.norm1.weight, %p.layers.0.norm1.bias {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<1x32x128xbf16>
  // fused QKV projection, rows per head [heads, 3, head_dim] (Megatron-LM)
  %l0.qkv = weft.linear %l0.norm1, %p.layers.0.attn.qkv.weight, %p.layers.0.attn.qkv.bias {weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<384x128xbf16>, tensor<384xbf16>) -> tensor<1x32x384xbf16>
  %l0.qkv.heads = weft.reshape %l0.qkv {weft.layer = 0 : i64} : (tensor<1x32x384xbf16>) -> tensor<1x32x2x3x64xbf16>
  %l0.qkv.split.0, %l0.qkv.split.1, %l0.qkv.split.2 = weft.split %l0.qkv.heads {dim = 3 : i64, sizes = array<i64: 1, 1, 1>, weft.layer = 0 : i64} : (tensor<1x32x2x3x64xbf16>) -> (tensor<1x32x2x1x64xbf16>, tensor<1x32x2x1x64xbf16>, tensor<1x32x2x1x64xbf16>)
  %l0.q.bshd = weft.reshape %l0.qkv.split.0 {weft.layer = 0 : i64} : (tensor<1x32x2x1x64xbf16>) -> tensor<1x32x2x64xbf16>
  %l0.k.bshd = weft.reshape %l0.qkv.split.1 {weft.layer = 0 : i64} : (tensor<1x32x2x1x64xbf16>) -> tensor<1x32x2x64xbf16>
  %l0.v.bshd = weft.reshape %l0.qkv.split.2 {weft.layer = 0 : i64} : (tensor<1x32x2x1x64xbf16>) -> tensor<1x32x2x64xbf16>
  // q, k, v as [batch, heads, seq, head_dim]
  %l0.q = weft.transpose %l0.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x32x2x64xbf16>) -> tensor<1x2x32x64xbf16>
  %l0.k = weft.transpose %l0.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x32x2x64xbf16>) -> tensor<1x2x32x64xbf16>
  %l0.v = weft.transpose %l0.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x32x2x64xbf16>) -> tensor<1x2x32x64xbf16>
  // causal attention
  %l0.attn = weft.attention %l0.q, %l0.k, %l0.v, %seed {causal, dropout_p = 0.1 : f64, weft.rng_id = 1 : i64, weft.layer = 0 : i64} : (tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<i64>) -> tensor<1x2x32x64xbf16>
  // merge heads, output projection
  %l0.o.bshd = weft.transpose %l0.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x2x32x64xbf16>) -> tensor<1x32x2x64xbf16>
  %l0.o = weft.reshape %l0.o.bshd {weft.layer = 0 : i64} : (tensor<1x32x2x64xbf16>) -> tensor<1x32x128xbf16>
  %l0.proj = weft.linear %l0.o, %p.layers.0.attn.proj.weight, %p.layers.0.attn.proj.bias {weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<128x128xbf16>, tensor<128xbf16>) -> tensor<1x32x128xbf16>
  %l0.proj.drop = weft.dropout %l0.proj, %seed {p = 0.1 : f64, weft.rng_id = 2 : i64, weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<i64>) -> tensor<1x32x128xbf16>
  %l0.resid1 = weft.add %emb.drop, %l0.proj.drop {weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<1x32x128xbf16>) -> tensor<1x32x128xbf16>
  // layer 0: mlp
  %l0.norm2 = weft.layer_norm %l0.resid1, %p.layers.0.norm2.weight, %p.layers.0.norm2.bias {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<1x32x128xbf16>
  %l0.fc1 = weft.linear %l0.norm2, %p.layers.0.mlp.fc1.weight, %p.layers.0.mlp.fc1.bias {weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>) -> tensor<1x32x256xbf16>
  %l0.gelu = weft.gelu %l0.fc1 {approximate = "tanh", weft.layer = 0 : i64} : (tensor<1x32x256xbf16>) -> tensor<1x32x256xbf16>
  %l0.fc2 = weft.linear %l0.gelu, %p.layers.0.mlp.fc2.weight, %p.layers.0.mlp.fc2.bias {weft.layer = 0 : i64} : (tensor<1x32x256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<1x32x128xbf16>
  %l0.mlp.drop = weft.dropout %l0.fc2, %seed {p = 0.1 : f64, weft.rng_id = 3 : i64, weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<i64>) -> tensor<1x32x128xbf16>
  %l0.resid2 = weft.add %l0.resid1, %l0.mlp.drop {weft.layer = 0 : i64} : (tensor<1x32x128xbf16>, tensor<1x32x128xbf16>) -> tensor<1x32x128xbf16>
  // head: final norm, output projection, mean cross-entropy
  %norm_f = weft.layer_norm %l0.resid2, %p.norm_f.weight, %p.norm_f.bias {eps = 1.0e-05 : f64} : (tensor<1x32x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<1x32x128xbf16>
  %logits = weft.linear %norm_f, %p.lm_head.weight : (tensor<1x32x128xbf16>, tensor<64x128xbf16>) -> tensor<1x32x64xbf16>
  %loss = weft.cross_entropy %logits, %labels : (tensor<1x32x64xbf16>, tensor<1x32xi64>) -> tensor<bf16>
  return %loss : tensor<bf16>
}
