// --weight-copies=carried: the bf16 copies of the f32 masters are step
// arguments (weft.copy_of) that each AdamW update writes, so the forward and
// backward convert nothing. The package marks each copy's master; weft-run
// --check checks the pair, --dry-run derives each copy from its master, and
// --weight-copies=auto keeps carried copies when the step fits its budget and
// keeps the largest converted when it does not.
// REQUIRES: ptxas
//
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --weight-copies=carried --memory-budget=64MiB -o %t.step.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.step.mlir
// IR: func.func @forward_step(%arg0: tensor<64x128xf32> {{{.*}}weft.param}
// IR-SAME: tensor<64x128xbf16> {weft.copy_of = 0 : i64
// IR-NOT: weft.convert %arg0 :
// IR: weft.adamw %arg0,
// IR-NEXT: weft.convert %{{.*}} : (tensor<64x128xf32>) -> tensor<64x128xbf16>
//
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --weight-copies=carried --memory-budget=64MiB --target=sm_90a --emit=package --tuning-table=none -o %t.weftpkg
// RUN: weft-run --check %t.weftpkg | FileCheck %s --check-prefix=OK
// OK: ok
// RUN: %python %S/Inputs/step_data.py %t.data.npz 3
// RUN: weft-run %t.weftpkg --dry-run --init-state=1 --data %t.data.npz | FileCheck %s --check-prefix=DRY
// DRY: buffer {{[0-9]+}} 'arg55' parameter tensor<64x128xbf16> {{.*}} arg 55
// DRY: state: arg55 <- arg0 rounded to bf16
//
// A copy whose master is an optimizer moment (argument 24 here) is refused.
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.bad copy-of 24
// RUN: not weft-run --check %t.bad 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: {{.*}}(a copy of argument 24){{.*}}is not a parameter
//
// auto: split masters where they fit (bf16 parameters: no copy, no
// conversion; 2,011,648 bytes here). f16 parameters have no split form: for
// them auto keeps carried copies where they fit (64 MiB), and under
// 2,250,000 bytes, which the converted step (2,229,504) meets and the
// carried one (2,313,984) does not, keeps the largest copies converted (1,
// 2, 4, 8 of the 17 tried): the 9 smaller ones are carried, the 8 largest
// converted in the step.
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --weight-copies=auto --memory-budget=2250000 -o - | FileCheck %s --check-prefix=AUTOSPLIT
// AUTOSPLIT: func.func @forward_step(%arg0: tensor<64x128xi16> {{{.*}}weft.param}
// AUTOSPLIT-SAME: tensor<64x128xbf16> {weft.copy_of = 0 : i64
// AUTOSPLIT-NOT: weft.convert %arg
// The memory report counts the copies: split masters here, carried below.
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --weight-copies=auto --memory-budget=2250000 --memory-report=%t.split.json -o /dev/null
// RUN: FileCheck %s --check-prefix=SPLITREPORT < %t.split.json
// SPLITREPORT: "weight_copies": {
// SPLITREPORT-NEXT: "carried": 0,
// SPLITREPORT-NEXT: "split": 17
// RUN: weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --weight-copies=carried --memory-report=%t.carried.json -o /dev/null
// RUN: FileCheck %s --check-prefix=CARRIEDREPORT < %t.carried.json
// CARRIEDREPORT: "weight_copies": {
// CARRIEDREPORT-NEXT: "carried": 17,
// CARRIEDREPORT-NEXT: "split": 0
// RUN: sed 's/bf16/f16/g' %S/Inputs/gpt_bf16.mlir > %t.f16.mlir
// RUN: weft-compile %t.f16.mlir --entry forward --train --optimizer=adamw --weight-copies=auto --memory-budget=64MiB -o - | FileCheck %s --check-prefix=AUTO
// AUTO: weft.copy_of
// RUN: weft-compile %t.f16.mlir --entry forward --train --optimizer=adamw --weight-copies=auto --memory-budget=2250000 -o %t.tight.mlir
// RUN: grep -o "weft.copy_of" %t.tight.mlir | wc -l | FileCheck %s --check-prefix=TIGHT
// TIGHT: 9
// RUN: FileCheck %s --check-prefix=TIGHTCONVERT < %t.tight.mlir
// TIGHTCONVERT: func.func @forward_step(
// TIGHTCONVERT: weft.convert %arg
// RUN: not weft-compile %t.f16.mlir --entry forward --train --optimizer=adamw --weight-copies=auto --memory-budget=2000000 -o - 2>&1 | FileCheck %s --check-prefix=NEITHER
// NEITHER: error: planned peak 2229504 bytes {{.*}} exceeds the memory budget of 2000000 bytes
// RUN: not weft-compile %S/Inputs/gpt_bf16.mlir --entry forward --train --weight-copies=carried -o - 2>&1 | FileCheck %s --check-prefix=NOADAM
// NOADAM: weight-copies=carried needs optimizer=adamw
