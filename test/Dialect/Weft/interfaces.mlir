// CostOpInterface and MemoryOpInterface of the weft ops, through the
// weft-print-cost test pass: one line per op, in IR order.
//
// With peak-tflops=1 and peak-gbps=1000 both ceilings are 10^12 per second, so
// roofline_us = max(flops, bytes) / 10^12 s = max(flops, bytes) * 10^-6 us.
// bytes = every operand and result once (an unfused kernel); i1 counts one
// byte per element; result_bytes = the results only.
// RUN: weft-opt %s --weft-print-cost="peak-tflops=1 peak-gbps=1000" -o /dev/null | FileCheck %s
// Other ceilings: 2 TFLOP/s and 500 GB/s (first op only, see @gemms).
// RUN: weft-opt %s --weft-print-cost="peak-tflops=2 peak-gbps=500" -o /dev/null | FileCheck %s --check-prefix=SLOW
// Defaults: an H100 SXM, 989 TFLOP/s and 3350 GB/s (see @attention_h100).
// RUN: weft-opt %s --weft-print-cost -o /dev/null | FileCheck %s --check-prefix=H100
// RUN: not weft-opt %s --weft-print-cost="peak-gbps=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: weft-print-cost expects positive peak-tflops and peak-gbps, got 9.890000e+02 and 0.000000e+00

func.func @gemms(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %a: tensor<2x16x8xf32>, %m: tensor<16x4xf32>) {
  // matmul with transpose_a: a is [2, k=16, m=8], b [k=16, n=4], c [2, 8, 4].
  // flops = 2 * (2*8*4) * 16 = 2048; bytes = 4 * (256 + 64 + 64) = 1536.
  // CHECK: weft.matmul: flops=2048 bytes=1536 workspace=0 roofline_us=0.002048 result_bytes=256
  // SLOW: weft.matmul: flops=2048 bytes=1536 workspace=0 roofline_us=0.003072 result_bytes=256
  // At 2 TFLOP/s and 500 GB/s memory dominates: 1536 / 5e11 s = 0.003072 us.
  %0 = weft.matmul %a, %m {transpose_a} : (tensor<2x16x8xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32>
  // linear with bias: y [2, 4, 16] has 128 outputs, each 2 * in(8) FLOPs plus
  // the bias add: 2*128*8 + 128 = 2176.
  // bytes = 4 * (x 64 + w 128 + b 16 + y 128) = 1344.
  // CHECK-NEXT: weft.linear: flops=2176 bytes=1344 workspace=0 roofline_us=0.002176 result_bytes=512
  %1 = weft.linear %x, %w, %b : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  // Without bias: 2*128*8 = 2048; bytes = 1344 - 64 = 1280.
  // CHECK-NEXT: weft.linear: flops=2048 bytes=1280 workspace=0 roofline_us=0.002048 result_bytes=512
  %2 = weft.linear %x, %w : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  return
}

func.func @attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>, %q2: tensor<1x2x2x8xf32>) {
  // Score entries b*hq*sq*sk = 1*2*4*4 = 32; per entry QK^T 2*d + PV 2*dv +
  // 5 for the softmax = 16 + 16 + 5 = 37: flops = 32 * 37 = 1184.
  // bytes = 4 * (q 64 + k 32 + v 32 + out 64) = 768.
  // CHECK-NEXT: weft.attention: flops=1184 bytes=768 workspace=0 roofline_us=0.001184 result_bytes=256
  %0 = weft.attention %q, %k, %v : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  // Causal, sq = sk = 4: row i sees i + 1 keys, 1+2+3+4 = 10 of 16, so
  // 32 * 10/16 = 20 entries: 20 * 37 = 740. The f32 lse [1, 2, 4] adds
  // 32 bytes: 768 + 32 = 800, results 256 + 32 = 288.
  // CHECK-NEXT: weft.attention: flops=740 bytes=800 workspace=0 roofline_us=0.0008 result_bytes=288
  %1, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  // Causal with sq = 2 < sk = 4 (bottom-right): row i sees i + 1 + 2 keys,
  // 3+4 = 7 of 8; 1*2*2*4 = 16 entries * 7/8 = 14: 14 * 37 = 518.
  // bytes = 4 * (q 32 + k 32 + v 32 + out 32) = 512.
  // CHECK-NEXT: weft.attention: flops=518 bytes=512 workspace=0 roofline_us=0.000518 result_bytes=128
  %2 = weft.attention %q2, %k, %v {causal} : (tensor<1x2x2x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x2x8xf32>
  return
}

func.func @attention_grad(%do: tensor<1x2x4x8xf32>, %q: tensor<1x2x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>, %o: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>) {
  // 32 entries, each 2*(3*d + 2*dv) + 8 = 2*(24 + 16) + 8 = 88: 2816 FLOPs.
  // Workspace: only the f32 row statistic D = rowsum(dO * O), b*hq*sq =
  // 1*2*4 = 8 rows: 4 * 8 = 32 bytes (dQ accumulates in registers per query
  // block, no f32 dQ accumulator).
  // bytes = 4 * (dout 64 + q 64 + k 32 + v 32 + out 64 + lse 8
  //              + dq 64 + dk 32 + dv 32) = 4 * 392 = 1568.
  // CHECK-NEXT: weft.attention_grad: flops=2816 bytes=1568 workspace=32 roofline_us=0.002816 result_bytes=512
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>)
  return
}

func.func @attention_h100(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x128x64xbf16>, %v: tensor<2x2x128x64xbf16>) {
  // GQA, causal, s = 128, d = 64, bf16. Entries: 2*8*128*128 = 262144 of
  // which (128*129/2) / 128^2 = 8256/16384 are computed: 132096; each
  // 2*64 + 2*64 + 5 = 261 FLOPs: 34477056.
  // bytes = 2 * (q 131072 + k 32768 + v 32768 + out 131072) = 655360.
  // An H100 is memory-bound here: 655360 / 3.35e12 s = 0.19563 us, compute
  // 34477056 / 989e12 s = 0.0349 us.
  // At 1:1 ceilings compute dominates: 34477056 * 10^-6 us, printed to 6
  // significant digits.
  // CHECK-NEXT: weft.attention: flops=34477056 bytes=655360 workspace=0 roofline_us=34.4771 result_bytes=262144
  // H100: weft.attention: flops=34477056 bytes=655360 workspace=0 roofline_us=0.19563 result_bytes=262144
  %0 = weft.attention %q, %k, %v {causal} : (tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> tensor<2x8x128x64xbf16>
  return
}

func.func @pointwise(%x: tensor<4x8xbf16>, %g: tensor<8xbf16>, %h: tensor<4x8xf16>, %seed: tensor<i64>, %c: tensor<4x8xi1>, %a: tensor<4x8xf32>) {
  // layer_norm: 8 FLOPs per element, 32 elements: 256.
  // bytes = 2 * (x 32 + gamma 8 + beta 8 + y 32) = 160.
  // CHECK-NEXT: weft.layer_norm: flops=256 bytes=160 workspace=0 roofline_us=0.000256 result_bytes=64
  %0 = weft.layer_norm %x, %g, %g : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  // rms_norm: 5 per element: 160; bytes = 2 * (32 + 8 + 32) = 144.
  // CHECK-NEXT: weft.rms_norm: flops=160 bytes=144 workspace=0 roofline_us=0.00016 result_bytes=64
  %1 = weft.rms_norm %x, %g : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  // gelu: 10 per element: 320; bytes = 2 * (32 + 32) = 128.
  // CHECK-NEXT: weft.gelu: flops=320 bytes=128 workspace=0 roofline_us=0.00032 result_bytes=64
  %2 = weft.gelu %x : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  // softmax: 5 per element: 160.
  // CHECK-NEXT: weft.softmax: flops=160 bytes=128 workspace=0 roofline_us=0.00016 result_bytes=64
  %3 = weft.softmax %x : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  // dropout: 2 per element (draw, select-and-scale): 64; bytes include the
  // i64 seed: 2*32 + 8 + 2*32 = 136.
  // CHECK-NEXT: weft.dropout: flops=64 bytes=136 workspace=0 roofline_us=0.000136 result_bytes=64
  %4 = weft.dropout %h, %seed {p = 0.1 : f64, weft.rng_id = 1 : i64} : (tensor<4x8xf16>, tensor<i64>) -> tensor<4x8xf16>
  // where: 1 per element: 32; the i1 mask counts one byte per element:
  // 32 + 4 * (32 + 32 + 32) = 416.
  // CHECK-NEXT: weft.where: flops=32 bytes=416 workspace=0 roofline_us=0.000416 result_bytes=128
  %5 = weft.where %c, %a, %a : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // convert: 1 per element; bytes = 4*32 (f32 in) + 2*32 (bf16 out) = 192.
  // CHECK-NEXT: weft.convert: flops=32 bytes=192 workspace=0 roofline_us=0.000192 result_bytes=64
  %6 = weft.convert %a : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return
}

func.func @shapes(%x: tensor<2x4x8xf32>, %ids: tensor<2x16xi64>, %table: tensor<100x32xf32>, %labels: tensor<2x16xi64>, %logits: tensor<2x16x100xf32>) {
  // reduce_mean: one add per input element plus one divide per output:
  // 64 + 8 = 72; bytes = 4 * (64 + 8) = 288.
  // CHECK-NEXT: weft.reduce_mean: flops=72 bytes=288 workspace=0 roofline_us=0.000288 result_bytes=32
  %0 = weft.reduce_mean %x {dims = array<i64: 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8xf32>
  // reshape and transpose compute nothing but still move their bytes
  // (unfused): 4 * (64 + 64) = 512.
  // CHECK-NEXT: weft.reshape: flops=0 bytes=512 workspace=0 roofline_us=0.000512 result_bytes=256
  %1 = weft.reshape %x : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  // CHECK-NEXT: weft.transpose: flops=0 bytes=512 workspace=0 roofline_us=0.000512 result_bytes=256
  %2 = weft.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x4x8xf32>) -> tensor<8x4x2xf32>
  // split: results sum to the input: 4 * (64 + 24 + 40) = 512.
  // CHECK-NEXT: weft.split: flops=0 bytes=512 workspace=0 roofline_us=0.000512 result_bytes=256
  %3:2 = weft.split %x {dim = 2 : i64, sizes = array<i64: 3, 5>} : (tensor<2x4x8xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x5xf32>)
  // embedding: a gather, 0 FLOPs; bytes = ids 32 * 8 + table 3200 * 4 +
  // result 1024 * 4 = 256 + 12800 + 4096 = 17152.
  // CHECK-NEXT: weft.embedding: flops=0 bytes=17152 workspace=0 roofline_us=0.017152 result_bytes=4096
  %4 = weft.embedding %ids, %table : (tensor<2x16xi64>, tensor<100x32xf32>) -> tensor<2x16x32xf32>
  // cross_entropy: 5 per logit: 5 * 3200 = 16000; bytes = 12800 + 256 + 4
  // (the 0-d f32 loss) = 13060.
  // CHECK-NEXT: weft.cross_entropy: flops=16000 bytes=13060 workspace=0 roofline_us=0.016 result_bytes=4
  %5 = weft.cross_entropy %logits, %labels : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
  return
}

func.func @adamw(%p: tensor<8xf32>, %m: tensor<8xf32>, %t: tensor<i64>) {
  // 14 FLOPs per parameter: 112; bytes = 4 inputs and 3 results of 32 bytes
  // and the 8-byte step: 7 * 32 + 8 = 232.
  // CHECK-NEXT: weft.adamw: flops=112 bytes=232 workspace=0 roofline_us=0.000232 result_bytes=96
  %p1, %m1, %v1 = weft.adamw %p, %p, %m, %m, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// Regressions: valid shapes at the 2^48-element limit. matmul's 2*m*n*k =
// 2 * 2^48 * 2^24 = 2^73 FLOPs passes int64 (it wrapped): it saturates at
// 2^63 - 1. bytes = 3 tensors of 2^48 f32 elements = 3 * 2^50.
func.func @huge(%a: tensor<16777216x16777216xf32>, %q: tensor<1x1x1099511627776x1xf32>) {
  // CHECK-NEXT: weft.matmul: flops=9223372036854775807 bytes=3377699720527872 workspace=0 roofline_us=9.22337e+12 result_bytes=1125899906842624
  %0 = weft.matmul %a, %a : (tensor<16777216x16777216xf32>, tensor<16777216x16777216xf32>) -> tensor<16777216x16777216xf32>
  // Causal attention over s = 2^40 (the cost loop took hours per row count,
  // now a closed form): entries s(s+1)/2 = 2^79 + 2^39, each 2 + 2 + 5 = 9
  // FLOPs: saturates. bytes = 4 tensors of 2^40 f32 = 2^44, the result 2^42;
  // the roofline is (2^63 - 1) / 10^12 s = 9.22337e+12 us.
  // CHECK-NEXT: weft.attention: flops=9223372036854775807 bytes=17592186044416 workspace=0 roofline_us=9.22337e+12 result_bytes=4398046511104
  %1 = weft.attention %q, %q, %q {causal} : (tensor<1x1x1099511627776x1xf32>, tensor<1x1x1099511627776x1xf32>, tensor<1x1x1099511627776x1xf32>) -> tensor<1x1x1099511627776x1xf32>
  return
}

// Nothing else is printed: func and return implement neither interface.
// CHECK-NOT: {{.}}
