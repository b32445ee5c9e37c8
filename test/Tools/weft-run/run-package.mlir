// weft-run STEP.weftpkg without a GPU: --dry-run resolves the step for a
// device (--sm) and prints the launches with their resolved arguments and the
// per-step bindings; another arch, another format version, bad data and a
// missing driver are refused with messages, never a crash. The GPU run itself
// is test/gpu/package_check.py. The package reads attention's operands
// head-major here (--fold-attention-layout=false); packed-attention.mlir
// checks the default, in place on the packed qkv.
// REQUIRES: ptxas
//
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB --target=sm_90a --emit=package --tuning-table=none --attention-mma=warpgroup --block-q=128 --block-k=128 --fold-attention-layout=false -o %t.weftpkg
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB -o %t.step.mlir
// RUN: weft-run %t.step.mlir --entry forward_step --random-inputs --save-inputs %t.state.npz > /dev/null
// RUN: %python %S/Inputs/step_data.py %t.data.npz 3
//
// RUN: weft-run %t.weftpkg --dry-run --steps 4 --data %t.data.npz --load-state %t.state.npz | FileCheck %s
// CHECK: step @forward_step_plan: package for sm_90a, format 2, on sm_90
// CHECK-NEXT: arena [[ARENA:[0-9]+]] bytes (one allocation), 1 stream(s), 0 event(s), {{[0-9]+}} schedule entries
// CHECK: buffer 0 'arg0' parameter tensor<64x128xf32> offset {{[0-9]+}} size 32768 live [0, {{[0-9]+}}] arg 0
// CHECK: buffer 51 'arg51' input tensor<2x16xi64> offset {{[0-9]+}} size 256 live [0, {{[0-9]+}}] arg 51
// Every kernel has an image; the device runs sm_90a cubins as they are.
// CHECK: image 0 'weft_attention_bf16_d64_causal_q128_k128_wgmma_s2': cubin
// The qkv linear: cuBLASLt with the bias epilogue, algorithm chosen at load.
// CHECK: gemm {{[0-9]+}} at {{[0-9]+}} stream 0: {{.*}} + bias {{.*}} m 32 n 384 k 128 batch 1, algo chosen at load, workspace
// Pointers are arena offsets, immediates their values; the warpgroup forward's
// q, k, v are tensor maps ([b*h][len][d], box 64 x block_q), 64-byte aligned
// in the argument blob.
// CHECK: launch {{[0-9]+}} at {{[0-9]+}} stream 0: weft_attn_forward_bf16_d64_causal_q128_k128_wgmma_s2 grid (1, 2, 2) block (384, 1, 1) smem {{[0-9]+}} blob 448 [+0 tensormap '{{s[0-9_]+}}'@{{[0-9]+}} dims [64, 16, 2, 2] strides [128, 2048, 4096] box [64, 128, 1, 1] swizzle 128B, +128 tensormap {{.*}}, +256 tensormap {{.*}}, +384 ptr '{{s[0-9_]+}}'@{{[0-9]+}}, +392 ptr '{{s[0-9_]+}}'@{{[0-9]+}}, +400 i32 2, +404 i32 2, +408 i32 2, +412 i32 16, +416 i32 16, +420 f32 0.125]
// State comes from --load-state, inputs from --data: step s reads slice
// s mod 3 of the [3, ...] arrays, the seed (no step dim) every step.
// CHECK: step 1: arg0 <- {{.*}}state.npz:arg0
// CHECK-SAME: arg51 <- {{.*}}data.npz:arg51[0] arg52 <- {{.*}}data.npz:arg52[0] arg53 <- {{.*}}data.npz:arg53[0] arg54 <- {{.*}}data.npz:arg54{{$}}
// CHECK: step 3: {{.*}} arg51 <- {{.*}}data.npz:arg51[2]
// CHECK: step 4: {{.*}} arg51 <- {{.*}}data.npz:arg51[0]
// CHECK: loss: buffer 's{{[0-9]+}}'
//
// Debug buffers: the arena becomes one allocation per buffer, and a buffer
// whose life ends before the step's is poisoned after its last entry.
// RUN: weft-run %t.weftpkg --dry-run --debug-buffers --data %t.data.npz --load-state %t.state.npz | FileCheck %s --check-prefix=DEBUG
// DEBUG: arena {{[0-9]+}} bytes (debug: one allocation per buffer), 1 stream(s)
// DEBUG: launch 0 at 0 stream 0: weft_convert_0
// DEBUG: poison '
//
// RUN: not weft-run %t.weftpkg --dry-run --sm 80 --data %t.data.npz 2>&1 | FileCheck %s --check-prefix=ARCH
// ARCH: error: {{.*}}: cannot prepare the step (WEFT_ERROR_ARCH_MISMATCH): the package is built for sm_90a but the device is sm_80 (compute capability 8.0); sm_90a code runs only on compute capability 9.0
// RUN: not weft-run %t.weftpkg --dry-run --sm 100 --data %t.data.npz 2>&1 | FileCheck %s --check-prefix=ARCH100
// ARCH100: the package is built for sm_90a but the device is sm_100 (compute capability 10.0)
//
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.v1 version 1
// RUN: not weft-run %t.v1 --dry-run 2>&1 | FileCheck %s --check-prefix=VERSION
// VERSION: error: {{.*}}: cannot prepare the step (WEFT_ERROR_VERSION_MISMATCH): cannot read the package: package format version 1 is not supported: this reader reads format version 2
//
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.overlap overlap
// RUN: not weft-run %t.overlap --dry-run 2>&1 | FileCheck %s --check-prefix=OVERLAP
// OVERLAP: cannot prepare the step (WEFT_ERROR_INVALID_ARGUMENT): the package's plan has {{[0-9]+}} problem(s):
// OVERLAP-NEXT: buffer '{{.*}}' [{{[0-9]+}}, {{[0-9]+}}) overlaps buffer
//
// Data that does not fit is named with both shapes; unknown keys and missing
// inputs are errors too (exit 2).
// RUN: not weft-run %t.weftpkg --dry-run --load-state %t.state.npz 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: input 'arg51' (tensor<2x16xi64>, argument 51) has no value: give --data with 'arg51' of shape [steps, ...] or its own shape
// RUN: %python %S/Inputs/step_data.py %t.extra.npz 2 bogus
// RUN: not weft-run %t.weftpkg --dry-run --data %t.extra.npz --load-state %t.state.npz 2>&1 | FileCheck %s --check-prefix=EXTRA
// EXTRA: error: {{.*}}extra.npz: 'bogus' names no input or state buffer of the step
// RUN: not weft-run %t.weftpkg --dry-run --data %t.data.npz --load-state %t.data.npz 2>&1 | FileCheck %s --check-prefix=NOSTATE
// NOSTATE: error: state buffer 'arg0' (tensor<64x128xf32>, argument 0) has no value: give --load-state (or --data) with 'arg0'
//
// Without a driver the run stops at loading, with the reason.
// RUN: env WEFT_LIBCUDA=%t.no-such-libcuda.so not weft-run %t.weftpkg --steps 2 --data %t.data.npz --load-state %t.state.npz 2>&1 | FileCheck %s --check-prefix=NODRIVER
// NODRIVER: error: {{.*}}: cannot load the step (WEFT_ERROR_DRIVER_MISSING): cannot load the CUDA driver library {{.*}}no-such-libcuda.so
//
// RUN: not weft-run %s --steps 2 2>&1 | FileCheck %s --check-prefix=NOTPKG
// NOTPKG: error: {{.*}}run-package.mlir is not a package (weft-compile --emit=package): --steps, --data
// RUN: not weft-run %t.weftpkg --entry forward_step 2>&1 | FileCheck %s --check-prefix=IRFLAGS
// IRFLAGS: error: --entry, --inputs, --random-inputs, --save-inputs and --expect run IR
