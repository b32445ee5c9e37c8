// weft-collective-matmul local-first: an all-gather before a GEMM stays
// whole on the communication stream while the GEMM runs the rank's own
// block of rows from the local shard; the other ranks' blocks follow the
// gather. The attribute changes no value; weft-build-plan gives the partial
// GEMMs rank-relative row blocks (rank_blocks), so one plan serves every
// rank, and each rank's resolved offsets are its own.
// RUN: weft-opt %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --weft-autodiff --weft-place="grid=tp=2 sequence-parallel func=forward_step" --weft-partition=sequence-parallel -o %t.part.mlir
// RUN: weft-opt %t.part.mlir --weft-collective-matmul=local-first=on -o %t.lf.mlir
// RUN: FileCheck %s < %t.lf.mlir
// RUN: FileCheck %s --check-prefix=REGATHER < %t.lf.mlir
// RUN: weft-run %t.part.mlir --entry forward_step --random-inputs --seed 5 --outputs %t.out.npz > /dev/null
// RUN: weft-run %t.lf.mlir --entry forward_step --random-inputs --seed 5 --expect %t.out.npz --rtol 1e-12 | FileCheck %s --check-prefix=SAME
// The small step has 32 rows per rank: auto asks for 128, and off is the default.
// RUN: weft-opt %t.part.mlir --weft-collective-matmul=local-first=auto -o - | FileCheck %s --check-prefix=NONE
// RUN: weft-opt %t.part.mlir --weft-collective-matmul -o - | FileCheck %s --check-prefix=NONE
// RUN: not weft-opt %t.part.mlir --weft-collective-matmul=local-first=yes -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// The cost model at the anchor's sizes (below).
// RUN: weft-opt %s --split-input-file --weft-collective-matmul=local-first=auto | FileCheck %s --check-prefix=AUTO
// The plan: the own block from the local shard before the wait, the other after it.
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --emit=step --grid=tp=2 --sequence-parallel --collective-local-first=on --fuse-elementwise --fuse-gemm-epilogue -o %t.step.mlir
// RUN: weft-opt %t.step.mlir --weft-build-plan | FileCheck %s --check-prefix=PLAN
// The package: every rank's offsets resolved from its position.
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --target=sm_90a --emit=package --grid=tp=2 --sequence-parallel --collective-local-first=on --tuning-table=none -o %t.weftpkg 2>/dev/null
// RUN: weft-run --check %t.weftpkg --allow-missing-images 2>/dev/null | FileCheck %s --check-prefix=CHECK-PKG
// RUN: weft-opt %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --weft-autodiff -o %t.global.mlir
// RUN: weft-run %t.global.mlir --entry forward_step --random-inputs --seed 3 --save-inputs %t.in.npz > /dev/null
// RUN: env WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 weft-run %t.weftpkg --dry-run --data %t.in.npz | FileCheck %s --check-prefix=RANK0
// RUN: env WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 weft-run %t.weftpkg --dry-run --data %t.in.npz | FileCheck %s --check-prefix=RANK1

// The forward's gathers before the qkv and fc1 GEMMs of both blocks, and
// the backward's gathers of the output gradients before the projection's
// and fc2's data gradients (their first readers; the weight gradients read
// the whole gather after). The re-gathers of the saved inputs (gather axis
// 0) feed only a transposed weight-gradient GEMM: left whole.
// CHECK-LABEL: func.func @forward_step
// CHECK-COUNT-8: shard.all_gather {{.*}}gather_axis = 1 {{.*}}weft.local_first
// CHECK-NOT: weft.local_first
// REGATHER: shard.all_gather {{.*}}gather_axis = 0
// REGATHER-NOT: gather_axis = 0 {{.*}}weft.local_first

// SAME: expect: all results match {{.*}} (max abs err=0, max rel err=0)

// NONE-NOT: weft.local_first

// BAD: weft-collective-matmul: local-first 'yes' is not off, auto or on

// At tp = 2 both anchor gathers gain (the GEMM's half hides the gather);
// at tp = 4 the qkv GEMM's quarter is too short for the chunk's cost, the
// fc1 GEMM's is not.
// AUTO-LABEL: func.func @tp2
// AUTO: shard.all_gather {{.*}}weft.local_first
// AUTO: shard.all_gather {{.*}}weft.local_first
// AUTO-LABEL: func.func @tp4
// AUTO-NOT: weft.local_first
// AUTO: weft.linear
// AUTO: shard.all_gather {{.*}}weft.local_first

// Rows 32 per rank of the qkv input, 128 wide; the projection 192 wide.
// PLAN: weft_plan.wait_event stream 1 event
// PLAN-NEXT: weft_plan.collective "all_gather" @[[X:s[0-9_]+]] -> @[[G:s[0-9_]+]] count 8192 {{.*}}stream 1
// PLAN-NEXT: weft_plan.record_event stream 1 event [[E:[0-9]+]]
// PLAN-NEXT: weft_plan.gemm @[[Y:s[0-9_]+]] = @[[X]], @arg2 {{.*}}m 32 n 192 k 128 {{.*}}rank_axes = array<i64: 0>, rank_blocks = array<i64: 0, 0, 0, 0, 6144, 0>
// PLAN-NEXT: weft_plan.wait_event stream 0 event [[E]]
// PLAN-NEXT: weft_plan.gemm @[[Y]] = @[[G]], @arg2 {{.*}}m 32 n 192 k 128 {{.*}}rank_axes = array<i64: 0>, rank_blocks = array<i64: 1, 4096, 0, 0, 6144, 0>

// CHECK-PKG: ok

// Rank 0's own block is block 0, the other block 1; rank 1's the reverse.
// RANK0: gemm 0 at {{[0-9]+}} stream 0: {{.*}}m 32 n 192 k 128 {{.*}}workspace {{[^,]*$}}
// RANK0: gemm 1 at {{.*}}m 32 n 192 k 128 {{.*}}, byte offsets a 8192 b 0 c 0 d 12288 aux 0
// RANK1: gemm 0 at {{.*}}m 32 n 192 k 128 {{.*}}, byte offsets a 0 b 0 c 0 d 12288 aux 0
// RANK1: gemm 1 at {{[0-9]+}} stream 0: {{.*}}m 32 n 192 k 128 {{.*}}workspace {{[^,]*$}}

module {
  shard.grid @grid(shape = 2) {weft.axis_names = ["tp"]}
  func.func @tp2(%x: tensor<4096x4096xbf16>, %wqkv: tensor<6144x4096xbf16>, %z: tensor<4096x4096xbf16>, %wfc: tensor<8192x4096xbf16>) -> (tensor<8192x6144xbf16>, tensor<8192x8192xbf16>) attributes {weft.grid = @grid} {
    %g = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4096x4096xbf16> -> tensor<8192x4096xbf16>
    %y = weft.linear %g, %wqkv : (tensor<8192x4096xbf16>, tensor<6144x4096xbf16>) -> tensor<8192x6144xbf16>
    %h = shard.all_gather %z on @grid grid_axes = [0] gather_axis = 0 : tensor<4096x4096xbf16> -> tensor<8192x4096xbf16>
    %f = weft.linear %h, %wfc : (tensor<8192x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<8192x8192xbf16>
    return %y, %f : tensor<8192x6144xbf16>, tensor<8192x8192xbf16>
  }
}

// -----

module {
  shard.grid @grid(shape = 4) {weft.axis_names = ["tp"]}
  func.func @tp4(%x: tensor<2048x4096xbf16>, %wqkv: tensor<3072x4096xbf16>, %z: tensor<2048x4096xbf16>, %wfc: tensor<4096x4096xbf16>) -> (tensor<8192x3072xbf16>, tensor<8192x4096xbf16>) attributes {weft.grid = @grid} {
    %g = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<2048x4096xbf16> -> tensor<8192x4096xbf16>
    %y = weft.linear %g, %wqkv : (tensor<8192x4096xbf16>, tensor<3072x4096xbf16>) -> tensor<8192x3072xbf16>
    %h = shard.all_gather %z on @grid grid_axes = [0] gather_axis = 0 : tensor<2048x4096xbf16> -> tensor<8192x4096xbf16>
    %f = weft.linear %h, %wfc : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
    return %y, %f : tensor<8192x3072xbf16>, tensor<8192x4096xbf16>
  }
}
