// The COLLECTIVES records of kinds 3 (all_to_all) and 4 (send_recv) in a
// package, without a GPU: a tp = 2 package (no partitioning makes these
// kinds yet; its small all-reduces left unbucketed) whose first all-reduces
// with an even count are edited into one
// of each, read and checked by weft-run --check and resolved per rank by
// --dry-run; then the refusals of bad records, each naming the field and
// its value (package/lib/PackageFormat.h: send_recv's shift in the
// reduction slot, bits 0-23 signed, bit 24 rotate).
// RUN: weft-compile %S/Inputs/gpt_mean_square_bf16.mlir --entry forward --train --optimizer=adamw --target=sm_90a --emit=package --grid=tp=2 --sequence-parallel --coalesce-collectives=false --tuning-table=none -o %t.weftpkg 2>/dev/null
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.a2a collective 0 3 0
// RUN: %python %S/Inputs/edit_package.py %t.a2a %t.both collective 0 4 0x1000001
// RUN: weft-run --check --allow-missing-images %t.both | FileCheck %s
// CHECK: grid 2 (2 ranks, one plan), 33 collectives: 11 all_reduce 12 all_gather 8 reduce_scatter 1 all_to_all 1 send_recv
// CHECK-NEXT: split along grid axis 0
// CHECK-NEXT: ok

// RUN: weft-opt %S/Inputs/gpt_mean_square_bf16.mlir --weft-autodiff=optimizer=adamw -o %t.global.mlir
// RUN: weft-run %t.global.mlir --entry forward_step --random-inputs --seed 3 --save-inputs %t.in.npz > /dev/null
// RUN: weft-run %t.both --dry-run --data %t.in.npz | FileCheck %s --check-prefix=RANK0
// RANK0: rank 0 of 2, 33 collectives
// RANK0: collective [[A:[0-9]+]] at {{[0-9]+}} stream 1: '{{.*}} = all_to_all('{{.*}}) {{[0-9]*[02468]}} {{bf16|f32}} over grid axes 1{{$}}
// RANK0: collective {{[0-9]+}} at {{[0-9]+}} stream 1: '{{.*}} = send_recv('{{.*}}) {{[0-9]+}} {{bf16|f32}} over grid axes 1 (shift 1, rotate){{$}}

// A reserved bit, a shift of 0, shifts of 2 and -2 (24-bit two's
// complement) on 2 ranks, a reduction on an all-to-all, kind 5.
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.reserved collective 0 4 0x2000001
// RUN: not weft-run --check --allow-missing-images %t.reserved 2>&1 | FileCheck %s --check-prefix=RESERVED
// RESERVED: error: {{.*}}: collective {{[0-9]+}} (send_recv): shift field 0x02000001 is not a shift: bits 0-23 a nonzero signed shift, bit 24 rotate, bits 25-31 0
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.zero collective 0 4 0x1000000
// RUN: not weft-run --check --allow-missing-images %t.zero 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: {{.*}}: collective {{[0-9]+}} (send_recv): shift field 0x01000000 is not a shift
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.far collective 0 4 2
// RUN: not weft-run --check --allow-missing-images %t.far 2>&1 | FileCheck %s --check-prefix=FAR
// FAR: error: {{.*}}: collective {{[0-9]+}} (send_recv) shifts by 2 positions, not a nonzero shift of magnitude below its 2 ranks
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.back collective 0 4 0xFFFFFE
// RUN: not weft-run --check --allow-missing-images %t.back 2>&1 | FileCheck %s --check-prefix=BACK
// BACK: error: {{.*}}: collective {{[0-9]+}} (send_recv) shifts by -2 positions
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.reduce collective 0 3 1
// RUN: not weft-run --check --allow-missing-images %t.reduce 2>&1 | FileCheck %s --check-prefix=REDUCE
// REDUCE: error: {{.*}}: collective {{[0-9]+}} (all_to_all): reduction field 1 is not 0 (an all-to-all reduces nothing)
// RUN: %python %S/Inputs/edit_package.py %t.weftpkg %t.kind collective 0 5 0
// RUN: not weft-run --check --allow-missing-images %t.kind 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: error: {{.*}}: collective {{[0-9]+}}: kind 5 is not all_reduce (0), all_gather (1), reduce_scatter (2), all_to_all (3) or send_recv (4)
