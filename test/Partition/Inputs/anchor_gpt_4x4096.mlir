// GPT-2-style transformer written by `python -m weft.models` (PYTHONPATH=python).
// layers 4, batch 1, seq 8192, hidden 4096, heads 32 (kv 32), ffn 16384, vocab 128, bf16;
// norm layernorm, mlp gelu, rope off, attention fused, dropout 0.0.
// Arguments: parameters {weft.param} named as in the PyTorch module, then x (hidden states; loss mean(x_out^2)),
// the dropout seed; the comment names each one's .npz key.

func.func @forward(
    %p.layers.0.norm1.weight: tensor<4096xbf16> {weft.param},  // arg0
    %p.layers.0.norm1.bias: tensor<4096xbf16> {weft.param},  // arg1
    %p.layers.0.attn.qkv.weight: tensor<12288x4096xbf16> {weft.param},  // arg2
    %p.layers.0.attn.qkv.bias: tensor<12288xbf16> {weft.param},  // arg3
    %p.layers.0.attn.proj.weight: tensor<4096x4096xbf16> {weft.param},  // arg4
    %p.layers.0.attn.proj.bias: tensor<4096xbf16> {weft.param},  // arg5
    %p.layers.0.norm2.weight: tensor<4096xbf16> {weft.param},  // arg6
    %p.layers.0.norm2.bias: tensor<4096xbf16> {weft.param},  // arg7
    %p.layers.0.mlp.fc1.weight: tensor<16384x4096xbf16> {weft.param},  // arg8
    %p.layers.0.mlp.fc1.bias: tensor<16384xbf16> {weft.param},  // arg9
    %p.layers.0.mlp.fc2.weight: tensor<4096x16384xbf16> {weft.param},  // arg10
    %p.layers.0.mlp.fc2.bias: tensor<4096xbf16> {weft.param},  // arg11
    %p.layers.1.norm1.weight: tensor<4096xbf16> {weft.param},  // arg12
    %p.layers.1.norm1.bias: tensor<4096xbf16> {weft.param},  // arg13
    %p.layers.1.attn.qkv.weight: tensor<12288x4096xbf16> {weft.param},  // arg14
    %p.layers.1.attn.qkv.bias: tensor<12288xbf16> {weft.param},  // arg15
    %p.layers.1.attn.proj.weight: tensor<4096x4096xbf16> {weft.param},  // arg16
    %p.layers.1.attn.proj.bias: tensor<4096xbf16> {weft.param},  // arg17
    %p.layers.1.norm2.weight: tensor<4096xbf16> {weft.param},  // arg18
    %p.layers.1.norm2.bias: tensor<4096xbf16> {weft.param},  // arg19
    %p.layers.1.mlp.fc1.weight: tensor<16384x4096xbf16> {weft.param},  // arg20
    %p.layers.1.mlp.fc1.bias: tensor<16384xbf16> {weft.param},  // arg21
    %p.layers.1.mlp.fc2.weight: tensor<4096x16384xbf16> {weft.param},  // arg22
    %p.layers.1.mlp.fc2.bias: tensor<4096xbf16> {weft.param},  // arg23
    %p.layers.2.norm1.weight: tensor<4096xbf16> {weft.param},  // arg24
    %p.layers.2.norm1.bias: tensor<4096xbf16> {weft.param},  // arg25
    %p.layers.2.attn.qkv.weight: tensor<12288x4096xbf16> {weft.param},  // arg26
    %p.layers.2.attn.qkv.bias: tensor<12288xbf16> {weft.param},  // arg27
    %p.layers.2.attn.proj.weight: tensor<4096x4096xbf16> {weft.param},  // arg28
    %p.layers.2.attn.proj.bias: tensor<4096xbf16> {weft.param},  // arg29
    %p.layers.2.norm2.weight: tensor<4096xbf16> {weft.param},  // arg30
    %p.layers.2.norm2.bias: tensor<4096xbf16> {weft.param},  // arg31
    %p.layers.2.mlp.fc1.weight: tensor<16384x4096xbf16> {weft.param},  // arg32
    %p.layers.2.mlp.fc1.bias: tensor<16384xbf16> {weft.param},  // arg33
    %p.layers.2.mlp.fc2.weight: tensor<4096x16384xbf16> {weft.param},  // arg34
    %p.layers.2.mlp.fc2.bias: tensor<4096xbf16> {weft.param},  // arg35
    %p.layers.3.norm1.weight: tensor<4096xbf16> {weft.param},  // arg36
    %p.layers.3.norm1.bias: tensor<4096xbf16> {weft.param},  // arg37
    %p.layers.3.attn.qkv.weight: tensor<12288x4096xbf16> {weft.param},  // arg38
    %p.layers.3.attn.qkv.bias: tensor<12288xbf16> {weft.param},  // arg39
    %p.layers.3.attn.proj.weight: tensor<4096x4096xbf16> {weft.param},  // arg40
    %p.layers.3.attn.proj.bias: tensor<4096xbf16> {weft.param},  // arg41
    %p.layers.3.norm2.weight: tensor<4096xbf16> {weft.param},  // arg42
    %p.layers.3.norm2.bias: tensor<4096xbf16> {weft.param},  // arg43
    %p.layers.3.mlp.fc1.weight: tensor<16384x4096xbf16> {weft.param},  // arg44
    %p.layers.3.mlp.fc1.bias: tensor<16384xbf16> {weft.param},  // arg45
    %p.layers.3.mlp.fc2.weight: tensor<4096x16384xbf16> {weft.param},  // arg46
    %p.layers.3.mlp.fc2.bias: tensor<4096xbf16> {weft.param},  // arg47
    %x: tensor<1x8192x4096xbf16>,  // arg48
    %seed: tensor<i64>  // arg49
  ) -> tensor<f32> {
  // layer 0: attention
  %l0.norm1 = weft.layer_norm %x, %p.layers.0.norm1.weight, %p.layers.0.norm1.bias {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  // fused QKV projection, rows per head [heads, 3, head_dim] (Megatron-LM)
  %l0.qkv = weft.linear %l0.norm1, %p.layers.0.attn.qkv.weight, %p.layers.0.attn.qkv.bias {weft.layer = 0 : i64} : (tensor<1x8192x4096xbf16>, tensor<12288x4096xbf16>, tensor<12288xbf16>) -> tensor<1x8192x12288xbf16>
  %l0.qkv.heads = weft.reshape %l0.qkv {weft.layer = 0 : i64} : (tensor<1x8192x12288xbf16>) -> tensor<1x8192x32x3x128xbf16>
  %l0.qkv.split.0, %l0.qkv.split.1, %l0.qkv.split.2 = weft.split %l0.qkv.heads {dim = 3 : i64, sizes = array<i64: 1, 1, 1>, weft.layer = 0 : i64} : (tensor<1x8192x32x3x128xbf16>) -> (tensor<1x8192x32x1x128xbf16>, tensor<1x8192x32x1x128xbf16>, tensor<1x8192x32x1x128xbf16>)
  %l0.q.bshd = weft.reshape %l0.qkv.split.0 {weft.layer = 0 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l0.k.bshd = weft.reshape %l0.qkv.split.1 {weft.layer = 0 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l0.v.bshd = weft.reshape %l0.qkv.split.2 {weft.layer = 0 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  // q, k, v as [batch, heads, seq, head_dim]
  %l0.q = weft.transpose %l0.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  %l0.k = weft.transpose %l0.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  %l0.v = weft.transpose %l0.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  // causal attention
  %l0.attn = weft.attention %l0.q, %l0.k, %l0.v {causal, weft.layer = 0 : i64} : (tensor<1x32x8192x128xbf16>, tensor<1x32x8192x128xbf16>, tensor<1x32x8192x128xbf16>) -> tensor<1x32x8192x128xbf16>
  // merge heads, output projection
  %l0.o.bshd = weft.transpose %l0.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 0 : i64} : (tensor<1x32x8192x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l0.o = weft.reshape %l0.o.bshd {weft.layer = 0 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x8192x4096xbf16>
  %l0.proj = weft.linear %l0.o, %p.layers.0.attn.proj.weight, %p.layers.0.attn.proj.bias {weft.layer = 0 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l0.resid1 = weft.add %x, %l0.proj {weft.layer = 0 : i64} : (tensor<1x8192x4096xbf16>, tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xbf16>
  // layer 0: mlp
  %l0.norm2 = weft.layer_norm %l0.resid1, %p.layers.0.norm2.weight, %p.layers.0.norm2.bias {eps = 1.0e-05 : f64, weft.layer = 0 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l0.fc1 = weft.linear %l0.norm2, %p.layers.0.mlp.fc1.weight, %p.layers.0.mlp.fc1.bias {weft.layer = 0 : i64} : (tensor<1x8192x4096xbf16>, tensor<16384x4096xbf16>, tensor<16384xbf16>) -> tensor<1x8192x16384xbf16>
  %l0.gelu = weft.gelu %l0.fc1 {approximate = "tanh", weft.layer = 0 : i64} : (tensor<1x8192x16384xbf16>) -> tensor<1x8192x16384xbf16>
  %l0.fc2 = weft.linear %l0.gelu, %p.layers.0.mlp.fc2.weight, %p.layers.0.mlp.fc2.bias {weft.layer = 0 : i64} : (tensor<1x8192x16384xbf16>, tensor<4096x16384xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l0.resid2 = weft.add %l0.resid1, %l0.fc2 {weft.layer = 0 : i64} : (tensor<1x8192x4096xbf16>, tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xbf16>
  // layer 1: attention
  %l1.norm1 = weft.layer_norm %l0.resid2, %p.layers.1.norm1.weight, %p.layers.1.norm1.bias {eps = 1.0e-05 : f64, weft.layer = 1 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  // fused QKV projection, rows per head [heads, 3, head_dim] (Megatron-LM)
  %l1.qkv = weft.linear %l1.norm1, %p.layers.1.attn.qkv.weight, %p.layers.1.attn.qkv.bias {weft.layer = 1 : i64} : (tensor<1x8192x4096xbf16>, tensor<12288x4096xbf16>, tensor<12288xbf16>) -> tensor<1x8192x12288xbf16>
  %l1.qkv.heads = weft.reshape %l1.qkv {weft.layer = 1 : i64} : (tensor<1x8192x12288xbf16>) -> tensor<1x8192x32x3x128xbf16>
  %l1.qkv.split.0, %l1.qkv.split.1, %l1.qkv.split.2 = weft.split %l1.qkv.heads {dim = 3 : i64, sizes = array<i64: 1, 1, 1>, weft.layer = 1 : i64} : (tensor<1x8192x32x3x128xbf16>) -> (tensor<1x8192x32x1x128xbf16>, tensor<1x8192x32x1x128xbf16>, tensor<1x8192x32x1x128xbf16>)
  %l1.q.bshd = weft.reshape %l1.qkv.split.0 {weft.layer = 1 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l1.k.bshd = weft.reshape %l1.qkv.split.1 {weft.layer = 1 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l1.v.bshd = weft.reshape %l1.qkv.split.2 {weft.layer = 1 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  // q, k, v as [batch, heads, seq, head_dim]
  %l1.q = weft.transpose %l1.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  %l1.k = weft.transpose %l1.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  %l1.v = weft.transpose %l1.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  // causal attention
  %l1.attn = weft.attention %l1.q, %l1.k, %l1.v {causal, weft.layer = 1 : i64} : (tensor<1x32x8192x128xbf16>, tensor<1x32x8192x128xbf16>, tensor<1x32x8192x128xbf16>) -> tensor<1x32x8192x128xbf16>
  // merge heads, output projection
  %l1.o.bshd = weft.transpose %l1.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 1 : i64} : (tensor<1x32x8192x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l1.o = weft.reshape %l1.o.bshd {weft.layer = 1 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x8192x4096xbf16>
  %l1.proj = weft.linear %l1.o, %p.layers.1.attn.proj.weight, %p.layers.1.attn.proj.bias {weft.layer = 1 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l1.resid1 = weft.add %l0.resid2, %l1.proj {weft.layer = 1 : i64} : (tensor<1x8192x4096xbf16>, tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xbf16>
  // layer 1: mlp
  %l1.norm2 = weft.layer_norm %l1.resid1, %p.layers.1.norm2.weight, %p.layers.1.norm2.bias {eps = 1.0e-05 : f64, weft.layer = 1 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l1.fc1 = weft.linear %l1.norm2, %p.layers.1.mlp.fc1.weight, %p.layers.1.mlp.fc1.bias {weft.layer = 1 : i64} : (tensor<1x8192x4096xbf16>, tensor<16384x4096xbf16>, tensor<16384xbf16>) -> tensor<1x8192x16384xbf16>
  %l1.gelu = weft.gelu %l1.fc1 {approximate = "tanh", weft.layer = 1 : i64} : (tensor<1x8192x16384xbf16>) -> tensor<1x8192x16384xbf16>
  %l1.fc2 = weft.linear %l1.gelu, %p.layers.1.mlp.fc2.weight, %p.layers.1.mlp.fc2.bias {weft.layer = 1 : i64} : (tensor<1x8192x16384xbf16>, tensor<4096x16384xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l1.resid2 = weft.add %l1.resid1, %l1.fc2 {weft.layer = 1 : i64} : (tensor<1x8192x4096xbf16>, tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xbf16>
  // layer 2: attention
  %l2.norm1 = weft.layer_norm %l1.resid2, %p.layers.2.norm1.weight, %p.layers.2.norm1.bias {eps = 1.0e-05 : f64, weft.layer = 2 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  // fused QKV projection, rows per head [heads, 3, head_dim] (Megatron-LM)
  %l2.qkv = weft.linear %l2.norm1, %p.layers.2.attn.qkv.weight, %p.layers.2.attn.qkv.bias {weft.layer = 2 : i64} : (tensor<1x8192x4096xbf16>, tensor<12288x4096xbf16>, tensor<12288xbf16>) -> tensor<1x8192x12288xbf16>
  %l2.qkv.heads = weft.reshape %l2.qkv {weft.layer = 2 : i64} : (tensor<1x8192x12288xbf16>) -> tensor<1x8192x32x3x128xbf16>
  %l2.qkv.split.0, %l2.qkv.split.1, %l2.qkv.split.2 = weft.split %l2.qkv.heads {dim = 3 : i64, sizes = array<i64: 1, 1, 1>, weft.layer = 2 : i64} : (tensor<1x8192x32x3x128xbf16>) -> (tensor<1x8192x32x1x128xbf16>, tensor<1x8192x32x1x128xbf16>, tensor<1x8192x32x1x128xbf16>)
  %l2.q.bshd = weft.reshape %l2.qkv.split.0 {weft.layer = 2 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l2.k.bshd = weft.reshape %l2.qkv.split.1 {weft.layer = 2 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l2.v.bshd = weft.reshape %l2.qkv.split.2 {weft.layer = 2 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  // q, k, v as [batch, heads, seq, head_dim]
  %l2.q = weft.transpose %l2.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 2 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  %l2.k = weft.transpose %l2.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 2 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  %l2.v = weft.transpose %l2.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 2 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  // causal attention
  %l2.attn = weft.attention %l2.q, %l2.k, %l2.v {causal, weft.layer = 2 : i64} : (tensor<1x32x8192x128xbf16>, tensor<1x32x8192x128xbf16>, tensor<1x32x8192x128xbf16>) -> tensor<1x32x8192x128xbf16>
  // merge heads, output projection
  %l2.o.bshd = weft.transpose %l2.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 2 : i64} : (tensor<1x32x8192x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l2.o = weft.reshape %l2.o.bshd {weft.layer = 2 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x8192x4096xbf16>
  %l2.proj = weft.linear %l2.o, %p.layers.2.attn.proj.weight, %p.layers.2.attn.proj.bias {weft.layer = 2 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l2.resid1 = weft.add %l1.resid2, %l2.proj {weft.layer = 2 : i64} : (tensor<1x8192x4096xbf16>, tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xbf16>
  // layer 2: mlp
  %l2.norm2 = weft.layer_norm %l2.resid1, %p.layers.2.norm2.weight, %p.layers.2.norm2.bias {eps = 1.0e-05 : f64, weft.layer = 2 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l2.fc1 = weft.linear %l2.norm2, %p.layers.2.mlp.fc1.weight, %p.layers.2.mlp.fc1.bias {weft.layer = 2 : i64} : (tensor<1x8192x4096xbf16>, tensor<16384x4096xbf16>, tensor<16384xbf16>) -> tensor<1x8192x16384xbf16>
  %l2.gelu = weft.gelu %l2.fc1 {approximate = "tanh", weft.layer = 2 : i64} : (tensor<1x8192x16384xbf16>) -> tensor<1x8192x16384xbf16>
  %l2.fc2 = weft.linear %l2.gelu, %p.layers.2.mlp.fc2.weight, %p.layers.2.mlp.fc2.bias {weft.layer = 2 : i64} : (tensor<1x8192x16384xbf16>, tensor<4096x16384xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l2.resid2 = weft.add %l2.resid1, %l2.fc2 {weft.layer = 2 : i64} : (tensor<1x8192x4096xbf16>, tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xbf16>
  // layer 3: attention
  %l3.norm1 = weft.layer_norm %l2.resid2, %p.layers.3.norm1.weight, %p.layers.3.norm1.bias {eps = 1.0e-05 : f64, weft.layer = 3 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  // fused QKV projection, rows per head [heads, 3, head_dim] (Megatron-LM)
  %l3.qkv = weft.linear %l3.norm1, %p.layers.3.attn.qkv.weight, %p.layers.3.attn.qkv.bias {weft.layer = 3 : i64} : (tensor<1x8192x4096xbf16>, tensor<12288x4096xbf16>, tensor<12288xbf16>) -> tensor<1x8192x12288xbf16>
  %l3.qkv.heads = weft.reshape %l3.qkv {weft.layer = 3 : i64} : (tensor<1x8192x12288xbf16>) -> tensor<1x8192x32x3x128xbf16>
  %l3.qkv.split.0, %l3.qkv.split.1, %l3.qkv.split.2 = weft.split %l3.qkv.heads {dim = 3 : i64, sizes = array<i64: 1, 1, 1>, weft.layer = 3 : i64} : (tensor<1x8192x32x3x128xbf16>) -> (tensor<1x8192x32x1x128xbf16>, tensor<1x8192x32x1x128xbf16>, tensor<1x8192x32x1x128xbf16>)
  %l3.q.bshd = weft.reshape %l3.qkv.split.0 {weft.layer = 3 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l3.k.bshd = weft.reshape %l3.qkv.split.1 {weft.layer = 3 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l3.v.bshd = weft.reshape %l3.qkv.split.2 {weft.layer = 3 : i64} : (tensor<1x8192x32x1x128xbf16>) -> tensor<1x8192x32x128xbf16>
  // q, k, v as [batch, heads, seq, head_dim]
  %l3.q = weft.transpose %l3.q.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 3 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  %l3.k = weft.transpose %l3.k.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 3 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  %l3.v = weft.transpose %l3.v.bshd {perm = array<i64: 0, 2, 1, 3>, weft.layer = 3 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x32x8192x128xbf16>
  // causal attention
  %l3.attn = weft.attention %l3.q, %l3.k, %l3.v {causal, weft.layer = 3 : i64} : (tensor<1x32x8192x128xbf16>, tensor<1x32x8192x128xbf16>, tensor<1x32x8192x128xbf16>) -> tensor<1x32x8192x128xbf16>
  // merge heads, output projection
  %l3.o.bshd = weft.transpose %l3.attn {perm = array<i64: 0, 2, 1, 3>, weft.layer = 3 : i64} : (tensor<1x32x8192x128xbf16>) -> tensor<1x8192x32x128xbf16>
  %l3.o = weft.reshape %l3.o.bshd {weft.layer = 3 : i64} : (tensor<1x8192x32x128xbf16>) -> tensor<1x8192x4096xbf16>
  %l3.proj = weft.linear %l3.o, %p.layers.3.attn.proj.weight, %p.layers.3.attn.proj.bias {weft.layer = 3 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l3.resid1 = weft.add %l2.resid2, %l3.proj {weft.layer = 3 : i64} : (tensor<1x8192x4096xbf16>, tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xbf16>
  // layer 3: mlp
  %l3.norm2 = weft.layer_norm %l3.resid1, %p.layers.3.norm2.weight, %p.layers.3.norm2.bias {eps = 1.0e-05 : f64, weft.layer = 3 : i64} : (tensor<1x8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l3.fc1 = weft.linear %l3.norm2, %p.layers.3.mlp.fc1.weight, %p.layers.3.mlp.fc1.bias {weft.layer = 3 : i64} : (tensor<1x8192x4096xbf16>, tensor<16384x4096xbf16>, tensor<16384xbf16>) -> tensor<1x8192x16384xbf16>
  %l3.gelu = weft.gelu %l3.fc1 {approximate = "tanh", weft.layer = 3 : i64} : (tensor<1x8192x16384xbf16>) -> tensor<1x8192x16384xbf16>
  %l3.fc2 = weft.linear %l3.gelu, %p.layers.3.mlp.fc2.weight, %p.layers.3.mlp.fc2.bias {weft.layer = 3 : i64} : (tensor<1x8192x16384xbf16>, tensor<4096x16384xbf16>, tensor<4096xbf16>) -> tensor<1x8192x4096xbf16>
  %l3.resid2 = weft.add %l3.resid1, %l3.fc2 {weft.layer = 3 : i64} : (tensor<1x8192x4096xbf16>, tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xbf16>
  // loss: mean of squares in f32 (the remat anchor's)
  %out.wide = weft.convert %l3.resid2 : (tensor<1x8192x4096xbf16>) -> tensor<1x8192x4096xf32>
  %out.sq = weft.mul %out.wide, %out.wide : (tensor<1x8192x4096xf32>, tensor<1x8192x4096xf32>) -> tensor<1x8192x4096xf32>
  %loss = weft.reduce_mean %out.sq {dims = array<i64: 0, 1, 2>} : (tensor<1x8192x4096xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
