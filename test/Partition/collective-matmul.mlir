// weft-collective-matmul: the all-gather before a column-parallel GEMM and
// the reduce-scatter after a row-parallel one (and after a column-parallel
// GEMM's input gradient) get a chunk count; a reduce-scatter moves to right
// after its GEMM. The step computes the same values, and weft-build-plan
// issues each chunk's collective on stream 1 beside the partial GEMMs of
// the chunk before (or after) it, at the row offsets of the chunk-by-chunk
// layout.
// RUN: weft-opt %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --weft-autodiff --weft-place="grid=tp=2 sequence-parallel func=forward_step" --weft-partition=sequence-parallel -o %t.part.mlir
// RUN: weft-opt %t.part.mlir --weft-collective-matmul=chunks=2 -o %t.chunked.mlir
// RUN: FileCheck %s < %t.chunked.mlir
// RUN: weft-run %t.part.mlir --entry forward_step --random-inputs --seed 5 --outputs %t.out.npz > /dev/null
// RUN: weft-run %t.chunked.mlir --entry forward_step --random-inputs --seed 5 --expect %t.out.npz --rtol 1e-12 | FileCheck %s --check-prefix=SAME
// The small step has 32 rows per rank: the cost model keeps 128 rows per
// partial GEMM, so it chunks nothing there.
// RUN: weft-opt %t.part.mlir --weft-collective-matmul -o - | FileCheck %s --check-prefix=AUTO
// RUN: weft-opt %t.part.mlir --weft-collective-matmul=chunks=0 -o - | FileCheck %s --check-prefix=AUTO
// The cost model: the anchor's GEMMs (seq 8192) keep their collectives
// whole (chunking them was measured slower); at seq 32768 the gather and
// the scatter take long enough that 2 chunks gain.
// RUN: weft-opt %s --split-input-file --weft-collective-matmul | FileCheck %s --check-prefix=LARGE
// With engine=copy-engine a gather's chunk costs 8 us instead of 50 (no
// NCCL kernels on the SMs): the anchor's gather gains from 2 chunks, the
// long one from 4; reduce-scatters stay on NCCL and are chunked as before.
// RUN: weft-opt %s --split-input-file --weft-collective-matmul=engine=copy-engine | FileCheck %s --check-prefix=CE
// RUN: not weft-opt %s --split-input-file --weft-collective-matmul=engine=ce 2>&1 | FileCheck %s --check-prefix=ENGINE
// The plan: partial GEMMs at their chunk's offsets.
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --emit=step --grid=tp=2 --sequence-parallel --collective-chunks=2 --fuse-elementwise --fuse-gemm-epilogue -o %t.step.mlir
// RUN: weft-opt %t.step.mlir --weft-build-plan | FileCheck %s --check-prefix=PLAN

// CHECK-LABEL: func.func @forward_step
// CHECK: shard.all_gather %{{.*}} {weft.chunks = 2 : i64, weft.layer = 0 : i64} : tensor<1x32x128xbf16> -> tensor<1x64x128xbf16>
// CHECK: %[[PROJ:[0-9]+]] = weft.linear %{{[0-9]+}}, %arg4
// CHECK-NEXT: shard.reduce_scatter %[[PROJ]] {{.*}}weft.chunks = 2
// The column-parallel input gradients' reduce-scatters, right after them.
// CHECK: %[[DX:[0-9]+]] = weft.matmul %{{[0-9]+}}, %arg8 {
// CHECK-NEXT: shard.reduce_scatter %[[DX]] {{.*}}weft.chunks = 2
// CHECK: %[[DQKV:[0-9]+]] = weft.matmul %{{[0-9]+}}, %arg2 {
// CHECK-NEXT: shard.reduce_scatter %[[DQKV]] {{.*}}weft.chunks = 2
// The backward's re-gathers feed two GEMMs (data and weight gradient): no chunks.
// CHECK-NOT: shard.all_gather {{.*}}weft.chunks{{.*}}weft.recompute

// SAME: expect: all results match {{.*}} (max abs err=0, max rel err=0)

// AUTO-NOT: weft.chunks

// LARGE-LABEL: func.func @anchor
// LARGE-NOT: weft.chunks
// LARGE-LABEL: func.func @long
// LARGE: shard.all_gather %arg0 {{.*}}weft.chunks = 2
// LARGE: shard.reduce_scatter %1 {{.*}}weft.chunks = 2
// LARGE-LABEL: func.func @two_readers
// LARGE-NOT: weft.chunks

// CE-LABEL: func.func @anchor
// CE: shard.all_gather %arg0 {{.*}}weft.chunks = 2
// CE-NOT: weft.chunks
// CE-LABEL: func.func @long
// CE: shard.all_gather %arg0 {{.*}}weft.chunks = 4
// CE: shard.reduce_scatter %1 {{.*}}weft.chunks = 2
// CE-LABEL: func.func @two_readers
// CE-NOT: weft.chunks

// ENGINE: error: weft-collective-matmul: engine 'ce' is not nccl or copy-engine

// Chunk c of the gathered qkv input (16 rows of each rank's 32): both
// ranks' rows at (c * 2 + r) * 16 of the gathered buffer, row
// (r * 2 + c) * 16 of the projection.
// PLAN: weft_plan.collective "all_gather" @[[X:s[0-9]+]] -> @[[G:s[0-9]+]] count 4096 {{.*}}stream 1 {{.*}}offsets = array<i64: 0, 0>
// PLAN-NEXT: weft_plan.record_event stream 1 event [[E0:[0-9]+]]
// PLAN-NEXT: weft_plan.collective "all_gather" @[[X]] -> @[[G]] count 4096 {{.*}}offsets = array<i64: 2048, 4096>
// PLAN-NEXT: weft_plan.record_event stream 1 event [[E1:[0-9]+]]
// PLAN-NEXT: weft_plan.wait_event stream 0 event [[E0]]
// PLAN-NEXT: weft_plan.gemm @[[Y:s[0-9]+]] = @[[G]], @arg2 {{.*}}m 16 n 192 k 128 {{.*}}offsets = array<i64: 0, 0, 0, 0, 0>
// PLAN-NEXT: weft_plan.gemm @[[Y]] = @[[G]], @arg2 {{.*}}offsets = array<i64: 2048, 0, 0, 6144, 0>
// PLAN-NEXT: weft_plan.wait_event stream 0 event [[E1]]
// PLAN-NEXT: weft_plan.gemm @[[Y]] = @[[G]], @arg2 {{.*}}offsets = array<i64: 4096, 0, 0, 3072, 0>
// PLAN-NEXT: weft_plan.gemm @[[Y]] = @[[G]], @arg2 {{.*}}offsets = array<i64: 6144, 0, 0, 9216, 0>
// The projection's partial sums, chunk by chunk, each reduce-scattered once
// its two partial GEMMs are done.
// PLAN: weft_plan.gemm @[[P:s[0-9]+]] = @{{s[0-9]+}}, @arg4 {{.*}}m 16 n 128 k 64 {{.*}}offsets = array<i64: 0, 0, 0, 0, 0>
// PLAN-NEXT: weft_plan.gemm @[[P]] = {{.*}}offsets = array<i64: 2048, 0, 0, 2048, 0>
// PLAN-NEXT: weft_plan.record_event stream 0 event [[R0:[0-9]+]]
// PLAN-NEXT: weft_plan.wait_event stream 1 event [[R0]]
// PLAN-NEXT: weft_plan.collective "reduce_scatter" @[[P]] -> @[[S:s[0-9]+]] count 4096 {{.*}}offsets = array<i64: 0, 0>
// PLAN-NEXT: weft_plan.gemm @[[P]] = {{.*}}offsets = array<i64: 1024, 0, 0, 4096, 0>
// PLAN-NEXT: weft_plan.gemm @[[P]] = {{.*}}offsets = array<i64: 3072, 0, 0, 6144, 0>
// PLAN-NEXT: weft_plan.record_event stream 0 event [[R1:[0-9]+]]
// PLAN-NEXT: weft_plan.wait_event stream 1 event [[R1]]
// PLAN-NEXT: weft_plan.collective "reduce_scatter" @[[P]] -> @[[S]] count 4096 {{.*}}offsets = array<i64: 4096, 2048>
// PLAN-NEXT: weft_plan.record_event stream 1

module {
  shard.grid @grid(shape = 2) {weft.axis_names = ["tp"]}
  func.func @anchor(%x: tensor<4096x4096xbf16>, %w: tensor<6144x4096xbf16>, %h: tensor<8192x2048xbf16>, %v: tensor<4096x2048xbf16>) -> (tensor<8192x6144xbf16>, tensor<4096x4096xbf16>) attributes {weft.grid = @grid} {
    %g = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4096x4096xbf16> -> tensor<8192x4096xbf16>
    %y = weft.linear %g, %w : (tensor<8192x4096xbf16>, tensor<6144x4096xbf16>) -> tensor<8192x6144xbf16>
    %p = weft.linear %h, %v : (tensor<8192x2048xbf16>, tensor<4096x2048xbf16>) -> tensor<8192x4096xbf16>
    %s = shard.reduce_scatter %p on @grid grid_axes = [0] scatter_axis = 0 : tensor<8192x4096xbf16> -> tensor<4096x4096xbf16>
    return %y, %s : tensor<8192x6144xbf16>, tensor<4096x4096xbf16>
  }
  func.func @long(%x: tensor<16384x4096xbf16>, %w: tensor<6144x4096xbf16>, %h: tensor<32768x2048xbf16>, %v: tensor<4096x2048xbf16>) -> (tensor<32768x6144xbf16>, tensor<16384x4096xbf16>) attributes {weft.grid = @grid} {
    %g = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<16384x4096xbf16> -> tensor<32768x4096xbf16>
    %y = weft.linear %g, %w : (tensor<32768x4096xbf16>, tensor<6144x4096xbf16>) -> tensor<32768x6144xbf16>
    %p = weft.linear %h, %v : (tensor<32768x2048xbf16>, tensor<4096x2048xbf16>) -> tensor<32768x4096xbf16>
    %s = shard.reduce_scatter %p on @grid grid_axes = [0] scatter_axis = 0 : tensor<32768x4096xbf16> -> tensor<16384x4096xbf16>
    return %y, %s : tensor<32768x6144xbf16>, tensor<16384x4096xbf16>
  }
}

// -----

// A gathered tensor two GEMMs read keeps the order both expect: no chunks.
module {
  shard.grid @grid(shape = 2) {weft.axis_names = ["tp"]}
  func.func @two_readers(%x: tensor<4096x4096xbf16>, %w: tensor<6144x4096xbf16>) -> (tensor<8192x6144xbf16>, tensor<8192x6144xbf16>) attributes {weft.grid = @grid} {
    %g = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4096x4096xbf16> -> tensor<8192x4096xbf16>
    %y = weft.linear %g, %w : (tensor<8192x4096xbf16>, tensor<6144x4096xbf16>) -> tensor<8192x6144xbf16>
    %z = weft.linear %g, %w : (tensor<8192x4096xbf16>, tensor<6144x4096xbf16>) -> tensor<8192x6144xbf16>
    return %y, %z : tensor<8192x6144xbf16>, tensor<8192x6144xbf16>
  }
}
