// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-bind-arguments="entry=step" --weft-plan-memory

// The step function must exist.
// expected-error @below {{weft-bind-arguments: no function with a body named 'step'}}
module {
  func.func @other(%w: tensor<16xf32> {weft.param}) -> tensor<16xf32> {
    return %w : tensor<16xf32>
  }
}
