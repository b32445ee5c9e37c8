// Ops no elementwise kernel implements are refused at the op, naming the
// values (every such op is reported, not only the first); weft-build-plan turns the same reasons into warnings and keeps the
// kernel without an image (weft-run --check then reports it).
// RUN: not weft-compile %s --emit=elementwise-ir 2>&1 | FileCheck %s

// CHECK: error: no GPU kernel for weft.reduce_sum: weft.reduce_sum over dims that are not the leading ones: the GPU kernel sums over leading dims (column sums)
func.func @reduce_middle(%x: tensor<4x8x64xbf16>) -> tensor<4x64xbf16> {
  %y = weft.reduce_sum %x {dims = array<i64: 1>} : (tensor<4x8x64xbf16>) -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}

// CHECK: error: no GPU kernel for weft.gelu: the GPU kernels take bf16, f16 or f32 tensors (i64 ids, i1 masks, i16 low halves of split masters), got tensor<4x64xf64>
func.func @gelu_f64(%x: tensor<4x64xf64>) -> tensor<4x64xf64> {
  %y = weft.gelu %x : (tensor<4x64xf64>) -> tensor<4x64xf64>
  return %y : tensor<4x64xf64>
}

