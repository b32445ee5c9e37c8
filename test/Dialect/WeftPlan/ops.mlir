// RUN: weft-opt %s | FileCheck %s
// RUN: weft-opt %s | weft-opt | FileCheck %s

// Every op round-trips; x and z share bytes [0, 512) but are never live at
// the same schedule index, so the step verifies.
// CHECK-LABEL: weft_plan.step @train arena 1280 align 256 arch "sm_90a" version 2 steps 3 streams 2 {
// CHECK: weft_plan.buffer @x offset 0 size 512 live[0, 1] "input" : tensor<16x16xbf16> {arg = 0 : i64}
// CHECK: weft_plan.buffer @z offset 0 size 512 live[2, 2] "output" {result = 0 : i64}
// CHECK: weft_plan.kernel @relu image "relu_image" entry "relu_entry" params ["ptr", "ptr", "i32", "f32"]
// CHECK: weft_plan.gemm @y = @x, @x bias @b m 16 n 16 k 16 dtype "bf16" stream 0 at 0 {epilogue = "bias", trans_b}
// CHECK: weft_plan.record_event stream 0 event 3 at 0
// CHECK: weft_plan.wait_event stream 1 event 3 at 1
// CHECK: weft_plan.launch @relu [@x, @y, 256 : i32, 5.000000e-01 : f32] grid [1, 2, 3] block [256, 1, 1] smem 1024 stream 1 at 1
// CHECK: weft_plan.launch @relu [@y, @z, 1 : i32, 0.000000e+00 : f32] grid [1, 1, 1] block [32, 1, 1] smem 0 stream 0 at 2
weft_plan.step @train arena 1280 align 256 arch "sm_90a" version 2 steps 3 streams 2 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input" : tensor<16x16xbf16> {arg = 0 : i64}
  weft_plan.buffer @y offset 512 size 512 live [0, 2] "activation"
  weft_plan.buffer @b offset 1024 size 32 live [0, 0] "parameter"
  weft_plan.buffer @z offset 0 size 512 live [2, 2] "output" {result = 0 : i64}
  weft_plan.kernel @relu image "relu_image" entry "relu_entry" params ["ptr", "ptr", "i32", "f32"]
  weft_plan.gemm @y = @x, @x bias @b m 16 n 16 k 16 dtype "bf16" stream 0 at 0 {trans_b, epilogue = "bias"}
  weft_plan.record_event stream 0 event 3 at 0
  weft_plan.wait_event stream 1 event 3 at 1
  weft_plan.launch @relu [@x, @y, 256 : i32, 0.5 : f32] grid [1, 2, 3] block [256, 1, 1] smem 1024 stream 1 at 1
  weft_plan.launch @relu [@y, @z, 1 : i32, 0.0 : f32] grid [1, 1, 1] block [32, 1, 1] smem 0 stream 0 at 2
}
