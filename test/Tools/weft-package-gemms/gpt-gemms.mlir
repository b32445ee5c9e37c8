// Every linear and gradient GEMM of a 2-layer bf16 GPT training step (the
// model generator's tiny_gpt) becomes a package GEMM record that the
// runtime's weft_gemm_desc holds exactly and weft_gemm_check accepts, each
// with a planned cuBLASLt workspace that weft-run --check verifies like any
// buffer; no algorithm is chosen at compile time (no GPU).
//
// RUN: weft-compile %S/Inputs/gpt2_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none -o %t.weftpkg
// RUN: weft-package-gemms %t.weftpkg | FileCheck %s
// RUN: weft-run --check --allow-missing-images %t.weftpkg | FileCheck %s --check-prefix=CHECKED
//
// Forward, layer 0: qkv [128 rows, 64] -> 192, proj 64 -> 64, fc1 64 -> 256,
// fc2 256 -> 64, each y = x w^T + b with the bias epilogue; fc1 also runs
// its tanh gelu and writes the pre-activation (the backward reads it) as
// the aux matrix (weft-fuse-gemm-epilogue, on for packages).
// CHECK: gemm 0: m=128 n=192 k=64 batch=1 trans_a=0 trans_b=1 bf16 epilogue=bias alpha=1 beta=0 workspace=1048576 algo=not-chosen
// CHECK-NEXT: gemm 1: m=128 n=64 k=64 batch=1 trans_a=0 trans_b=1 bf16 epilogue=bias
// CHECK-NEXT: gemm 2: m=128 n=256 k=64 batch=1 trans_a=0 trans_b=1 bf16 epilogue=gelu_aux_bias
// CHECK-NEXT: gemm 3: m=128 n=64 k=256 batch=1 trans_a=0 trans_b=1 bf16 epilogue=bias
// Layer 1 the same, then the untied lm_head (vocab 256, no bias).
// CHECK: gemm 8: m=128 n=256 k=64 batch=1 trans_a=0 trans_b=1 bf16 epilogue=none
// Backward of the lm_head: dx = dy w ([128, 256] x [256, 64]), then
// dW = dy^T x (A stored [k, m], so trans_a).
// CHECK-NEXT: gemm 9: m=128 n=64 k=256 batch=1 trans_a=0 trans_b=0 bf16 epilogue=none
// CHECK-NEXT: gemm 10: m=256 n=64 k=128 batch=1 trans_a=1 trans_b=0 bf16 epilogue=none
// fc2's data gradient dy w2 ([128, 64] x [64, 256]) through the gelu: the
// DGELU epilogue reads the pre-activation, so gelu_grad runs in the GEMM.
// CHECK-NEXT: gemm 11: m=128 n=256 k=64 batch=1 trans_a=0 trans_b=0 bf16 epilogue=dgelu
// 9 forward GEMMs and two per linear backward: 9 + 18 = 27.
// CHECK: gemm 26: {{.*}} workspace=1048576 algo=not-chosen
// CHECK-NEXT: 27 gemms, every descriptor passes weft_gemm_check, 0 algorithms chosen
//
// CHECKED: 27 gemms
// CHECKED: ok
//
// Without a workspace cap no workspace is planned (cuBLASLt then gets none).
// RUN: weft-compile %S/Inputs/gpt2_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none --gemm-workspace=0 -o %t.nows.weftpkg
// RUN: weft-package-gemms %t.nows.weftpkg | FileCheck %s --check-prefix=NOWS
// NOWS: gemm 0: {{.*}} workspace=0 algo=not-chosen
// NOWS-NOT: workspace=1048576
//
// RUN: not weft-compile %S/Inputs/gpt2_bf16.mlir --entry forward --train --optimizer=adamw --emit=package --gemm-workspace=lots -o %t.bad 2>&1 | FileCheck %s --check-prefix=BADSIZE
// BADSIZE: gemm-workspace 'lots' is not a size
//
// A record the reader accepts but cuBLASLt cannot run (dtype f32, field 8)
// is named by the runtime's check.
// RUN: %python %S/Inputs/set_gemm_field.py %t.weftpkg %t.f32 3 8 2
// RUN: not weft-package-gemms %t.f32 2>&1 | FileCheck %s --check-prefix=F32
// F32: error: {{.*}}: weft_package_gemms: gemm 3: weft_gemm_check: dtype f32 (1) is not supported; GEMM operands are bf16 (2) or f16 (3), accumulated in f32
//
// The empty file is not a package.
// RUN: rm -f %t.empty && touch %t.empty
// RUN: not weft-package-gemms %t.empty 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: error: {{.*}}: not a Weft package
