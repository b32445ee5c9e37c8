// weft-fuse-attention: the unfused chain matmul(Q, K^T) -> scale ->
// causal_mask -> softmax -> dropout -> matmul(P, V) becomes weft.attention
// (MHA, GQA and MQA by repeated kv heads); chains that differ stay as they are.
// RUN: weft-opt %s --split-input-file --weft-fuse-attention | FileCheck %s

// Causal MHA as the model generator writes it. 0.25 is exact in f32.
// CHECK-LABEL: func.func @mha_causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x8x16xf32>, %[[K:[^:]+]]: tensor<1x4x8x16xf32>, %[[V:[^:]+]]: tensor<1x4x8x16xf32>)
// CHECK-NEXT: %[[O:.+]] = weft.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f32, weft.layer = 3 : i64} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
// CHECK-NOT: weft.matmul
// CHECK-NOT: weft.scale
// CHECK-NOT: weft.causal_mask
// CHECK-NOT: weft.softmax
// CHECK-NEXT: return %[[O]]
func.func @mha_causal(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %s = weft.matmul %q, %k {transpose_b, weft.layer = 3 : i64} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %t = weft.scale %s {value = 0.25 : f64, weft.layer = 3 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %m = weft.causal_mask %t {weft.layer = 3 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p = weft.softmax %m {dim = -1 : i64, weft.layer = 3 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = weft.matmul %p, %v {weft.layer = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Not causal; softmax dim written as 3; 1/sqrt(8) is not an f32 value, so
// the fused op keeps its default scale 1/sqrt(head_dim) (no attribute).
// CHECK-LABEL: func.func @mha_default_scale
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x2x8x8xf64>, %[[K:[^:]+]]: tensor<2x2x8x8xf64>, %[[V:[^:]+]]: tensor<2x2x8x4xf64>)
// CHECK-NEXT: %[[O:.+]] = weft.attention %[[Q]], %[[K]], %[[V]] : (tensor<2x2x8x8xf64>, tensor<2x2x8x8xf64>, tensor<2x2x8x4xf64>) -> tensor<2x2x8x4xf64>
// CHECK-NEXT: return %[[O]]
func.func @mha_default_scale(%q: tensor<2x2x8x8xf64>, %k: tensor<2x2x8x8xf64>, %v: tensor<2x2x8x4xf64>) -> tensor<2x2x8x4xf64> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<2x2x8x8xf64>, tensor<2x2x8x8xf64>) -> tensor<2x2x8x8xf64>
  %t = weft.scale %s {value = 0.35355339059327373 : f64} : (tensor<2x2x8x8xf64>) -> tensor<2x2x8x8xf64>
  %p = weft.softmax %t {dim = 3 : i64} : (tensor<2x2x8x8xf64>) -> tensor<2x2x8x8xf64>
  %o = weft.matmul %p, %v : (tensor<2x2x8x8xf64>, tensor<2x2x8x4xf64>) -> tensor<2x2x8x4xf64>
  return %o : tensor<2x2x8x4xf64>
}

// -----

// No scale op: scale 1.
// CHECK-LABEL: func.func @no_scale
// CHECK: weft.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {scale = 1.000000e+00 : f32}
// CHECK-NOT: weft.softmax
func.func @no_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %s {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Dropout on the probabilities: its p, seed and weft.rng_id move to the op.
// CHECK-LABEL: func.func @mha_dropout
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x8x16xf32>, %[[K:[^:]+]]: tensor<1x4x8x16xf32>, %[[V:[^:]+]]: tensor<1x4x8x16xf32>, %[[SEED:[^:]+]]: tensor<i64>)
// CHECK-NEXT: %[[O:.+]] = weft.attention %[[Q]], %[[K]], %[[V]], %[[SEED]] {causal, dropout_p = 1.000000e-01 : f64, scale = 2.500000e-01 : f32, weft.rng_id = 7 : i64}
// CHECK-NOT: weft.dropout
// CHECK-NOT: weft.softmax
// CHECK-NEXT: return %[[O]]
func.func @mha_dropout(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>, %seed: tensor<i64>) -> tensor<1x4x8x16xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %t = weft.scale %s {value = 0.25 : f64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %m = weft.causal_mask %t : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p = weft.softmax %m {dim = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %d = weft.dropout %p, %seed {p = 0.1 : f64, weft.rng_id = 7 : i64} : (tensor<1x4x8x8xf32>, tensor<i64>) -> tensor<1x4x8x8xf32>
  %o = weft.matmul %d, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// A dropout of p = 0 keeps every element: no seed, no dropout on the op.
// CHECK-LABEL: func.func @dropout_zero
// CHECK: weft.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ,]+}} {scale = 2.500000e-01 : f32} :
// CHECK-NOT: weft.dropout
func.func @dropout_zero(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>, %seed: tensor<i64>) -> tensor<1x4x8x16xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %t = weft.scale %s {value = 0.25 : f64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %d = weft.dropout %p, %seed {p = 0.0 : f64, weft.rng_id = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<i64>) -> tensor<1x4x8x8xf32>
  %o = weft.matmul %d, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// K^T as an explicit transpose of K's last two dims.
// CHECK-LABEL: func.func @explicit_transpose
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x8x16xf32>, %[[K:[^:]+]]: tensor<1x4x8x16xf32>, %[[V:[^:]+]]: tensor<1x4x8x16xf32>)
// CHECK-NEXT: %[[O:.+]] = weft.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f32}
// CHECK-NOT: weft.transpose
// CHECK-NEXT: return %[[O]]
func.func @explicit_transpose(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %kt = weft.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x8x16xf32>) -> tensor<1x4x16x8xf32>
  %s = weft.matmul %q, %kt : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
  %t = weft.scale %s {value = 0.25 : f64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %m = weft.causal_mask %t : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p = weft.softmax %m {dim = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = weft.matmul %p, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// GQA as the model generator writes it (4 q heads, 2 kv heads): each kv head
// repeated twice consecutively by reshape -> concat -> reshape. The fused op
// reads the 2-head K and V; the repetition is dead and goes.
// CHECK-LABEL: func.func @gqa
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x8x16xf32>, %[[K:[^:]+]]: tensor<2x2x8x16xf32>, %[[V:[^:]+]]: tensor<2x2x8x16xf32>)
// CHECK-NEXT: %[[O:.+]] = weft.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f32} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NOT: weft.concat
// CHECK-NOT: weft.reshape
// CHECK-NEXT: return %[[O]]
func.func @gqa(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %k1 = weft.reshape %k : (tensor<2x2x8x16xf32>) -> tensor<2x2x1x8x16xf32>
  %k2 = weft.concat %k1, %k1 {dim = 2 : i64} : (tensor<2x2x1x8x16xf32>, tensor<2x2x1x8x16xf32>) -> tensor<2x2x2x8x16xf32>
  %kr = weft.reshape %k2 : (tensor<2x2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %v1 = weft.reshape %v : (tensor<2x2x8x16xf32>) -> tensor<2x2x1x8x16xf32>
  %v2 = weft.concat %v1, %v1 {dim = 2 : i64} : (tensor<2x2x1x8x16xf32>, tensor<2x2x1x8x16xf32>) -> tensor<2x2x2x8x16xf32>
  %vr = weft.reshape %v2 : (tensor<2x2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %s = weft.matmul %q, %kr {transpose_b} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %t = weft.scale %s {value = 0.25 : f64} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %m = weft.causal_mask %t : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = weft.softmax %m {dim = -1 : i64} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %o = weft.matmul %p, %vr : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// GQA with K^T as an explicit transpose of the repeated K, and dropout.
// CHECK-LABEL: func.func @gqa_transpose_dropout
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x6x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>, %[[SEED:[^:]+]]: tensor<i64>)
// CHECK-NEXT: weft.attention %[[Q]], %[[K]], %[[V]], %[[SEED]] {dropout_p = 2.500000e-01 : f64, scale = 5.000000e-01 : f32, weft.rng_id = 4 : i64} : (tensor<1x6x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<i64>) -> tensor<1x6x4x8xf32>
func.func @gqa_transpose_dropout(%q: tensor<1x6x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %seed: tensor<i64>) -> tensor<1x6x4x8xf32> {
  %k1 = weft.reshape %k : (tensor<1x2x4x8xf32>) -> tensor<1x2x1x4x8xf32>
  %k2 = weft.concat %k1, %k1, %k1 {dim = -3 : i64} : (tensor<1x2x1x4x8xf32>, tensor<1x2x1x4x8xf32>, tensor<1x2x1x4x8xf32>) -> tensor<1x2x3x4x8xf32>
  %kr = weft.reshape %k2 : (tensor<1x2x3x4x8xf32>) -> tensor<1x6x4x8xf32>
  %kt = weft.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x6x4x8xf32>) -> tensor<1x6x8x4xf32>
  %v1 = weft.reshape %v : (tensor<1x2x4x8xf32>) -> tensor<1x2x1x4x8xf32>
  %v2 = weft.concat %v1, %v1, %v1 {dim = 2 : i64} : (tensor<1x2x1x4x8xf32>, tensor<1x2x1x4x8xf32>, tensor<1x2x1x4x8xf32>) -> tensor<1x2x3x4x8xf32>
  %vr = weft.reshape %v2 : (tensor<1x2x3x4x8xf32>) -> tensor<1x6x4x8xf32>
  %s = weft.matmul %q, %kt : (tensor<1x6x4x8xf32>, tensor<1x6x8x4xf32>) -> tensor<1x6x4x4xf32>
  %t = weft.scale %s {value = 0.5 : f64} : (tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %d = weft.dropout %p, %seed {p = 0.25 : f64, weft.rng_id = 4 : i64} : (tensor<1x6x4x4xf32>, tensor<i64>) -> tensor<1x6x4x4xf32>
  %o = weft.matmul %d, %vr : (tensor<1x6x4x4xf32>, tensor<1x6x4x8xf32>) -> tensor<1x6x4x8xf32>
  return %o : tensor<1x6x4x8xf32>
}

// -----

// MQA written two ways: one kv head repeated by reshape/concat/reshape (K),
// and by concat along the head dim (V).
// CHECK-LABEL: func.func @mqa
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x8x16xbf16>, %[[K:[^:]+]]: tensor<1x1x8x16xbf16>, %[[V:[^:]+]]: tensor<1x1x8x16xbf16>)
// CHECK-NEXT: weft.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f32} : (tensor<1x4x8x16xbf16>, tensor<1x1x8x16xbf16>, tensor<1x1x8x16xbf16>) -> tensor<1x4x8x16xbf16>
// CHECK-NOT: weft.concat
func.func @mqa(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x1x8x16xbf16>, %v: tensor<1x1x8x16xbf16>) -> tensor<1x4x8x16xbf16> {
  %k1 = weft.reshape %k : (tensor<1x1x8x16xbf16>) -> tensor<1x1x1x8x16xbf16>
  %k2 = weft.concat %k1, %k1, %k1, %k1 {dim = 2 : i64} : (tensor<1x1x1x8x16xbf16>, tensor<1x1x1x8x16xbf16>, tensor<1x1x1x8x16xbf16>, tensor<1x1x1x8x16xbf16>) -> tensor<1x1x4x8x16xbf16>
  %kr = weft.reshape %k2 : (tensor<1x1x4x8x16xbf16>) -> tensor<1x4x8x16xbf16>
  %vr = weft.concat %v, %v, %v, %v {dim = 1 : i64} : (tensor<1x1x8x16xbf16>, tensor<1x1x8x16xbf16>, tensor<1x1x8x16xbf16>, tensor<1x1x8x16xbf16>) -> tensor<1x4x8x16xbf16>
  %s = weft.matmul %q, %kr {transpose_b} : (tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>) -> tensor<1x4x8x8xbf16>
  %t = weft.scale %s {value = 0.25 : f64} : (tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  %m = weft.causal_mask %t : (tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  %p = weft.softmax %m {dim = -1 : i64} : (tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  %o = weft.matmul %p, %vr : (tensor<1x4x8x8xbf16>, tensor<1x4x8x16xbf16>) -> tensor<1x4x8x16xbf16>
  return %o : tensor<1x4x8x16xbf16>
}

// -----

// A repeated K whose repetition has another user: the fused op still reads
// the 2-head K, and the repetition stays for its other user.
// CHECK-LABEL: func.func @gqa_repetition_used_elsewhere
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>)
// CHECK: %[[KR:.+]] = weft.reshape %{{.+}} : (tensor<1x2x2x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK: %[[O:.+]] = weft.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f32}
// CHECK-NOT: weft.softmax
// CHECK: return %[[O]], %[[KR]]
func.func @gqa_repetition_used_elsewhere(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) {
  %k1 = weft.reshape %k : (tensor<1x2x4x8xf32>) -> tensor<1x2x1x4x8xf32>
  %k2 = weft.concat %k1, %k1 {dim = 2 : i64} : (tensor<1x2x1x4x8xf32>, tensor<1x2x1x4x8xf32>) -> tensor<1x2x2x4x8xf32>
  %kr = weft.reshape %k2 : (tensor<1x2x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %v1 = weft.reshape %v : (tensor<1x2x4x8xf32>) -> tensor<1x2x1x4x8xf32>
  %v2 = weft.concat %v1, %v1 {dim = 2 : i64} : (tensor<1x2x1x4x8xf32>, tensor<1x2x1x4x8xf32>) -> tensor<1x2x2x4x8xf32>
  %vr = weft.reshape %v2 : (tensor<1x2x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %s = weft.matmul %q, %kr {transpose_b} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x4xf32>
  %t = weft.scale %s {value = 0.5 : f64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = weft.matmul %p, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o, %kr : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>
}

// -----

// K repeated as GQA but V given with all q heads: weft.attention needs equal
// kv heads, so it reads both [b, hq, s, d] operands as they are.
// CHECK-LABEL: func.func @gqa_k_only
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x4x4x8xf32>)
// CHECK: %[[KR:.+]] = weft.reshape %{{.+}} : (tensor<1x2x2x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: weft.attention %[[Q]], %[[KR]], %[[V]] {scale = 5.000000e-01 : f32}
func.func @gqa_k_only(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %k1 = weft.reshape %k : (tensor<1x2x4x8xf32>) -> tensor<1x2x1x4x8xf32>
  %k2 = weft.concat %k1, %k1 {dim = 2 : i64} : (tensor<1x2x1x4x8xf32>, tensor<1x2x1x4x8xf32>) -> tensor<1x2x2x4x8xf32>
  %kr = weft.reshape %k2 : (tensor<1x2x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %s = weft.matmul %q, %kr {transpose_b} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x4xf32>
  %t = weft.scale %s {value = 0.5 : f64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// K and V concatenated from different values are genuine [b, h, s, d]
// operands: plain MHA over them.
// CHECK-LABEL: func.func @kv_concat_of_distinct_heads
// CHECK: %[[KC:.+]] = weft.concat
// CHECK: %[[VC:.+]] = weft.concat
// CHECK-NEXT: weft.attention %{{[^ ]+}}, %[[KC]], %[[VC]] {scale = 5.000000e-01 : f32}
func.func @kv_concat_of_distinct_heads(%q: tensor<1x4x4x8xf32>, %ka: tensor<1x2x4x8xf32>, %kb: tensor<1x2x4x8xf32>, %va: tensor<1x2x4x8xf32>, %vb: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %kc = weft.concat %ka, %kb {dim = 1 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %vc = weft.concat %va, %vb {dim = 1 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %s = weft.matmul %q, %kc {transpose_b} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x4xf32>
  %t = weft.scale %s {value = 0.5 : f64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = weft.matmul %p, %vc : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// In f32 IR a scale that is neither an f32 value nor 1/sqrt(d) is rounded to
// f32 (within the rounding the f32 chain already has).
// CHECK-LABEL: func.func @f32_rounded_scale
// CHECK: weft.attention {{.+}} {scale = 1.000000e-01 : f32}
// CHECK-NOT: weft.softmax
func.func @f32_rounded_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %t = weft.scale %s {value = 0.1 : f64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Two chains in one function: both fuse.
// CHECK-LABEL: func.func @two_chains
// CHECK-COUNT-2: weft.attention
// CHECK-NOT: weft.softmax
func.func @two_chains(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %s {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %s2 = weft.matmul %o, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m2 = weft.causal_mask %s2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = weft.softmax %m2 {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o2 = weft.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o2 : tensor<1x2x4x8xf32>
}

//===----------------------------------------------------------------------===//
// Chains that must stay unfused.
//===----------------------------------------------------------------------===//

// -----

// Scale after the softmax.
// CHECK-LABEL: func.func @scale_after_softmax
// CHECK-NOT: weft.attention
// CHECK: weft.softmax
// CHECK: weft.scale
func.func @scale_after_softmax(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %s {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %t = weft.scale %p {value = 0.5 : f64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %t, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Mask before scale: not the recognised order.
// CHECK-LABEL: func.func @mask_before_scale
// CHECK-NOT: weft.attention
// CHECK: weft.causal_mask
// CHECK: weft.scale
// CHECK: weft.softmax
func.func @mask_before_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m = weft.causal_mask %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %t = weft.scale %m {value = 0.5 : f64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A mask filling with a finite value, or 0 (the masking's gradient).
// CHECK-LABEL: func.func @mask_fill_finite
// CHECK-NOT: weft.attention
// CHECK: weft.causal_mask %{{.+}} {fill = -1.000000e+09 : f64}
// CHECK: weft.causal_mask %{{.+}} {fill = 0.000000e+00 : f64}
func.func @mask_fill_finite(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m = weft.causal_mask %s {fill = -1.0e9 : f64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %m {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %s2 = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m2 = weft.causal_mask %s2 {fill = 0.0 : f64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = weft.softmax %m2 {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o2 = weft.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %o2 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// Softmax over the query dim.
// CHECK-LABEL: func.func @softmax_dim
// CHECK-NOT: weft.attention
// CHECK: weft.softmax %{{.+}} {dim = 2 : i64}
func.func @softmax_dim(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %s {dim = 2 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Dropout before the softmax.
// CHECK-LABEL: func.func @dropout_before_softmax
// CHECK-NOT: weft.attention
// CHECK: weft.dropout
// CHECK: weft.softmax
func.func @dropout_before_softmax(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %seed: tensor<i64>) -> tensor<1x2x4x8xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %d = weft.dropout %s, %seed {p = 0.1 : f64, weft.rng_id = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %d {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Intermediates with other users: the scores, and the probabilities.
// CHECK-LABEL: func.func @scores_used_elsewhere
// CHECK-NOT: weft.attention
// CHECK: weft.softmax
func.func @scores_used_elsewhere(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %t = weft.scale %s {value = 0.5 : f64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %s : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @probs_used_elsewhere
// CHECK-NOT: weft.attention
// CHECK: weft.dropout
func.func @probs_used_elsewhere(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %seed: tensor<i64>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %s {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d = weft.dropout %p, %seed {p = 0.1 : f64, weft.rng_id = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %d, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %p : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// Element types change inside the chain (bf16 scores, softmax in f32).
// CHECK-LABEL: func.func @mixed_element_types
// CHECK-NOT: weft.attention
// CHECK: weft.softmax
func.func @mixed_element_types(%q: tensor<1x2x4x8xbf16>, %k: tensor<1x2x4x8xbf16>, %v: tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>) -> tensor<1x2x4x4xbf16>
  %w = weft.convert %s : (tensor<1x2x4x4xbf16>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %w {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %n = weft.convert %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xbf16>
  %o = weft.matmul %n, %v : (tensor<1x2x4x4xbf16>, tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16>
  return %o : tensor<1x2x4x8xbf16>
}

// -----

// Kv heads tiled (torch's repeat: q head h reads kv head h mod 2), not
// repeat_interleave's order: stays.
// CHECK-LABEL: func.func @tiled_repetition
// CHECK-NOT: weft.attention
// CHECK: weft.softmax
func.func @tiled_repetition(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %kr = weft.concat %k, %k {dim = 1 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %vr = weft.concat %v, %v {dim = 1 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %s = weft.matmul %q, %kr {transpose_b} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x4xf32>
  %t = weft.scale %s {value = 0.5 : f64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = weft.matmul %p, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// Repetition whose groups are not consecutive: [b, g, hkv] merged as heads.
// CHECK-LABEL: func.func @group_major_repetition
// CHECK-NOT: weft.attention
// CHECK: weft.softmax
func.func @group_major_repetition(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %k1 = weft.reshape %k : (tensor<1x2x4x8xf32>) -> tensor<1x1x2x4x8xf32>
  %k2 = weft.concat %k1, %k1 {dim = 1 : i64} : (tensor<1x1x2x4x8xf32>, tensor<1x1x2x4x8xf32>) -> tensor<1x2x2x4x8xf32>
  %kr = weft.reshape %k2 : (tensor<1x2x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %v1 = weft.reshape %v : (tensor<1x2x4x8xf32>) -> tensor<1x2x1x4x8xf32>
  %v2 = weft.concat %v1, %v1 {dim = 2 : i64} : (tensor<1x2x1x4x8xf32>, tensor<1x2x1x4x8xf32>) -> tensor<1x2x2x4x8xf32>
  %vr = weft.reshape %v2 : (tensor<1x2x2x4x8xf32>) -> tensor<1x4x4x8xf32>
  %s = weft.matmul %q, %kr {transpose_b} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x4xf32>
  %t = weft.scale %s {value = 0.5 : f64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = weft.matmul %p, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// In f64 IR a scale that no f32 attribute nor the default reproduces.
// CHECK-LABEL: func.func @f64_inexact_scale
// CHECK-NOT: weft.attention
// CHECK: weft.scale %{{.+}} {value = 1.000000e-01 : f64}
func.func @f64_inexact_scale(%q: tensor<1x2x4x8xf64>, %k: tensor<1x2x4x8xf64>, %v: tensor<1x2x4x8xf64>) -> tensor<1x2x4x8xf64> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf64>, tensor<1x2x4x8xf64>) -> tensor<1x2x4x4xf64>
  %t = weft.scale %s {value = 0.1 : f64} : (tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64>
  %p = weft.softmax %t {dim = -1 : i64} : (tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64>
  %o = weft.matmul %p, %v : (tensor<1x2x4x4xf64>, tensor<1x2x4x8xf64>) -> tensor<1x2x4x8xf64>
  return %o : tensor<1x2x4x8xf64>
}

// -----

// P V with V transposed, and Q K without a transpose (K given as [b,h,d,s]
// but not as a transpose op): neither is the chain.
// CHECK-LABEL: func.func @other_matmuls
// CHECK-NOT: weft.attention
// CHECK-COUNT-2: weft.softmax
func.func @other_matmuls(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %vt: tensor<1x2x8x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.softmax %s {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = weft.matmul %p, %vt {transpose_b} : (tensor<1x2x4x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x8xf32>
  %s2 = weft.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = weft.softmax %s2 {dim = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o2 = weft.matmul %p2, %k : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %o2 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// Rank-3 operands ([b*h, s, d]) are not the [b, h, s, d] form.
// CHECK-LABEL: func.func @rank3
// CHECK-NOT: weft.attention
// CHECK: weft.softmax
func.func @rank3(%q: tensor<8x4x8xf32>, %k: tensor<8x4x8xf32>, %v: tensor<8x4x8xf32>) -> tensor<8x4x8xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<8x4x8xf32>, tensor<8x4x8xf32>) -> tensor<8x4x4xf32>
  %p = weft.softmax %s {dim = -1 : i64} : (tensor<8x4x4xf32>) -> tensor<8x4x4xf32>
  %o = weft.matmul %p, %v : (tensor<8x4x4xf32>, tensor<8x4x8xf32>) -> tensor<8x4x8xf32>
  return %o : tensor<8x4x8xf32>
}

// -----

// causal_mask is top-left; weft.attention's causal is bottom-right, the same
// mask only when q and k lengths are equal: 2 queries over 8 keys stay unfused.
// CHECK-LABEL: func.func @causal_q_shorter
// CHECK: weft.causal_mask
// CHECK-NOT: weft.attention
func.func @causal_q_shorter(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x2x16xf32> {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<1x4x2x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x2x8xf32>
  %t = weft.scale %s {value = 0.25 : f64} : (tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32>
  %m = weft.causal_mask %t : (tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32>
  %p = weft.softmax %m {dim = -1 : i64} : (tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32>
  %o = weft.matmul %p, %v : (tensor<1x4x2x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x2x16xf32>
  return %o : tensor<1x4x2x16xf32>
}
