// RUN: weft-opt %s --split-input-file --weft-inference-step="gemm-workspace=1024" | FileCheck %s
// weft-inference-step clones the forward as @forward_step: same arguments
// (and their attributes), same results (two here, neither a loss), the ops
// no result depends on dropped, the GEMM workspace stamped.

// CHECK-LABEL: func.func @forward(
// CHECK: weft.cross_entropy
// CHECK-LABEL: func.func @forward_step(
// CHECK-SAME: %{{.*}}: tensor<8x4xbf16> {weft.param}, %{{.*}}: tensor<2x4xbf16>, %{{.*}}: tensor<2xi64>) -> (tensor<2x8xbf16>, tensor<2x8xbf16>)
// CHECK-SAME: weft.gemm_workspace = 1024 : i64
// CHECK: %[[Y:.*]] = weft.linear
// CHECK-NEXT: %[[G:.*]] = weft.gelu %[[Y]]
// CHECK-NEXT: return %[[Y]], %[[G]]
// CHECK-NOT: weft.cross_entropy
func.func @forward(%w: tensor<8x4xbf16> {weft.param}, %x: tensor<2x4xbf16>, %labels: tensor<2xi64>) -> (tensor<2x8xbf16>, tensor<2x8xbf16>) {
  %y = weft.linear %x, %w : (tensor<2x4xbf16>, tensor<8x4xbf16>) -> tensor<2x8xbf16>
  %g = weft.gelu %y {approximate = "tanh"} : (tensor<2x8xbf16>) -> tensor<2x8xbf16>
  %unused = weft.cross_entropy %g, %labels : (tensor<2x8xbf16>, tensor<2xi64>) -> tensor<bf16>
  return %y, %g : tensor<2x8xbf16>, tensor<2x8xbf16>
}
