// weft-run runs a partitioned step on its simulated ranks from the global
// inputs (sliced by weft.split_dim along the grid's tp axis) and gathers the
// results: they equal the unpartitioned step's, here at tp = 2 with sequence
// parallelism and dropout.
// RUN: weft-opt %S/../../Partition/Inputs/gpt_2layer.mlir --weft-autodiff=optimizer=adamw -o %t.global.mlir
// RUN: weft-opt %t.global.mlir --weft-place="grid=tp=2 sequence-parallel func=forward_step" --weft-partition=sequence-parallel -o %t.part.mlir
// RUN: weft-run %t.global.mlir --entry forward_step --random-inputs --seed 5 --save-inputs %t.in.npz --outputs %t.out.npz > /dev/null
// RUN: weft-run %t.part.mlir --entry forward_step --inputs %t.in.npz --expect %t.out.npz --rtol 1e-10 | FileCheck %s
// The random inputs of a partitioned step are drawn for its global signature.
// RUN: weft-run %t.part.mlir --entry forward_step --random-inputs --seed 5 --expect %t.out.npz --rtol 1e-10 | FileCheck %s

// CHECK: res0: tensor<f64>
// CHECK: res1: tensor<32x32xf64>
