// RUN: weft-opt %s --weft-plan-memory --weft-build-plan | FileCheck %s

// A result returned through a view of another value's buffer (here a [1]
// sum reshaped to 0-d, as weft-chunk-loss sums a chunked loss) keeps the
// type the function returns: the torch backend and weft-run read the loss
// as a 0-d buffer. Before, the buffer took its root's type, tensor<1xf32>.
func.func @loss(%a: tensor<1xf32>, %b: tensor<1xf32>) -> (tensor<f32>, tensor<1xf32>) {
  %s = weft.add %a, %b : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %l = weft.reshape %s : (tensor<1xf32>) -> tensor<f32>
  %t = weft.add %s, %b : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  return %l, %t : tensor<f32>, tensor<1xf32>
}

// CHECK-DAG: weft_plan.buffer @s0 offset {{[0-9]+}} size 4 live[0, 3] "output" : tensor<f32> {result = 0 : i64}
// CHECK-DAG: weft_plan.buffer @s2 offset {{[0-9]+}} size 4 live[2, 3] "{{[a-z]+}}" : tensor<1xf32> {result = 1 : i64}
