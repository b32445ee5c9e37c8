// The reference interpreter on upstream structured ops (what
// weft-tile-attention emits): exact integer semantics at each bit width,
// scf.for with iter_args, scf.if, slices and linalg.generic reductions.
// RUN: weft-run --entry=ints %s | FileCheck %s --check-prefix=INTS
// RUN: weft-run --entry=loops %s | FileCheck %s --check-prefix=LOOPS
// RUN: not weft-run --entry=nocast %s 2>&1 | FileCheck %s --check-prefix=BAD

func.func @fill(%v: i64) -> tensor<i64> {
  %e = tensor.empty() : tensor<i64>
  %f = linalg.fill ins(%v : i64) outs(%e : tensor<i64>) -> tensor<i64>
  return %f : tensor<i64>
}

// INTS: res0: tensor<i64> sum=1 l2=
// INTS: res1: tensor<i64> sum=4294967294 l2=
// Philox multiplier 0xD2511F53 times 0x9E3779B9 = 0x81FBA4C3_4942DDFB.
// INTS: res2: tensor<i64> sum=1229118971 l2=
// INTS: res3: tensor<i64> sum=2180752579 l2=
// INTS: res4: tensor<i64> sum=-3 l2=
// INTS: res5: tensor<i64> sum=4 l2=
// INTS: res6: tensor<i64> sum=2147483647 l2=
func.func @ints() -> (tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) {
  %m1 = arith.constant -1 : i32
  %lo, %hi = arith.mului_extended %m1, %m1 : i32
  %lo64 = arith.extui %lo : i32 to i64
  %hi64 = arith.extui %hi : i32 to i64
  %a = arith.constant 0x9E3779B9 : i32
  %b = arith.constant 0xD2511F53 : i32
  %lo2, %hi2 = arith.mului_extended %a, %b : i32
  %lo2x = arith.extui %lo2 : i32 to i64
  %hi2x = arith.extui %hi2 : i32 to i64
  %m7 = arith.constant -7 : index
  %p7 = arith.constant 7 : index
  %two = arith.constant 2 : index
  %c1 = arith.ceildivsi %m7, %two : index
  %c2 = arith.ceildivsi %p7, %two : index
  %c1i = arith.index_cast %c1 : index to i64
  %c2i = arith.index_cast %c2 : index to i64
  %sh = arith.constant 1 : i32
  %s = arith.shrui %m1, %sh : i32
  %si = arith.extui %s : i32 to i64
  %r0 = func.call @fill(%lo64) : (i64) -> tensor<i64>
  %r1 = func.call @fill(%hi64) : (i64) -> tensor<i64>
  %r2 = func.call @fill(%lo2x) : (i64) -> tensor<i64>
  %r3 = func.call @fill(%hi2x) : (i64) -> tensor<i64>
  %r4 = func.call @fill(%c1i) : (i64) -> tensor<i64>
  %r5 = func.call @fill(%c2i) : (i64) -> tensor<i64>
  %r6 = func.call @fill(%si) : (i64) -> tensor<i64>
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6 : tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>
}

// LOOPS: res0: tensor<i64> sum=45 l2=
// LOOPS: res1: tensor<2xf64> sum=21 l2=16.1554944
// LOOPS: res2: tensor<f32> sum=1 l2=1
// LOOPS: res3: tensor<1x2xf64> sum=11 l2=
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @loops() -> (tensor<i64>, tensor<2xf64>, tensor<f32>, tensor<1x2xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %zero = arith.constant 0 : i64
  %sum = scf.for %i = %c0 to %c10 step %c1 iter_args(%acc = %zero) -> (i64) {
    %ii = arith.index_cast %i : index to i64
    %odd = arith.cmpi eq, %ii, %zero : i64
    %next = scf.if %odd -> (i64) {
      scf.yield %acc : i64
    } else {
      %n = arith.addi %acc, %ii : i64
      scf.yield %n : i64
    }
    scf.yield %next : i64
  }
  %m = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf64>
  %e = tensor.empty() : tensor<2xf64>
  %z = arith.constant 0.0 : f64
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<2xf64>) -> tensor<2xf64>
  %red = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%m : tensor<2x3xf64>) outs(%f : tensor<2xf64>) {
  ^bb0(%in: f64, %out: f64):
    %s = arith.addf %out, %in : f64
    linalg.yield %s : f64
  } -> tensor<2xf64>
  %one = arith.constant 1.0 : f32
  %tiny = arith.constant 1.0e-8 : f32
  %r = arith.addf %one, %tiny : f32
  %e32 = tensor.empty() : tensor<f32>
  %f32 = linalg.fill ins(%r : f32) outs(%e32 : tensor<f32>) -> tensor<f32>
  %s = tensor.extract_slice %m[1, %c1] [1, 2] [1, 1] : tensor<2x3xf64> to tensor<1x2xf64>
  %r0 = func.call @fill(%sum) : (i64) -> tensor<i64>
  return %r0, %red, %f32, %s : tensor<i64>, tensor<2xf64>, tensor<f32>, tensor<1x2xf64>
}

// BAD: error: 'arith.bitcast' op reference interpreter cannot run 'arith.bitcast'
func.func @nocast() -> tensor<i64> {
  %a = arith.constant 1 : i64
  %b = arith.bitcast %a : i64 to f64
  %c = arith.bitcast %b : f64 to i64
  %r = func.call @fill(%c) : (i64) -> tensor<i64>
  return %r : tensor<i64>
}
