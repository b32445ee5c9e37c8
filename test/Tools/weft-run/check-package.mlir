// weft-compile --emit=package and weft-run --check on a small bf16 GPT block,
// then packages broken on purpose: each is refused with its message and exit
// status 1, never a crash (`not` without --crash fails on a signal).
//
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --memory-budget=64MiB --target=sm_90a --emit=package --tuning-table=none -o %t.weftpkg
// Without ptxas the images are missing (check-package-images.mlir checks
// them, with ptxas): the lenient check reads the plan either way.
// RUN: weft-run --check --allow-missing-images %t.weftpkg | FileCheck %s --check-prefix=OK
// OK: package format 2, weft 0.5.0, arch sm_90a, step @forward_step_plan
// OK-NEXT: arena {{[0-9]+}} bytes ({{.*}} MiB), alignment 256, {{[0-9]+}} schedule indices, 1 stream
// Five linears forward (qkv, proj, fc1, fc2, lm_head), two matmuls each
// backward (dx, dW): 5 + 10 = 15 GEMMs.
// OK-NEXT: {{[0-9]+}} buffers, {{[0-9]+}} kernels ({{[0-9]+}} with images), {{[0-9]+}} launches, 15 gemms, 0 events, {{[0-9]+}} images
// OK-NEXT: ok
//
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.overlap overlap
// RUN: not weft-run --check --allow-missing-images %t.overlap 2>&1 | FileCheck %s --check-prefix=OVERLAP
// OVERLAP: error: {{.*}}: buffer '{{.*}}' [{{[0-9]+}}, {{[0-9]+}}) overlaps buffer '{{.*}}' [{{[0-9]+}}, {{[0-9]+}}) while both are live (schedule indices {{[0-9]+}} to {{[0-9]+}})
//
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.past past-arena
// RUN: not weft-run --check --allow-missing-images %t.past 2>&1 | FileCheck %s --check-prefix=PAST
// PAST: error: {{.*}}: buffer 'arg0' at offset [[ARENA:[0-9]+]] with size {{[0-9]+}} ends past the arena of [[ARENA]] bytes
//
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.undef undefined-arg
// RUN: not weft-run --check --allow-missing-images %t.undef 2>&1 | FileCheck %s --check-prefix=UNDEF
// UNDEF: error: {{.*}}: launch 0 (kernel '{{.*}}'): argument 0 names buffer 999999, undefined: the package has {{[0-9]+}} buffers
//
// RUN: head -c 1000 %t.weftpkg > %t.short
// RUN: not weft-run --check %t.short 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: error: {{.*}}: the header gives the file size as {{[0-9]+}} bytes but the file has 1000 (truncated)
//
// RUN: head -c 40 %t.weftpkg > %t.tiny
// RUN: not weft-run --check %t.tiny 2>&1 | FileCheck %s --check-prefix=TINY
// TINY: error: {{.*}}: truncated package: 40 bytes, the header alone is 80
//
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.flip flip 3
// RUN: not weft-run --check %t.flip 2>&1 | FileCheck %s --check-prefix=FLIP
// FLIP: error: {{.*}}: section table entry {{[0-9]+}} (kind 3 BUFFERS): checksum mismatch, stored {{[0-9]+}}, computed {{[0-9]+}} (corrupted section)
//
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.v1 version 1
// RUN: not weft-run --check %t.v1 2>&1 | FileCheck %s --check-prefix=VERSION
// VERSION: error: {{.*}}: package format version 1 is not supported: this reader reads format version 2
//
// RUN: not weft-run --check %s 2>&1 | FileCheck %s --check-prefix=NOTPKG
// NOTPKG: error: {{.*}}: not a Weft package
