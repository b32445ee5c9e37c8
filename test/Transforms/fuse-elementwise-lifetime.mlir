// RUN: weft-opt %s --split-input-file --weft-fuse-elementwise | FileCheck %s --enable-var-scope

// Per-chunk weight gradients (weft-chunk-loss's lm_head) summed by a chain of
// adds, a GEMM between each two. A group may keep at most twice the bytes
// across a GEMM that its producer's result would (two partials for one
// sum), so the chain fuses in pairs and at most three partials are live;
// one group of every add would run at the chain's end, every partial live
// until then (nanoGPT's 32 partials of 73.7 MiB took its smallest arena
// from 2.27 to 3.27 GiB).
// CHECK-LABEL: func.func @running_sum
// CHECK: %[[P0:.*]] = weft.matmul
// CHECK: %[[P1:.*]] = weft.matmul
// CHECK: %[[P2:.*]] = weft.matmul
// CHECK: %[[S2:.*]] = weft.fused %[[P0]], %[[P1]], %[[P2]] {kind = "add"}
// CHECK: %[[P3:.*]] = weft.matmul
// CHECK: %[[S3:.*]] = weft.fused %[[S2]], %[[P3]] {kind = "add+convert"}
// CHECK: return %[[S3]]
func.func @running_sum(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>) -> tensor<8x8xf32> {
  %p0 = weft.matmul %a, %b {transpose_a} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
  %p1 = weft.matmul %b, %a {transpose_a} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
  %s1 = weft.add %p0, %p1 : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %p2 = weft.matmul %a, %a {transpose_a} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
  %s2 = weft.add %s1, %p2 : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %p3 = weft.matmul %b, %b {transpose_a} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
  %s3 = weft.add %s2, %p3 : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %f = weft.convert %s3 : (tensor<8x8xbf16>) -> tensor<8x8xf32>
  return %f : tensor<8x8xf32>
}

// -----

// A gap that keeps no more alive: the producer's result, read by the add
// after the GEMM, is as large as what the group would keep (%x, read later
// anyway, dies after the group either way), so the scale still joins it.
// CHECK-LABEL: func.func @gap_without_growth
// CHECK: %[[M:.*]] = weft.matmul
// CHECK: weft.fused %arg0, %[[M]] {kind = "scale+add"}
func.func @gap_without_growth(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %s = weft.scale %x {value = 2.0 : f64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %m = weft.matmul %x, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = weft.add %s, %m : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %a, %m : tensor<8x8xf32>, tensor<8x8xf32>
}
