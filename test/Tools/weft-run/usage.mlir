// Usage and input errors exit 2 with a message naming what is wrong; a failed
// --expect exits 1. Inputs are made by weft-run itself (--save-inputs).

// RUN: sh -c 'weft-run %s 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-ENTRY
// NO-ENTRY: error: --entry NAME is required; functions in {{.*}}usage.mlir: @affine, @wide, @pair, @ids
// NO-ENTRY: exit 2

// RUN: sh -c 'weft-run %s --entry nope 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: no function @nope in {{.*}}usage.mlir; available: @affine, @wide, @pair, @ids
// UNKNOWN: exit 2

// RUN: sh -c 'weft-run %s --entry affine 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-INPUTS
// NO-INPUTS: error: @affine takes 2 arguments: give --inputs or --random-inputs
// NO-INPUTS: exit 2

// RUN: sh -c 'weft-run %s --entry affine --random-inputs --inputs x.npz 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=BOTH
// BOTH: error: --inputs and --random-inputs exclude each other
// BOTH: exit 2

// RUN: sh -c 'weft-run %s --entry affine --inputs %t.missing.npz 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-FILE
// NO-FILE: error: {{.*}}.missing.npz: cannot open
// NO-FILE: exit 2

// RUN: sh -c 'weft-run %s --entry ids --random-inputs 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=NO-RANGE
// NO-RANGE: error: argument #0 (tensor<4xi64>) of @ids: no use says which integers it may hold
// NO-RANGE-SAME: {weft.range = array<i64: lo, hi>}
// NO-RANGE: exit 2

// Inputs drawn for @wide do not fit @affine: the key and both types are named.
// RUN: weft-run %s --entry wide --random-inputs --save-inputs %t.wide.npz
// RUN: sh -c 'weft-run %s --entry affine --inputs %t.wide.npz 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: {{.*}}.wide.npz: 'arg0' is tensor<2x5xf32> but argument #0 of @affine is tensor<2x3xf32>
// SHAPE: exit 2

// @wide's inputs hold arg0 only; @pair needs arg1 too.
// RUN: sh -c 'weft-run %s --entry pair --inputs %t.wide.npz 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=MISSING
// MISSING: error: {{.*}}.wide.npz: no 'arg1' for argument #1 (tensor<2x5xf32>) of @pair
// MISSING: exit 2

// RUN: weft-run %s --entry affine --random-inputs --seed 1 --save-inputs %t.affine.npz --outputs %t.affine-out.npz
// RUN: sh -c 'weft-run %s --entry wide --inputs %t.affine.npz 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=EXTRA
// EXTRA: error: {{.*}}.affine.npz: 'arg1' names no argument: @wide takes 1
// EXTRA: exit 2

// The same inputs reproduce the outputs exactly; other inputs fail --expect.
// RUN: weft-run %s --entry affine --inputs %t.affine.npz --expect %t.affine-out.npz --rtol 0 --atol 0 | FileCheck %s --check-prefix=MATCH
// MATCH: res0: tensor<2x3xf32> sum=
// MATCH: expect: all results match {{.*}}affine-out.npz (max abs err=0, max rel err=0)
// RUN: sh -c 'weft-run %s --entry affine --random-inputs --seed 2 --expect %t.affine-out.npz 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=DIFFER
// DIFFER: error: res0 differs from {{.*}}affine-out.npz: {{[1-6]}} of 6 elements exceed atol + rtol*|expected| (atol=1e-08, rtol=1e-05); worst at [{{[01]}}, {{[012]}}]: got {{.*}} expected {{.*}} (abs err {{.*}}, rel err {{.*}})
// DIFFER: exit 1
// RUN: weft-run %s --entry wide --random-inputs --outputs %t.wide-out.npz
// RUN: sh -c 'weft-run %s --entry affine --inputs %t.affine.npz --expect %t.wide-out.npz 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=EXPECT-SHAPE
// EXPECT-SHAPE: error: res0 is tensor<2x3xf32> but {{.*}}wide-out.npz holds tensor<2x5xf32>
// EXPECT-SHAPE: exit 1
// RUN: sh -c 'weft-run %s --entry affine --inputs %t.affine.npz --expect %t.affine.npz 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=EXPECT-KEY
// EXPECT-KEY: error: {{.*}}affine.npz has no 'res0'
// EXPECT-KEY: exit 1

func.func @affine(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = weft.add %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

func.func @wide(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  return %x : tensor<2x5xf32>
}

func.func @pair(%x: tensor<2x5xf32>, %y: tensor<2x5xf32>) -> tensor<2x5xf32> {
  return %y : tensor<2x5xf32>
}

func.func @ids(%n: tensor<4xi64>) -> tensor<4xi64> {
  return %n : tensor<4xi64>
}
