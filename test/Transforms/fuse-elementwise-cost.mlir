// RUN: weft-opt %s --weft-fuse-elementwise --weft-print-cost -o /dev/null | FileCheck %s

// A group costs its ops' FLOPs but moves only its inputs and results:
// add (64 FLOPs) + tanh GELU (10 per element, 640) = 704 FLOPs; bytes are the
// [4,16] input (256), the [16] bias (64) and the [4,16] result (256) = 576,
// where the unfused ops move 576 + 512 = 1088 (the sum is written and read
// back). The body's ops are still listed after the group.
// CHECK: weft.fused: flops=704 bytes=576 workspace=0 {{.*}} result_bytes=256
// CHECK-NEXT: weft.add: flops=64 bytes=576
// CHECK-NEXT: weft.gelu: flops=640 bytes=512
func.func @bias_gelu(%x: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %s = weft.add %x, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = weft.gelu %s {approximate = "tanh"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}
