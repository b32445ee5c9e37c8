// weft.dropout with p > 0 in the elementwise kernels: the Philox4x32-10 draw
// of the element's index (ten rounds of two multiplications, each an
// arith.muli for the low half and PTX's mul.hi.u32 for the high half; the
// first round's second is by the zero counter word and left out: 19 mul.hi
// a block), kept iff draw >= floor(p * 2^32)
// (unsigned), the kept value x * hi + x * lo (1/(1-p) split into two f32s,
// one fma). Vector lanes share one Philox block per 4 elements; the scalar
// tail draws per element and picks word index % 4.
// RUN: weft-compile %s --emit=elementwise-ir | FileCheck %s

// 4 x 64 bf16: 32 vectors of 8 elements, two Philox blocks per vector (base
// / 4 and base / 4 + 1), no tail. Key (uint32(seed), 3), threshold
// floor(0.1 * 2^32) = 429496729, 1/0.9 = 1.11111116 - 5.29819069e-8.
// CHECK-LABEL: gpu.func @dropout_bf16_0
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32_i64
// CHECK: %[[BASE:.*]] = arith.muli %{{.*}}, %c8_i64 : i64
// The leaves load in no fixed order: the vector of x, the seed.
// CHECK-DAG: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK-DAG: %[[SEED:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// CHECK: %[[BLOCK:.*]] = arith.shrui %[[BASE]], %c2_i64{{.*}} : i64
// CHECK: arith.trunci %[[BLOCK]] : i64 to i32
// CHECK: arith.trunci %[[SEED]] : i64 to i32
// 0xD2511F53 and 0xCD9E8D57, Random123's multipliers.
// CHECK: arith.constant -766435501 : i32
// CHECK: arith.constant -845247145 : i32
// CHECK-COUNT-19: mul.hi.u32
// CHECK-NOT: mul.hi.u32
// Lanes 0..3 read the block's four words: no second Philox call among them.
// CHECK: arith.cmpi uge, %{{.*}}, %c429496729_i32{{.*}} : i32
// CHECK: %[[HI:.*]] = arith.constant 1.11111116 : f32
// CHECK: %[[LO:.*]] = arith.constant -5.29819069E-8 : f32
// CHECK: %[[XLO:.*]] = arith.mulf %[[X:.*]], %[[LO]] : f32
// CHECK: math.fma %[[X]], %[[HI]], %[[XLO]] : f32
// CHECK: arith.select
// CHECK-NOT: mul.hi.u32
// CHECK: arith.cmpi uge
// CHECK-NOT: mul.hi.u32
// CHECK: arith.cmpi uge
// CHECK-NOT: mul.hi.u32
// CHECK: arith.cmpi uge
// Lanes 4..7: the next block.
// CHECK: %[[BLOCK1:.*]] = arith.shrui %[[BASE]], %c2_i64{{.*}} : i64
// CHECK: arith.addi %[[BLOCK1]], %c1_i64{{.*}} : i64
// CHECK-COUNT-19: mul.hi.u32
// CHECK-NOT: mul.hi.u32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
func.func @dropout_bf16(%x: tensor<4x64xbf16>, %seed: tensor<i64>) -> tensor<4x64xbf16> {
  %y = weft.dropout %x, %seed {p = 0.1 : f64, weft.rng_id = 3 : i64} : (tensor<4x64xbf16>, tensor<i64>) -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}

// 5 x 3 f32: 3 vectors of 4 (one block each), then a scalar tail of 3 that
// draws its element's block and selects word index % 4. Threshold
// 0.25 * 2^32 = 2^30, 1/0.75 = 1.33333337 - 3.9736431e-8.
// CHECK-LABEL: gpu.func @dropout_tail_f32_0
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3_i64
// CHECK-COUNT-19: mul.hi.u32
// CHECK-NOT: mul.hi.u32
// CHECK: arith.cmpi uge, %{{.*}}, %c1073741824_i32{{.*}} : i32
// CHECK: arith.constant 1.33333337 : f32
// CHECK: arith.constant -3.9736431E-8 : f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c15_i64
// CHECK: %[[I:.*]] = arith.addi %{{.*}} : i64
// CHECK: %[[TBLOCK:.*]] = arith.shrui %[[I]], %c2_i64{{.*}} : i64
// CHECK: arith.trunci %[[TBLOCK]] : i64 to i32
// CHECK-COUNT-19: mul.hi.u32
// CHECK: %[[WORD:.*]] = arith.andi %[[I]], %c3_i64{{.*}} : i64
// CHECK: %[[LANE:.*]] = arith.trunci %[[WORD]] : i64 to i32
// CHECK: arith.cmpi eq, %[[LANE]], %c2_i32{{.*}} : i32
// CHECK: arith.cmpi eq, %[[LANE]], %c1_i32{{.*}} : i32
// CHECK: arith.cmpi eq, %[[LANE]], %c0_i32{{.*}} : i32
// CHECK: arith.cmpi uge, %{{.*}}, %c1073741824_i32{{.*}} : i32
// CHECK-NOT: mul.hi.u32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
func.func @dropout_tail_f32(%x: tensor<5x3xf32>, %seed: tensor<i64>) -> tensor<5x3xf32> {
  %y = weft.dropout %x, %seed {p = 0.25 : f64, weft.rng_id = 9 : i64} : (tensor<5x3xf32>, tensor<i64>) -> tensor<5x3xf32>
  return %y : tensor<5x3xf32>
}

// p = 0 keeps every element unscaled: no Philox.
// CHECK-LABEL: gpu.func @dropout_zero_0
// CHECK-NOT: mul.hi.u32
// CHECK: llvm.store
func.func @dropout_zero(%x: tensor<4x64xbf16>, %seed: tensor<i64>) -> tensor<4x64xbf16> {
  %y = weft.dropout %x, %seed {p = 0.0 : f64, weft.rng_id = 3 : i64} : (tensor<4x64xbf16>, tensor<i64>) -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}

// dropout + residual + LayerNorm, one CTA per row of 256 (8 x bf16 per
// thread): the dropout feeds the mean pass, the variance pass and the
// output pass, each drawing two blocks per vector: 3 x 2 x 19 = 114
// high halves, none elsewhere.
// CHECK-LABEL: gpu.func @dropout_add_layer_norm_0
// CHECK-COUNT-114: mul.hi.u32
// CHECK-NOT: mul.hi.u32
func.func @dropout_add_layer_norm(%x: tensor<2x64x256xbf16>, %seed: tensor<i64>, %res: tensor<2x64x256xbf16>, %g: tensor<256xbf16>, %b: tensor<256xbf16>) -> (tensor<2x64x256xbf16>, tensor<2x64x256xbf16>) {
  %s, %y = weft.fused %x, %seed, %res, %g, %b {kind = "dropout+add+layer_norm"} : (tensor<2x64x256xbf16>, tensor<i64>, tensor<2x64x256xbf16>, tensor<256xbf16>, tensor<256xbf16>) -> (tensor<2x64x256xbf16>, tensor<2x64x256xbf16>) {
  ^bb0(%a0: tensor<2x64x256xbf16>, %a1: tensor<i64>, %a2: tensor<2x64x256xbf16>, %a3: tensor<256xbf16>, %a4: tensor<256xbf16>):
    %d = weft.dropout %a0, %a1 {p = 0.1 : f64, weft.rng_id = 7 : i64} : (tensor<2x64x256xbf16>, tensor<i64>) -> tensor<2x64x256xbf16>
    %s0 = weft.add %d, %a2 : (tensor<2x64x256xbf16>, tensor<2x64x256xbf16>) -> tensor<2x64x256xbf16>
    %y0 = weft.layer_norm %s0, %a3, %a4 {eps = 1.0e-05 : f64} : (tensor<2x64x256xbf16>, tensor<256xbf16>, tensor<256xbf16>) -> tensor<2x64x256xbf16>
    weft.yield %s0, %y0 : tensor<2x64x256xbf16>, tensor<2x64x256xbf16>
  }
  return %s, %y : tensor<2x64x256xbf16>, tensor<2x64x256xbf16>
}

// Its backward group as weft-autodiff + weft-fuse-elementwise make it: the
// residual gradient dsum and dx = dropout(dsum) with the forward's rng_id.
// Only the output pass of the rows kernel computes the dropout (the
// statistics and column sums do not read it): 2 x 19.
// CHECK-LABEL: gpu.func @layer_norm_grad_add_dropout_0(
// CHECK-COUNT-38: mul.hi.u32
// CHECK-NOT: mul.hi.u32
// CHECK-LABEL: gpu.func @layer_norm_grad_add_dropout_0_colsum(
// CHECK-NOT: mul.hi.u32
func.func @layer_norm_grad_add_dropout(%dy: tensor<2x64x256xbf16>, %x: tensor<2x64x256xbf16>, %g: tensor<256xbf16>, %dres: tensor<2x64x256xbf16>, %seed: tensor<i64>) -> (tensor<256xbf16>, tensor<256xbf16>, tensor<2x64x256xbf16>, tensor<2x64x256xbf16>) {
  %dg, %db, %ds, %dx = weft.fused %dy, %x, %g, %dres, %seed {kind = "layer_norm_grad+add+dropout"} : (tensor<2x64x256xbf16>, tensor<2x64x256xbf16>, tensor<256xbf16>, tensor<2x64x256xbf16>, tensor<i64>) -> (tensor<256xbf16>, tensor<256xbf16>, tensor<2x64x256xbf16>, tensor<2x64x256xbf16>) {
  ^bb0(%a0: tensor<2x64x256xbf16>, %a1: tensor<2x64x256xbf16>, %a2: tensor<256xbf16>, %a3: tensor<2x64x256xbf16>, %a4: tensor<i64>):
    %dx0, %dg0, %db0 = weft.layer_norm_grad %a0, %a1, %a2 {eps = 1.0e-05 : f64} : (tensor<2x64x256xbf16>, tensor<2x64x256xbf16>, tensor<256xbf16>) -> (tensor<2x64x256xbf16>, tensor<256xbf16>, tensor<256xbf16>)
    %ds0 = weft.add %a3, %dx0 : (tensor<2x64x256xbf16>, tensor<2x64x256xbf16>) -> tensor<2x64x256xbf16>
    %dd = weft.dropout %ds0, %a4 {p = 0.1 : f64, weft.rng_id = 7 : i64} : (tensor<2x64x256xbf16>, tensor<i64>) -> tensor<2x64x256xbf16>
    weft.yield %dg0, %db0, %ds0, %dd : tensor<256xbf16>, tensor<256xbf16>, tensor<2x64x256xbf16>, tensor<2x64x256xbf16>
  }
  return %dg, %db, %ds, %dx : tensor<256xbf16>, tensor<256xbf16>, tensor<2x64x256xbf16>, tensor<2x64x256xbf16>
}
