// RUN: weft-opt %s --split-input-file --weft-align-reshapes | FileCheck %s --enable-var-scope
// RUN: weft-opt %s --split-input-file --weft-align-reshapes --weft-fuse-elementwise | FileCheck %s --check-prefix=FUSED
// RUN: weft-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(weft-align-reshapes))' --weft-diff-each-pass -o /dev/null

// GPT-2's f32 GELU under autocast, viewed as [tokens, n] and converted to
// bf16 for the next GEMM: the convert moves above the view onto the GELU's
// shape, so one kernel writes the bf16 value and the f32 one never exists.
// CHECK-LABEL: func.func @gelu_view_convert
// CHECK: %[[G:.*]] = weft.gelu
// CHECK-NEXT: %[[C:.*]] = weft.convert %[[G]] {weft.layer = 2 : i64} : (tensor<2x4x16xf32>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[V:.*]] = weft.reshape %[[C]] {weft.layer = 2 : i64} : (tensor<2x4x16xbf16>) -> tensor<8x16xbf16>
// CHECK-NEXT: weft.matmul %[[V]], %arg1
// FUSED-LABEL: func.func @gelu_view_convert
// FUSED: %[[F:.*]] = weft.fused %arg0 {kind = "convert+gelu", weft.layer = 2 : i64} : (tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
// FUSED: weft.reshape %[[F]]
func.func @gelu_view_convert(%x: tensor<2x4x16xbf16>, %w: tensor<16x8xbf16>) -> tensor<8x8xbf16> {
  %u = weft.convert %x {weft.layer = 2 : i64} : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
  %g = weft.gelu %u {approximate = "tanh", weft.layer = 2 : i64} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %v = weft.reshape %g {weft.layer = 2 : i64} : (tensor<2x4x16xf32>) -> tensor<8x16xf32>
  %c = weft.convert %v {weft.layer = 2 : i64} : (tensor<8x16xf32>) -> tensor<8x16xbf16>
  %o = weft.matmul %c, %w {weft.layer = 2 : i64} : (tensor<8x16xbf16>, tensor<16x8xbf16>) -> tensor<8x8xbf16>
  return %o : tensor<8x8xbf16>
}

// -----

// A bf16 GEMM result widened to f32 and viewed as [b, s, n] for a LayerNorm:
// the view moves onto the GEMM's result and the widening joins the norm.
// CHECK-LABEL: func.func @gemm_convert_view
// CHECK: %[[M:.*]] = weft.matmul %arg0, %arg1
// CHECK-NEXT: %[[V:.*]] = weft.reshape %[[M]] : (tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[C:.*]] = weft.convert %[[V]] : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
// CHECK-NEXT: weft.layer_norm %[[C]]
// FUSED-LABEL: func.func @gemm_convert_view
// FUSED: weft.fused {{.*}}kind = "convert+layer_norm"
func.func @gemm_convert_view(%x: tensor<8x8xbf16>, %w: tensor<8x16xbf16>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %m = weft.matmul %x, %w : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %c = weft.convert %m : (tensor<8x16xbf16>) -> tensor<8x16xf32>
  %v = weft.reshape %c : (tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %n = weft.layer_norm %v, %g, %b {eps = 1.0e-05 : f64} : (tensor<2x4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return %n : tensor<2x4x16xf32>
}

// -----

// The convert already has its kernel (the gelu reading it on its shape): it
// stays behind the view, and the view's other reader is untouched.
// CHECK-LABEL: func.func @reader_on_its_shape
// CHECK: %[[V:.*]] = weft.reshape %{{.*}} : (tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[C:.*]] = weft.convert %[[V]]
// CHECK-NEXT: weft.gelu %[[C]]
func.func @reader_on_its_shape(%x: tensor<8x16xbf16>, %b: tensor<16xbf16>) -> (tensor<2x4x16xf32>, tensor<2x4x16xbf16>) {
  %a = weft.add %x, %b : (tensor<8x16xbf16>, tensor<16xbf16>) -> tensor<8x16xbf16>
  %v = weft.reshape %a : (tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %c = weft.convert %v : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
  %g = weft.gelu %c {approximate = "tanh"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %g, %v : tensor<2x4x16xf32>, tensor<2x4x16xbf16>
}
