// The C API's errors come back as a status and text, never a crash: IR that
// does not parse gives its file:line:col, a bad option names the option and
// its allowed values, a budget below the plan gives both numbers.
//
// RUN: not weft-capi-example %S/Inputs/unknown_op.txt forward %t.weftpkg 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: parse error:
// PARSE-NEXT: {{.*}}unknown_op.txt:3:8: error: custom op 'weft.bogus' is unknown
//
// RUN: not weft-capi-example %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir forward %t.weftpkg remat=sometimes 2>&1 | FileCheck %s --check-prefix=REMAT
// REMAT: invalid option:
// REMAT-NEXT: error: remat must be one of none, full, selective, block, uniform, budget; got 'sometimes'
//
// RUN: not weft-capi-example %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir forward %t.weftpkg target=h100 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: target must be a GPU architecture sm_<N> or sm_<N>a (e.g. sm_90a), got 'h100'
//
// RUN: not weft-capi-example %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir forward %t.weftpkg weight_copies=shared 2>&1 | FileCheck %s --check-prefix=COPIES
// COPIES: error: weight_copies must be converted, carried, split or auto, got 'shared'
//
// RUN: not weft-capi-example %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir backward %t.weftpkg 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: entry: no function @backward with a body in the module; functions: @forward
//
// RUN: not weft-capi-example %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir forward %t.weftpkg memory_budget=lots 2>&1 | FileCheck %s --check-prefix=SIZE
// SIZE: error: memory-budget 'lots' is not a size
//
// With AdamW and a package's GEMM workspaces the step plans 5197568 bytes
// (remat=none); 1 KiB cannot hold it.
// RUN: not weft-capi-example %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir forward %t.weftpkg optimizer=adamw memory_budget=1KiB tuning_table=none 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: compile error:
// BUDGET-NEXT: {{.*}}gpt_mean_square_bf16.mlir:7:1: error: planned peak 5197568 bytes (4.96 MiB) of @forward_step exceeds the memory budget of 1024 bytes (1.00 KiB)
// BUDGET-NEXT: {{.*}}gpt_mean_square_bf16.mlir:7:1: note: the lower bound
