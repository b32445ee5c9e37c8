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
