// weft-compile's usage and input errors: a diagnostic and exit 2 (exit 1 is
// for a compilation that fails: a pass, the budget, a changed result).

// RUN: sh -c 'weft-compile %s --entry forward 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-TRAIN
// NO-TRAIN: error: give --train (build a training step), --inference (the forward alone) or --emit=kernels / --emit=gpu-binary
// NO-TRAIN: exit 2

// RUN: sh -c 'weft-compile %s --train 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-ENTRY
// NO-ENTRY: error: --entry NAME is required
// NO-ENTRY: exit 2

// RUN: sh -c 'weft-compile %s --train --entry nope 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: no function @nope with a body in {{.*}}errors.mlir; functions: @forward, @two_results
// UNKNOWN: exit 2
// RUN: sh -c 'weft-compile %s --train --entry decl 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=DECL
// DECL: error: no function @decl with a body
// DECL: exit 2

// RUN: sh -c 'weft-compile %s --train --entry forward --optimizer=sgd 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=OPTIMIZER
// OPTIMIZER: error: --optimizer must be none or adamw, got 'sgd'
// OPTIMIZER: exit 2

// RUN: sh -c 'weft-compile %s --train --entry forward --remat=most 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=POLICY
// POLICY: error: --remat must be one of none, full, selective, block, uniform, budget; got 'most'
// POLICY: exit 2

// RUN: sh -c 'weft-compile %s --train --entry forward --remat=budget 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-BUDGET
// NO-BUDGET: error: --remat=budget needs a memory-budget
// NO-BUDGET: exit 2

// RUN: sh -c 'weft-compile %s --train --entry forward --memory-budget=12parsecs 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=SIZE
// SIZE: error: --memory-budget '12parsecs' is not a size: a number with an optional unit B, KB, MB, GB, TB, KiB, MiB, GiB or TiB
// SIZE: exit 2
// RUN: sh -c 'weft-compile %s --train --entry forward --memory-budget=99999999999999999999 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=SIZE-BIG
// SIZE-BIG: error: --memory-budget '99999999999999999999' is not a size
// SIZE-BIG: exit 2

// RUN: sh -c 'weft-compile %s --train --entry forward --remat=block --remat-layers=0 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=LAYERS
// LAYERS: error: --remat-layers must be at least 1, got 0
// LAYERS: exit 2

// RUN: sh -c 'weft-compile %s --train --entry forward --weft-diff-rtol=1e-3 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=DIFF-OPTION
// DIFF-OPTION: error: --weft-diff-entry, --weft-diff-inputs, --weft-diff-seed and --weft-diff-rtol need --weft-diff-each-pass
// DIFF-OPTION: exit 2

// RUN: sh -c 'weft-compile %t.does-not-exist.mlir --train --entry forward 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-FILE
// NO-FILE: error: cannot open input file '{{.*}}does-not-exist.mlir'
// NO-FILE: exit 2

// RUN: sh -c 'echo "func.func @f(" | weft-compile - --train --entry f 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=PARSE
// PARSE: error:
// PARSE: exit 2

// weft-opt's weft-train-pipeline checks the same options.
// RUN: not weft-opt %s --weft-train-pipeline="remat=most" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: error: weft-train-pipeline: remat must be one of none, full, selective, block, uniform, budget; got 'most'

// An unwritable output fails before compiling (exit 2).
// RUN: sh -c 'weft-compile %s --train --entry forward -o %t.missing/dir/step.mlir 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-OUTPUT
// NO-OUTPUT: error: cannot open output file '{{.*}}step.mlir'
// NO-OUTPUT: exit 2

// What autodiff refuses is a compilation error (exit 1), located at the
// function.
// RUN: sh -c 'weft-compile %s --train --entry two_results 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=AUTODIFF
// AUTODIFF: errors.mlir:[[@LINE+9]]:1: error: 'func.func' op expects a single 0-d loss result to differentiate, got 2 results
// AUTODIFF: exit 1

func.func @forward(%w: tensor<4x4xf32> {weft.param}, %x: tensor<2x4xf32>, %y: tensor<2xi64> {weft.range = array<i64: 0, 4>}) -> tensor<f32> {
  %h = weft.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = weft.cross_entropy %h, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func @two_results(%w: tensor<4x4xf32> {weft.param}, %x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %h = weft.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %h, %h : tensor<2x4xf32>, tensor<2x4xf32>
}

func.func private @decl(tensor<4xf32>) -> tensor<4xf32>
