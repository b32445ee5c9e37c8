// Every verifier message of the weft ops (WeftOps.cpp) and of the dialect's
// attributes (WeftDialect.cpp), for each op its shape and type checks, plus a
// few ODS type constraints and regressions found by the fuzzer.
// RUN: weft-opt %s --split-input-file --verify-diagnostics

//===----------------------------------------------------------------------===//
// Checks shared by every op: static shapes, no encoding, bounded size.
//===----------------------------------------------------------------------===//

func.func @dynamic_operand(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'weft.silu' op expects static shapes, operand #0 is 'tensor<?x8xf32>'}}
  %0 = weft.silu %x : (tensor<?x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dynamic_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.silu' op expects static shapes, result #0 is 'tensor<4x?xf32>'}}
  %0 = weft.silu %x : (tensor<4x8xf32>) -> tensor<4x?xf32>
  return
}

// -----

func.func @encoding(%x: tensor<4x8xf32, "blocked">) {
  // expected-error @+1 {{'weft.silu' op expects tensors without an encoding, operand #0 is 'tensor<4x8xf32, "blocked">'}}
  %0 = weft.silu %x : (tensor<4x8xf32, "blocked">) -> tensor<4x8xf32>
  return
}

// -----

func.func @too_many_elements(%x: tensor<65536x65536x65537xf32>) {
  // 2^16 * 2^16 * (2^16 + 1) elements is just over 2^48.
  // expected-error @+1 {{'weft.silu' op expects at most 2^48 elements, operand #0 is 'tensor<65536x65536x65537xf32>'}}
  %0 = weft.silu %x : (tensor<65536x65536x65537xf32>) -> tensor<65536x65536x65537xf32>
  return
}

// -----

// The element count overflows int64 (2^32 * 2^32): rejected, not wrapped.
func.func @element_count_overflow(%x: tensor<4294967296x4294967296xf32>) {
  // expected-error @+1 {{'weft.silu' op expects at most 2^48 elements, operand #0 is 'tensor<4294967296x4294967296xf32>'}}
  %0 = weft.silu %x : (tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32>
  return
}

// -----

func.func @ods_element_type(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'weft.silu' op operand #0 must be ranked tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4x8xi32>'}}
  %0 = weft.silu %x : (tensor<4x8xi32>) -> tensor<4x8xi32>
  return
}

//===----------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------===//

// -----

func.func @linear_x_rank(%x: tensor<f32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'weft.linear' op expects x of rank at least 1, got 'tensor<f32>'}}
  %0 = weft.linear %x, %w : (tensor<f32>, tensor<8x32xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @linear_w_rank(%x: tensor<4x32xf32>, %w: tensor<8x32x1xf32>) {
  // expected-error @+1 {{'weft.linear' op expects w of rank 2, got 'tensor<8x32x1xf32>'}}
  %0 = weft.linear %x, %w : (tensor<4x32xf32>, tensor<8x32x1xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_in_features(%x: tensor<4x32xf32>, %w: tensor<8x16xf32>) {
  // expected-error @+1 {{'weft.linear' op expects the last dim of x ('tensor<4x32xf32>') to equal w's in-features ('tensor<8x16xf32>')}}
  %0 = weft.linear %x, %w : (tensor<4x32xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_bias_shape(%x: tensor<4x32xf32>, %w: tensor<8x32xf32>, %b: tensor<32xf32>) {
  // expected-error @+1 {{'weft.linear' op expects bias to have shape [8], got 'tensor<32xf32>'}}
  %0 = weft.linear %x, %w, %b : (tensor<4x32xf32>, tensor<8x32xf32>, tensor<32xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_result_shape(%x: tensor<2x4x32xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'weft.linear' op expects result to have shape [2, 4, 8], got 'tensor<8x8xf32>'}}
  %0 = weft.linear %x, %w : (tensor<2x4x32xf32>, tensor<8x32xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @linear_element_type(%x: tensor<4x32xf32>, %w: tensor<8x32xbf16>) {
  // expected-error @+1 {{'weft.linear' op expects x ('tensor<4x32xf32>') and w ('tensor<8x32xbf16>') to have the same element type}}
  %0 = weft.linear %x, %w : (tensor<4x32xf32>, tensor<8x32xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_bias_element_type(%x: tensor<4x32xf32>, %w: tensor<8x32xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'weft.linear' op expects x ('tensor<4x32xf32>') and bias ('tensor<8xf16>') to have the same element type}}
  %0 = weft.linear %x, %w, %b : (tensor<4x32xf32>, tensor<8x32xf32>, tensor<8xf16>) -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{'weft.matmul' op expects a of rank at least 2, got 'tensor<8xf32>'}}
  %0 = weft.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_b_rank(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'weft.matmul' op expects b of rank at least 2, got 'tensor<8xf32>'}}
  %0 = weft.matmul %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // Without transpose_b, b's k is its dim -2 (4), a's is 8.
  // expected-error @+1 {{'weft.matmul' op expects contraction sizes to match: a ('tensor<4x8xf32>') has k = 8, b ('tensor<4x8xf32>') has k = 4}}
  %0 = weft.matmul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_contraction_transpose_a(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // With transpose_a, a's k is its dim -2 (4).
  // expected-error @+1 {{'weft.matmul' op expects contraction sizes to match: a ('tensor<4x8xf32>') has k = 4, b ('tensor<8x2xf32>') has k = 8}}
  %0 = weft.matmul %a, %b {transpose_a} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{'weft.matmul' op expects b ('tensor<3x8x4xf32>') to be 2-d or to have a's batch dims [2]}}
  %0 = weft.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @matmul_result_shape(%a: tensor<2x4x8xf32>, %b: tensor<8x5xf32>) {
  // expected-error @+1 {{'weft.matmul' op expects result to have shape [2, 4, 5], got 'tensor<4x5xf32>'}}
  %0 = weft.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @matmul_element_type(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) {
  // expected-error @+1 {{'weft.matmul' op expects a ('tensor<4x8xf32>') and result ('tensor<4x5xbf16>') to have the same element type}}
  %0 = weft.matmul %a, %b : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xbf16>
  return
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

// -----

func.func @attention_rank(%q: tensor<8x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects q of rank 4, got 'tensor<8x16x8xf32>'}}
  %0 = weft.attention %q, %k, %v : (tensor<8x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<8x16x8xf32>
  return
}

// -----

func.func @attention_v_rank(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects v of rank 4, got 'tensor<2x16x8xf32>'}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<1x4x16x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects q, k and v to share the batch size, got 'tensor<1x4x16x8xf32>', 'tensor<2x2x16x8xf32>', 'tensor<2x2x16x8xf32>'}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_kv_seq(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x32x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects k ('tensor<1x2x16x8xf32>') and v ('tensor<1x2x32x8xf32>') to have the same heads and sequence length}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x4xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects q ('tensor<1x4x16x8xf32>') and k ('tensor<1x2x16x4xf32>') to have the same head_dim}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<1x4x16x8xf32>, %k: tensor<1x3x16x8xf32>, %v: tensor<1x3x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects kv heads (3) to divide q heads (4)}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x3x16x8xf32>, tensor<1x3x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

// Causal attention is bottom-right aligned; more queries than keys would leave
// the first rows without a visible key.
func.func @attention_causal_q_longer(%q: tensor<1x4x32x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects causal q length (32) not to exceed the k length (16), got q 'tensor<1x4x32x8xf32>' and k 'tensor<1x2x16x8xf32>'}}
  %0 = weft.attention %q, %k, %v {causal} : (tensor<1x4x32x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x32x8xf32>
  return
}

// -----

func.func @attention_grad_causal_q_longer(%do: tensor<1x4x32x8xf32>, %q: tensor<1x4x32x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x32x8xf32>, %lse: tensor<1x4x32xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects causal q length (32) not to exceed the k length (16)}}
  %0:3 = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal} : (tensor<1x4x32x8xf32>, tensor<1x4x32x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x32x8xf32>, tensor<1x4x32xf32>) -> (tensor<1x4x32x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// seq_major reads [b, s, h, d]: here kv heads 3 (dim 2) do not divide 4.
func.func @attention_seq_major_gqa(%q: tensor<1x16x4x8xf32>, %k: tensor<1x16x3x8xf32>, %v: tensor<1x16x3x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects kv heads (3) to divide q heads (4)}}
  %0 = weft.attention %q, %k, %v {seq_major} : (tensor<1x16x4x8xf32>, tensor<1x16x3x8xf32>, tensor<1x16x3x8xf32>) -> tensor<1x16x4x8xf32>
  return
}

// -----

// A seq_major result is [b, s, h, d] too.
func.func @attention_seq_major_result(%q: tensor<1x16x4x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects result to have shape [1, 16, 4, 8]}}
  %0 = weft.attention %q, %k, %v {seq_major} : (tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

// Its lse stays [b, hq, sq].
func.func @attention_seq_major_lse(%q: tensor<1x16x4x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects lse to have shape [1, 4, 16]}}
  %0, %1 = weft.attention %q, %k, %v {seq_major} : (tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) -> (tensor<1x16x4x8xf32>, tensor<1x16x4xf32>)
  return
}

// -----

func.func @attention_grad_seq_major_dout(%do: tensor<1x4x16x8xf32>, %q: tensor<1x16x4x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>, %o: tensor<1x16x4x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects dout to have shape [1, 16, 4, 8]}}
  %0:3 = weft.attention_grad %do, %q, %k, %v, %o, %lse {seq_major} : (tensor<1x4x16x8xf32>, tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x4x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>)
  return
}

// -----

func.func @attention_zero_kv_heads(%q: tensor<1x4x16x8xf32>, %k: tensor<1x0x16x8xf32>, %v: tensor<1x0x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects kv heads (0) to divide q heads (4)}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x0x16x8xf32>, tensor<1x0x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_zero_head_dim(%q: tensor<1x4x16x0xf32>, %k: tensor<1x2x16x0xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects a scale attribute when head_dim is 0, got q 'tensor<1x4x16x0xf32>'}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x0xf32>, tensor<1x2x16x0xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_element_type(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xbf16>, %v: tensor<1x2x16x8xbf16>) {
  // expected-error @+1 {{'weft.attention' op expects q ('tensor<1x4x16x8xf32>') and k ('tensor<1x2x16x8xbf16>') to have the same element type}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_scale_zero(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects a finite non-zero scale, got 0}}
  %0 = weft.attention %q, %k, %v {scale = 0.0 : f32} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_scale_inf(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects a finite non-zero scale, got INF}}
  %0 = weft.attention %q, %k, %v {scale = 0x7F800000 : f32} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_scale_type(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  %0 = weft.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_dropout_range(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.attention' op expects dropout_p in [0, 1), got 1}}
  %0 = weft.attention %q, %k, %v, %seed {dropout_p = 1.0 : f64, weft.rng_id = 1 : i64} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<i64>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_dropout_nan(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.attention' op expects dropout_p in [0, 1), got nan}}
  %0 = weft.attention %q, %k, %v, %seed {dropout_p = 0x7FF8000000000000 : f64, weft.rng_id = 1 : i64} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<i64>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_dropout_seed(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects a seed operand when dropout_p (1.000000e-01) is positive}}
  %0 = weft.attention %q, %k, %v {dropout_p = 0.1 : f64, weft.rng_id = 1 : i64} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_dropout_rng_id(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.attention' op expects a 'weft.rng_id' attribute on a random op}}
  %0 = weft.attention %q, %k, %v, %seed {dropout_p = 0.1 : f64} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<i64>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_seed_type(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %seed: tensor<1xi64>) {
  // expected-error @+1 {{'weft.attention' op operand #3 must be variadic of 0D tensor of 64-bit signless integer values or index, but got 'tensor<1xi64>'}}
  %0 = weft.attention %q, %k, %v, %seed {dropout_p = 0.1 : f64, weft.rng_id = 1 : i64} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1xi64>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_result_shape(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x4xf32>) {
  // The result takes q's rows and v's head_dim: [1, 4, 16, 4].
  // expected-error @+1 {{'weft.attention' op expects result to have shape [1, 4, 16, 4], got 'tensor<1x4x16x8xf32>'}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x4xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_result_element_type(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects q ('tensor<1x4x16x8xf32>') and result ('tensor<1x4x16x8xf16>') to have the same element type}}
  %0 = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf16>
  return
}

// -----

func.func @attention_lse_shape(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'weft.attention' op expects lse to have shape [1, 4, 16], got 'tensor<1x4x16x1xf32>'}}
  %0, %lse = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x16x1xf32>)
  return
}

// -----

func.func @attention_lse_f32(%q: tensor<1x4x16x8xbf16>, %k: tensor<1x2x16x8xbf16>, %v: tensor<1x2x16x8xbf16>) {
  // expected-error @+1 {{'weft.attention' op expects lse to be f32, got 'tensor<1x4x16xbf16>'}}
  %0, %lse = weft.attention %q, %k, %v : (tensor<1x4x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>) -> (tensor<1x4x16x8xbf16>, tensor<1x4x16xbf16>)
  return
}

//===----------------------------------------------------------------------===//
// attention_grad
//===----------------------------------------------------------------------===//

// -----

func.func @attention_grad_dout(%do: tensor<1x4x16x4xf32>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects dout to have shape [1, 4, 16, 8], got 'tensor<1x4x16x4xf32>'}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x4xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

func.func @attention_grad_out(%do: tensor<1x4x16x8xf32>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x2x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects out to have shape [1, 4, 16, 8], got 'tensor<1x2x16x8xf32>'}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

func.func @attention_grad_lse_shape(%do: tensor<1x4x16x8xf32>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x2x16xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects lse to have shape [1, 4, 16], got 'tensor<1x2x16xf32>'}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// Regression: attention_grad accepted an lse of any float type, although
// attention only produces an f32 one.
func.func @attention_grad_lse_f32(%do: tensor<1x4x16x8xbf16>, %q: tensor<1x4x16x8xbf16>, %k: tensor<1x2x16x8xbf16>, %v: tensor<1x2x16x8xbf16>, %o: tensor<1x4x16x8xbf16>, %lse: tensor<1x4x16xbf16>) {
  // expected-error @+1 {{'weft.attention_grad' op expects lse to be f32, got 'tensor<1x4x16xbf16>'}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x8xbf16>, tensor<1x4x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x4x16x8xbf16>, tensor<1x4x16xbf16>) -> (tensor<1x4x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>)
  return
}

// -----

func.func @attention_grad_dq(%do: tensor<1x4x16x8xf32>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects dq to have shape [1, 4, 16, 8], got 'tensor<1x2x16x8xf32>'}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

func.func @attention_grad_dk(%do: tensor<1x4x16x8xf32>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // dk sums over the q heads of a group: k's shape, not q's.
  // expected-error @+1 {{'weft.attention_grad' op expects dk to have shape [1, 2, 16, 8], got 'tensor<1x4x16x8xf32>'}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

func.func @attention_grad_dv(%do: tensor<1x4x16x8xf32>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects dv to have shape [1, 2, 16, 8], got 'tensor<1x2x8x8xf32>'}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x8x8xf32>)
  return
}

// -----

func.func @attention_grad_element_type(%do: tensor<1x4x16x8xf16>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects q ('tensor<1x4x16x8xf32>') and dout ('tensor<1x4x16x8xf16>') to have the same element type}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x8xf16>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

func.func @attention_grad_shared_checks(%do: tensor<1x4x16x8xf32>, %q: tensor<1x4x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>, %seed: tensor<i64>) {
  // The forward's operand checks apply to the gradient too.
  // expected-error @+1 {{'weft.attention_grad' op expects a 'weft.rng_id' attribute on a random op}}
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse, %seed {dropout_p = 0.5 : f64} : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>, tensor<i64>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// layer_norm, layer_norm_grad, rms_norm, rms_norm_grad
//===----------------------------------------------------------------------===//

// -----

func.func @layer_norm_rank(%x: tensor<f32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op expects x of rank at least 1, got 'tensor<f32>'}}
  %0 = weft.layer_norm %x, %g, %b : (tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @layer_norm_gamma(%x: tensor<4x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op expects gamma to have shape [8], got 'tensor<4xf32>'}}
  %0 = weft.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_beta(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op expects beta to have shape [8], got 'tensor<1x8xf32>'}}
  %0 = weft.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_eps(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op expects eps to be positive and finite, got 0}}
  %0 = weft.layer_norm %x, %g, %b {eps = 0.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_eps_inf(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op expects eps to be positive and finite, got INF}}
  %0 = weft.layer_norm %x, %g, %b {eps = 0x7FF0000000000000 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_result(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op expects result to have shape [4, 8], got 'tensor<8x4xf32>'}}
  %0 = weft.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @layer_norm_element_type(%x: tensor<4x8xbf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op expects x ('tensor<4x8xbf16>') and gamma ('tensor<8xf32>') to have the same element type}}
  %0 = weft.layer_norm %x, %g, %b : (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @layer_norm_grad_dgamma(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm_grad' op expects dgamma to have shape [8], got 'tensor<4x8xf32>'}}
  %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_dbeta(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm_grad' op expects dbeta to have shape [8], got 'tensor<4xf32>'}}
  %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_dy(%dy: tensor<2x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm_grad' op expects dy to have shape [4, 8], got 'tensor<2x8xf32>'}}
  %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_dx(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm_grad' op expects dx to have shape [4, 8], got 'tensor<32xf32>'}}
  %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<32xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_eps(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm_grad' op expects eps to be positive and finite, got -1}}
  %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g {eps = -1.0 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_element_type(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm_grad' op expects x ('tensor<4x8xf32>') and dbeta ('tensor<8xf64>') to have the same element type}}
  %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf64>)
  return
}

// -----

func.func @rms_norm_gamma(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'weft.rms_norm' op expects gamma to have shape [8], got 'tensor<4xf32>'}}
  %0 = weft.rms_norm %x, %g : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_eps_nan(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rms_norm' op expects eps to be positive and finite, got nan}}
  %0 = weft.rms_norm %x, %g {eps = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_result(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rms_norm' op expects result to have shape [4, 8], got 'tensor<4x1xf32>'}}
  %0 = weft.rms_norm %x, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @rms_norm_element_type(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rms_norm' op expects x ('tensor<4x8xf32>') and result ('tensor<4x8xf16>') to have the same element type}}
  %0 = weft.rms_norm %x, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf16>
  return
}

// -----

func.func @rms_norm_grad_rank(%dy: tensor<f32>, %x: tensor<f32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rms_norm_grad' op expects x of rank at least 1, got 'tensor<f32>'}}
  %dx, %dg = weft.rms_norm_grad %dy, %x, %g : (tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_dgamma(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rms_norm_grad' op expects dgamma to have shape [8], got 'tensor<9xf32>'}}
  %dx, %dg = weft.rms_norm_grad %dy, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<9xf32>)
  return
}

// -----

func.func @rms_norm_grad_dy(%dy: tensor<4x4xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rms_norm_grad' op expects dy to have shape [4, 8], got 'tensor<4x4xf32>'}}
  %dx, %dg = weft.rms_norm_grad %dy, %x, %g : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_dx(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rms_norm_grad' op expects dx to have shape [4, 8], got 'tensor<8xf32>'}}
  %dx, %dg = weft.rms_norm_grad %dy, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_element_type(%dy: tensor<4x8xbf16>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rms_norm_grad' op expects x ('tensor<4x8xf32>') and dy ('tensor<4x8xbf16>') to have the same element type}}
  %dx, %dg = weft.rms_norm_grad %dy, %x, %g : (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// softmax, softmax_grad, gelu, gelu_grad, silu, silu_grad
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.softmax' op expects dim 2 to be in [-2, 2) for rank 2}}
  %0 = weft.softmax %x {dim = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_negative_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.softmax' op expects dim -3 to be in [-2, 2) for rank 2}}
  %0 = weft.softmax %x {dim = -3 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_rank0(%x: tensor<f32>) {
  // A 0-d tensor has no dim to normalize over.
  // expected-error @+1 {{'weft.softmax' op expects dim -1 to be in [0, 0) for rank 0}}
  %0 = weft.softmax %x : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @softmax_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.softmax' op requires the same type for all operands and results}}
  %0 = weft.softmax %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @softmax_grad_dim(%dy: tensor<4x8xf32>, %y: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.softmax_grad' op expects dim 5 to be in [-2, 2) for rank 2}}
  %0 = weft.softmax_grad %dy, %y {dim = 5 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_grad_type(%dy: tensor<8x4xf32>, %y: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.softmax_grad' op requires the same type for all operands and results}}
  %0 = weft.softmax_grad %dy, %y : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_grad_result(%dy: tensor<4x8xf32>, %y: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.softmax_grad' op requires the same type for all operands and results}}
  %0 = weft.softmax_grad %dy, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf16>
  return
}

// -----

func.func @gelu_approximate(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu' op expects approximate to be "none" or "tanh", got "erf"}}
  %0 = weft.gelu %x {approximate = "erf"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @gelu_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu' op all non-scalar operands/results must have the same shape and base type}}
  %0 = weft.gelu %x : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @gelu_grad_approximate(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu_grad' op expects approximate to be "none" or "tanh", got "sigmoid"}}
  %0 = weft.gelu_grad %dy, %x {approximate = "sigmoid"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @gelu_grad_type(%dy: tensor<4x8xf16>, %x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu_grad' op requires the same type for all operands and results}}
  %0 = weft.gelu_grad %dy, %x : (tensor<4x8xf16>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @silu_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.silu' op requires the same type for all operands and results}}
  %0 = weft.silu %x : (tensor<4x8xf32>) -> tensor<4x8xf64>
  return
}

// -----

func.func @silu_grad_type(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.silu_grad' op all non-scalar operands/results must have the same shape and base type}}
  %0 = weft.silu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// add, sub, mul, scale, dropout, causal_mask, where, convert
//===----------------------------------------------------------------------===//

// -----

func.func @add_broadcast(%a: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // Trailing dims 8 and 4 differ and neither is 1.
  // expected-error @+1 {{'weft.add' op cannot broadcast rhs ('tensor<4xf32>') with shape [4, 8]}}
  %0 = weft.add %a, %b : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @sub_result(%a: tensor<4x1xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'weft.sub' op expects result to have shape [4, 8], got 'tensor<4x1xf32>'}}
  %0 = weft.sub %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @mul_element_type(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
  // expected-error @+1 {{'weft.mul' op expects lhs ('tensor<4x8xf32>') and rhs ('tensor<4x8xf16>') to have the same element type}}
  %0 = weft.mul %a, %b : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @scale_value(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.scale' op expects a finite value, got nan}}
  %0 = weft.scale %x {value = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @scale_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.scale' op requires the same type for all operands and results}}
  %0 = weft.scale %x {value = 2.0 : f64} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @scale_missing_value(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.scale' op requires attribute 'value'}}
  %0 = weft.scale %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_p(%x: tensor<4x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.dropout' op expects p in [0, 1), got -1.000000e-01}}
  %0 = weft.dropout %x, %seed {p = -0.1 : f64, weft.rng_id = 1 : i64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_rng_id(%x: tensor<4x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.dropout' op expects a 'weft.rng_id' attribute on a random op}}
  %0 = weft.dropout %x, %seed {p = 0.1 : f64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_type(%x: tensor<4x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.dropout' op expects result ('tensor<8x4xf32>') to have the type of x ('tensor<4x8xf32>')}}
  %0 = weft.dropout %x, %seed {p = 0.1 : f64, weft.rng_id = 1 : i64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<8x4xf32>
  return
}

// -----

func.func @causal_mask_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{'weft.causal_mask' op expects x of rank at least 2, got 'tensor<8xf32>'}}
  %0 = weft.causal_mask %x : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @causal_mask_type(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'weft.causal_mask' op requires the same type for all operands and results}}
  %0 = weft.causal_mask %x : (tensor<8x8xf32>) -> tensor<8x8xf16>
  return
}

// -----

func.func @where_broadcast(%c: tensor<3xi1>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.where' op cannot broadcast lhs ('tensor<4x8xf32>') with shape [3]}}
  %0 = weft.where %c, %a, %b : (tensor<3xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @where_result(%c: tensor<2x1x8xi1>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.where' op expects result to have shape [2, 4, 8], got 'tensor<4x8xf32>'}}
  %0 = weft.where %c, %a, %b : (tensor<2x1x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @where_element_type(%c: tensor<4x8xi1>, %a: tensor<4x8xf32>, %b: tensor<4x8xbf16>) {
  // expected-error @+1 {{'weft.where' op expects lhs ('tensor<4x8xf32>') and rhs ('tensor<4x8xbf16>') to have the same element type}}
  %0 = weft.where %c, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @where_cond_type(%c: tensor<4x8xf32>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.where' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4x8xf32>'}}
  %0 = weft.where %c, %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @convert_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.convert' op expects result to have shape [4, 8], got 'tensor<32xbf16>'}}
  %0 = weft.convert %x : (tensor<4x8xf32>) -> tensor<32xbf16>
  return
}

//===----------------------------------------------------------------------===//
// reduce_sum, reduce_mean, reshape, transpose, split, concat
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_dim(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.reduce_sum' op expects reduced dim 3 to be in [-3, 3) for rank 3}}
  %0 = weft.reduce_sum %x {dims = array<i64: 3>} : (tensor<2x4x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @reduce_distinct(%x: tensor<2x4x8xf32>) {
  // -1 and 2 name the same dim.
  // expected-error @+1 {{'weft.reduce_mean' op expects distinct dims, got 2 twice}}
  %0 = weft.reduce_mean %x {dims = array<i64: -1, 2>} : (tensor<2x4x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @reduce_result(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.reduce_sum' op expects result to have shape [2, 1, 8], got 'tensor<2x8xf32>'}}
  %0 = weft.reduce_sum %x {dims = array<i64: 1>, keepdim} : (tensor<2x4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @reduce_result_no_keepdim(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.reduce_mean' op expects result to have shape [2, 8], got 'tensor<2x1x8xf32>'}}
  %0 = weft.reduce_mean %x {dims = array<i64: 1>} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  return
}

// -----

func.func @reduce_element_type(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.reduce_sum' op expects x ('tensor<2x4x8xf32>') and result ('tensor<8xf64>') to have the same element type}}
  %0 = weft.reduce_sum %x {dims = array<i64: 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8xf64>
  return
}

// -----

func.func @reduce_missing_dims(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.reduce_sum' op requires attribute 'dims'}}
  %0 = weft.reduce_sum %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.reshape' op expects the same element count: x ('tensor<2x4x8xf32>') has 64, result ('tensor<8x9xf32>') has 72}}
  %0 = weft.reshape %x : (tensor<2x4x8xf32>) -> tensor<8x9xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.reshape' op expects x ('tensor<2x4x8xf32>') and result ('tensor<64xi64>') to have the same element type}}
  %0 = weft.reshape %x : (tensor<2x4x8xf32>) -> tensor<64xi64>
  return
}

// -----

func.func @transpose_perm_size(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.transpose' op expects perm of size 3 (the rank of x), got [1, 0]}}
  %0 = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
  return
}

// -----

func.func @transpose_perm_repeat(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.transpose' op expects perm to be a permutation of [0, 3), got [0, 1, 1]}}
  %0 = weft.transpose %x {perm = array<i64: 0, 1, 1>} : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @transpose_perm_range(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.transpose' op expects perm to be a permutation of [0, 3), got [0, -1, 2]}}
  %0 = weft.transpose %x {perm = array<i64: 0, -1, 2>} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x4x8xf32>) {
  // Result dim i is x's dim perm[i]: [8, 2, 4].
  // expected-error @+1 {{'weft.transpose' op expects result to have shape [8, 2, 4], got 'tensor<4x8x2xf32>'}}
  %0 = weft.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x4x8xf32>) -> tensor<4x8x2xf32>
  return
}

// -----

func.func @transpose_element_type(%x: tensor<2x4xi1>) {
  // expected-error @+1 {{'weft.transpose' op expects x ('tensor<2x4xi1>') and result ('tensor<4x2xi64>') to have the same element type}}
  %0 = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x4xi1>) -> tensor<4x2xi64>
  return
}

// -----

func.func @split_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.split' op expects dim -3 to be in [-2, 2) for rank 2}}
  %a, %b = weft.split %x {dim = -3 : i64, sizes = array<i64: 2, 2>} : (tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @split_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.split' op expects one result per size: 3 sizes [2, 2, 4], 2 results}}
  %a, %b = weft.split %x {dim = 1 : i64, sizes = array<i64: 2, 2, 4>} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x6xf32>)
  return
}

// -----

func.func @split_negative(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.split' op expects non-negative sizes, got [10, -2]}}
  %a, %b = weft.split %x {dim = 1 : i64, sizes = array<i64: 10, -2>} : (tensor<4x8xf32>) -> (tensor<4x10xf32>, tensor<4x2xf32>)
  return
}

// -----

func.func @split_piece_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.split' op expects piece #1 to have shape [4, 5], got 'tensor<4x3xf32>'}}
  %a, %b = weft.split %x {dim = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @split_piece_element_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.split' op expects x ('tensor<4x8xf32>') and piece #0 ('tensor<4x3xf16>') to have the same element type}}
  %a, %b = weft.split %x {dim = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<4x8xf32>) -> (tensor<4x3xf16>, tensor<4x5xf32>)
  return
}

// -----

func.func @split_sum(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.split' op expects sizes [3, 4] to sum to dim 1 of x ('tensor<4x8xf32>')}}
  %a, %b = weft.split %x {dim = 1 : i64, sizes = array<i64: 3, 4>} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x4xf32>)
  return
}

// -----

// Regression: the sum of sizes overflowed int64 (undefined behaviour) before
// it was compared with the input's dim; it now stops once past the dim.
func.func @split_sum_overflow(%x: tensor<4xf32>) {
  // expected-error @+1 {{'weft.split' op expects sizes [281474976710656, 281474976710656, 281474976710656] to sum to dim 0 of x ('tensor<4xf32>')}}
  %a:3 = weft.split %x {dim = 0 : i64, sizes = array<i64: 281474976710656, 281474976710656, 281474976710656>} : (tensor<4xf32>) -> (tensor<281474976710656xf32>, tensor<281474976710656xf32>, tensor<281474976710656xf32>)
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{'weft.concat' op expects at least one operand}}
  %0 = weft.concat {dim = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'weft.concat' op expects dim 2 to be in [-2, 2) for rank 2}}
  %0 = weft.concat %a, %a {dim = 2 : i64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @concat_agree(%a: tensor<4x3xf32>, %b: tensor<2x5xf32>) {
  // expected-error @+1 {{'weft.concat' op expects operands to agree except in dim 1: 'tensor<4x3xf32>' and 'tensor<2x5xf32>'}}
  %0 = weft.concat %a, %b {dim = 1 : i64} : (tensor<4x3xf32>, tensor<2x5xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<4x3xf32>, %b: tensor<4x3x1xf32>) {
  // expected-error @+1 {{'weft.concat' op expects operands to agree except in dim 0: 'tensor<4x3xf32>' and 'tensor<4x3x1xf32>'}}
  %0 = weft.concat %a, %b {dim = 0 : i64} : (tensor<4x3xf32>, tensor<4x3x1xf32>) -> tensor<8x3xf32>
  return
}

// -----

func.func @concat_element_type(%a: tensor<4x3xf32>, %b: tensor<4x5xbf16>) {
  // expected-error @+1 {{'weft.concat' op expects first operand ('tensor<4x3xf32>') and operand ('tensor<4x5xbf16>') to have the same element type}}
  %0 = weft.concat %a, %b {dim = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'weft.concat' op expects result to have shape [4, 8], got 'tensor<4x9xf32>'}}
  %0 = weft.concat %a, %b {dim = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x9xf32>
  return
}

// -----

func.func @concat_result_element_type(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'weft.concat' op expects first operand ('tensor<4x3xf32>') and result ('tensor<4x8xf16>') to have the same element type}}
  %0 = weft.concat %a, %b {dim = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf16>
  return
}

// -----

// Regression: the concatenated size could overflow int64 (undefined
// behaviour) with enough large pieces; the sum now stops past 2^48.
func.func @concat_size(%a: tensor<140737488355329xf32>) {
  // 2 * (2^47 + 1) = 2^48 + 2.
  // expected-error @+1 {{'weft.concat' op expects the concatenated dim 0 to have at most 2^48 elements, got more than 281474976710656}}
  %0 = weft.concat %a, %a {dim = 0 : i64} : (tensor<140737488355329xf32>, tensor<140737488355329xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// embedding, embedding_grad, cross_entropy, cross_entropy_grad, rope, adamw
//===----------------------------------------------------------------------===//

// -----

func.func @embedding_table_rank(%ids: tensor<2x16xi64>, %table: tensor<100xf32>) {
  // expected-error @+1 {{'weft.embedding' op expects table of rank 2, got 'tensor<100xf32>'}}
  %0 = weft.embedding %ids, %table : (tensor<2x16xi64>, tensor<100xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @embedding_result(%ids: tensor<2x16xi64>, %table: tensor<100x32xf32>) {
  // expected-error @+1 {{'weft.embedding' op expects result to have shape [2, 16, 32], got 'tensor<2x16x100xf32>'}}
  %0 = weft.embedding %ids, %table : (tensor<2x16xi64>, tensor<100x32xf32>) -> tensor<2x16x100xf32>
  return
}

// -----

// Regression: an empty table was accepted; every id indexes out of range.
func.func @embedding_empty_table(%ids: tensor<2x16xi64>, %table: tensor<0x32xf32>) {
  // expected-error @+1 {{'weft.embedding' op expects at least one table row, got 'tensor<0x32xf32>'}}
  %0 = weft.embedding %ids, %table : (tensor<2x16xi64>, tensor<0x32xf32>) -> tensor<2x16x32xf32>
  return
}

// -----

func.func @embedding_element_type(%ids: tensor<2x16xi64>, %table: tensor<100x32xf32>) {
  // expected-error @+1 {{'weft.embedding' op expects table ('tensor<100x32xf32>') and result ('tensor<2x16x32xbf16>') to have the same element type}}
  %0 = weft.embedding %ids, %table : (tensor<2x16xi64>, tensor<100x32xf32>) -> tensor<2x16x32xbf16>
  return
}

// -----

func.func @embedding_ids_type(%ids: tensor<2x16xi32>, %table: tensor<100x32xf32>) {
  // expected-error @+1 {{'weft.embedding' op operand #0 must be ranked tensor of 64-bit signless integer values, but got 'tensor<2x16xi32>'}}
  %0 = weft.embedding %ids, %table : (tensor<2x16xi32>, tensor<100x32xf32>) -> tensor<2x16x32xf32>
  return
}

// -----

func.func @embedding_grad_rank(%dy: tensor<2x16x32xf32>, %ids: tensor<2x16xi64>) {
  // expected-error @+1 {{'weft.embedding_grad' op expects result of rank 2, got 'tensor<100x32x1xf32>'}}
  %0 = weft.embedding_grad %dy, %ids : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<100x32x1xf32>
  return
}

// -----

func.func @embedding_grad_dy(%dy: tensor<2x16x32xf32>, %ids: tensor<2x8xi64>) {
  // expected-error @+1 {{'weft.embedding_grad' op expects dy to have shape [2, 8, 32], got 'tensor<2x16x32xf32>'}}
  %0 = weft.embedding_grad %dy, %ids : (tensor<2x16x32xf32>, tensor<2x8xi64>) -> tensor<100x32xf32>
  return
}

// -----

func.func @embedding_grad_rows(%dy: tensor<2x16x32xf32>, %ids: tensor<2x16xi64>) {
  // expected-error @+1 {{'weft.embedding_grad' op expects at least one table row, got 'tensor<0x32xf32>'}}
  %0 = weft.embedding_grad %dy, %ids : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<0x32xf32>
  return
}

// -----

func.func @embedding_grad_element_type(%dy: tensor<2x16x32xf32>, %ids: tensor<2x16xi64>) {
  // expected-error @+1 {{'weft.embedding_grad' op expects dy ('tensor<2x16x32xf32>') and result ('tensor<100x32xf16>') to have the same element type}}
  %0 = weft.embedding_grad %dy, %ids : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<100x32xf16>
  return
}

// -----

func.func @cross_entropy_rank(%logits: tensor<f32>, %labels: tensor<i64>) {
  // expected-error @+1 {{'weft.cross_entropy' op expects logits of rank at least 1, got 'tensor<f32>'}}
  %0 = weft.cross_entropy %logits, %labels : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// Regression: logits with zero classes were accepted.
func.func @cross_entropy_classes(%logits: tensor<2x16x0xf32>, %labels: tensor<2x16xi64>) {
  // expected-error @+1 {{'weft.cross_entropy' op expects at least one class in logits, got 'tensor<2x16x0xf32>'}}
  %0 = weft.cross_entropy %logits, %labels : (tensor<2x16x0xf32>, tensor<2x16xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels(%logits: tensor<2x16x100xf32>, %labels: tensor<2x16x100xi64>) {
  // expected-error @+1 {{'weft.cross_entropy' op expects labels to have shape [2, 16], got 'tensor<2x16x100xi64>'}}
  %0 = weft.cross_entropy %logits, %labels : (tensor<2x16x100xf32>, tensor<2x16x100xi64>) -> tensor<f32>
  return
}

// -----

// bf16 logits may give an f32 loss (f32 math, one rounding); f64 they may not.
func.func @cross_entropy_element_type(%logits: tensor<2x16x100xbf16>, %labels: tensor<2x16xi64>) {
  // expected-error @+1 {{'weft.cross_entropy' op expects result ('tensor<f64>') to have the logits' element type or f32 with bf16/f16 logits, got logits 'tensor<2x16x100xbf16>'}}
  %0 = weft.cross_entropy %logits, %labels : (tensor<2x16x100xbf16>, tensor<2x16xi64>) -> tensor<f64>
  return
}

// -----

func.func @cross_entropy_result_rank(%logits: tensor<2x16x100xf32>, %labels: tensor<2x16xi64>) {
  // expected-error @+1 {{'weft.cross_entropy' op result #0 must be 0D tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<2x16xf32>'}}
  %0 = weft.cross_entropy %logits, %labels : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<2x16xf32>
  return
}

// -----

func.func @cross_entropy_grad_labels(%dloss: tensor<f32>, %logits: tensor<2x16x100xf32>, %labels: tensor<16xi64>) {
  // expected-error @+1 {{'weft.cross_entropy_grad' op expects labels to have shape [2, 16], got 'tensor<16xi64>'}}
  %0 = weft.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<2x16x100xf32>, tensor<16xi64>) -> tensor<2x16x100xf32>
  return
}

// -----

// Regression: dloss of another float type than the logits was accepted.
func.func @cross_entropy_grad_dloss(%dloss: tensor<f64>, %logits: tensor<2x16x100xf32>, %labels: tensor<2x16xi64>) {
  // expected-error @+1 {{'weft.cross_entropy_grad' op expects dloss ('tensor<f64>') to have the logits' element type or f32 with bf16/f16 logits, got logits 'tensor<2x16x100xf32>'}}
  %0 = weft.cross_entropy_grad %dloss, %logits, %labels : (tensor<f64>, tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<2x16x100xf32>
  return
}

// -----

func.func @cross_entropy_grad_type(%dloss: tensor<f32>, %logits: tensor<2x16x100xf32>, %labels: tensor<2x16xi64>) {
  // expected-error @+1 {{'weft.cross_entropy_grad' op expects dlogits ('tensor<2x16x99xf32>') to have the type of logits ('tensor<2x16x100xf32>')}}
  %0 = weft.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<2x16x99xf32>
  return
}

// -----

func.func @rope_rank(%x: tensor<8xf32>, %cos: tensor<8xf32>, %sin: tensor<8xf32>) {
  // expected-error @+1 {{'weft.rope' op expects x of rank at least 2, got 'tensor<8xf32>'}}
  %0 = weft.rope %x, %cos, %sin : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<1x4x16x7xf32>, %cos: tensor<16x7xf32>, %sin: tensor<16x7xf32>) {
  // expected-error @+1 {{'weft.rope' op expects an even last dim in x, got 'tensor<1x4x16x7xf32>'}}
  %0 = weft.rope %x, %cos, %sin : (tensor<1x4x16x7xf32>, tensor<16x7xf32>, tensor<16x7xf32>) -> tensor<1x4x16x7xf32>
  return
}

// -----

func.func @rope_cos(%x: tensor<1x4x16x8xf32>, %cos: tensor<8x8xf32>, %sin: tensor<16x8xf32>) {
  // expected-error @+1 {{'weft.rope' op expects cos to have shape [16, 8], got 'tensor<8x8xf32>'}}
  %0 = weft.rope %x, %cos, %sin : (tensor<1x4x16x8xf32>, tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @rope_sin(%x: tensor<1x4x16x8xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x4xf32>) {
  // expected-error @+1 {{'weft.rope' op expects sin to have shape [16, 8], got 'tensor<16x4xf32>'}}
  %0 = weft.rope %x, %cos, %sin : (tensor<1x4x16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @rope_element_type(%x: tensor<1x4x16x8xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xbf16>) {
  // expected-error @+1 {{'weft.rope' op expects x ('tensor<1x4x16x8xf32>') and sin ('tensor<16x8xbf16>') to have the same element type}}
  %0 = weft.rope %x, %cos, %sin : (tensor<1x4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xbf16>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @rope_result(%x: tensor<1x4x16x8xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xf32>) {
  // expected-error @+1 {{'weft.rope' op expects result ('tensor<4x16x8xf32>') to have the type of x ('tensor<1x4x16x8xf32>')}}
  %0 = weft.rope %x, %cos, %sin : (tensor<1x4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<4x16x8xf32>
  return
}

// -----

func.func @adamw_grad(%p: tensor<8xf32>, %g: tensor<4xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects grad to have shape [8], got 'tensor<4xf32>'}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_m(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<1x8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects m to have shape [8], got 'tensor<1x8xf32>'}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<1x8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<1x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_v(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<9xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects v to have shape [8], got 'tensor<9xf32>'}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<9xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<9xf32>)
  return
}

// -----

func.func @adamw_new_param(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects new_param ('tensor<8xbf16>') to have the type of param ('tensor<8xf32>')}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xbf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_new_m(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects new_m ('tensor<8xf16>') to have the type of m ('tensor<8xf32>')}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf16>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_new_v(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects new_v ('tensor<8xf64>') to have the type of v ('tensor<8xf32>')}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf64>)
  return
}

// -----

func.func @adamw_lr(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects a finite lr >= 0, got -1.000000e-03}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = -1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects a finite weight_decay >= 0, got INF}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64, weight_decay = 0x7FF0000000000000 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_beta1(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects beta1 in [0, 1), got 1}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64, beta1 = 1.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_beta2(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects beta2 in [0, 1), got -5.000000e-01}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64, beta2 = -0.5 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_eps(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'weft.adamw' op expects eps to be positive and finite, got 0}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64, eps = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamw_step_type(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<f32>) {
  // expected-error @+1 {{'weft.adamw' op operand #4 must be 0D tensor of 64-bit signless integer values, but got 'tensor<f32>'}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Dialect attributes: weft.rng_id, weft.layer (ops), weft.param, weft.range
// (function arguments), and unknown weft.* names.
//===----------------------------------------------------------------------===//

// -----

func.func @rng_id_type(%x: tensor<4x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.dropout' op expects 'weft.rng_id' to be an i64 integer attribute, got 3 : i32}}
  %0 = weft.dropout %x, %seed {p = 0.1 : f64, weft.rng_id = 3 : i32} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rng_id_string(%x: tensor<4x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.dropout' op expects 'weft.rng_id' to be an i64 integer attribute, got "three"}}
  %0 = weft.dropout %x, %seed {p = 0.1 : f64, weft.rng_id = "three"} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rng_id_negative(%x: tensor<4x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'weft.dropout' op expects 'weft.rng_id' to be non-negative, got -1}}
  %0 = weft.dropout %x, %seed {p = 0.1 : f64, weft.rng_id = -1 : i64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu' op expects 'weft.layer' to be an i64 integer attribute, got 2.000000e+00 : f32}}
  %0 = weft.gelu %x {weft.layer = 2.0 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_negative(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu' op expects 'weft.layer' to be non-negative, got -3}}
  %0 = weft.gelu %x {weft.layer = -3 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// weft.layer is checked on any op, not only on weft ops.
// expected-error @+1 {{'func.func' op expects 'weft.layer' to be an i64 integer attribute, got unit}}
func.func @layer_on_func() attributes {weft.layer} {
  return
}

// -----

func.func @unknown_op_attr(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu' op has unknown weft attribute 'weft.rngid'}}
  %0 = weft.gelu %x {weft.rngid = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// weft.param belongs on function arguments, not on ops.
func.func @param_on_op(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu' op has unknown weft attribute 'weft.param'}}
  %0 = weft.gelu %x {weft.param} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.param' on argument 0 to be a unit attribute}}
func.func @param_not_unit(%w: tensor<8xf32> {weft.param = 1 : i64}) {
  return
}

// -----

// Regression: weft.param was accepted on integer arguments; a parameter is
// trained, so it is a floating-point tensor.
// expected-error @+1 {{'func.func' op expects 'weft.param' on argument 1 of floating-point (or i16 split-master) tensor type, got 'tensor<8xi64>'}}
func.func @param_type(%x: tensor<8xf32>, %ids: tensor<8xi64> {weft.param}) {
  return
}

// -----

// The check reads the function type, so declarations (no entry block) are
// verified too.
// expected-error @+1 {{'func.func' op expects 'weft.param' on argument 0 of floating-point (or i16 split-master) tensor type, got 'f32'}}
func.func private @param_scalar_decl(f32 {weft.param})

// -----

// expected-error @+1 {{'func.func' op expects 'weft.bound' on argument 0 to be a unit attribute}}
func.func @bound_not_unit(%w: tensor<8xf32> {weft.bound = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.bound' on argument 0 of statically shaped tensor type, got 'f32'}}
func.func @bound_scalar(%s: f32 {weft.bound}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.range' on argument 0 to be array<i64: lo, hi> with lo < hi, got array<i64: 5, 5>}}
func.func @range_empty(%ids: tensor<8xi64> {weft.range = array<i64: 5, 5>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.range' on argument 0 to be array<i64: lo, hi> with lo < hi, got array<i64: 0, 10, 20>}}
func.func @range_size(%ids: tensor<8xi64> {weft.range = array<i64: 0, 10, 20>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.range' on argument 0 to be array<i64: lo, hi> with lo < hi, got [0, 10]}}
func.func @range_kind(%ids: tensor<8xi64> {weft.range = [0, 10]}) {
  return
}

// -----

// Regression: weft.range was accepted on float arguments.
// expected-error @+1 {{'func.func' op expects 'weft.range' on argument 0 of integer (or integer tensor) type, got 'tensor<8xf32>'}}
func.func @range_type(%x: tensor<8xf32> {weft.range = array<i64: 0, 10>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.range' on argument 0 of integer (or integer tensor) type, got 'tensor<8xi1>'}}
func.func @range_mask(%x: tensor<8xi1> {weft.range = array<i64: 0, 2>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op has unknown weft argument attribute 'weft.params' on argument 0}}
func.func @unknown_arg_attr(%w: tensor<8xf32> {weft.params}) {
  return
}

// -----

// Regression: weft.* attributes on function results were not verified at all.
// expected-error @+1 {{'func.func' op has unknown weft result attribute 'weft.param' on result 0}}
func.func @result_attr(%w: tensor<8xf32>) -> (tensor<8xf32> {weft.param}) {
  return %w : tensor<8xf32>
}

// -----

// weft.alias (a step result updated in place) names an argument of its type.
// expected-error @+1 {{'func.func' op expects 'weft.alias' on result 0 to be an i64 argument index, got 0 : i32}}
func.func @alias_not_i64(%w: tensor<8xf32>) -> (tensor<8xf32> {weft.alias = 0 : i32}) {
  return %w : tensor<8xf32>
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.alias' on result 1 to name one of the 2 arguments, got 2}}
func.func @alias_out_of_range(%w: tensor<8xf32>, %m: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {weft.alias = 2 : i64}) {
  return %w, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.alias' on result 0 to name one of the 1 arguments, got -1}}
func.func @alias_negative(%w: tensor<8xf32>) -> (tensor<8xf32> {weft.alias = -1 : i64}) {
  return %w : tensor<8xf32>
}

// -----

// expected-error @+1 {{'func.func' op expects result 0 ('tensor<8xbf16>') aliased by 'weft.alias' to have the type of argument 0 ('tensor<8xf32>')}}
func.func @alias_type_mismatch(%w: tensor<8xf32>) -> (tensor<8xbf16> {weft.alias = 0 : i64}) {
  %0 = weft.convert %w : (tensor<8xf32>) -> tensor<8xbf16>
  return %0 : tensor<8xbf16>
}

// -----

// expected-error @+1 {{'func.func' op expects one result per argument aliased by 'weft.alias', results 0 and 1 both alias argument 0}}
func.func @alias_twice(%w: tensor<8xf32>) -> (tensor<8xf32> {weft.alias = 0 : i64}, tensor<8xf32> {weft.alias = 0 : i64}) {
  return %w, %w : tensor<8xf32>, tensor<8xf32>
}

// -----

// weft.tile, weft-tile-attention's record of a nest's tile configuration.
func.func @tile_attr_kind() {
  // expected-error @+1 {{'func.return' op expects 'weft.tile' to be {block_q = <positive i64>, block_k = <positive i64>, kind = "forward" | "backward"}, got}}
  return {weft.tile = {block_q = 4 : i64, block_k = 8 : i64, kind = "sideways"}}
}

// -----

func.func @tile_attr_block() {
  // expected-error @+1 {{'func.return' op expects 'weft.tile' to be {block_q = <positive i64>, block_k = <positive i64>, kind = "forward" | "backward"}, got}}
  return {weft.tile = {block_q = 0 : i64, block_k = 8 : i64, kind = "forward"}}
}

// -----

func.func @tile_attr_not_dict() {
  // expected-error @+1 {{'func.return' op expects 'weft.tile' to be {block_q = <positive i64>, block_k = <positive i64>, kind = "forward" | "backward"}, got 64 : i64}}
  return {weft.tile = 64 : i64}
}

// -----

// weft-plan-memory's attributes (weft.offsets, weft.workspace_offset,
// weft.offset, weft.memory_plan).
func.func @offsets_count(%x: tensor<16xf32>) {
  // expected-error @+1 {{'weft.gelu' op expects 'weft.offsets' to be array<i64> with one offset per result (1), got array<i64: 0, 64>}}
  %0 = weft.gelu %x {weft.offsets = array<i64: 0, 64>} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @offsets_negative(%x: tensor<16xf32>) {
  // expected-error @+1 {{'weft.gelu' op expects 'weft.offsets' entry 0 to be a non-negative offset (-1 only for a non-tensor result), got -1}}
  %0 = weft.gelu %x {weft.offsets = array<i64: -1>} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @workspace_offset_negative(%do: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects 'weft.workspace_offset' to be a non-negative i64 offset, got -256 : i64}}
  %dq, %dk, %dv = weft.attention_grad %do, %do, %do, %do, %do, %lse {weft.workspace_offset = -256 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

// Regression (fuzzer): the workspace of an op whose shapes the op verifier
// has not yet refused is asked for by weft.workspace_offset's verifier first;
// batch x heads = 2^32 x (2^47 + 1) overflowed int64 there (UBSan).
func.func @workspace_offset_huge_grad(%do: tensor<4294967296x140737488355329x1x1xf32>, %lse: tensor<4294967296x140737488355329x1xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op expects at most 2^48 elements, operand #0 is 'tensor<4294967296x140737488355329x1x1xf32>'}}
  %dq, %dk, %dv = weft.attention_grad %do, %do, %do, %do, %do, %lse {atomic_dq, weft.workspace_offset = 0 : i64} : (tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1xf32>) -> (tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1x1xf32>)
  return
}

// -----

func.func @workspace_offset_huge_dropout(%q: tensor<4294967296x140737488355329x1x1xf32>) {
  // expected-error @+1 {{'weft.attention' op expects at most 2^48 elements, operand #0 is 'tensor<4294967296x140737488355329x1x1xf32>'}}
  %0 = weft.attention %q, %q, %q {dropout_p = 0.1 : f64, weft.workspace_offset = 0 : i64} : (tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1x1xf32>, tensor<4294967296x140737488355329x1x1xf32>) -> tensor<4294967296x140737488355329x1x1xf32>
  return
}

// -----

func.func @workspace_offset_without_workspace(%x: tensor<16xf32>) {
  // expected-error @+1 {{'weft.gelu' op has 'weft.workspace_offset' but no workspace}}
  %0 = weft.gelu %x {weft.workspace_offset = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @memory_plan_on_op(%x: tensor<16xf32>) {
  // expected-error @+1 {{'weft.gelu' op expects 'weft.memory_plan' on a function only}}
  %0 = weft.gelu %x {weft.memory_plan = {}} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.memory_plan' to be a dictionary, got 1 : i64}}
func.func @memory_plan_not_dictionary() attributes {weft.memory_plan = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.memory_plan' to have a non-negative i64 'peak_bytes', got {alignment = 256 : i64}}}
func.func @memory_plan_missing_peak() attributes {weft.memory_plan = {alignment = 256 : i64}} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.memory_plan' lower_bound_bytes (512) to be at most peak_bytes (256)}}
func.func @memory_plan_bound_above_peak() attributes {weft.memory_plan = {alignment = 256 : i64, peak_bytes = 256 : i64, lower_bound_bytes = 512 : i64, fragmentation = 0.0 : f64, categories = {}}} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.memory_plan' to have a 'fragmentation' float in [0, 1)}}
func.func @memory_plan_fragmentation() attributes {weft.memory_plan = {alignment = 256 : i64, peak_bytes = 256 : i64, lower_bound_bytes = 0 : i64, fragmentation = 1.5 : f64, categories = {}}} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.memory_plan' to have a 'categories' dictionary}}
func.func @memory_plan_categories() attributes {weft.memory_plan = {alignment = 256 : i64, peak_bytes = 256 : i64, lower_bound_bytes = 256 : i64, fragmentation = 0.0 : f64}} {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.offset' on argument 0 to be a non-negative i64 offset, got -1 : i64}}
func.func @arg_offset_negative(%x: tensor<16xf32> {weft.offset = -1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.offset' on argument 0 of ranked tensor type, got 'i64'}}
func.func @arg_offset_not_tensor(%x: i64 {weft.offset = 0 : i64}) {
  return
}

// -----

// weft.recompute (weft-remat's mark on a recomputed clone) is a unit attribute.
func.func @recompute_not_unit(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.gelu' op expects 'weft.recompute' to be a unit attribute, got 1 : i64}}
  %0 = weft.gelu %x {weft.recompute = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Regression (weft-fuzz): weft.workspace_offset's attribute verifier asks the
// op for its workspace before the op's own verifier ran; an attention_grad
// with a 2-d q failed an assertion in getWorkspaceBytes. The 2-d q has no
// query rows (its dim 2 reads as 0), so no row-statistic workspace: the
// attribute verifier, which runs first, rejects the offset.
func.func @workspace_offset_malformed(%do: tensor<4x8xf32>, %lse: tensor<4xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op has 'weft.workspace_offset' but no workspace}}
  %dq, %dk, %dv = weft.attention_grad %do, %do, %do, %do, %do, %lse {weft.workspace_offset = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

// ... and one with too few operands to have a q at all.
func.func @workspace_offset_no_q(%do: tensor<4x8xf32>, %lse: tensor<4xf32>) {
  // expected-error @+1 {{'weft.attention_grad' op has 'weft.workspace_offset' but no workspace}}
  %dq, %dk, %dv = weft.attention_grad %do, %lse {weft.workspace_offset = 0 : i64} : (tensor<4x8xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

// expected-error @+1 {{'func.func' op expects 'weft.gemm_workspace' to be a non-negative i64 byte count on a function, got -1 : i64}}
func.func @gemm_workspace_negative() attributes {weft.gemm_workspace = -1 : i64} {
  return
}

// -----

func.func @gemm_workspace_on_op(%x: tensor<8x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'weft.linear' op expects 'weft.gemm_workspace' to be a non-negative i64 byte count on a function, got 4096 : i64}}
  %y = weft.linear %x, %w {weft.gemm_workspace = 4096 : i64} : (tensor<8x32xbf16>, tensor<16x32xbf16>) -> tensor<8x16xbf16>
  return
}

// -----

// A GEMM has a workspace only in a function planned with weft.gemm_workspace.
func.func @gemm_workspace_offset_without_cap(%x: tensor<8x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{'weft.linear' op has 'weft.workspace_offset' but no workspace}}
  %y = weft.linear %x, %w {weft.workspace_offset = 0 : i64} : (tensor<8x32xbf16>, tensor<16x32xbf16>) -> tensor<8x16xbf16>
  return
}
