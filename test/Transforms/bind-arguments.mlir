// RUN: weft-opt %s --split-input-file --weft-bind-arguments="entry=step which=params" | FileCheck %s --check-prefix=PARAMS
// RUN: weft-opt %s --split-input-file --weft-bind-arguments="entry=step which=all" | FileCheck %s --check-prefix=ALL
// RUN: weft-opt %s --split-input-file --weft-plan-memory="alignment=64" | FileCheck %s --check-prefix=PLAIN
// RUN: weft-opt %s --split-input-file --weft-bind-arguments="entry=step which=params" --weft-plan-memory="alignment=64" | FileCheck %s --check-prefix=BOUND
// RUN: not weft-opt %s --split-input-file --weft-bind-arguments="entry=step which=some" 2>&1 | FileCheck %s --check-prefix=WHICH

// A parameter w (16 f32 = 64 bytes, live through the step as parameters
// are) read by a reshape view and an add; x, the batch, dies at step 1.
// Steps: 0 reshape (a view of w), 1 add, 2 gelu, 3 return.
// In the arena: w [0, 3], x [0, 1], a [1, 2], b [2, 3]: three live at steps
// 1 and 2, so peak 192. Bound, w leaves the arena: x and b share bytes and
// a takes the other 64: peak 128, bound_bytes 64, parameters 0 in every
// category total (the view shares w's buffer, so it is bound too).
// PARAMS-LABEL: func.func @step
// PARAMS-SAME: (%arg0: tensor<16xf32> {weft.bound, weft.param}, %arg1: tensor<16xf32>)
// ALL-LABEL: func.func @step
// ALL-SAME: (%arg0: tensor<16xf32> {weft.bound, weft.param}, %arg1: tensor<16xf32> {weft.bound})
// PLAIN-LABEL: func.func @step
// PLAIN-SAME: parameters = {at_peak = 64 : i64, total = 64 : i64}
// PLAIN-SAME: peak_bytes = 192 : i64
// PLAIN-NOT: {{, bound_bytes}}
// BOUND-LABEL: func.func @step
// BOUND-SAME: {{, bound_bytes = 64 : i64}}
// BOUND-SAME: parameters = {at_peak = 0 : i64, total = 0 : i64}
// BOUND-SAME: peak_bytes = 128 : i64
// WHICH: error: weft-bind-arguments: which must be params or all, got 'some'
func.func @step(%w: tensor<16xf32> {weft.param}, %x: tensor<16xf32>) -> tensor<16xf32> {
  %v = weft.reshape %w : (tensor<16xf32>) -> tensor<4x4xf32>
  %flat = weft.reshape %v : (tensor<4x4xf32>) -> tensor<16xf32>
  %a = weft.add %flat, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %b = weft.gelu %a : (tensor<16xf32>) -> tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// An in-place update (weft.alias) writes the bound argument's own bytes in
// the caller's memory: allowed, and the update takes no arena bytes either.
// BOUND-LABEL: func.func @step
// BOUND-SAME: {{, bound_bytes = 64 : i64}}
// BOUND-SAME: peak_bytes = 64 : i64
func.func @step(%w: tensor<16xf32> {weft.param}, %x: tensor<16xf32>) -> (tensor<16xf32> {weft.alias = 0 : i64}) {
  %u = weft.add %w, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %u : tensor<16xf32>
}
