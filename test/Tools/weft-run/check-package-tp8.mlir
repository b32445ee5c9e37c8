// An eight-rank package without a GPU (issue 21's CPU side): the 8-head
// block of Inputs/gpt_h8_bf16.mlir at tp = 8 with and without sequence
// parallelism and at dp = 2 x tp = 4 compiles; weft-run --check reads the
// grid and its collectives; rank 7's --dry-run takes block 7 of 8 of each
// split argument; a launch with another number of ranks is refused naming
// both sizes.
// RUN: weft-compile %S/Inputs/gpt_h8_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --grid=tp=8 --sequence-parallel --tuning-table=none -o %t.tp8sp.weftpkg 2>/dev/null
// RUN: weft-compile %S/Inputs/gpt_h8_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --grid=tp=8 --tuning-table=none -o %t.tp8.weftpkg 2>/dev/null
// RUN: weft-compile %S/Inputs/gpt_h8_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --grid=dp=2,tp=4 --tuning-table=none -o %t.dp2tp4.weftpkg 2>/dev/null
// RUN: weft-run --check %t.tp8sp.weftpkg --allow-missing-images 2>/dev/null | FileCheck %s --check-prefix=SP
// RUN: weft-run --check %t.tp8.weftpkg --allow-missing-images 2>/dev/null | FileCheck %s --check-prefix=TP
// RUN: weft-run --check %t.dp2tp4.weftpkg --allow-missing-images 2>/dev/null | FileCheck %s --check-prefix=DP
// SP: grid 8 (8 ranks, one plan), 12 collectives: 2 all_reduce 6 all_gather 4 reduce_scatter
// SP: split along grid axis 0: 19 arguments, 0 results
// SP: ok
// TP: grid 8 (8 ranks, one plan), {{[0-9]+}} collectives: {{[0-9]+}} all_reduce 0 all_gather 0 reduce_scatter
// TP: ok
// The dp axis replicates (docs/partitioning.md): the tp axis (1) splits.
// DP: grid 2x4 (8 ranks, one plan)
// DP: split along grid axis 1:
// DP: ok

// RUN: weft-opt %S/Inputs/gpt_h8_bf16.mlir --weft-autodiff=optimizer=adamw -o %t.global.mlir
// RUN: weft-run %t.global.mlir --entry forward_step --random-inputs --seed 3 --save-inputs %t.in.npz > /dev/null
// RUN: env WORLD_SIZE=8 RANK=7 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 weft-run %t.tp8sp.weftpkg --dry-run --data %t.in.npz | FileCheck %s --check-prefix=RANK7
// RANK7: rank 7 of 8, 12 collectives
// RANK7: step 1: {{.*}} arg2 <- {{.*}}in.npz:arg2 block 7/8 of dim 0 {{.*}} arg4 <- {{.*}}in.npz:arg4 block 7/8 of dim 1

// RUN: not weft-run %t.tp8sp.weftpkg --nproc-per-node 4 --data %t.in.npz 2>&1 | FileCheck %s --check-prefix=SIZE
// SIZE: error: rank {{[0-3]}}: {{.*}}tp8sp.weftpkg was built for grid 8 of 8 ranks, but this run has 4 ranks (WORLD_SIZE)
