// REQUIRES: ptxas
// weft-compile --inference: the small bf16 GPT block's forward, returning its
// logits and the final norm's output instead of the loss, packaged without
// autodiff (weft-inference-step in place of weft-autodiff).
//
// RUN: sed -e 's/  ) -> tensor<bf16> {/  ) -> (tensor<2x16x64xbf16>, tensor<2x16x128xbf16>) {/' -e 's/  return %loss : tensor<bf16>/  return %logits, %norm_f : tensor<2x16x64xbf16>, tensor<2x16x128xbf16>/' %S/../weft-run/Inputs/gpt_bf16.mlir > %t.logits.mlir
//
// The step is the forward without its loss: no gradient op, no cross-entropy.
// RUN: weft-compile %t.logits.mlir --entry forward --inference -o %t.step.mlir
// RUN: FileCheck %s --check-prefix=STEP < %t.step.mlir
// STEP-LABEL: func.func @forward_step(
// STEP-SAME: -> (tensor<2x16x64xbf16>, tensor<2x16x128xbf16>)
// STEP-SAME: weft.memory_plan
// STEP: weft.attention
// STEP-NOT: _grad
// STEP-NOT: weft.cross_entropy
// STEP: return
//
// Its results are the forward's, on the reference interpreter.
// RUN: weft-run %t.step.mlir --entry forward --random-inputs --save-inputs %t.in.npz --outputs %t.forward.npz
// RUN: weft-run %t.step.mlir --entry forward_step --inputs %t.in.npz --expect %t.forward.npz --rtol 0 --atol 0
//
// The package: the five forward GEMMs (qkv, proj, fc1, fc2, lm_head) and no
// backward one; the two results are output buffers (result 0 and 1).
// RUN: weft-compile %t.logits.mlir --entry forward --inference --target=sm_90a --emit=package --tuning-table=none -o %t.weftpkg
// RUN: weft-run --check %t.weftpkg | FileCheck %s --check-prefix=PKG
// PKG: step @forward_step_plan
// PKG: 5 gemms
// PKG-NEXT: ok
// RUN: weft-run %t.weftpkg --dry-run --load-state %t.in.npz --data %t.in.npz | FileCheck %s --check-prefix=BUFFERS
// BUFFERS-DAG: output tensor<2x16x64xbf16> {{.*}} result 0
// BUFFERS-DAG: output tensor<2x16x128xbf16> {{.*}} result 1
//
// Deterministic: the same bytes twice.
// RUN: weft-compile %t.logits.mlir --entry forward --inference --target=sm_90a --emit=package --tuning-table=none -o %t.again.weftpkg
// RUN: cmp %t.weftpkg %t.again.weftpkg
//
// Options inference cannot take are usage errors naming the value.
// RUN: sh -c 'weft-compile %t.logits.mlir --entry forward --inference --train 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=BOTH
// BOTH: error: --train builds the training step and --inference the forward alone: give one of them
// BOTH: exit 2
// RUN: sh -c 'weft-compile %t.logits.mlir --entry forward --inference --optimizer=adamw 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=ADAMW
// ADAMW: error: --inference packages the forward alone: optimizer must be none, got 'adamw'
// ADAMW: exit 2
// RUN: sh -c 'weft-compile %t.logits.mlir --entry forward --inference --remat=full 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=REMAT
// REMAT: error: --inference keeps no activations for a backward: remat must be none, got 'full'
// REMAT: exit 2
// RUN: sh -c 'weft-compile %t.logits.mlir --entry forward --inference --grid=tp=2 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=GRID
// GRID: error: --inference packages run on one GPU: drop grid='tp=2' and sequence-parallel
// GRID: exit 2
// A training step of a forward without a loss is still refused by weft-autodiff.
// RUN: not weft-compile %t.logits.mlir --entry forward --train -o /dev/null 2>&1 | FileCheck %s --check-prefix=TRAIN
// TRAIN: expects a single 0-d loss result to differentiate, got 2 results
