// weft-cpu-run runs tiled nests only: a weft op left in the module is a usage
// error (exit 2) at the op, before any input is read.
// RUN: not weft-cpu-run %s --entry attention --inputs %t.missing.npz 2>&1 | FileCheck %s
// RUN: weft-cpu-run %s --entry attention --inputs %t.missing.npz; test $? -eq 2

func.func @attention(%q: tensor<1x1x8x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
  // CHECK: untiled.mlir:[[@LINE+1]]:8: error: 'weft.attention' remains in @attention: the CPU path runs tiled nests only (no weft ops); run weft-opt --weft-tile-attention first
  %o = weft.attention %q, %k, %v {causal} : (tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}
