// REQUIRES: ptxas
// Every kernel of the bf16 LLaMA block's training step has an image
// (Inputs/llama_bf16.mlir: 2 layers, hidden 256, 4 q / 2 kv heads of 64,
// seq 256, RMSNorm, SwiGLU, RoPE, mean-square loss): the 4 forward ropes of q
// and k and the 4 inverse ropes of the backward (rope's gradient) run
// ElementwiseToNVVM's paired-formula kernels, [1, h, 256, 64] x with its
// [256, 64] tables. Packages fold the attention layout by default (q and k
// reach the attention through rope, so it stays head-major). So the strict
// check passes, unfused, fused, and partitioned for tensor parallelism with
// and without sequence parallelism.
//
// RUN: weft-compile %S/Inputs/llama_bf16.mlir --entry forward --train --target=sm_90a --emit=package --fold-attention-layout --tuning-table=none -o %t.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTE
// RUN: weft-run --check %t.weftpkg | FileCheck %s --check-prefix=UNFUSED
// UNFUSED: 81 kernels (81 with images), 86 launches, 30 gemms, 0 events, 67 images
// UNFUSED-NEXT: ok
//
// RUN: weft-compile %S/Inputs/llama_bf16.mlir --entry forward --train --target=sm_90a --emit=package --fuse-elementwise --fold-attention-layout --tuning-table=none -o %t.fused.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTE
// RUN: weft-run --check %t.fused.weftpkg | FileCheck %s --check-prefix=FUSED
// SwiGLU's backward is one group a layer (dh's two pointwise readers are
// siblings, weft-fuse-elementwise): 2 kernels fewer than before in each.
// FUSED: 61 kernels (61 with images), 66 launches, 30 gemms, 0 events, 51 images
// FUSED-NEXT: ok
//
// RUN: weft-compile %S/Inputs/llama_bf16.mlir --entry forward --train --target=sm_90a --emit=package --fuse-elementwise --fold-attention-layout --grid=tp=2 --tuning-table=none -o %t.tp.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTE
// RUN: weft-run --check %t.tp.weftpkg | FileCheck %s --check-prefix=TP
// TP: 63 kernels (63 with images), 68 launches, 30 gemms, 32 events, 53 images
// TP-NEXT: grid 2 (2 ranks, one plan), 8 collectives: 8 all_reduce 0 all_gather 0 reduce_scatter
// TP: ok
//
// RUN: weft-compile %S/Inputs/llama_bf16.mlir --entry forward --train --target=sm_90a --emit=package --fuse-elementwise --fold-attention-layout --grid=tp=2 --sequence-parallel --tuning-table=none -o %t.sp.weftpkg 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTE
// RUN: weft-run --check %t.sp.weftpkg | FileCheck %s --check-prefix=SP
// SP: 59 kernels (59 with images), 64 launches, 30 gemms, 95 events, 53 images
// SP-NEXT: grid 2 (2 ranks, one plan), 24 collectives: 2 all_reduce 14 all_gather 8 reduce_scatter
// SP: ok
//
// NOTE-NOT: no image
// NOTE-NOT: warning
//
// The fused step: each rope is a group of its own between a transpose and
// the attention (forward), the attention's gradient and a transpose
// (inverse); at tp = 2 each rank's q and k hold half the heads.
// RUN: weft-compile %S/Inputs/llama_bf16.mlir --entry forward --train --fuse-elementwise --fold-attention-layout -o - | FileCheck %s --check-prefix=STEP
// STEP-LABEL: func.func @forward_step
// STEP-COUNT-4: weft.fused {{.*}} {kind = "rope", {{.*}}} : (tensor<1x{{[24]}}x256x64xbf16>, tensor<256x64xbf16>, tensor<256x64xbf16>) -> tensor<1x{{[24]}}x256x64xbf16>
// STEP-COUNT-4: weft.rope {{.*}} {inverse, {{.*}}} : (tensor<1x{{[24]}}x256x64xbf16>, tensor<256x64xbf16>, tensor<256x64xbf16>) -> tensor<1x{{[24]}}x256x64xbf16>
// RUN: weft-compile %S/Inputs/llama_bf16.mlir --entry forward --train --fuse-elementwise --fold-attention-layout --grid=tp=2 -o - | FileCheck %s --check-prefix=STEP-TP
// STEP-TP-LABEL: func.func @forward_step
// STEP-TP-COUNT-2: weft.rope %{{.*}}, %{{.*}}, %{{.*}} {weft.layer = 0 : i64} : (tensor<1x{{[12]}}x256x64xbf16>, tensor<256x64xbf16>, tensor<256x64xbf16>)
