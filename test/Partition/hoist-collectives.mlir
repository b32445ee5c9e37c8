// weft-hoist-collectives on the 2-block GPT step at tp = 2 with sequence
// parallelism: the backward's re-gather of a norm output for a weight
// gradient is issued before the data-gradient matmul it does not need (so
// the communication stream runs it beside that matmul, and the data
// gradient's reduce-scatter beside the weight-gradient matmul), and the
// latency-bound all-reduces of norm-weight gradients wait at the return. The
// step computes the same values.
// RUN: weft-opt %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --weft-autodiff --weft-place="grid=tp=2 sequence-parallel func=forward_step" --weft-partition=sequence-parallel -o %t.part.mlir
// RUN: weft-opt %t.part.mlir --weft-hoist-collectives -o %t.hoisted.mlir
// RUN: FileCheck %s < %t.hoisted.mlir
// RUN: weft-run %t.part.mlir --entry forward_step --random-inputs --seed 5 --outputs %t.out.npz > /dev/null
// RUN: weft-run %t.hoisted.mlir --entry forward_step --random-inputs --seed 5 --expect %t.out.npz --rtol 1e-12 | FileCheck %s --check-prefix=SAME

// CHECK: %[[GATHERED:all_gather_[0-9]+]] = shard.all_gather %{{[0-9]+}} on @grid grid_axes = [0] gather_axis = 0 {weft.layer = 1 : i64} : tensor<32x128xbf16> -> tensor<64x128xbf16>
// CHECK-NEXT: %[[DX:[0-9]+]] = weft.matmul %{{[0-9]+}}, %arg20
// CHECK: weft.matmul %{{[0-9]+}}, %[[GATHERED]] {transpose_a
// CHECK: shard.reduce_scatter %[[DX]]
// CHECK: weft.layer_norm_grad
// CHECK: shard.all_reduce %dgamma
// CHECK-NEXT: shard.all_reduce %dbeta
// CHECK-NOT: = weft.
// CHECK: return

// SAME: expect: all results match {{.*}} (max abs err=0, max rel err=0)
