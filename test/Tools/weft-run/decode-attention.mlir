// The reference interpreter's attention with fewer query rows than keys
// (decoding against a KV cache). Causal is bottom-right aligned: query row i
// sees keys j <= i + (k_len - q_len).
// RUN: weft-run %s --entry uniform | FileCheck %s --check-prefix=UNIFORM
// RUN: weft-run %s --entry weighted | FileCheck %s --check-prefix=WEIGHTED

// q = 0 makes every score 0, so a row's output is the mean of the value rows
// it sees (v[j] = j) and its lse is log(keys seen). Two query rows, five keys:
// full: both rows see 5 keys, mean 2; 2 rows x 2 columns x 2 = 8, lse sum
// 2 log 5 = 3.21888. Causal (bottom-right): row 0 sees keys 0..3 (mean 1.5),
// row 1 all 5 (mean 2): 2 x (1.5 + 2) = 7, lse log 4 + log 5 = 2.99573.
// (Top-left would give row 0 key 0 and row 1 keys 0..1: sum 1.)
// UNIFORM: res0: tensor<1x1x2x2xf64> sum=8 l2=
// UNIFORM-NEXT: res1: tensor<1x1x2xf32> sum=3.218875{{[0-9]*}} l2=
// UNIFORM-NEXT: res2: tensor<1x1x2x2xf64> sum=7 l2=
// UNIFORM-NEXT: res3: tensor<1x1x2xf32> sum=2.995732{{[0-9]*}} l2=
func.func @uniform() -> (tensor<1x1x2x2xf64>, tensor<1x1x2xf32>, tensor<1x1x2x2xf64>, tensor<1x1x2xf32>) {
  %q = arith.constant dense<0.0> : tensor<1x1x2x3xf64>
  %k = arith.constant dense<1.0> : tensor<1x1x5x3xf64>
  %v = arith.constant dense<[[[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]]]> : tensor<1x1x5x2xf64>
  %o, %lse = weft.attention %q, %k, %v : (tensor<1x1x2x3xf64>, tensor<1x1x5x3xf64>, tensor<1x1x5x2xf64>) -> (tensor<1x1x2x2xf64>, tensor<1x1x2xf32>)
  %oc, %lsec = weft.attention %q, %k, %v {causal} : (tensor<1x1x2x3xf64>, tensor<1x1x5x3xf64>, tensor<1x1x5x2xf64>) -> (tensor<1x1x2x2xf64>, tensor<1x1x2xf32>)
  return %o, %lse, %oc, %lsec : tensor<1x1x2x2xf64>, tensor<1x1x2xf32>, tensor<1x1x2x2xf64>, tensor<1x1x2xf32>
}

// Scores that differ: head_dim 1, scale 1, q = ln 2 and keys 0, 1, 2 give
// weights 1, 2, 4 on values 1, 10, 100. A row seeing all three keys outputs
// (1 + 20 + 400) / 7 = 60.142857 with lse log 7; causal row 0 of two sees
// keys 0..1: (1 + 20) / 3 = 7, lse log 3. Full: 2 x 60.142857 = 120.285714,
// lse sum log 49 = 3.89182. Causal: 7 + 60.142857 = 67.142857, lse log 21
// = 3.04452 (lse sums below add head 1). GQA: two q heads share the kv head; the second head's q = 0
// weighs the values equally, mean 37 (lse log 3), causal row 0 of it (keys
// 0..1) 5.5 (lse log 2): full adds 2 x 37, causal 5.5 + 37.
// WEIGHTED: res0: tensor<1x2x2x1xf64> sum=194.285714{{[0-9]*}} l2=
// WEIGHTED-NEXT: res1: tensor<1x2x2xf32> sum=6.089044{{[0-9]*}} l2=
// WEIGHTED-NEXT: res2: tensor<1x2x2x1xf64> sum=109.642857{{[0-9]*}} l2=
// WEIGHTED-NEXT: res3: tensor<1x2x2xf32> sum=4.836281{{[0-9]*}} l2=
func.func @weighted() -> (tensor<1x2x2x1xf64>, tensor<1x2x2xf32>, tensor<1x2x2x1xf64>, tensor<1x2x2xf32>) {
  %q = arith.constant dense<[[[[0.6931471805599453], [0.6931471805599453]], [[0.0], [0.0]]]]> : tensor<1x2x2x1xf64>
  %k = arith.constant dense<[[[[0.0], [1.0], [2.0]]]]> : tensor<1x1x3x1xf64>
  %v = arith.constant dense<[[[[1.0], [10.0], [100.0]]]]> : tensor<1x1x3x1xf64>
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<1x2x2x1xf64>, tensor<1x1x3x1xf64>, tensor<1x1x3x1xf64>) -> (tensor<1x2x2x1xf64>, tensor<1x2x2xf32>)
  %oc, %lsec = weft.attention %q, %k, %v {causal, scale = 1.0 : f32} : (tensor<1x2x2x1xf64>, tensor<1x1x3x1xf64>, tensor<1x1x3x1xf64>) -> (tensor<1x2x2x1xf64>, tensor<1x2x2xf32>)
  return %o, %lse, %oc, %lsec : tensor<1x2x2x1xf64>, tensor<1x2x2xf32>, tensor<1x2x2x1xf64>, tensor<1x2x2xf32>
}
