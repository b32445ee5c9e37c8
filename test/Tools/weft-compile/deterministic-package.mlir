// The same command gives the same package, byte for byte: kernels emit their
// operand loads in operand order (the elementwise emitter had walked a map
// keyed by pointers, so two builds ordered loads differently), and a
// --remat=budget package that recomputes nothing is the --remat=none one.
// REQUIRES: ptxas
//
// RUN: weft-compile %S/../weft-run/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --weight-copies=split --target=sm_90a --emit=package --tuning-table=none -o %t.1.weftpkg
// RUN: weft-compile %S/../weft-run/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --weight-copies=split --target=sm_90a --emit=package --tuning-table=none -o %t.2.weftpkg
// RUN: cmp %t.1.weftpkg %t.2.weftpkg
// RUN: weft-compile %S/../weft-run/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --weight-copies=split --target=sm_90a --emit=package --tuning-table=none --remat=budget --memory-budget=64MiB -o %t.3.weftpkg
// RUN: cmp %t.1.weftpkg %t.3.weftpkg
