// weft-fill-collective-waits: a collective that the ops before its first
// reader do not hide (the sequence-parallel backward's all-gather after a
// norm's gradient) gets a weight gradient's GEMM moved behind it; a GEMM
// whose result is read before the collective, or one that already hides an
// earlier collective, stays. The step computes the same values.
// RUN: weft-opt %s --weft-fill-collective-waits=keep-peak=false | FileCheck %s
// RUN: weft-opt %s --weft-fill-collective-waits | FileCheck %s --check-prefix=PEAK
// RUN: not weft-opt %s --weft-fill-collective-waits=bus-bytes-per-second=0 2>&1 | FileCheck %s --check-prefix=BAD

// The 2-block GPT step at tp = 2 with SP; its collectives are tiny, so a slow
// link and no size floor make every one need hiding: values are unchanged.
// RUN: weft-opt %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --weft-autodiff --weft-place="grid=tp=2 sequence-parallel func=forward_step" --weft-partition=sequence-parallel --weft-hoist-collectives -o %t.part.mlir
// RUN: weft-opt %t.part.mlir --weft-fill-collective-waits="bus-bytes-per-second=1e6 min-share=0 keep-peak=false" -o %t.fill.mlir
// RUN: FileCheck %s --check-prefix=SMALL < %t.fill.mlir
// RUN: weft-run %t.part.mlir --entry forward_step --random-inputs --seed 5 --outputs %t.out.npz > /dev/null
// RUN: weft-run %t.fill.mlir --entry forward_step --random-inputs --seed 5 --expect %t.out.npz --rtol 1e-12 | FileCheck %s --check-prefix=SAME

// The anchor's whole step at tp = 2 with SP (weft-compile runs the pass after
// remat): 6 of the backward's 8 data-gradient all-gathers get a weight
// gradient behind them (the last block's two have none in the backward
// before them: its first weight gradient precedes the backward's start, the
// first *_grad op); without the pass none.
// RUN: weft-compile %S/Inputs/anchor_gpt_4x4096.mlir --entry forward --train --grid=tp=2 --sequence-parallel --fuse-elementwise --fold-attention-layout -o %t.anchor.mlir
// RUN: grep -A1 "shard.all_gather .* gather_axis = 1 " %t.anchor.mlir | grep -c "weft.matmul .*transpose_a" | FileCheck %s --check-prefix=ANCHOR
// RUN: weft-compile %S/Inputs/anchor_gpt_4x4096.mlir --entry forward --train --grid=tp=2 --sequence-parallel --fuse-elementwise --fold-attention-layout --fill-collective-waits=false -o %t.off.mlir
// RUN: grep -A1 "shard.all_gather .* gather_axis = 1 " %t.off.mlir | not grep "weft.matmul .*transpose_a"

// CHECK-LABEL: func.func @norm_then_gather
// CHECK: %[[DX:[0-9]+]] = weft.matmul %arg2, %arg3 :
// CHECK-NEXT: %[[RS:.*]] = shard.reduce_scatter %[[DX]]
// CHECK-NEXT: %[[DW1:[0-9]+]] = weft.matmul %arg2, %arg4 {transpose_a}
// CHECK-NEXT: %[[N:[0-9]+]] = weft.scale %[[RS]]
// CHECK-NEXT: %[[G:.*]] = shard.all_gather %[[N]]
// CHECK-NEXT: %[[DW0:[0-9]+]] = weft.matmul %arg0, %arg1 {transpose_a}
// CHECK-NEXT: %[[NEXT:[0-9]+]] = weft.matmul %[[G]], %arg3
// CHECK: return %{{[0-9]+}}, %[[DW0]], %[[DW1]]

// CHECK-LABEL: func.func @read_before
// CHECK: weft.matmul %arg0, %arg1 {transpose_a}
// CHECK-NEXT: shard.all_gather

// Moving dw0 there raises this function's planned peak: by default it stays.
// PEAK-LABEL: func.func @norm_then_gather
// PEAK-NEXT: weft.matmul %arg0, %arg1 {transpose_a}
// PEAK: shard.all_gather
// PEAK-NEXT: weft.matmul

// BAD: error: weft-fill-collective-waits: bus-bytes-per-second must be positive and min-share at least 0, got 0.000000e+00 and 1.000000e-01

// SMALL-LABEL: func.func @forward_step
// SMALL: shard.all_gather {{.*}} gather_axis = 0 {weft.layer = 0 : i64}
// SMALL-NEXT: weft.gelu_grad
// SAME: expect: all results match {{.*}} (max abs err=0, max rel err=0)

// ANCHOR: 6

module {
  shard.grid @grid(shape = 2) {weft.axis_names = ["tp"]}
  // A weight gradient of the block below (dw0) is done before the norm; the
  // data gradient's reduce-scatter hides behind dw1; the all-gather after
  // the norm has nothing beside it until dw0 moves there.
  func.func @norm_then_gather(%dy0: tensor<8192x1024xbf16>, %x0: tensor<8192x1024xbf16>, %dy: tensor<8192x8192xbf16>, %w: tensor<8192x4096xbf16>, %x: tensor<8192x4096xbf16>) -> (tensor<8192x4096xbf16>, tensor<1024x1024xbf16>, tensor<8192x4096xbf16>) attributes {weft.grid = @grid} {
    %dw0 = weft.matmul %dy0, %x0 {transpose_a} : (tensor<8192x1024xbf16>, tensor<8192x1024xbf16>) -> tensor<1024x1024xbf16>
    %dx = weft.matmul %dy, %w : (tensor<8192x8192xbf16>, tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
    %rs = shard.reduce_scatter %dx on @grid grid_axes = [0] scatter_axis = 0 : tensor<8192x4096xbf16> -> tensor<4096x4096xbf16>
    %dw1 = weft.matmul %dy, %x {transpose_a} : (tensor<8192x8192xbf16>, tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
    %n = weft.scale %rs {value = 2.0 : f64} : (tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
    %g = shard.all_gather %n on @grid grid_axes = [0] gather_axis = 0 : tensor<4096x4096xbf16> -> tensor<8192x4096xbf16>
    %next = weft.matmul %g, %w {transpose_b} : (tensor<8192x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<8192x8192xbf16>
    %r = weft.reshape %next : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
    %o = weft.matmul %r, %w : (tensor<8192x8192xbf16>, tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
    return %o, %dw0, %dw1 : tensor<8192x4096xbf16>, tensor<1024x1024xbf16>, tensor<8192x4096xbf16>
  }
  // The weight gradient's result is read before the collective: it stays.
  func.func @read_before(%dy0: tensor<8192x4096xbf16>, %x0: tensor<8192x4096xbf16>, %n: tensor<4096x4096xbf16>, %w: tensor<8192x4096xbf16>) -> (tensor<8192x8192xbf16>, tensor<4096x4096xbf16>) attributes {weft.grid = @grid} {
    %dw0 = weft.matmul %dy0, %x0 {transpose_a} : (tensor<8192x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<4096x4096xbf16>
    %s = weft.scale %dw0 {value = 2.0 : f64} : (tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
    %g = shard.all_gather %n on @grid grid_axes = [0] gather_axis = 0 : tensor<4096x4096xbf16> -> tensor<8192x4096xbf16>
    %next = weft.matmul %g, %w {transpose_b} : (tensor<8192x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<8192x8192xbf16>
    return %next, %s : tensor<8192x8192xbf16>, tensor<4096x4096xbf16>
  }
}
