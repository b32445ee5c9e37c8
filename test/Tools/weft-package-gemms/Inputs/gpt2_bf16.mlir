// GPT-2-style transformer written by `python -m weft.models --preset tiny_gpt --dtype bf16 --layers 2 --dropout 0 --heads 1 --kv-heads 1 --emit-only` (PYTHONPATH=python; head_dim 64, which the GPU attention kernels take).
// layers 2, batch 4, seq 32, hidden 64, heads 1 (kv 1), ffn 256, vocab 256, bf16;
// norm layernorm, mlp gelu, rope off, attention fused, dropout 0.0.
// Arguments: parameters {weft.param} named as in the PyTorch module, then ids,
// labels, the dropout seed; the comment names each one's .npz key.

func.func @forward(
    %p.tok_emb.weight: tensor<256x64xbf16> {weft.param},  // arg0
    %p.pos_emb.weight: tensor<32x64xbf16> {weft.param},  // arg1
    %p.layers.0.norm1.weight: tensor<64xbf16> {weft.param},  // arg2
    %p.layers.0.norm1.bias: tensor<64xbf16> {weft.param},  // arg3
    %p.layers.0.attn.qkv.weight: tensor<192x64xbf16> {weft.param},  // arg4
    %p.layers.0.attn.qkv.bias: tensor<192xbf16> {weft.param},  // arg5
    %p.layers.0.attn.proj.weight: tensor<64x64xbf16> {weft.param},  // arg6
    %p.layers.0.attn.proj.bias: tensor<64xbf16> {weft.param},  // arg7
    %p.layers.0.norm2.weight: tensor<64xbf16> {weft.param},  // arg8
    %p.layers.0.norm2.bias: tensor<64xbf16> {weft.param},  // arg9
    %p.layers.0.mlp.fc1.weight: tensor<256x64xbf16> {weft.param},  // arg10
    %p.layers.0.mlp.fc1.bias: tensor<256xbf16> {weft.param},  // arg11
    %p.layers.0.mlp.fc2.weight: tensor<64x256xbf16> {weft.param},  // arg12
    %p.layers.0.mlp.fc2.bias: tensor<64xbf16> {weft.param},  // arg13
    %p.layers.1.norm1.weight: tensor<64xbf16> {weft.param},  // arg14
    %p.layers.1.norm1.bias: tensor<64xbf16> {weft.param},  // arg15
    %p.layers.1.attn.qkv.weight: tensor<192x64xbf16> {weft.param},  // arg16
    %p.layers.1.attn.qkv.bias: tensor<192xbf16> {weft.param},  // arg17
    %p.layers.1.attn.proj.weight: tensor<64x64xbf16> {weft.param},  // arg18
    %p.layers.1.attn.proj.bias: tensor<64xbf16> {weft.param},  // arg19
    %p.layers.1.norm2.weight: tensor<64xbf16> {weft.param},  // arg20
    %p.layers.1.norm2.bias: tensor<64xbf16> {weft.param},  // arg21
    %p.layers.1.mlp.fc1.weight: tensor<256x64xbf16> {weft.param},  // arg22
    %p.layers.1.mlp.fc1.bias: tensor<256xbf16> {weft.param},  // arg23
    %p.layers.1.mlp.fc2.weight: tensor<64x256xbf16> {weft.param},  // arg24
    %p.layers.1.mlp.fc2.bias: tensor<64xbf16> {weft.param},  // arg25
    %p.norm_f.weight: tensor<64xbf16> {weft.param},  // arg26
    %p.norm_f.bias: tensor<64xbf16> {weft.param},  // arg27
    %p.lm_head.weight: tensor<256x64xbf16> {weft.param},  // arg28
    %ids: tensor<4x32xi64> {weft.range = array<i64: 0, 256>},  // arg29
    %labels: tensor<4x32xi64> {weft.range = array<i64: 0, 256>},  // arg30
    %seed: tensor<i64>  // arg31
  ) -> tensor<bf16> {
  // embeddings
  %tok_emb = weft.embedding %ids, %p.tok_emb.weight : (tensor<4x32xi64>, tensor<256x64xbf16>) -> tensor<4x32x64xbf16>
  %emb = weft.add %tok_emb, %p.pos_emb.weight : (tensor<4x32x64xbf16>, tensor<32x64xbf16>) -> tensor<4x32x64xbf16>
  // layer 0: attention
  %l0.norm1 = weft.layer_norm %emb, %p.layers.0.norm1.weight, %p.layers.0.norm1.bias {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<4x32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  // fused QKV projection, rows per head [heads, 3, head_dim] (Megatron-LM)
  %l0.qkv = weft.linear %l0.norm1, %p.layers.0.attn.qkv.weight, %p.layers.0.attn.qkv.bias {weft.layer = 0 : i64} : (tensor<4x32x64xbf16>, tensor<192x64xbf16>, tensor<192xbf16>) -> tensor<4x32x192xbf16>
  %l0.qkv.heads = weft.reshape %l0.qkv {weft.layer = 0 : i64} : (tensor<4x32x192xbf16>) -> tensor<4x32x1x3x64xbf16>
  %l0.qkv.split.0, %l0.qkv.split.1, %l0.qkv.split.2 = weft.split %l0.qkv.heads {dim = 3 : i64, sizes = array<i64: 1, 1, 1>, weft.layer = 0 : i64} : (tensor<4x32x1x3x64xbf16>) -> (tensor<4x32x1x1x64xbf16>, tensor<4x32x1x1x64xbf16>, tensor<4x32x1x1x64xbf16>)
  %l0.q.bshd = weft.reshape %l0.qkv.split.0 {weft.layer = 0 : i64} : (tensor<4x32x1x1x64xbf16>) -> tensor<4x32x1x64xbf16>
  %l0.k.bshd = weft.reshape %l0.qkv.split.1 {weft.layer = 0 : i64} : (tensor<4x32x1x1x64xbf16>) -> tensor<4x32x1x64xbf16>
  %l0.v.bshd = weft.reshape %l0.qkv.split.2 {weft.layer = 0 : i64} : (tensor<4x32x1x1x64xbf16>) -> tensor<4x32x1x64xbf16>
  // q, k, v as [batch, heads, seq, head_dim]
  %l0.q = weft.transpose %l0.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<4x32x1x64xbf16>) -> tensor<4x1x32x64xbf16>
  %l0.k = weft.transpose %l0.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<4x32x1x64xbf16>) -> tensor<4x1x32x64xbf16>
  %l0.v = weft.transpose %l0.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<4x32x1x64xbf16>) -> tensor<4x1x32x64xbf16>
  // causal attention
  %l0.attn = weft.attention %l0.q, %l0.k, %l0.v {causal, weft.layer = 0 : i64} : (tensor<4x1x32x64xbf16>, tensor<4x1x32x64xbf16>, tensor<4x1x32x64xbf16>) -> tensor<4x1x32x64xbf16>
  // merge heads, output projection
  %l0.o.bshd = weft.transpose %l0.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<4x1x32x64xbf16>) -> tensor<4x32x1x64xbf16>
  %l0.o = weft.reshape %l0.o.bshd {weft.layer = 0 : i64} : (tensor<4x32x1x64xbf16>) -> tensor<4x32x64xbf16>
  %l0.proj = weft.linear %l0.o, %p.layers.0.attn.proj.weight, %p.layers.0.attn.proj.bias {weft.layer = 0 : i64} : (tensor<4x32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  %l0.resid1 = weft.add %emb, %l0.proj {weft.layer = 0 : i64} : (tensor<4x32x64xbf16>, tensor<4x32x64xbf16>) -> tensor<4x32x64xbf16>
  // layer 0: mlp
  %l0.norm2 = weft.layer_norm %l0.resid1, %p.layers.0.norm2.weight, %p.layers.0.norm2.bias {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<4x32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  %l0.fc1 = weft.linear %l0.norm2, %p.layers.0.mlp.fc1.weight, %p.layers.0.mlp.fc1.bias {weft.layer = 0 : i64} : (tensor<4x32x64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>) -> tensor<4x32x256xbf16>
  %l0.gelu = weft.gelu %l0.fc1 {approximate = "tanh", weft.layer = 0 : i64} : (tensor<4x32x256xbf16>) -> tensor<4x32x256xbf16>
  %l0.fc2 = weft.linear %l0.gelu, %p.layers.0.mlp.fc2.weight, %p.layers.0.mlp.fc2.bias {weft.layer = 0 : i64} : (tensor<4x32x256xbf16>, tensor<64x256xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  %l0.resid2 = weft.add %l0.resid1, %l0.fc2 {weft.layer = 0 : i64} : (tensor<4x32x64xbf16>, tensor<4x32x64xbf16>) -> tensor<4x32x64xbf16>
  // layer 1: attention
  %l1.norm1 = weft.layer_norm %l0.resid2, %p.layers.1.norm1.weight, %p.layers.1.norm1.bias {eps = 1.0e-05 : f64, weft.layer = 1 : i64} : (tensor<4x32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  // fused QKV projection, rows per head [heads, 3, head_dim] (Megatron-LM)
  %l1.qkv = weft.linear %l1.norm1, %p.layers.1.attn.qkv.weight, %p.layers.1.attn.qkv.bias {weft.layer = 1 : i64} : (tensor<4x32x64xbf16>, tensor<192x64xbf16>, tensor<192xbf16>) -> tensor<4x32x192xbf16>
  %l1.qkv.heads = weft.reshape %l1.qkv {weft.layer = 1 : i64} : (tensor<4x32x192xbf16>) -> tensor<4x32x1x3x64xbf16>
  %l1.qkv.split.0, %l1.qkv.split.1, %l1.qkv.split.2 = weft.split %l1.qkv.heads {dim = 3 : i64, sizes = array<i64: 1, 1, 1>, weft.layer = 1 : i64} : (tensor<4x32x1x3x64xbf16>) -> (tensor<4x32x1x1x64xbf16>, tensor<4x32x1x1x64xbf16>, tensor<4x32x1x1x64xbf16>)
  %l1.q.bshd = weft.reshape %l1.qkv.split.0 {weft.layer = 1 : i64} : (tensor<4x32x1x1x64xbf16>) -> tensor<4x32x1x64xbf16>
  %l1.k.bshd = weft.reshape %l1.qkv.split.1 {weft.layer = 1 : i64} : (tensor<4x32x1x1x64xbf16>) -> tensor<4x32x1x64xbf16>
  %l1.v.bshd = weft.reshape %l1.qkv.split.2 {weft.layer = 1 : i64} : (tensor<4x32x1x1x64xbf16>) -> tensor<4x32x1x64xbf16>
  // q, k, v as [batch, heads, seq, head_dim]
  %l1.q = weft.transpose %l1.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<4x32x1x64xbf16>) -> tensor<4x1x32x64xbf16>
  %l1.k = weft.transpose %l1.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<4x32x1x64xbf16>) -> tensor<4x1x32x64xbf16>
  %l1.v = weft.transpose %l1.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<4x32x1x64xbf16>) -> tensor<4x1x32x64xbf16>
  // causal attention
  %l1.attn = weft.attention %l1.q, %l1.k, %l1.v {causal, weft.layer = 1 : i64} : (tensor<4x1x32x64xbf16>, tensor<4x1x32x64xbf16>, tensor<4x1x32x64xbf16>) -> tensor<4x1x32x64xbf16>
  // merge heads, output projection
  %l1.o.bshd = weft.transpose %l1.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<4x1x32x64xbf16>) -> tensor<4x32x1x64xbf16>
  %l1.o = weft.reshape %l1.o.bshd {weft.layer = 1 : i64} : (tensor<4x32x1x64xbf16>) -> tensor<4x32x64xbf16>
  %l1.proj = weft.linear %l1.o, %p.layers.1.attn.proj.weight, %p.layers.1.attn.proj.bias {weft.layer = 1 : i64} : (tensor<4x32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  %l1.resid1 = weft.add %l0.resid2, %l1.proj {weft.layer = 1 : i64} : (tensor<4x32x64xbf16>, tensor<4x32x64xbf16>) -> tensor<4x32x64xbf16>
  // layer 1: mlp
  %l1.norm2 = weft.layer_norm %l1.resid1, %p.layers.1.norm2.weight, %p.layers.1.norm2.bias {eps = 1.0e-05 : f64, weft.layer = 1 : i64} : (tensor<4x32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  %l1.fc1 = weft.linear %l1.norm2, %p.layers.1.mlp.fc1.weight, %p.layers.1.mlp.fc1.bias {weft.layer = 1 : i64} : (tensor<4x32x64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>) -> tensor<4x32x256xbf16>
  %l1.gelu = weft.gelu %l1.fc1 {approximate = "tanh", weft.layer = 1 : i64} : (tensor<4x32x256xbf16>) -> tensor<4x32x256xbf16>
  %l1.fc2 = weft.linear %l1.gelu, %p.layers.1.mlp.fc2.weight, %p.layers.1.mlp.fc2.bias {weft.layer = 1 : i64} : (tensor<4x32x256xbf16>, tensor<64x256xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  %l1.resid2 = weft.add %l1.resid1, %l1.fc2 {weft.layer = 1 : i64} : (tensor<4x32x64xbf16>, tensor<4x32x64xbf16>) -> tensor<4x32x64xbf16>
  // head: final norm, output projection, mean cross-entropy
  %norm_f = weft.layer_norm %l1.resid2, %p.norm_f.weight, %p.norm_f.bias {eps = 1.0e-05 : f64} : (tensor<4x32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<4x32x64xbf16>
  %logits = weft.linear %norm_f, %p.lm_head.weight : (tensor<4x32x64xbf16>, tensor<256x64xbf16>) -> tensor<4x32x256xbf16>
  %loss = weft.cross_entropy %logits, %labels : (tensor<4x32x256xbf16>, tensor<4x32xi64>) -> tensor<bf16>
  return %loss : tensor<bf16>
}
