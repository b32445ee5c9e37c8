// An empty weft.range is rejected when the module is verified: exit 2.
// RUN: sh -c 'weft-run %s --entry f --random-inputs 2>&1; echo "exit $?"' | FileCheck %s
// CHECK: error: {{.*}}weft.range{{.*}}array<i64: 4, 4>
// CHECK: exit 2
func.func @f(%n: tensor<2xi64> {weft.range = array<i64: 4, 4>}) -> tensor<2xi64> {
  return %n : tensor<2xi64>
}
