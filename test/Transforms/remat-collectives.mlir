// weft-remat recomputes a collective like any forward op (Megatron re-gathers
// sequence shards in the backward) and charges it its communication time.
// A hand-written sequence-parallel step: the sequence shards are all-gathered
// over a grid of 2 before a linear layer.
//
// RUN: weft-opt %s --weft-remat="policy=full report=%t.json" | FileCheck %s
// RUN: FileCheck %s --input-file=%t.json --check-prefix=REPORT

// CHECK-LABEL: func.func @sp_step(
// CHECK: %[[ONES:.*]] = arith.constant
// CHECK-NEXT: %[[G:.*]] = shard.all_gather %arg1 on @grid grid_axes = [0] gather_axis = 0 {weft.layer = 0 : i64, weft.recompute}
// CHECK-NEXT: %[[Y:.*]] = weft.linear %[[G]], %arg0 {weft.layer = 0 : i64, weft.recompute}
// CHECK-NEXT: %[[DY:.*]] = weft.gelu_grad %[[ONES]], %[[Y]]
// CHECK-NEXT: weft.matmul %[[DY]], %[[G]] {transpose_a, weft.layer = 0 : i64}

// The all-gather's ring moves (2 - 1) / 2 of its 4x8 f32 result (128 bytes):
// 64 bus bytes at weft::LinkModel's 330e9 B/s plus its 45 us latency,
// 4.50001939e-05 s. The linear (2*4*8*8 = 512 FLOPs, 512 bytes) is
// memory-bound: 512 / 3.35e12 = 1.52836e-10 s. Together 4.50003468e-05 s.
// REPORT: "sp_step": {
// REPORT: "recompute_seconds": 4.500034677{{[0-9]*}}e-05,
// REPORT-NEXT: "recompute_flops": 512,
// REPORT-NEXT: "cloned_ops": 2,

shard.grid @grid(shape = 2)
func.func @sp_step(%w: tensor<8x8xf32> {weft.param}, %x: tensor<2x8xf32>) -> (tensor<f32>, tensor<8x8xf32>) {
  %g = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 {weft.layer = 0 : i64} : tensor<2x8xf32> -> tensor<4x8xf32>
  %y = weft.linear %g, %w {weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = weft.gelu %y {approximate = "tanh", weft.layer = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = weft.reduce_sum %z {dims = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  // The backward starts after the loss: gelu_grad reads the linear's output
  // and the weight gradient the gathered input.
  %ones = arith.constant dense<1.0> : tensor<4x8xf32>
  %dy = weft.gelu_grad %ones, %y {approximate = "tanh", weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dw = weft.matmul %dy, %g {transpose_a, weft.layer = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %loss, %dw : tensor<f32>, tensor<8x8xf32>
}
