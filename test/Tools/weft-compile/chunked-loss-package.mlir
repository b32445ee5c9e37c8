// A loss chunked over rows (weft-chunk-loss) runs on the GPU: every kernel of
// the package has an image. The chunks' cross_entropy ops read the whole
// label vector (all_labels, read whole by each thread: not a domain operand)
// and their shares are summed as [1] tensors (a 0-d add has no kernel
// domain); before, 5 of the 11 kernels had none and the runtime refused the
// package.
// REQUIRES: ptxas
//
// RUN: weft-compile %s --entry head --train --target=sm_90a --emit=package --fuse-elementwise --loss-chunks=2 -o %t.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=QUIET
// RUN: weft-run --check %t.weftpkg | FileCheck %s

// QUIET-NOT: no GPU kernel image
// CHECK: 11 kernels (11 with images)
// CHECK: ok

func.func @head(%x: tensor<2x8x4xbf16> {weft.param}, %w: tensor<6x4xbf16> {weft.param},
                %b: tensor<6xbf16> {weft.param},
                %y: tensor<16xi64> {weft.range = array<i64: -1, 1>}) -> tensor<f32> {
  %l = weft.linear %x, %w, %b : (tensor<2x8x4xbf16>, tensor<6x4xbf16>, tensor<6xbf16>) -> tensor<2x8x6xbf16>
  %v = weft.reshape %l : (tensor<2x8x6xbf16>) -> tensor<16x6xbf16>
  %c = weft.cross_entropy %v, %y {ignore_index = -1 : i64} : (tensor<16x6xbf16>, tensor<16xi64>) -> tensor<f32>
  return %c : tensor<f32>
}
