// REQUIRES: ptxas
// One SPMD package for the NCCL runtime: the remat anchor's model at a small
// size (2 blocks, hidden 128, seq 64, batch 1, bf16, loss mean(x^2)),
// partitioned at tp = 2 with sequence parallelism. Its host schedule holds
// the collectives (NCCL's contiguous blocks: the sequence is split after a
// batch of 1) and the grid; weft-run --check reads and checks them; the
// one-GPU runtime refuses the package rather than run it without them.
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=2 --sequence-parallel --target=sm_90a --emit=package --tuning-table=none -o %t.weftpkg
// RUN: weft-run --check %t.weftpkg | FileCheck %s
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=2 --sequence-parallel -o %t.step.mlir
// RUN: weft-opt %t.step.mlir --weft-build-plan | FileCheck %s --check-prefix=PLAN

// CHECK: grid 2 (2 ranks, one plan), {{[0-9]+}} collectives: {{[0-9]+}} all_reduce {{[1-9][0-9]*}} all_gather {{[1-9][0-9]*}} reduce_scatter
// CHECK: ok

// PLAN: weft_plan.step {{.*}} attributes {grid = array<i64: 2>, split_axis = 0 : i64}
// PLAN: weft_plan.buffer @arg2 {{.*}} : tensor<192x128xf32> {arg = 2 : i64, split_dim = 0 : i64}
// PLAN: weft_plan.collective "all_gather" {{.*}} dtype "bf16" axes [0]
// PLAN: weft_plan.collective "reduce_scatter" {{.*}} dtype "bf16" axes [0]
// PLAN: weft_plan.collective "all_reduce" {{.*}} dtype "f32" axes [0] {{.*}}{reduction = "avg"}
