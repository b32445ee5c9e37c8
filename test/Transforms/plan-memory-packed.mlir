// RUN: weft-opt %s --split-input-file --weft-plan-memory="alignment=64" | FileCheck %s
// The split of a packed [b, s, (hq + 2 hk) d] tensor whose pieces are read
// only as q, k, v of seq-major attention is a view: the pieces share the
// source's buffer (one offset). So does the concat of an attention_grad's
// dq, dk, dv into the packed gradient.

// CHECK-LABEL: func.func @packed
// CHECK: weft.split {{.*}}weft.offsets = array<i64: [[QKV:[0-9]+]], [[QKV]], [[QKV]]>
// CHECK: weft.attention_grad {{.*}}weft.offsets = array<i64: [[D:[0-9]+]], [[D]], [[D]]>
// CHECK: weft.concat {{.*}}weft.offsets = array<i64: [[D]]>
func.func @packed(%qkv: tensor<1x16x64xbf16>, %do: tensor<1x16x4x8xbf16>) -> tensor<1x16x64xbf16> {
  %q2, %k2, %v2 = weft.split %qkv {dim = 2 : i64, sizes = array<i64: 32, 16, 16>} : (tensor<1x16x64xbf16>) -> (tensor<1x16x32xbf16>, tensor<1x16x16xbf16>, tensor<1x16x16xbf16>)
  %q = weft.reshape %q2 : (tensor<1x16x32xbf16>) -> tensor<1x16x4x8xbf16>
  %k = weft.reshape %k2 : (tensor<1x16x16xbf16>) -> tensor<1x16x2x8xbf16>
  %v = weft.reshape %v2 : (tensor<1x16x16xbf16>) -> tensor<1x16x2x8xbf16>
  %o, %lse = weft.attention %q, %k, %v {causal, seq_major} : (tensor<1x16x4x8xbf16>, tensor<1x16x2x8xbf16>, tensor<1x16x2x8xbf16>) -> (tensor<1x16x4x8xbf16>, tensor<1x4x16xf32>)
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal, seq_major} : (tensor<1x16x4x8xbf16>, tensor<1x16x4x8xbf16>, tensor<1x16x2x8xbf16>, tensor<1x16x2x8xbf16>, tensor<1x16x4x8xbf16>, tensor<1x4x16xf32>) -> (tensor<1x16x4x8xbf16>, tensor<1x16x2x8xbf16>, tensor<1x16x2x8xbf16>)
  %dq2 = weft.reshape %dq : (tensor<1x16x4x8xbf16>) -> tensor<1x16x32xbf16>
  %dk2 = weft.reshape %dk : (tensor<1x16x2x8xbf16>) -> tensor<1x16x16xbf16>
  %dv2 = weft.reshape %dv : (tensor<1x16x2x8xbf16>) -> tensor<1x16x16xbf16>
  %d = weft.concat %dq2, %dk2, %dv2 {dim = 2 : i64} : (tensor<1x16x32xbf16>, tensor<1x16x16xbf16>, tensor<1x16x16xbf16>) -> tensor<1x16x64xbf16>
  return %d : tensor<1x16x64xbf16>
}

// -----

// A piece read by anything else (here an add) is a copy: three buffers. A
// head-major attention reads copies too.
// RUN: weft-opt %s --split-input-file --weft-plan-memory="alignment=64" | %python -c "import re, sys; splits = re.findall(r'weft.split .*weft.offsets = array<i64: ([0-9, ]+)>', sys.stdin.read()); print([len(set(s.split(', '))) for s in splits])" | FileCheck %s --check-prefix=DISTINCT
// DISTINCT: [1, 3]
// CHECK-LABEL: func.func @not_only_attention
func.func @not_only_attention(%qkv: tensor<1x16x64xbf16>) -> (tensor<1x16x4x8xbf16>, tensor<1x16x32xbf16>) {
  %q2, %k2, %v2 = weft.split %qkv {dim = 2 : i64, sizes = array<i64: 32, 16, 16>} : (tensor<1x16x64xbf16>) -> (tensor<1x16x32xbf16>, tensor<1x16x16xbf16>, tensor<1x16x16xbf16>)
  %q = weft.reshape %q2 : (tensor<1x16x32xbf16>) -> tensor<1x16x4x8xbf16>
  %k = weft.reshape %k2 : (tensor<1x16x16xbf16>) -> tensor<1x16x2x8xbf16>
  %v = weft.reshape %v2 : (tensor<1x16x16xbf16>) -> tensor<1x16x2x8xbf16>
  %o = weft.attention %q, %k, %v {causal, seq_major} : (tensor<1x16x4x8xbf16>, tensor<1x16x2x8xbf16>, tensor<1x16x2x8xbf16>) -> tensor<1x16x4x8xbf16>
  %s = weft.add %q2, %q2 : (tensor<1x16x32xbf16>, tensor<1x16x32xbf16>) -> tensor<1x16x32xbf16>
  return %o, %s : tensor<1x16x4x8xbf16>, tensor<1x16x32xbf16>
}
