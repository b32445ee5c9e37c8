// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-plan-memory
// RUN: not weft-opt %s --split-input-file --weft-plan-memory="alignment=48" 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not weft-opt %s --split-input-file --weft-plan-memory="entry=nope" 2>&1 | FileCheck %s --check-prefix=ENTRY
// ALIGN: weft-plan-memory expects a power-of-two alignment of at most 2^32, got 48
// ENTRY: weft-plan-memory: no function with a body named 'nope'

// The in-place update of argument 0 happens at step 0; reading the old
// parameter at step 1 would see the new values.
// expected-error @+1 {{'func.func' op argument 0 is updated in place by result 0 (weft.alias) at step 0 but read at step 1}}
func.func @read_after_update(%p: tensor<8xf32> {weft.param}, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>)
    -> (tensor<8xf32> {weft.alias = 0 : i64}, tensor<8xf32>) {
  // expected-note @+1 {{updated here}}
  %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  // expected-note @+1 {{read here}}
  %y = weft.add %p, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %p1, %y : tensor<8xf32>, tensor<8xf32>
}

// -----

// A tied result must be an update written by an op, not another argument.
// expected-error @+1 {{'func.func' op 'weft.alias' ties result 0 to argument 0, but the result is argument 1 (or a view of it), not an update of argument 0}}
func.func @tied_to_other_argument(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32> {weft.alias = 0 : i64}) {
  return %b : tensor<8xf32>
}

// -----

// One update cannot be written into two arguments.
// expected-error @+1 {{'func.func' op result 1 is tied by 'weft.alias' to two arguments: 0 and 1}}
func.func @one_update_two_arguments(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32> {weft.alias = 0 : i64}, tensor<8xf32> {weft.alias = 1 : i64}) {
  %c = weft.gelu %a : (tensor<8xf32>) -> tensor<8xf32>
  return %c, %c : tensor<8xf32>, tensor<8xf32>
}

// -----

// expected-error @+1 {{weft liveness: argument 0 has type 'tensor<?xf32>'; only statically shaped tensors can be planned}}
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// -----

// 2^58 elements of f32 each: together past the 2^60 bytes the planner's
// arithmetic allows.
// expected-error @+1 {{weft liveness: argument 1 ('tensor<288230376151711744xf32>') brings the function's tensors past 2^60 bytes; cannot plan them}}
func.func @too_large(%a: tensor<288230376151711744xf32>, %b: tensor<288230376151711744xf32>) -> tensor<288230376151711744xf32> {
  return %a : tensor<288230376151711744xf32>
}
