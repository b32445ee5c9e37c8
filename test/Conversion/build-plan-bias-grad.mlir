// RUN: weft-opt %s --split-input-file --weft-fuse-bias-grad --weft-plan-memory --weft-build-plan | FileCheck %s

// A linear's dW and db: one GEMM, dY [16, 32] (the 2x8x32 tensor's buffer:
// the reshape is a view) transposed times X [16, 24], epilogue bgrad_a with
// db in the bias slot, the GEMM's workspace planned for the group. No other
// entry: no reduce_sum kernel.
func.func @linear_backward(%dy: tensor<2x8x32xbf16>, %x: tensor<16x24xbf16>)
    -> (tensor<32x24xbf16>, tensor<32xbf16>)
    attributes {weft.gemm_workspace = 33554432 : i64} {
  %dy2 = weft.reshape %dy : (tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
  %dw = weft.matmul %dy2, %x {transpose_a} : (tensor<16x32xbf16>, tensor<16x24xbf16>) -> tensor<32x24xbf16>
  %db = weft.reduce_sum %dy {dims = array<i64: 0, 1>} : (tensor<2x8x32xbf16>) -> tensor<32xbf16>
  return %dw, %db : tensor<32x24xbf16>, tensor<32xbf16>
}
// CHECK-LABEL: weft_plan.step @linear_backward_plan
// CHECK-DAG: weft_plan.buffer @ws0 offset {{[0-9]+}} size 1048576 live[0, 0] "workspace"
// CHECK-DAG: weft_plan.buffer @[[DW:[a-z0-9_]+]] offset {{[0-9]+}} size 1536 live[0, 1] "output" : tensor<32x24xbf16>
// CHECK-DAG: weft_plan.buffer @[[DB:[a-z0-9_]+]] offset {{[0-9]+}} size 64 live[0, 1] "output" : tensor<32xbf16>
// CHECK-NOT: weft_plan.launch
// CHECK: weft_plan.gemm @[[DW]] = @arg0, @arg1 bias @[[DB]] workspace @ws0 m 32 n 24 k 16 dtype "bf16" stream 0 at 0 {epilogue = "bgrad_a", trans_a}
// CHECK-NOT: weft_plan.launch
// CHECK-NOT: weft_plan.gemm
