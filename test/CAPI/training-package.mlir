// REQUIRES: ptxas
// The C API's example (examples/capi/compile_package.c) compiles the small
// GPT (2 blocks, hidden 128, seq 64) to a package in memory: weft-run --check
// accepts it, and it is byte for byte weft-compile's package for the same
// options (both go through weft/Pipelines/PackageCompiler.h).
//
// RUN: weft-capi-example %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir forward %t.weftpkg optimizer=adamw target=sm_90a tuning_table=none 2>%t.notes | FileCheck %s --check-prefix=EXAMPLE
// RUN: FileCheck %s --allow-empty --check-prefix=NOTE < %t.notes
// RUN: weft-run --check %t.weftpkg | FileCheck %s --check-prefix=CHECKPKG
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none -o %t.ref.weftpkg
// RUN: cmp %t.weftpkg %t.ref.weftpkg
//
// EXAMPLE: weft 0.5.0
// EXAMPLE-NEXT: parsed {{.*}}gpt_mean_square_bf16.mlir
// EXAMPLE-NEXT: package: {{[1-9][0-9]*}} bytes
// NOTE-NOT: no image
// NOTE-NOT: error
// CHECKPKG: 24 gemms
// CHECKPKG-NEXT: ok
//
// The same with fused elementwise kernels and the budget policy at 4.5 MiB:
// weft-remat's choices come out the same through either front end.
// RUN: weft-capi-example %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir forward %t.fused.weftpkg optimizer=adamw remat=budget memory_budget=4.5MiB fuse_elementwise=1 tuning_table=none | FileCheck %s --check-prefix=EXAMPLE
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --remat=budget --memory-budget=4.5MiB --fuse-elementwise --emit=package --tuning-table=none -o %t.fused.ref.weftpkg
// RUN: cmp %t.fused.weftpkg %t.fused.ref.weftpkg
