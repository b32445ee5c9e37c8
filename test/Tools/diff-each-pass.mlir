// --weft-diff-each-pass runs the reference interpreter on the compared
// functions before the first pass and after every pass, and names the first
// pass that changed a result. weft-test-break-result miscompiles on purpose
// (the first weft.add of each function becomes weft.sub).

// Passes that keep the results: the IR comes out, exit 0.
// RUN: weft-opt %s --canonicalize --cse --weft-diff-each-pass | FileCheck %s --check-prefix=CLEAN
// CLEAN-LABEL: func.func @double
// CLEAN: weft.add

// The broken pass is named, not the passes around it. @double returns
// m + m for m = x * y; as m - m = 0 every element is off by |2 m_i|, and the
// error is relative to the largest |2 m|: exactly 1 at the largest element.
// RUN: not weft-opt %s --canonicalize --weft-test-break-result --cse --weft-diff-each-pass -o /dev/null 2>&1 | FileCheck %s --check-prefix=BREAK
// BREAK: diff-each-pass.mlir:[[@LINE+60]]:1: error: pass 'weft-test-break-result' changed result 0 of @double: max rel error 1.0e+00 at [{{[0-2]}}, {{[0-3]}}]
// BREAK-NEXT: func.func @double
// BREAK: note: got 0 where the input IR gives {{-?[0-9.]+}}; the error is relative to the result's largest magnitude; tolerance 1.0e-12 for f64 results
// BREAK-NOT: error

// Nested pipelines: a pass on one function is checked right after it runs
// on that function (multithreading is off while comparing), and the pass
// manager's adaptor is never blamed.
// RUN: not weft-opt %s --pass-pipeline="builtin.module(func.func(cse,weft-test-break-result{func=loss},canonicalize))" --weft-diff-each-pass --weft-diff-entry=double,loss -o /dev/null 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: error: pass 'weft-test-break-result' changed result 0 of @loss: max rel error
// NESTED-NOT: error:

// --weft-diff-entry picks the function (default: the first one). @loss is
// f32: its tolerance is 16 units of f32 roundoff, 9.5e-7.
// RUN: not weft-opt %s --weft-test-break-result --weft-diff-each-pass --weft-diff-entry=loss -o /dev/null 2>&1 | FileCheck %s --check-prefix=F32
// F32: error: pass 'weft-test-break-result' changed result 0 of @loss: max rel error {{.*}} at []
// F32: note: got {{.*}} tolerance 9.5e-07 for f32 results

// A function a pass creates is compared from that pass on: weft-autodiff adds
// @loss_step (checked against its own results right after weft-autodiff), and
// breaking only the step is caught there.
// RUN: not weft-opt %s --weft-autodiff="entry=loss optimizer=adamw" --weft-test-break-result="func=loss_step" --weft-diff-each-pass -o /dev/null 2>&1 | FileCheck %s --check-prefix=STEP
// STEP: error: pass 'weft-test-break-result' changed result 0 of @loss_step: max rel error
// STEP: note: got {{.*}} where the IR after pass 'weft-autodiff' gives
// Named, the new step alone is compared; the whole training pipeline keeps it.
// RUN: weft-opt %s --weft-train-pipeline="entry=loss optimizer=adamw remat=full" --weft-diff-each-pass --weft-diff-entry=loss_step -o /dev/null
// Only the named functions are compared: breaking @loss_step goes unseen
// when only @double is compared.
// RUN: weft-opt %s --weft-autodiff="entry=loss" --weft-test-break-result="func=loss_step" --weft-diff-each-pass --weft-diff-entry=double -o /dev/null

// Inputs from an .npz (keys arg<i>, as weft-run writes them) for the first
// compared function.
// RUN: weft-run %s --entry double --random-inputs --seed 5 --save-inputs %t.double.npz
// RUN: not weft-opt %s --weft-test-break-result --weft-diff-each-pass --weft-diff-inputs=%t.double.npz -o /dev/null 2>&1 | FileCheck %s --check-prefix=BREAK
// Inputs of another function do not fit: the key and both types are named.
// RUN: weft-run %s --entry loss --random-inputs --save-inputs %t.loss.npz
// RUN: not weft-opt %s --canonicalize --weft-diff-each-pass --weft-diff-inputs=%t.loss.npz -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-NPZ
// BAD-NPZ: error: --weft-diff-inputs: {{.*}}loss.npz: 'arg0' is tensor<4x4xf32> but argument #0 of @double is tensor<3x4xf64>
// RUN: not weft-opt %s --canonicalize --weft-diff-each-pass --weft-diff-inputs=%t.missing.npz -o /dev/null 2>&1 | FileCheck %s --check-prefix=NO-NPZ
// NO-NPZ: error: --weft-diff-inputs: {{.*}}missing.npz

// A compared function a pass removes is dropped with a warning.
// RUN: weft-opt %s --symbol-dce --weft-diff-each-pass --weft-diff-entry=helper -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMOVED
// REMOVED: warning: pass 'symbol-dce' removed @helper; --weft-diff-each-pass compares it no further

// A function too large for the interpreter is refused before it is run.
// RUN: not weft-opt %s --canonicalize --weft-diff-each-pass --weft-diff-entry=huge -o /dev/null 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: error: --weft-diff-each-pass: @huge holds 'tensor<65536x65536xf32>' (4294967296 elements), more than the reference interpreter takes here (268435456)

// Option errors.
// RUN: not weft-opt %s --canonicalize --weft-diff-each-pass --weft-diff-entry=nope -o /dev/null 2>&1 | FileCheck %s --check-prefix=NO-ENTRY
// NO-ENTRY: error: --weft-diff-entry=nope: no function @nope appeared in the IR, so nothing was compared for it
// RUN: not weft-opt %s --canonicalize --weft-diff-each-pass --weft-diff-rtol=-1 -o /dev/null 2>&1 | FileCheck %s --check-prefix=RTOL
// RTOL: error: --weft-diff-rtol must be a finite non-negative number, got -1
// RUN: not weft-opt %s --canonicalize --weft-diff-entry=double -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEEDS
// NEEDS: error: --weft-diff-entry, --weft-diff-inputs, --weft-diff-seed and --weft-diff-rtol need --weft-diff-each-pass
// The test pass refuses to do nothing (a test built on it could not fail).
// RUN: not weft-opt %s --weft-test-break-result="func=helper" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTHING
// NOTHING: error: weft-test-break-result found no weft.add to break in @helper

func.func @double(%x: tensor<3x4xf64>, %y: tensor<3x4xf64>) -> tensor<3x4xf64> {
  %m = weft.mul %x, %y : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  %s = weft.add %m, %m : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  return %s : tensor<3x4xf64>
}

func.func @loss(%w: tensor<4x4xf32> {weft.param}, %b: tensor<4xf32> {weft.param}, %x: tensor<2x4xf32>, %y: tensor<2xi64> {weft.range = array<i64: 0, 4>}) -> tensor<f32> {
  %h = weft.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %r = weft.add %h, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %l = weft.cross_entropy %r, %y : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func private @helper(%x: tensor<4xf64>) -> tensor<4xf64> {
  return %x : tensor<4xf64>
}

func.func @huge(%x: tensor<65536x65536xf32>) -> tensor<65536x65536xf32> {
  %0 = weft.add %x, %x : (tensor<65536x65536xf32>, tensor<65536x65536xf32>) -> tensor<65536x65536xf32>
  return %0 : tensor<65536x65536xf32>
}
