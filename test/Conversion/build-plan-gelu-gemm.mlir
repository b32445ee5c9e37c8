// RUN: weft-opt %s --split-input-file --weft-fuse-gemm-epilogue --weft-plan-memory --weft-build-plan | FileCheck %s

// The MLP's fc1 with its tanh gelu, u also returned (read elsewhere): one
// GEMM, epilogue gelu_aux_bias, D the gelu's buffer and u the aux matrix
// (ld n = 64); no gelu kernel.
func.func @forward(%x: tensor<16x32xbf16>, %w: tensor<64x32xbf16>, %b: tensor<64xbf16>)
    -> (tensor<16x64xbf16>, tensor<16x64xbf16>)
    attributes {weft.gemm_workspace = 33554432 : i64} {
  %u = weft.linear %x, %w, %b : (tensor<16x32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %g = weft.gelu %u {approximate = "tanh"} : (tensor<16x64xbf16>) -> tensor<16x64xbf16>
  return %g, %u : tensor<16x64xbf16>, tensor<16x64xbf16>
}
// CHECK-LABEL: weft_plan.step @forward_plan
// CHECK-NOT: weft_plan.launch
// CHECK: weft_plan.gemm @[[G:[a-z0-9_]+]] = @arg0, @arg1 bias @arg2 workspace @ws0 aux @[[U:[a-z0-9_]+]] ld 64 m 16 n 64 k 32 dtype "bf16" stream 0 at 0 {epilogue = "gelu_aux_bias", trans_b}
// CHECK-NOT: weft_plan.launch
// CHECK-NOT: weft_plan.gemm

// -----

// Nobody else reads u: plain bias_gelu, no aux; without bias, gelu.
func.func @no_aux(%x: tensor<16x32xf16>, %w: tensor<64x32xf16>) -> tensor<16x64xf16>
    attributes {weft.gemm_workspace = 33554432 : i64} {
  %u = weft.linear %x, %w : (tensor<16x32xf16>, tensor<64x32xf16>) -> tensor<16x64xf16>
  %g = weft.gelu %u {approximate = "tanh"} : (tensor<16x64xf16>) -> tensor<16x64xf16>
  return %g : tensor<16x64xf16>
}
// CHECK-LABEL: weft_plan.step @no_aux_plan
// CHECK: weft_plan.gemm @{{[a-z0-9_]+}} = @arg0, @arg1 workspace @ws0 m 16 n 64 k 32 dtype "f16" stream 0 at 0 {epilogue = "gelu", trans_b}

// -----

// The backward: du = (dz [2x8 rows, 16] w2 [16, 64]) * gelu'(u): one GEMM
// over the 16 rows of dz, epilogue dgelu reading u (argument 2) as aux; dg
// is no buffer and no gelu_grad kernel runs.
func.func @backward(%dz: tensor<2x8x16xbf16>, %w2: tensor<16x64xbf16>, %u: tensor<2x8x64xbf16>)
    -> tensor<2x8x64xbf16>
    attributes {weft.gemm_workspace = 33554432 : i64} {
  %dg = weft.matmul %dz, %w2 : (tensor<2x8x16xbf16>, tensor<16x64xbf16>) -> tensor<2x8x64xbf16>
  %du = weft.gelu_grad %dg, %u {approximate = "tanh"} : (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>) -> tensor<2x8x64xbf16>
  return %du : tensor<2x8x64xbf16>
}
// CHECK-LABEL: weft_plan.step @backward_plan
// CHECK-COUNT-5: weft_plan.buffer
// CHECK-NOT: weft_plan.buffer
// CHECK-NOT: weft_plan.launch
// CHECK: weft_plan.gemm @[[DU:[a-z0-9_]+]] = @arg0, @arg1 workspace @ws0 aux @arg2 ld 64 m 16 n 64 k 16 dtype "bf16" stream 0 at 0 {epilogue = "dgelu"}
