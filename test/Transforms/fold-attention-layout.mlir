// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-fold-attention-layout))' | FileCheck %s
// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-fold-attention-layout))' --weft-diff-each-pass -o /dev/null
// RUN: weft-compile %S/Inputs/attention-block.mlir --entry forward --train --optimizer=adamw --fold-attention-layout --fuse-elementwise --weft-diff-each-pass | FileCheck %s --check-prefix=STEP
// Attention whose q, k and v are [b, s, h, d] tensors transposed to
// [b, h, s, d] reads them in place (seq_major); the transposes around it
// cancel. --weft-diff-each-pass checks the values stay the same on the
// reference interpreter.

// CHECK-LABEL: func.func @block
// CHECK-NOT: weft.transpose
// CHECK: %[[O:.*]] = weft.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, seq_major} : (tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) -> tensor<1x16x4x8xf32>
// CHECK-NOT: weft.transpose
// CHECK: weft.reshape %[[O]] : (tensor<1x16x4x8xf32>) -> tensor<1x16x32xf32>
func.func @block(%x: tensor<1x16x32xf32>, %w: tensor<64x32xf32>, %wo: tensor<32x32xf32>) -> tensor<1x16x32xf32> {
  %qkv = weft.linear %x, %w : (tensor<1x16x32xf32>, tensor<64x32xf32>) -> tensor<1x16x64xf32>
  %q2, %k2, %v2 = weft.split %qkv {dim = 2 : i64, sizes = array<i64: 32, 16, 16>} : (tensor<1x16x64xf32>) -> (tensor<1x16x32xf32>, tensor<1x16x16xf32>, tensor<1x16x16xf32>)
  %q3 = weft.reshape %q2 : (tensor<1x16x32xf32>) -> tensor<1x16x4x8xf32>
  %k3 = weft.reshape %k2 : (tensor<1x16x16xf32>) -> tensor<1x16x2x8xf32>
  %v3 = weft.reshape %v2 : (tensor<1x16x16xf32>) -> tensor<1x16x2x8xf32>
  %q = weft.transpose %q3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %k = weft.transpose %k3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x8xf32>) -> tensor<1x2x16x8xf32>
  %v = weft.transpose %v3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x8xf32>) -> tensor<1x2x16x8xf32>
  %o = weft.attention %q, %k, %v {causal} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  %ot = weft.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x16x8xf32>) -> tensor<1x16x4x8xf32>
  %o2 = weft.reshape %ot : (tensor<1x16x4x8xf32>) -> tensor<1x16x32xf32>
  %y = weft.linear %o2, %wo : (tensor<1x16x32xf32>, tensor<32x32xf32>) -> tensor<1x16x32xf32>
  return %y : tensor<1x16x32xf32>
}

// -----

// The gradient: dout and out arrive transposed too; dq, dk and dv leave
// seq-major and their transposes back cancel with the next ones.
// CHECK-LABEL: func.func @gradient
// CHECK-NOT: weft.transpose
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = weft.attention_grad %arg3, %arg0, %arg1, %arg2, %arg4, %arg5 {seq_major} : (tensor<1x16x4x8xf32>, tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x4x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>)
// CHECK-NOT: weft.transpose
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @gradient(%q3: tensor<1x16x4x8xf32>, %k3: tensor<1x16x2x8xf32>, %v3: tensor<1x16x2x8xf32>, %do3: tensor<1x16x4x8xf32>, %o3: tensor<1x16x4x8xf32>, %lse: tensor<1x4x16xf32>) -> (tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) {
  %q = weft.transpose %q3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %k = weft.transpose %k3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x8xf32>) -> tensor<1x2x16x8xf32>
  %v = weft.transpose %v3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x8xf32>) -> tensor<1x2x16x8xf32>
  %do = weft.transpose %do3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %o = weft.transpose %o3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  %dq3 = weft.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x16x8xf32>) -> tensor<1x16x4x8xf32>
  %dk3 = weft.transpose %dk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x16x8xf32>) -> tensor<1x16x2x8xf32>
  %dv3 = weft.transpose %dv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x16x8xf32>) -> tensor<1x16x2x8xf32>
  return %dq3, %dk3, %dv3 : tensor<1x16x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>
}

// -----

// Only q arrives transposed: nothing to gain, the op is left as it is.
// CHECK-LABEL: func.func @partial
// CHECK: weft.transpose
// CHECK: weft.attention %{{.*}}, %arg1, %arg2 : (
// CHECK-NOT: seq_major
func.func @partial(%q3: tensor<1x16x4x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32> {
  %q = weft.transpose %q3 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %o = weft.attention %q, %k, %v : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// The training step of a block (Inputs/attention-block.mlir): no transpose
// is left in the forward or the backward.
// STEP-LABEL: func.func @forward_step
// STEP-NOT: weft.transpose
// STEP: weft.attention {{.*}}seq_major
// STEP-NOT: weft.transpose
// STEP: weft.attention_grad {{.*}}seq_major
// STEP-NOT: weft.transpose
// STEP: return
