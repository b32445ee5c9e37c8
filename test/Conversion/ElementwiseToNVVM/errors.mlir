// Ops no elementwise kernel implements are refused at the op, naming the
// values (every such op is reported, not only the first); weft-build-plan turns the same reasons into warnings and keeps the
// kernel without an image (weft-run --check then reports it).
// RUN: not weft-compile %s --emit=elementwise-ir 2>&1 | FileCheck %s

// CHECK: error: no GPU kernel for weft.reduce_sum: weft.reduce_sum over dims that are not the leading ones: the GPU kernel sums over leading dims (column sums)
func.func @reduce_last(%x: tensor<4x64xbf16>) -> tensor<4xbf16> {
  %y = weft.reduce_sum %x {dims = array<i64: 1>} : (tensor<4x64xbf16>) -> tensor<4xbf16>
  return %y : tensor<4xbf16>
}

// CHECK: error: no GPU kernel for weft.gelu: the GPU kernels take bf16, f16 or f32 tensors (i64 ids, i1 masks, i16 low halves of split masters), got tensor<4x64xf64>
func.func @gelu_f64(%x: tensor<4x64xf64>) -> tensor<4x64xf64> {
  %y = weft.gelu %x : (tensor<4x64xf64>) -> tensor<4x64xf64>
  return %y : tensor<4x64xf64>
}

// The loss kernels average over every row: a loss with ignore_index (the
// PyTorch importer's F.cross_entropy) is refused, not computed wrongly.
// CHECK: error: no GPU kernel for weft.cross_entropy: cross_entropy with ignore_index
func.func @cross_entropy_ignore(%l: tensor<64x128xf32>, %y: tensor<64xi64>) -> tensor<f32> {
  %loss = weft.cross_entropy %l, %y {ignore_index = -100 : i64} : (tensor<64x128xf32>, tensor<64xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK: error: no GPU kernel for weft.cross_entropy_grad: cross_entropy_grad with ignore_index
func.func @cross_entropy_grad_ignore(%d: tensor<f32>, %l: tensor<64x128xf32>, %y: tensor<64xi64>) -> tensor<64x128xf32> {
  %g = weft.cross_entropy_grad %d, %l, %y {ignore_index = -100 : i64} : (tensor<f32>, tensor<64x128xf32>, tensor<64xi64>) -> tensor<64x128xf32>
  return %g : tensor<64x128xf32>
}
