// RUN: weft-opt %s --weft-plan-memory --weft-build-plan | FileCheck %s
// RUN: weft-opt %s --weft-plan-memory --weft-build-plan="block-q=128 block-k=32 arch=sm_90" | FileCheck %s --check-prefix=TILES

// A linear with bias, a pointwise op, attention and a batched matmul.
func.func @block(%x: tensor<2x16x128xbf16>, %w: tensor<384x128xbf16> {weft.param},
                 %b: tensor<384xbf16> {weft.param}, %q: tensor<2x2x16x64xbf16>,
                 %k: tensor<2x2x16x64xbf16>, %v: tensor<2x2x16x64xbf16>)
    -> (tensor<2x16x384xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x16xbf16>) {
  %y = weft.linear %x, %w, %b : (tensor<2x16x128xbf16>, tensor<384x128xbf16>, tensor<384xbf16>) -> tensor<2x16x384xbf16>
  %g = weft.gelu %y : (tensor<2x16x384xbf16>) -> tensor<2x16x384xbf16>
  %o, %lse = weft.attention %q, %k, %v {causal} : (tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>) -> (tensor<2x2x16x64xbf16>, tensor<2x2x16xf32>)
  %s = weft.matmul %q, %k {transpose_b} : (tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>) -> tensor<2x2x16x16xbf16>
  return %g, %o, %s : tensor<2x16x384xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x16xbf16>
}

// The step keeps the planner's arena and alignment; 5 schedule indices (4
// ops and the return). Arguments live throughout (inputs), results to the
// end (outputs).
// CHECK-LABEL: weft_plan.step @block_plan arena {{[0-9]+}} align 256 arch "sm_90a" version 2 steps 5 streams 1 {
// CHECK-DAG: weft_plan.buffer @arg0 offset {{[0-9]+}} size 8192 live[0, 0] "input" : tensor<2x16x128xbf16> {arg = 0 : i64}
// CHECK-DAG: weft_plan.buffer @arg1 offset {{[0-9]+}} size 98304 live[0, 4] "parameter" : tensor<384x128xbf16> {arg = 1 : i64}
// CHECK-DAG: weft_plan.buffer @s1 offset {{[0-9]+}} size 24576 live[1, 4] "output" : tensor<2x16x384xbf16> {result = 0 : i64}
// lse: 2 x 2 x 16 f32 = 256 bytes, a temporary nobody reads after the op.
// CHECK-DAG: weft_plan.buffer @s2_1 offset {{[0-9]+}} size 256 live[2, 2] "temporary" : tensor<2x2x16xf32>
// CHECK: weft_plan.kernel @weft_gelu_1 image "weft_gelu_1" entry "weft_gelu_1" params ["ptr", "ptr"]
// CHECK: weft_plan.kernel @weft_attn_forward_bf16_d64_causal_q64_k64 image "weft_attention_bf16_d64_causal_q64_k64" entry "weft_attn_forward_bf16_d64_causal_q64_k64" params ["ptr", "ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32", "f32"]
// linear: y[32, 384] = x[32, 128] w[384, 128]^T + b, the bias epilogue.
// CHECK: weft_plan.gemm @s0 = @arg0, @arg1 bias @arg2 m 32 n 384 k 128 dtype "bf16" stream 0 at 0 {epilogue = "bias", trans_b}
// gelu: ElementwiseToNVVM's pointwise kernel, 8 bf16 per thread and step
// (16-byte vectors), 2 * 16 * 384 / 8 / 256 = 6 blocks.
// CHECK: weft_plan.launch @weft_gelu_1 [@s0, @s1] grid [6, 1, 1] block [256, 1, 1] smem 0 stream 0 at 1
// attention: grid (ceil(16 / 64), heads 2, batch 2), 4 warps, scale 1/sqrt(64).
// CHECK: weft_plan.launch @weft_attn_forward_bf16_d64_causal_q64_k64 [@arg3, @arg4, @arg5, @s2_0, @s2_1, 2 : i32, 2 : i32, 2 : i32, 16 : i32, 16 : i32, 1.250000e-01 : f32] grid [1, 2, 2] block [128, 1, 1] smem {{[0-9]+}} stream 0 at 2
// q k^T per (batch, head): 4 GEMMs of [16, 64] x [16, 64]^T, strided.
// CHECK: weft_plan.gemm @s3 = @arg3, @arg4 m 16 n 16 k 64 dtype "bf16" stream 0 at 3 {batch = 4 : i64, strides = array<i64: 1024, 1024, 256, 256>, trans_b}
// CHECK-NOT: weft_plan.launch
// CHECK: }

// TILES: weft_plan.step @block_plan {{.*}} arch "sm_90" version 2
// TILES: weft_plan.launch @weft_attn_forward_bf16_d64_causal_q128_k32 {{.*}} grid [1, 2, 2] block [256, 1, 1]
