// LLaMA at tp = 8 without a GPU (issue 21's CPU side): 8 q heads over 2 kv
// heads, so weft-expand-kv-heads gathers the kv rows each rank needs by a
// constant index table. The table is a kernel image's global that a copy
// kernel writes each step (a constant that is not a float splat), and each
// rank takes its block of it by all_slice, a rank-relative immediate
// (192 rows of 1536 a rank). The package checks with every kernel's image,
// with and without sequence parallelism. The same block in float64 on 8
// simulated ranks: the reference interpreter before and after each pass of
// the partitioned pipeline agrees to 1e-10, with and without SP.
// RUN: sed -e 's/bf16/f64/g' %S/Inputs/llama_h8_bf16.mlir > %t.f64.mlir
// RUN: weft-opt %t.f64.mlir --weft-expand-kv-heads=tp=8 --weft-autodiff "--weft-place=grid=tp=8 sequence-parallel=false func=forward_step" --weft-partition=sequence-parallel=false --weft-hoist-collectives --weft-fold-attention-layout --weft-fuse-gemm-epilogue --weft-fuse-elementwise --weft-diff-each-pass --weft-diff-entry=forward_step --weft-diff-rtol=1e-10 --weft-diff-seed=7 -o /dev/null
// RUN: weft-opt %t.f64.mlir --weft-expand-kv-heads=tp=8 --weft-autodiff "--weft-place=grid=tp=8 sequence-parallel=true func=forward_step" --weft-partition=sequence-parallel=true --weft-hoist-collectives --weft-fold-attention-layout --weft-fuse-gemm-epilogue --weft-fuse-elementwise --weft-diff-each-pass --weft-diff-entry=forward_step --weft-diff-rtol=1e-10 --weft-diff-seed=7 -o /dev/null
// RUN: weft-compile %S/Inputs/llama_h8_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=8 --fuse-elementwise --fold-attention-layout --tuning-table=none -o %t.mlir
// RUN: weft-opt %t.mlir --weft-build-plan | FileCheck %s --check-prefix=PLAN
// RUN: weft-compile %S/Inputs/llama_h8_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=8 --fuse-elementwise --fold-attention-layout --tuning-table=none --target=sm_90a --emit=package -o %t.tp8.weftpkg
// RUN: weft-run --check %t.tp8.weftpkg | FileCheck %s --check-prefix=TP8
// RUN: weft-compile %S/Inputs/llama_h8_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=8 --sequence-parallel --fuse-elementwise --fold-attention-layout --tuning-table=none --target=sm_90a --emit=package -o %t.tp8sp.weftpkg
// RUN: weft-run --check %t.tp8sp.weftpkg | FileCheck %s --check-prefix=TP8SP

// PLAN: weft_plan.kernel @weft_constant_[[C:[0-9]+]] image "weft_constant_[[C]]" entry "weft_constant_[[C]]" params ["ptr"]
// PLAN: weft_plan.launch @weft_constant_[[C]] [@[[TABLE:s[0-9]+]]]
// PLAN: weft_plan.launch @weft_all_slice_{{[0-9]+}} [@[[TABLE]], {base = 0 : i64, rank_axes = array<i64: 0>, scale = 192 : i64}, @s{{[0-9]+}}]

// TP8: grid 8 (8 ranks, one plan)
// TP8: rank-relative immediates in
// TP8: ok
// TP8SP: grid 8 (8 ranks, one plan)
// TP8SP: ok
