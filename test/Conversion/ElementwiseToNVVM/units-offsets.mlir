// Kernel units (weft-compile --emit=elementwise-kernels) of ops that take a
// shard's offset: a constant offset is an i64 immediate in the unit's
// parameters and the index constant gets no unit; a constant that is not a
// float splat is a unit of one output pointer (its bytes in the image); an
// offset that is not a constant is refused at the op.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=elementwise-kernels -o %t | FileCheck %s
// RUN: FileCheck %s --check-prefix=EMB --input-file=%t/emb_1.json
// RUN: FileCheck %s --check-prefix=TABLE --input-file=%t/table_0.json
// RUN: sed -e 's/%%c = arith.constant 32 : index/%%c = arith.addi %%off, %%off : index/' -e 's/%%table: tensor<64x128xbf16>)/%%table: tensor<64x128xbf16>, %%off: index)/' %s > %t.bad.mlir
// RUN: not weft-compile %t.bad.mlir --emit=elementwise-kernels -o %t.bad 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-NOT: emb_0
// CHECK-DAG: emb_1 emb_1: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// CHECK-DAG: table_0 table_0: registers={{[0-9]+}} spill_stores=0 spill_loads=0 stack=0
// EMB: "params": [
// EMB: "kind": "pointer"
// EMB: "kind": "pointer"
// EMB: "kind": "i64",
// EMB-NEXT: "value": 32
// EMB: "role": "output"
// TABLE: "params": [
// TABLE-NEXT: {
// TABLE-NEXT: "dtype": "i64",
// TABLE-NEXT: "kind": "pointer",
// TABLE-NEXT: "role": "output",
// BAD: error: no GPU kernel unit for weft.embedding: an index operand is not a constant

func.func @emb(%ids: tensor<4x32xi64>, %table: tensor<64x128xbf16>) -> tensor<4x32x128xbf16> {
  %c = arith.constant 32 : index
  %y = weft.embedding %ids, %table, %c : (tensor<4x32xi64>, tensor<64x128xbf16>, index) -> tensor<4x32x128xbf16>
  return %y : tensor<4x32x128xbf16>
}

func.func @table() -> tensor<4xi64> {
  %t = arith.constant dense<[3, 1, 4, 1]> : tensor<4xi64>
  return %t : tensor<4xi64>
}
