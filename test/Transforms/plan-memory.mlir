// RUN: weft-opt %s --weft-plan-memory="alignment=64" | FileCheck %s
// RUN: weft-opt %s --weft-plan-memory="alignment=64 report=%t.json" -o /dev/null
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON
// RUN: weft-opt %s --weft-plan-memory="entry=train_step" | FileCheck %s --check-prefix=STEP
// Planning twice gives the same plan (the pass overwrites its attributes).
// RUN: weft-opt %s --weft-plan-memory="alignment=64" --weft-plan-memory="alignment=64" | FileCheck %s

// A chain of 64-byte tensors. Steps: 0 gelu, 1 silu, 2 gelu, 3 return.
// Lifetimes: x [0,0], a [0,1], b [1,2], c [2,3]: two buffers live at steps
// 0..2, so max-live = 128; x and b never meet, nor a and c, so they share
// bytes and the peak is 128 too (fragmentation 0).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%arg0: tensor<16xf32> {weft.offset = [[X:[0-9]+]] : i64})
// CHECK-SAME: backward_start = 4
// CHECK-SAME: categories = {gradients = {at_peak = 0 : i64, total = 0 : i64}, inputs = {at_peak = 64 : i64, total = 64 : i64}
// CHECK-SAME: temporaries = {at_peak = 64 : i64, total = 192 : i64}
// CHECK-SAME: fragmentation = 0.000000e+00 : f64, lower_bound_bytes = 128 : i64, lower_bound_step = 0 : i64, peak_bytes = 128 : i64
// CHECK: weft.gelu %arg0 {weft.offsets = array<i64: [[A:[0-9]+]]>}
// CHECK: weft.silu %{{.*}} {weft.offsets = array<i64: [[X]]>}
// CHECK: weft.gelu %{{.*}} {weft.offsets = array<i64: [[A]]>}
// JSON: "chain": {
// JSON-NEXT: "peak_bytes": 128,
// JSON-NEXT: "lower_bound_bytes": 128,
// JSON: "buffers": [
// JSON-NEXT: {
// JSON-NEXT: "value": "%arg0",
// JSON-NEXT: "offset": [[JX:[0-9]+]],
// JSON-NEXT: "size": 64,
// JSON-NEXT: "start": 0,
// JSON-NEXT: "end": 0,
// JSON-NEXT: "category": "inputs"
// JSON: "value": "%0",
// JSON: "value": "%1",
// JSON-NEXT: "offset": [[JX]],
// JSON-NEXT: "size": 64,
// JSON-NEXT: "start": 1,
// JSON-NEXT: "end": 2,
// JSON-NEXT: "category": "temporaries"
func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = weft.gelu %x : (tensor<16xf32>) -> tensor<16xf32>
  %b = weft.silu %a : (tensor<16xf32>) -> tensor<16xf32>
  %c = weft.gelu %b : (tensor<16xf32>) -> tensor<16xf32>
  return %c : tensor<16xf32>
}

// attention_grad (step 0, the backward's start) with a workspace, and a
// reshape view (step 1) of dq. q, k, v, dout, out are [1, 2, 4, 8] f32 =
// 256 bytes; lse [1, 2, 4] f32 = 32 bytes, 64 aligned. The workspace is
// only the f32 row statistic rowsum(dO * O), b * hq * sq = 1 * 2 * 4 = 8
// rows: 4 * 8 = 32 bytes, 64 aligned (no f32 dQ accumulator: dQ stays in
// registers per query block). Everything is live at step 0: 5 * 256 + 64
// (inputs) + 3 * 256 (dq, dk, dv) + 64 = 2176 = max-live = peak. The view
// shares dq's offset.
// dq is returned: a gradient; dk and dv are unused temporaries.
// CHECK-LABEL: func.func @attention_backward
// CHECK-SAME: backward_start = 0
// CHECK-SAME: gradients = {at_peak = 256 : i64, total = 256 : i64}, inputs = {at_peak = 1344 : i64, total = 1344 : i64}
// CHECK-SAME: temporaries = {at_peak = 512 : i64, total = 512 : i64}, workspaces = {at_peak = 64 : i64, total = 64 : i64}
// CHECK-SAME: lower_bound_bytes = 2176 : i64, lower_bound_step = 0 : i64, peak_bytes = 2176 : i64
// CHECK: weft.attention_grad
// CHECK-SAME: weft.offsets = array<i64: [[DQ:[0-9]+]], {{[0-9]+}}, {{[0-9]+}}>, weft.workspace_offset = {{[0-9]+}} : i64
// CHECK: weft.reshape %{{.*}} {weft.offsets = array<i64: [[DQ]]>}
// JSON: "attention_backward": {
// JSON-NEXT: "peak_bytes": 2176,
// JSON: "value": "workspace of weft.attention_grad at step 0",
// JSON-NEXT: "offset":
// JSON-NEXT: "size": 32,
// JSON-NEXT: "start": 0,
// JSON-NEXT: "end": 0,
// JSON-NEXT: "category": "workspaces"
func.func @attention_backward(%do: tensor<1x2x4x8xf32>, %q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %o: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>) -> tensor<64xf32> {
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  %r = weft.reshape %dq : (tensor<1x2x4x8xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// A training step with AdamW, planned alone (entry=) with the default
// alignment of 256 bytes. Steps: 0 linear, 1 gelu, 2 reduce_sum (the
// loss), 3 gelu_grad (the backward starts: first *_grad op, and the op after
// the loss), 4 matmul (dw), 5 adamw, 6 return. The adamw results are tied
// to w, m, v by weft.alias: written in place, no buffer of their own; w, m,
// v live through the whole step. Every tensor rounds up to one 256-byte
// slot (alignment 256): w, m, v [0,6]; t [0,5]; x [0,4]; h [0,3] and g [1,3]
// (saved: made in the forward, read by gelu_grad); loss l [2,6]; dh [3,4];
// dw [4,5] (a gradient: the optimizer's operand).
// Live slots per step: 6, 7, 8, 9, 8, 6, 4, so max-live = 9 * 256 = 2304 at
// step 3, where: parameters w; optimizer_state m, v; inputs t, x;
// saved_activations h, g; temporaries l, dh.
// STEP-LABEL: func.func @train_step
// STEP-SAME: (%arg0: tensor<8x8xf32> {weft.offset = [[W:[0-9]+]] : i64, weft.param}, %arg1: tensor<8x8xf32> {weft.offset = [[M:[0-9]+]] : i64}, %arg2: tensor<8x8xf32> {weft.offset = [[V:[0-9]+]] : i64}
// STEP-SAME: backward_start = 3
// STEP-SAME: categories = {gradients = {at_peak = 0 : i64, total = 256 : i64}, inputs = {at_peak = 512 : i64, total = 512 : i64}, optimizer_state = {at_peak = 512 : i64, total = 512 : i64}, parameters = {at_peak = 256 : i64, total = 256 : i64}, saved_activations = {at_peak = 512 : i64, total = 512 : i64}, temporaries = {at_peak = 512 : i64, total = 512 : i64}, workspaces = {at_peak = 0 : i64, total = 0 : i64}}
// STEP-SAME: lower_bound_bytes = 2304 : i64, lower_bound_step = 3 : i64, peak_bytes = 2304 : i64
// STEP: weft.adamw %arg0, %{{.*}}, %arg1, %arg2, %arg3
// STEP-SAME: weft.offsets = array<i64: [[W]], [[M]], [[V]]>
func.func @train_step(%w: tensor<8x8xf32> {weft.param}, %m: tensor<8x8xf32>, %v: tensor<8x8xf32>, %t: tensor<i64>, %x: tensor<4x8xf32>)
    -> (tensor<f32>, tensor<8x8xf32> {weft.alias = 0 : i64}, tensor<8x8xf32> {weft.alias = 1 : i64}, tensor<8x8xf32> {weft.alias = 2 : i64}) {
  %h = weft.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %g = weft.gelu %h : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %g {dims = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  %dh = weft.gelu_grad %g, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dw = weft.matmul %dh, %x {transpose_a} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %w1, %m1, %v1 = weft.adamw %w, %dw, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<i64>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>)
  return %l, %w1, %m1, %v1 : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
