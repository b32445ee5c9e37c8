// REQUIRES: ptxas
// The generic pointwise ops lowered from their formulas (ScalarFormulas.cpp)
// in one fused bf16 group, and assembled by ptxas -arch=sm_90a without
// spills: tanh as 1 - 2 / (e^2x + 1) with ex2.approx; exp as ex2.approx of x
// log2(e); rsqrt as 1 / sqrt.rn; neg as arith.negf.
// RUN: weft-compile %s --emit=elementwise-ir | FileCheck %s
// RUN: rm -rf %t && weft-compile %s --emit=elementwise-kernels -o %t > %t.resources
// RUN: FileCheck %s --check-prefix=PTXAS --input-file=%t.resources
// RUN: not grep -v "spill_stores=0 spill_loads=0 stack=0 " %t.resources

// CHECK-LABEL: gpu.module @tanh_exp_rsqrt_neg_0
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// tanh(x): e^(2x) by ex2.approx, then 1 - 2 / (e + 1).
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.divf
// CHECK: arith.subf
// exp: ex2.approx of x log2(e).
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// rsqrt: 1 / sqrt.rn.
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK: arith.divf
// neg: arith.negf.
// CHECK: arith.negf
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// PTXAS: tanh_exp_rsqrt_neg_0 tanh_exp_rsqrt_neg_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
func.func @tanh_exp_rsqrt_neg(%x: tensor<16x1024xbf16>) -> tensor<16x1024xbf16> {
  %y = weft.fused %x {kind = "tanh+exp+rsqrt+neg"} : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16> {
  ^bb0(%a: tensor<16x1024xbf16>):
    %tanh = weft.tanh %a : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16>
    %exp = weft.exp %tanh : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16>
    %rsqrt = weft.rsqrt %exp : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16>
    %neg = weft.neg %rsqrt : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16>
    weft.yield %neg : tensor<16x1024xbf16>
  }
  return %y : tensor<16x1024xbf16>
}

// log, sqrt, sigmoid, pow and a broadcast div in one bf16 group: log and
// pow as math.log and math.powf (libdevice's logf and powf at PTX time),
// sqrt as sqrt.rn, sigmoid as 1 / (1 + ex2.approx(-x log2(e))), div as
// arith.divf by the broadcast row operand.
// CHECK-LABEL: gpu.module @log_sqrt_sigmoid_pow_div_0
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: math.log %{{.*}} : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.divf
// CHECK: math.powf %{{.*}}, %{{.*}} : f32
// CHECK: arith.divf
// PTXAS: log_sqrt_sigmoid_pow_div_0 log_sqrt_sigmoid_pow_div_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
func.func @log_sqrt_sigmoid_pow_div(%x: tensor<16x1024xbf16>, %d: tensor<1024xbf16>) -> tensor<16x1024xbf16> {
  %y = weft.fused %x, %d {kind = "log+sqrt+sigmoid+pow+div"} : (tensor<16x1024xbf16>, tensor<1024xbf16>) -> tensor<16x1024xbf16> {
  ^bb0(%a: tensor<16x1024xbf16>, %b: tensor<1024xbf16>):
    %log = weft.log %a : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16>
    %sqrt = weft.sqrt %log : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16>
    %sig = weft.sigmoid %sqrt : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16>
    %pow = weft.pow %sig {exponent = -1.5 : f64} : (tensor<16x1024xbf16>) -> tensor<16x1024xbf16>
    %div = weft.div %pow, %b : (tensor<16x1024xbf16>, tensor<1024xbf16>) -> tensor<16x1024xbf16>
    weft.yield %div : tensor<16x1024xbf16>
  }
  return %y : tensor<16x1024xbf16>
}

// cos and sin (libdevice's cosf and sinf) in an f32 group. Their slow-path
// argument reduction keeps a local array: with eight bf16 elements per
// thread and other transcendentals in the group it spills, so they are
// checked here on their own, four f32 elements per thread.
// CHECK-LABEL: gpu.module @cos_sin_0
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: math.cos %{{.*}} : f32
// CHECK-NEXT: math.sin %{{.*}} : f32
// PTXAS: cos_sin_0 cos_sin_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
func.func @cos_sin(%x: tensor<16x1024xf32>) -> tensor<16x1024xf32> {
  %y = weft.fused %x {kind = "cos+sin"} : (tensor<16x1024xf32>) -> tensor<16x1024xf32> {
  ^bb0(%a: tensor<16x1024xf32>):
    %cos = weft.cos %a : (tensor<16x1024xf32>) -> tensor<16x1024xf32>
    %sin = weft.sin %cos : (tensor<16x1024xf32>) -> tensor<16x1024xf32>
    weft.yield %sin : tensor<16x1024xf32>
  }
  return %y : tensor<16x1024xf32>
}
