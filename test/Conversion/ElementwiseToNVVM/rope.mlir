// REQUIRES: ptxas
// weft.rope in the elementwise kernels: a paired formula (ScalarFormulas.cpp)
// over x's shape, each element reading x (and, inverse, sin) at its
// rotate_half partner half a row away. When half a row is a multiple of the
// vector width a vector lies in one half of its row: one shift (+-d/2) and
// one vector load of the partners serve all its lanes; otherwise each lane
// finds its partner from its own column. ptxas -arch=sm_90a takes every
// kernel without spills.
// RUN: weft-compile %s --emit=elementwise-ir | FileCheck %s
// RUN: rm -rf %t && weft-compile %s --emit=elementwise-kernels -o %t > %t.resources
// RUN: FileCheck %s --check-prefix=PTXAS --input-file=%t.resources
// RUN: not grep -v "spill_stores=0 spill_loads=0 stack=0 " %t.resources
// Global loads per kernel (LLVM drops the partner loads a formula never
// reads). Forward: x, cos, sin and the partners' x, 4 vectors.
// RUN: grep -c ld.global %t/rope_0.ptx | FileCheck %s --check-prefix=LOADS4
// Inverse: x, cos and the partners' x and sin (sin at the element unread).
// RUN: grep -c ld.global %t/rope_inverse_0.ptx | FileCheck %s --check-prefix=LOADS4
// [3, 7, 12] f32: vectors of 4 straddle the row halves (6): x, cos, sin as
// vectors, then each of the 4 lanes loads its partner's x: 7.
// RUN: grep -c ld.global %t/rope_odd_0.ptx | FileCheck %s --check-prefix=LOADS7
// RMSNorm + rope (a rows kernel): x for the statistics, then x, gamma, cos,
// sin and the partner's x and gamma (its norm recomputed there): 7.
// RUN: grep -c ld.global %t/rms_norm_rope_0.ptx | FileCheck %s --check-prefix=LOADS7
// LOADS4: {{^}}4{{$}}
// LOADS7: {{^}}7{{$}}

// [1, 2, 8, 16] bf16: 32 vectors of 8 over the domain, no tail; the [8, 16]
// tables are loaded as vectors at base mod 128. The vector's column (base
// mod 16) picks the half; the partners' x is one vector load at base +- 8.
// Lane 0: x cos + (first half ? -(x' sin) : x' sin), rounded to bf16.
// CHECK-LABEL: gpu.func @rope_0
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32_i64
// CHECK: %[[BASE:.*]] = arith.muli %{{.*}}, %c8_i64 : i64
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: arith.remsi %[[BASE]], %c128_i64
// CHECK: %[[COL:.*]] = arith.remsi %[[BASE]], %c16_i64 : i64
// CHECK: %[[FIRST:.*]] = arith.cmpi slt, %[[COL]], %c8_i64{{.*}} : i64
// CHECK: %[[SHIFT:.*]] = arith.select %[[FIRST]], %c8_i64{{.*}}, %c-8_i64 : i64
// CHECK: %[[PARTNER:.*]] = arith.addi %[[BASE]], %[[SHIFT]] : i64
// CHECK: %[[OFFSET:.*]] = arith.muli %[[PARTNER]], %c2_i64{{.*}} : i64
// CHECK: %[[AT:.*]] = llvm.getelementptr %arg0[%[[OFFSET]]]
// CHECK: llvm.load %[[AT]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: %[[ROT:.*]] = arith.mulf
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[ROT]] : f32
// CHECK-NEXT: %[[TERM:.*]] = arith.select %[[FIRST]], %[[NEG]], %[[ROT]] : f32
// CHECK-NEXT: %[[XC:.*]] = arith.mulf
// CHECK-NEXT: arith.addf %[[XC]], %[[TERM]] : f32
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to bf16
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// PTXAS-DAG: rope_0 rope_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
func.func @rope(%x: tensor<1x2x8x16xbf16>, %c: tensor<8x16xbf16>, %s: tensor<8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  %y = weft.rope %x, %c, %s : (tensor<1x2x8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<1x2x8x16xbf16>
  return %y : tensor<1x2x8x16xbf16>
}

// Inverse (rope's gradient): the rotated term x' sin' is added in the first
// half and subtracted in the second.
// CHECK-LABEL: gpu.func @rope_inverse_0
// CHECK: %[[FIRST:.*]] = arith.cmpi slt, %{{.*}}, %c8_i64{{.*}} : i64
// CHECK: %[[ROT:.*]] = arith.mulf
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[ROT]] : f32
// CHECK-NEXT: arith.select %[[FIRST]], %[[ROT]], %[[NEG]] : f32
// PTXAS-DAG: rope_inverse_0 rope_inverse_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
func.func @rope_inverse(%x: tensor<1x2x8x16xbf16>, %c: tensor<8x16xbf16>, %s: tensor<8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  %y = weft.rope %x, %c, %s {inverse} : (tensor<1x2x8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<1x2x8x16xbf16>
  return %y : tensor<1x2x8x16xbf16>
}

// [3, 7, 12] f32: 63 vectors of 4; a lane's column is its linear index mod
// 12, its partner (row, column +- 6) loaded as one f32.
// CHECK-LABEL: gpu.func @rope_odd_0
// CHECK: scf.for %{{.*}} = %{{.*}} to %c63_i64
// CHECK: %[[COL:.*]] = arith.remsi %[[LINEAR:.*]], %c12_i64 : i64
// CHECK: %[[FIRST:.*]] = arith.cmpi slt, %[[COL]], %c6_i64 : i64
// CHECK: %[[SHIFT:.*]] = arith.select %[[FIRST]], %c6_i64{{.*}}, %c-6_i64 : i64
// CHECK-NEXT: arith.addi %[[COL]], %[[SHIFT]] : i64
// CHECK-NEXT: arith.divsi %[[LINEAR]], %c12_i64 : i64
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// PTXAS-DAG: rope_odd_0 rope_odd_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
func.func @rope_odd(%x: tensor<3x7x12xf32>, %c: tensor<7x12xf32>, %s: tensor<7x12xf32>) -> tensor<3x7x12xf32> {
  %y = weft.rope %x, %c, %s : (tensor<3x7x12xf32>, tensor<7x12xf32>, tensor<7x12xf32>) -> tensor<3x7x12xf32>
  return %y : tensor<3x7x12xf32>
}

// Fused after RMSNorm: a rows kernel (64 columns: one warp, 8 bf16 a lane); the
// row's 1/rms from a block reduction, then per vector the partners' x and
// gamma, so the partner's norm is recomputed in the same row.
// CHECK-LABEL: gpu.func @rms_norm_rope_0
// CHECK: gpu.shuffle xor
// CHECK: %[[FIRST:.*]] = arith.cmpi slt, %{{.*}}, %c32_i64 : i64
// CHECK: %[[SHIFT:.*]] = arith.select %[[FIRST]], %c32_i64{{.*}}, %c-32_i64 : i64
// CHECK-NEXT: arith.addi %{{.*}}, %[[SHIFT]] : i64
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// PTXAS-DAG: rms_norm_rope_0 rms_norm_rope_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
func.func @rms_norm_rope(%x: tensor<1x2x8x64xbf16>, %g: tensor<64xbf16>, %c: tensor<8x64xbf16>, %s: tensor<8x64xbf16>) -> tensor<1x2x8x64xbf16> {
  %y = weft.fused %x, %g, %c, %s {kind = "rms_norm+rope"} : (tensor<1x2x8x64xbf16>, tensor<64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>) -> tensor<1x2x8x64xbf16> {
  ^bb0(%a: tensor<1x2x8x64xbf16>, %b: tensor<64xbf16>, %cc: tensor<8x64xbf16>, %ss: tensor<8x64xbf16>):
    %n = weft.rms_norm %a, %b {eps = 1.0e-06 : f64} : (tensor<1x2x8x64xbf16>, tensor<64xbf16>) -> tensor<1x2x8x64xbf16>
    %r = weft.rope %n, %cc, %ss : (tensor<1x2x8x64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>) -> tensor<1x2x8x64xbf16>
    weft.yield %r : tensor<1x2x8x64xbf16>
  }
  return %y : tensor<1x2x8x64xbf16>
}
