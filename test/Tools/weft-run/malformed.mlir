// Malformed IR: the verifier's diagnostic is printed and weft-run exits 2.
// RUN: sh -c 'weft-run %s --entry bad --random-inputs 2>&1; echo "exit $?"' | FileCheck %s
// CHECK: malformed.mlir:[[@LINE+3]]:8: error: 'weft.add'
// CHECK: exit 2
func.func @bad(%x: tensor<2x3xf32>, %y: tensor<4xf32>) -> tensor<2x3xf32> {
  %s = weft.add %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}
