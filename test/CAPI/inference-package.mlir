// REQUIRES: ptxas
// weftCompileInferenceStep through the C API's example (mode=inference): the
// GPT block's forward returning its logits, packaged without autodiff, byte
// for byte weft-compile --inference's package; the training options it
// cannot take are option errors.
//
// RUN: sed -e 's/  ) -> tensor<bf16> {/  ) -> tensor<2x16x64xbf16> {/' -e 's/  return %loss : tensor<bf16>/  return %logits : tensor<2x16x64xbf16>/' %S/../Tools/weft-run/Inputs/gpt_bf16.mlir > %t.logits.mlir
// RUN: weft-capi-example %t.logits.mlir forward %t.weftpkg mode=inference target=sm_90a tuning_table=none | FileCheck %s --check-prefix=EXAMPLE
// RUN: weft-run --check %t.weftpkg | FileCheck %s --check-prefix=CHECKPKG
// RUN: weft-compile %t.logits.mlir --entry forward --inference --target=sm_90a --emit=package --tuning-table=none -o %t.ref.weftpkg
// RUN: cmp %t.weftpkg %t.ref.weftpkg
//
// EXAMPLE: weft 0.5.0
// EXAMPLE-NEXT: parsed {{.*}}.logits.mlir
// EXAMPLE-NEXT: package: {{[1-9][0-9]*}} bytes
// CHECKPKG: 5 gemms
// CHECKPKG-NEXT: ok
//
// RUN: not weft-capi-example %t.logits.mlir forward %t.bad mode=inference optimizer=adamw 2>&1 | FileCheck %s --check-prefix=ADAMW
// ADAMW: invalid option:
// ADAMW-NEXT: error: inference packages the forward alone: optimizer must be none, got 'adamw'
// RUN: not weft-capi-example %t.logits.mlir forward %t.bad mode=serving 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: mode must be training or inference, got 'serving'
