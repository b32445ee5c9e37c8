// A GPT package with the cuBLASLt GELU epilogues (weft-fuse-gemm-epilogue, on
// by default for packages): weft-run --check validates the aux operand like
// every other one, and a record whose aux is missing, undefined, too small
// or given a bad leading dimension is named.
//
// RUN: weft-compile %S/../weft-package-gemms/Inputs/gpt2_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none -o %t.weftpkg
// RUN: weft-run --check --allow-missing-images %t.weftpkg | FileCheck %s
// CHECK: package format 2
// CHECK: ok
// RUN: weft-package-gemms %t.weftpkg | FileCheck %s --check-prefix=EPI
// Two layers: fc1 with its gelu (u written as aux), fc2's data gradient with
// the gelu gradient (u read).
// EPI-COUNT-2: epilogue=gelu_aux_bias
// EPI-COUNT-2: epilogue=dgelu
//
// Without the pass no GELU epilogue is planned.
// RUN: weft-compile %S/../weft-package-gemms/Inputs/gpt2_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none --fuse-gemm-epilogue=false -o %t.off.weftpkg
// RUN: weft-package-gemms %t.off.weftpkg | FileCheck %s --check-prefix=OFF
// OFF-NOT: gelu
// OFF: 27 gemms
//
// GEMM record fields (PackageFormat.h): 48 = aux buffer, 50 = aux_ld's low
// half. gemm 2 is layer 0's fc1 (gelu_aux_bias, n 256), gemm 0 its qkv (bias).
// RUN: %python %S/../weft-package-gemms/Inputs/set_gemm_field.py %t.weftpkg %t.noaux 2 48 4294967295
// RUN: not weft-run --check --allow-missing-images %t.noaux 2>&1 | FileCheck %s --check-prefix=NOAUX
// NOAUX: gemm 2: epilogue gelu_aux_bias needs an aux buffer
// RUN: %python %S/../weft-package-gemms/Inputs/set_gemm_field.py %t.weftpkg %t.ld 2 50 100
// RUN: not weft-run --check --allow-missing-images %t.ld 2>&1 | FileCheck %s --check-prefix=LD
// LD: gemm 2: aux_ld 100 must be at least n 256 and a multiple of 8
// RUN: %python %S/../weft-package-gemms/Inputs/set_gemm_field.py %t.weftpkg %t.extra 0 48 0
// RUN: not weft-run --check --allow-missing-images %t.extra 2>&1 | FileCheck %s --check-prefix=EXTRA
// EXTRA: gemm 0: epilogue bias takes no aux buffer
// RUN: %python %S/../weft-package-gemms/Inputs/set_gemm_field.py %t.weftpkg %t.undef 2 48 99999
// RUN: not weft-run --check --allow-missing-images %t.undef 2>&1 | FileCheck %s --check-prefix=UNDEF
// UNDEF: gemm 2: operand aux names buffer 99999, undefined: the package has {{[0-9]+}} buffers
// A buffer too small for the [128, 256] bf16 aux matrix (65536 bytes).
// RUN: %python %S/../weft-package-gemms/Inputs/set_gemm_field.py %t.weftpkg %t.small 2 48 1
// RUN: not weft-run --check --allow-missing-images %t.small 2>&1 | FileCheck %s --check-prefix=SMALL
// SMALL: gemm 2 operand aux: buffer '{{[a-z0-9_]+}}' has {{[0-9]+}} bytes, the GEMM reads or writes 65536
