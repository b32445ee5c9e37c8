// Parameters bound by the caller (weft-compile --bind-arguments=params):
// the package records them outside the arena, weft-run --check counts them,
// and a package compiled without the flag (or with =none) keeps its bytes.
//
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --target=sm_90a --emit=package --tuning-table=none -o %t.plain.weftpkg
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --bind-arguments=none --target=sm_90a --emit=package --tuning-table=none -o %t.none.weftpkg
// RUN: cmp %t.plain.weftpkg %t.none.weftpkg
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --bind-arguments=params --target=sm_90a --emit=package --tuning-table=none -o %t.bound.weftpkg
// RUN: weft-run --check --allow-missing-images %t.plain.weftpkg | FileCheck %s --check-prefix=PLAIN
// RUN: weft-run --check --allow-missing-images %t.bound.weftpkg | FileCheck %s --check-prefix=BOUND
// PLAIN: arena [[PLAIN:[0-9]+]] bytes
// PLAIN-NOT: bound by the caller
// PLAIN: ok
// BOUND: arena {{[0-9]+}} bytes
// BOUND: {{[1-9][0-9]*}} arguments bound by the caller outside the arena ({{[0-9]+}} bytes, {{.*}} MiB)
// BOUND: ok
//
// RUN: not weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --bind-arguments=some --target=sm_90a --emit=package -o %t.bad 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: bind-arguments must be none, params or all; got 'some'
