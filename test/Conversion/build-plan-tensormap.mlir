// RUN: weft-opt %s --weft-plan-memory --weft-build-plan="wgmma=true block-q=128 block-k=64" | FileCheck %s
// RUN: weft-opt %s --weft-plan-memory --weft-build-plan="wgmma=true block-q=128 block-k=64" | weft-opt | FileCheck %s

// The warpgroup-MMA forward reads q, k, v through TMA: its first three
// parameters are "tensormap" and their arguments the rank-4 views
// (head_dim, len, heads, batch) (attentionTensorMap), box (64, rows, 1, 1),
// 128-byte swizzle; q's box rows are block_q, k's and v's block_k.
func.func @attn(%q: tensor<2x4x256x128xbf16>, %k: tensor<2x2x512x128xbf16>,
                %v: tensor<2x2x512x128xbf16>)
    -> (tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>) {
  %o, %lse = weft.attention %q, %k, %v : (tensor<2x4x256x128xbf16>, tensor<2x2x512x128xbf16>, tensor<2x2x512x128xbf16>) -> (tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>)
  return %o, %lse : tensor<2x4x256x128xbf16>, tensor<2x4x256xf32>
}

// CHECK-LABEL: weft_plan.step @attn_plan
// CHECK: weft_plan.kernel @[[K:weft_attn_forward_[a-z0-9_]+]] image "{{.*}}" entry "{{.*}}" params ["tensormap", "tensormap", "tensormap", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32", "f32"]
// q: d 128, len 256, 4 heads, batch 2; strides 256, 256 * 256 and 4 * 65536 bytes.
// CHECK: weft_plan.launch @[[K]] [{box = array<i64: 64, 128, 1, 1>, dims = array<i64: 128, 256, 4, 2>, dtype = "bf16", strides = array<i64: 256, 65536, 262144>, swizzle = 128 : i64, tensormap = @arg0},
// k: len 512, 2 heads, box rows block_k = 64.
// CHECK-SAME: {box = array<i64: 64, 64, 1, 1>, dims = array<i64: 128, 512, 2, 2>, dtype = "bf16", strides = array<i64: 256, 131072, 262144>, swizzle = 128 : i64, tensormap = @arg1},
// CHECK-SAME: {box = array<i64: 64, 64, 1, 1>, dims = array<i64: 128, 512, 2, 2>, dtype = "bf16", strides = array<i64: 256, 131072, 262144>, swizzle = 128 : i64, tensormap = @arg2},
// CHECK-SAME: @s0_0, @s0_1, 2 : i32, 4 : i32, 2 : i32, 256 : i32, 512 : i32
