// The host side of a multi-GPU run, without a GPU: a partitioned package's
// grid and split buffers, each rank's view (--dry-run; WORLD_SIZE and RANK as
// torchrun sets them), the refusals before any rank waits (grid size, a
// one-GPU package, another package than rank 0's, no store), the launcher's
// report when every rank fails, and shards gathered and split back.
// RUN: weft-compile %S/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --grid=tp=2 --sequence-parallel --tuning-table=none -o %t.tp2sp.weftpkg 2>/dev/null
// RUN: weft-compile %S/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --grid=tp=2 --tuning-table=none -o %t.tp2.weftpkg 2>/dev/null
// RUN: weft-compile %S/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none -o %t.one.weftpkg 2>/dev/null
// Whole-tensor inputs of the unpartitioned step (arg0..arg74).
// RUN: weft-opt %S/Inputs/gpt_mean_square_bf16.mlir --weft-autodiff=optimizer=adamw -o %t.global.mlir
// RUN: weft-run %t.global.mlir --entry forward_step --random-inputs --seed 3 --save-inputs %t.in.npz > /dev/null

// RUN: weft-run --check %t.tp2sp.weftpkg --allow-missing-images 2>/dev/null | FileCheck %s --check-prefix=CHECK-PKG
// CHECK-PKG: grid 2 (2 ranks, one plan), 22 collectives: 2 all_reduce 12 all_gather 8 reduce_scatter
// CHECK-PKG: split along grid axis 0: 37 arguments, 0 results

// Without WORLD_SIZE, --dry-run shows rank 0 of the package's grid.
// RUN: weft-run %t.tp2sp.weftpkg --dry-run --data %t.in.npz | FileCheck %s --check-prefix=RANK0
// RANK0: rank 0 of 2, 22 collectives
// RANK0: buffer 2 'arg2' parameter tensor<192x128xf32> {{.*}} arg 2 split dim 0 along grid axis 0
// RANK0: buffer 4 'arg4' parameter tensor<128x64xf32> {{.*}} arg 4 split dim 1 along grid axis 0
// Collectives run on stream 1 after an event from stream 0; stream 0 waits
// for the event after them where their result is first read.
// RANK0: record event 0 on stream 0 at [[AT:[0-9]+]]
// RANK0-NEXT: wait event 0 on stream 1 at [[AT]]
// RANK0-NEXT: collective 0 at [[AT]] stream 1: '{{.*}} = all_gather('{{.*}}) 8192 bf16 over grid axes 1
// RANK0-NEXT: record event 1 on stream 1 at [[AT]]
// RANK0: wait event 1 on stream 0 at
// RANK0: reduce_scatter({{.*}}) 8192 bf16 over grid axes 1 (sum)
// RANK0: step 1: arg0 <- {{.*}}in.npz:arg0 arg1 <- {{.*}}in.npz:arg1 arg2 <- {{.*}}in.npz:arg2 block 0/2 of dim 0
// RANK0-SAME: arg72 <- {{.*}}in.npz:arg72 block 0/2 of dim 1

// RUN: env WORLD_SIZE=2 RANK=1 MASTER_PORT=9 weft-run %t.tp2sp.weftpkg --dry-run --data %t.in.npz | FileCheck %s --check-prefix=RANK1
// RANK1: rank 1 of 2, 22 collectives
// RANK1: step 1: {{.*}} arg2 <- {{.*}}in.npz:arg2 block 1/2 of dim 0 {{.*}} arg4 <- {{.*}}in.npz:arg4 block 1/2 of dim 1

// Refused before waiting for peers.
// RUN: env WORLD_SIZE=4 RANK=0 MASTER_PORT=9 not weft-run %t.tp2sp.weftpkg --data %t.in.npz 2>&1 | FileCheck %s --check-prefix=GRID
// GRID: error: rank 0: {{.*}}tp2sp.weftpkg was built for grid 2 of 2 ranks, but this run has 4 ranks (WORLD_SIZE)
// RUN: env WORLD_SIZE=2 RANK=0 MASTER_PORT=9 not weft-run %t.one.weftpkg --data %t.in.npz 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: error: rank 0: {{.*}}one.weftpkg is a one-GPU package, but this run has 2 ranks (WORLD_SIZE); compile it with weft-compile --grid=tp=2
// RUN: not weft-run %t.tp2sp.weftpkg --data %t.in.npz 2>&1 | FileCheck %s --check-prefix=NOENV
// NOENV: tp2sp.weftpkg: the package is a partitioned step for grid 2 (2 ranks) with 22 collectives; run it with one process per rank (weft-run --nproc-per-node 2, or under torchrun)
// RUN: env WORLD_SIZE=2 RANK=1 MASTER_PORT=1 not weft-run %t.tp2sp.weftpkg --data %t.in.npz --collective-timeout 1 2>&1 | FileCheck %s --check-prefix=STORE
// STORE: error: rank 1: rank 0's store at 127.0.0.1:1 did not answer within 1 s
// RUN: env WORLD_SIZE=2 RANK=0 not weft-run %t.tp2sp.weftpkg --data %t.in.npz 2>&1 | FileCheck %s --check-prefix=PORT
// PORT: error: $MASTER_PORT is not set

// Every rank must load rank 0's package.
// RUN: %python %S/Inputs/ranks.py weft-run -- %t.tp2sp.weftpkg --data %t.in.npz -- %t.tp2.weftpkg --data %t.in.npz | FileCheck %s --check-prefix=DIGEST
// DIGEST-DAG: rank 0 exit 1
// DIGEST-DAG: rank 0: weft-run: error: rank 0: rank 1 loaded another package (DIGEST {{.*}}) than rank 0 (DIGEST {{.*}})
// DIGEST-DAG: rank 1 exit 1
// DIGEST-DAG: rank 1: weft-run: error: rank 1: rank 0 refused the run: rank 1 loaded another package

// The launcher: one process per rank; here each finds no driver.
// RUN: env WEFT_LIBCUDA=/nonexistent/libcuda.so.1 not weft-run %t.tp2sp.weftpkg --nproc-per-node 2 --data %t.in.npz 2>&1 | FileCheck %s --check-prefix=LAUNCH
// LAUNCH-DAG: error: rank 0: device 0: cannot load the CUDA driver library /nonexistent/libcuda.so.1
// LAUNCH-DAG: error: rank 1: device 1: cannot load the CUDA driver library /nonexistent/libcuda.so.1
// LAUNCH-DAG: weft-run: rank 0 exited with status 1
// LAUNCH-DAG: weft-run: rank 1 exited with status 1
// LAUNCH: weft-run: 2 of 2 ranks failed
// RUN: not weft-run %t.tp2sp.weftpkg --nproc-per-node 0 2>&1 | FileCheck %s --check-prefix=NPROC
// NPROC: error: --nproc-per-node takes 1 to 1024 processes, got 0
// RUN: not weft-run %t.tp2sp.weftpkg --nproc-per-node 2 --dry-run 2>&1 | FileCheck %s --check-prefix=NPROC-DRY
// NPROC-DRY: error: --nproc-per-node runs a package (weft-compile --grid=... --emit=package), without --dry-run
// RUN: not weft-run %t.tp2sp.weftpkg --nproc-per-node 2 --collectives ce 2>&1 | FileCheck %s --check-prefix=ENGINE
// ENGINE: error: --collectives takes nccl, copy-engine or auto, got 'ce'
// The communication streams' priority and the SMs the GEMMs beside a
// collective leave to it (the runtime's weft_step_options).
// RUN: not weft-run %t.tp2sp.weftpkg --nproc-per-node 2 --comm-priority urgent 2>&1 | FileCheck %s --check-prefix=PRIORITY
// PRIORITY: error: --comm-priority takes normal or high, got 'urgent'
// RUN: not weft-run %t.tp2sp.weftpkg --nproc-per-node 2 --gemm-sm-margin -3 2>&1 | FileCheck %s --check-prefix=MARGIN
// MARGIN: error: --gemm-sm-margin takes a number of SMs from 0 to 1024, got -3
// RUN: env WORLD_SIZE=2 RANK=1 MASTER_PORT=9 WEFT_GEMM_SM_MARGIN=lots not weft-run %t.tp2sp.weftpkg --dry-run --data %t.in.npz 2>&1 | FileCheck %s --check-prefix=MARGIN-ENV
// MARGIN-ENV: $WEFT_GEMM_SM_MARGIN is 'lots', not a number of SMs from 0 to 1024
// RUN: env WORLD_SIZE=2 RANK=1 MASTER_PORT=9 WEFT_GEMM_SM_MARGIN=8 WEFT_COMM_PRIORITY=high weft-run %t.tp2sp.weftpkg --dry-run --data %t.in.npz > %t.margin.txt
// RUN: FileCheck %s --check-prefix=RANK1 < %t.margin.txt
// RUN: FileCheck %s --check-prefix=BESIDE < %t.margin.txt
// RUN: env WORLD_SIZE=2 RANK=1 MASTER_PORT=9 weft-run %t.tp2sp.weftpkg --dry-run --data %t.in.npz | FileCheck %s --check-prefix=NOT-BESIDE
// The GEMMs the schedule issues while a collective runs on the other stream
// leave it 8 SMs.
// BESIDE: gemm {{[0-9]+}} at {{[0-9]+}} stream 0: {{.*}}, beside a collective: leaves 8 SMs
// NOT-BESIDE-NOT: beside a collective
// A bad engine in the environment is the runtime's load error (no GPU here:
// the driver's is first), so it is a unit test (PeerArenaEngine).

// Shards: split one single-GPU file for the grid, gather it back unchanged;
// a rank reads its own shard through the index.
// RUN: weft-run %t.tp2sp.weftpkg --split-state %t.in.npz --to %t.shards.json
// RUN: FileCheck %s --check-prefix=INDEX < %t.shards.json
// INDEX: "files": [
// INDEX-NEXT: "{{.*}}shards.json.rank0.npz",
// INDEX-NEXT: "{{.*}}shards.json.rank1.npz"
// INDEX: "split_axis": 0,
// INDEX: "split_dims": {
// INDEX-DAG: "arg2": 0,
// INDEX-DAG: "arg4": 1,
// INDEX-DAG: "arg72": 1,
// RUN: weft-run --gather-state %t.shards.json --to %t.back.npz
// RUN: %python %S/Inputs/npz_equal.py %t.in.npz %t.back.npz | FileCheck %s --check-prefix=EQUAL
// EQUAL: equal: 76 arrays
// RUN: %python %S/Inputs/npz_subset.py %t.in.npz %t.inputs.npz arg72 arg73 arg74 __weft_dtypes__
// RUN: env WORLD_SIZE=2 RANK=1 MASTER_PORT=9 weft-run %t.tp2sp.weftpkg --dry-run --load-state %t.shards.json --data %t.inputs.npz | FileCheck %s --check-prefix=SHARD
// SHARD: step 1: arg0 <- {{.*}}shards.json.rank1.npz:arg0 arg1 <- {{.*}}shards.json.rank1.npz:arg1 arg2 <- {{.*}}shards.json.rank1.npz:arg2 arg3
// RUN: not weft-run %t.one.weftpkg --split-state %t.in.npz --to %t.x.json 2>&1 | FileCheck %s --check-prefix=SPLIT-ONE
// SPLIT-ONE: error: {{.*}}one.weftpkg is a one-GPU package: there is nothing to split
// RUN: not weft-run --gather-state %t.shards.json 2>&1 | FileCheck %s --check-prefix=NO-TO
// NO-TO: error: --gather-state INDEX or --split-state S.npz (one of them) needs --to PATH
