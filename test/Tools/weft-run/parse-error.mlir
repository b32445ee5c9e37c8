// A file that does not parse: the parser's diagnostic, exit 2.
// RUN: sh -c 'weft-run %s --entry f --random-inputs 2>&1; echo "exit $?"' | FileCheck %s
// CHECK: parse-error.mlir:[[@LINE+3]]:{{[0-9]+}}: error: expected non-function type
// CHECK: exit 2
func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = weft.add %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) ->
  return %x : tensor<2x3xf32>
}
