// End to end without an .npz: attention on constant tensors, tiled, then run
// on the CPU. With q = 0 every score is 0, so each output row is the mean of
// the value rows it sees: causal row i averages v rows 0..i of v[j] = j, i.e.
// i / 2; rows 0..4 sum to 0 + 0.5 + 1 + 1.5 + 2 = 5 per column, 2 columns
// make 10. The lse of row i is log(i + 1): log(5!) = 4.787491742782046.
// RUN: weft-opt %s --weft-tile-attention="block-q=2 block-k=3" | weft-cpu-run --entry constant_attention | FileCheck %s
// RUN: weft-opt %s --weft-tile-attention="block-q=4 block-k=2" | weft-cpu-run --entry constant_attention --opt-level=0 | FileCheck %s

// CHECK: res0: tensor<1x1x5x2xf64> sum=10 l2=
// CHECK: res1: tensor<1x1x5xf32> sum=4.78749
func.func @constant_attention() -> (tensor<1x1x5x2xf64>, tensor<1x1x5xf32>) {
  %q = arith.constant dense<0.0> : tensor<1x1x5x3xf64>
  %k = arith.constant dense<1.0> : tensor<1x1x5x3xf64>
  %v = arith.constant dense<[[[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]]]> : tensor<1x1x5x2xf64>
  %o, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x1x5x3xf64>, tensor<1x1x5x3xf64>, tensor<1x1x5x2xf64>) -> (tensor<1x1x5x2xf64>, tensor<1x1x5xf32>)
  return %o, %lse : tensor<1x1x5x2xf64>, tensor<1x1x5xf32>
}
