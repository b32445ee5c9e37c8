// RUN: weft-opt %s --split-input-file --weft-plan-memory --weft-build-plan | FileCheck %s

// weft.gemm_workspace = 4 MiB: each GEMM owns a planned cuBLASLt workspace,
// min(cap, max(1 MiB, 16 bytes per output element)), live only at its own
// schedule index, so the two workspaces share the arena's bytes.
func.func @gemms(%x: tensor<4x256x64xbf16>, %w: tensor<512x64xbf16> {weft.param},
                 %w2: tensor<64x512xbf16> {weft.param}) -> tensor<4x256x64xbf16>
    attributes {weft.gemm_workspace = 4194304 : i64} {
  %h = weft.linear %x, %w : (tensor<4x256x64xbf16>, tensor<512x64xbf16>) -> tensor<4x256x512xbf16>
  %y = weft.linear %h, %w2 : (tensor<4x256x512xbf16>, tensor<64x512xbf16>) -> tensor<4x256x64xbf16>
  return %y : tensor<4x256x64xbf16>
}
// 1024 x 512 outputs * 16 = 8 MiB, capped at 4 MiB; 1024 x 64 * 16 = 1 MiB.
// CHECK-LABEL: weft_plan.step @gemms_plan
// CHECK-DAG: weft_plan.buffer @ws0 offset [[OFF:[0-9]+]] size 4194304 live[0, 0] "workspace"
// CHECK-DAG: weft_plan.buffer @ws1 offset [[OFF]] size 1048576 live[1, 1] "workspace"
// CHECK: weft_plan.gemm @s0 = @arg0, @arg1 workspace @ws0 m 1024 n 512 k 64 dtype "bf16" stream 0 at 0 {trans_b}
// CHECK: weft_plan.gemm @s1 = @s0, @arg2 workspace @ws1 m 1024 n 64 k 512 dtype "bf16" stream 0 at 1 {trans_b}

// -----

// Small GEMMs get at least 1 MiB; batched matmuls and a linear's bias too.
func.func @small(%q: tensor<2x2x16x64xf16>, %k: tensor<2x2x16x64xf16>,
                 %x: tensor<8x32xf16>, %w: tensor<16x32xf16> {weft.param},
                 %b: tensor<16xf16> {weft.param})
    -> (tensor<2x2x16x16xf16>, tensor<8x16xf16>)
    attributes {weft.gemm_workspace = 33554432 : i64} {
  %s = weft.matmul %q, %k {transpose_b} : (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) -> tensor<2x2x16x16xf16>
  %y = weft.linear %x, %w, %b : (tensor<8x32xf16>, tensor<16x32xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  return %s, %y : tensor<2x2x16x16xf16>, tensor<8x16xf16>
}
// CHECK-LABEL: weft_plan.step @small_plan
// CHECK-DAG: weft_plan.buffer @ws0 offset {{[0-9]+}} size 1048576 live[0, 0] "workspace"
// CHECK-DAG: weft_plan.buffer @ws1 offset {{[0-9]+}} size 1048576 live[1, 1] "workspace"
// CHECK: weft_plan.gemm @s0 = @arg0, @arg1 workspace @ws0 m 16 n 16 k 64 dtype "f16" stream 0 at 0 {batch = 4 : i64, strides = array<i64: 1024, 1024, 256, 256>, trans_b}
// CHECK: weft_plan.gemm @s1 = @arg2, @arg3 bias @arg4 workspace @ws1 m 8 n 16 k 32 dtype "f16" stream 0 at 1 {epilogue = "bias", trans_b}

// -----

// Without weft.gemm_workspace no workspace is planned (a step not meant for
// cuBLASLt keeps its memory plan).
func.func @none(%x: tensor<8x32xbf16>, %w: tensor<16x32xbf16> {weft.param}) -> tensor<8x16xbf16> {
  %y = weft.linear %x, %w : (tensor<8x32xbf16>, tensor<16x32xbf16>) -> tensor<8x16xbf16>
  return %y : tensor<8x16xbf16>
}
// CHECK-LABEL: weft_plan.step @none_plan
// CHECK-NOT: "workspace"
// CHECK: weft_plan.gemm @s0 = @arg0, @arg1 m 8 n 16 k 32 dtype "bf16" stream 0 at 0 {trans_b}
