// RUN: weft-opt %s --weft-build-plan="function=f" --verify-diagnostics

// expected-error @+1 {{cannot build the plan of @f: it has no weft.memory_plan; run weft-plan-memory first}}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = weft.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}
