// RUN: weft-opt %s --split-input-file --weft-fuse-elementwise | FileCheck %s --enable-var-scope

// bias + GELU: the bias [n] is an input broadcast over rows; the matmul stays
// outside; the group's one result replaces the gelu.
// CHECK-LABEL: func.func @bias_gelu
// CHECK: %[[MM:.*]] = weft.matmul
// CHECK: %[[G:.*]] = weft.fused %[[MM]], %arg2 {kind = "add+gelu"}
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x16xf32>, %[[B:.*]]: tensor<16xf32>):
// CHECK-NEXT: %[[S:.*]] = weft.add %[[X]], %[[B]]
// CHECK-NEXT: %[[Y:.*]] = weft.gelu %[[S]]
// CHECK-NEXT: weft.yield %[[Y]] : tensor<4x16xf32>
// CHECK: weft.matmul %[[G]]
func.func @bias_gelu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %mm = weft.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = weft.add %mm, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = weft.gelu %s {approximate = "tanh"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %o = weft.matmul %g, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// dropout + residual add + LayerNorm: the residual sum is used after the
// group (the next residual), so it is a result next to the norm.
// CHECK-LABEL: func.func @dropout_add_layer_norm
// CHECK: %[[F:.*]]:2 = weft.fused %arg0, %arg1, %arg2, %arg3, %arg4 {kind = "dropout+add+layer_norm"}
// CHECK: weft.dropout {{.*}}weft.rng_id = 5
// CHECK: weft.yield
// CHECK: %[[P:.*]] = weft.linear %[[F]]#1
// CHECK: weft.fused %[[F]]#0, %[[P]] {kind = "add"}
func.func @dropout_add_layer_norm(%h: tensor<2x4x8xf32>, %seed: tensor<i64>, %res: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %d = weft.dropout %h, %seed {p = 0.1 : f64, weft.rng_id = 5 : i64} : (tensor<2x4x8xf32>, tensor<i64>) -> tensor<2x4x8xf32>
  %r = weft.add %res, %d : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n = weft.layer_norm %r, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %p = weft.linear %n, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %o = weft.add %r, %p : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// The residual add after the linear reads both the group's sum (%r) and the
// linear's output, which depends on the group: fusing it in would make a
// cycle (group -> linear -> group), so it forms its own group. A weft.layer
// boundary also separates groups.
// CHECK-LABEL: func.func @no_cycle_no_layer_mix
// CHECK: weft.fused {{.*}}{kind = "add+rms_norm", weft.layer = 0 : i64}
// CHECK: weft.linear
// CHECK: weft.fused {{.*}}{kind = "add", weft.layer = 0 : i64}
// CHECK: weft.fused {{.*}}{kind = "rms_norm", weft.layer = 1 : i64}
func.func @no_cycle_no_layer_mix(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %r = weft.add %x, %y {weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = weft.rms_norm %r, %g {weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %p = weft.linear %n, %w {weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %o = weft.add %r, %p {weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = weft.rms_norm %o, %g {weft.layer = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

// -----

// The group {scale, add, softmax} sits where its last member was: the
// embedding and reduction its add reads move before it, the matmul reading
// its scale moves after it, so every value is defined before its uses.
// CHECK-LABEL: func.func @resorted
// CHECK: weft.embedding
// CHECK: %[[E:.*]] = weft.reduce_sum
// CHECK: %[[F:.*]]:2 = weft.fused %arg0, %[[E]] {kind = "scale+add+softmax"}
// CHECK: %[[M:.*]] = weft.matmul %[[F]]#0, %arg0 {transpose_b}
// CHECK: %[[MM:.*]] = weft.matmul %[[M]], %arg0
// CHECK: return %[[MM]], %[[F]]#1
func.func @resorted(%x: tensor<4x8xf32>, %ids: tensor<4x8xi64>, %t: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = weft.scale %x {value = 2.0 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = weft.matmul %s, %x {transpose_b} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %e = weft.embedding %ids, %t : (tensor<4x8xi64>, tensor<16x8xf32>) -> tensor<4x8x8xf32>
  %e2 = weft.reduce_sum %e {dims = array<i64: 2>} : (tensor<4x8x8xf32>) -> tensor<4x8xf32>
  %a = weft.add %s, %e2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = weft.softmax %a {dim = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = weft.matmul %m, %x : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %mm, %p : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Not fused: a softmax over a leading dim, a broadcast operand that is not a
// row vector ([4x8] onto [2x4x8]), and shape ops.
// CHECK-LABEL: func.func @not_fusible
// CHECK-NOT: weft.fused
// CHECK: weft.softmax
// CHECK: weft.add
// CHECK: weft.reshape
// CHECK-NOT: weft.fused
func.func @not_fusible(%x: tensor<2x4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>) {
  %s = weft.softmax %x {dim = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %a = weft.add %s, %y : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %r = weft.reshape %a : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  return %a, %r : tensor<2x4x8xf32>, tensor<8x8xf32>
}

// -----

// Forward and backward stay apart (the backward starts at the first *_grad
// op); the cross-entropy gradient and the AdamW updates are groups; the
// gradient of the final norm joins the gradient accumulation after it.
// CHECK-LABEL: func.func @step
// CHECK: weft.fused {{.*}}{kind = "rms_norm"}
// CHECK: weft.fused {{.*}}{kind = "cross_entropy"}
// CHECK: weft.fused {{.*}}{kind = "cross_entropy_grad"}
// CHECK: weft.fused {{.*}}{kind = "rms_norm_grad+add"}
// CHECK: weft.fused {{.*}}{kind = "convert+adamw"}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: weft.convert
// CHECK-NEXT: weft.convert
// CHECK-NEXT: weft.adamw
func.func @step(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<16x8xf32>, %labels: tensor<4xi64>, %dres: tensor<4x8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) -> (tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %n = weft.rms_norm %x, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %logits = weft.linear %n, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %loss = weft.cross_entropy %logits, %labels : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dl = weft.cross_entropy_grad %one, %logits, %labels : (tensor<f32>, tensor<4x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %dn = weft.matmul %dl, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %dx, %dg = weft.rms_norm_grad %dn, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  %acc = weft.add %dx, %dres : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dg16 = weft.convert %dg : (tensor<8xf32>) -> tensor<8xbf16>
  %dg32 = weft.convert %dg16 : (tensor<8xbf16>) -> tensor<8xf32>
  %p1, %m1, %v1 = weft.adamw %g, %dg32, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %loss, %acc, %p1, %m1, %v1 : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// rope iterates over x's shape and reads its [s, d] tables as broadcast
// inputs: it joins a producer of that domain (the RMSNorm of q, as QK-norm
// models have it), and alone it is a group of its own; the transpose before
// it and the attention after it stay outside.
// CHECK-LABEL: func.func @rope
// CHECK: %[[T:.*]] = weft.transpose
// CHECK: %[[Q:.*]] = weft.fused %[[T]], %arg1, %arg2, %arg3 {kind = "rms_norm+rope"}
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<1x2x8x16xf32>, %[[G:.*]]: tensor<16xf32>, %[[C:.*]]: tensor<8x16xf32>, %[[S:.*]]: tensor<8x16xf32>):
// CHECK-NEXT: %[[N:.*]] = weft.rms_norm %[[X]], %[[G]]
// CHECK-NEXT: %[[R:.*]] = weft.rope %[[N]], %[[C]], %[[S]]
// CHECK-NEXT: weft.yield %[[R]] : tensor<1x2x8x16xf32>
// CHECK: %[[K:.*]] = weft.fused %arg4, %arg2, %arg3 {kind = "rope"}
// CHECK: weft.attention %[[Q]], %[[K]], %arg4
func.func @rope(%x: tensor<1x8x2x16xf32>, %g: tensor<16xf32>, %cos: tensor<8x16xf32>, %sin: tensor<8x16xf32>, %k: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %q = weft.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %n = weft.rms_norm %q, %g : (tensor<1x2x8x16xf32>, tensor<16xf32>) -> tensor<1x2x8x16xf32>
  %qr = weft.rope %n, %cos, %sin : (tensor<1x2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<1x2x8x16xf32>
  %kr = weft.rope %k, %cos, %sin : (tensor<1x2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = weft.attention %qr, %kr, %k : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
