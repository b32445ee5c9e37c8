// RUN: weft-opt %s --weft-plan-memory --weft-build-plan | FileCheck %s

// Dropout inside attention: the kernels' names carry the keep threshold
// floor(0.1 * 2^32) = 429496729 and the rng_id, so units of other p or
// rng_id never share them; the forward, dK/dV and dQ kernels take the seed's
// buffer last (the delta preprocess draws nothing).
func.func @dropout_attention(%q: tensor<2x4x64x64xbf16>, %k: tensor<2x2x64x64xbf16>,
                             %v: tensor<2x2x64x64xbf16>, %do: tensor<2x4x64x64xbf16>,
                             %seed: tensor<i64>)
    -> (tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>) {
  %o, %lse = weft.attention %q, %k, %v, %seed {causal, dropout_p = 0.1 : f64, weft.rng_id = 7 : i64} : (tensor<2x4x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<i64>) -> (tensor<2x4x64x64xbf16>, tensor<2x4x64xf32>)
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse, %seed {causal, dropout_p = 0.1 : f64, weft.rng_id = 7 : i64} : (tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x4x64xf32>, tensor<i64>) -> (tensor<2x4x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>
}
// CHECK-LABEL: weft_plan.step @dropout_attention_plan
// CHECK: weft_plan.kernel @weft_attn_forward_bf16_d64_causal_q64_k64_drop429496729_r7 image "weft_attention_bf16_d64_causal_q64_k64_drop429496729_r7" entry "weft_attn_forward_bf16_d64_causal_q64_k64_drop429496729_r7" params ["ptr", "ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32", "f32", "ptr"]
// CHECK: weft_plan.kernel @weft_attn_backward_preprocess_bf16_d64_causal_q64_k64_drop429496729_r7 {{.*}} params ["ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32", "f32"]
// CHECK: weft_plan.kernel @weft_attn_backward_dkdv_bf16_d64_causal_q64_k64_drop429496729_r7 {{.*}} params ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32", "f32", "ptr"]
// CHECK: weft_plan.kernel @weft_attn_backward_dq_bf16_d64_causal_q64_k64_drop429496729_r7 {{.*}} params ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32", "f32", "ptr"]
// The seed is argument 4: the forward's last argument and the backward's.
// CHECK: weft_plan.launch @weft_attn_forward_bf16_d64_causal_q64_k64_drop429496729_r7 [@arg0, @arg1, @arg2, {{@[a-z0-9_]+}}, {{@[a-z0-9_]+}}, 2 : i32, 4 : i32, 2 : i32, 64 : i32, 64 : i32, 1.250000e-01 : f32, @arg4]
// CHECK: weft_plan.launch @weft_attn_backward_preprocess_bf16_d64_causal_q64_k64_drop429496729_r7 [{{[^]]*}}1.250000e-01 : f32]
// CHECK: weft_plan.launch @weft_attn_backward_dkdv_bf16_d64_causal_q64_k64_drop429496729_r7 [{{[^]]*}}1.250000e-01 : f32, @arg4]
// CHECK: weft_plan.launch @weft_attn_backward_dq_bf16_d64_causal_q64_k64_drop429496729_r7 [{{[^]]*}}1.250000e-01 : f32, @arg4]
