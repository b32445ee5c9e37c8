// REQUIRES: ptxas
// The remat anchor's model at a small size (python -m weft.models ... --loss
// mean_square, Inputs/gpt_mean_square_bf16.mlir: 2 blocks, hidden 128, seq
// 64): reduce_mean's gradient broadcasts a [1, 1, 1] f32 onto the blocks'
// output, and with weft-fuse-elementwise the first layer's layer_norm_grad
// (x is an input without gradient) yields only dgamma / dbeta, its row
// statistics in a planned workspace. Every kernel has an image either way.
//
// RUN: weft-compile %S/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none -o %t.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTE
// RUN: weft-run --check %t.weftpkg | FileCheck %s
// RUN: weft-compile %S/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --fuse-elementwise --target=sm_90a --emit=package --tuning-table=none -o %t.fused.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTE
// RUN: weft-run --check %t.fused.weftpkg | FileCheck %s
// NOTE-NOT: no image
// NOTE-NOT: warning
// CHECK: {{[0-9]+}} buffers, [[KERNELS:[0-9]+]] kernels ([[KERNELS]] with images), {{[0-9]+}} launches, 24 gemms, 0 events, {{[0-9]+}} images
// CHECK-NEXT: ok
//
// The fused step: the mean-square gradient's group takes the [1, 1, 1]
// scalar and widens the bf16 output itself (weft-recompute-widening), and layer 0's layer_norm_grad group has a workspace.
// RUN: weft-compile %S/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --fuse-elementwise -o - | FileCheck %s --check-prefix=STEP
// STEP: weft.fused {{.*}} {kind = "add+convert+mul"{{.*}}} : (tensor<1x1x1xf32>,
// STEP: weft.fused {{.*}} {kind = "layer_norm_grad", weft.layer = 0 : i64, weft.offsets = array<i64: {{[0-9]+}}, {{[0-9]+}}>, weft.workspace_offset = {{[0-9]+}} : i64} : ({{.*}}) -> (tensor<128xbf16>, tensor<128xbf16>)
