// weft-coalesce-collectives on the 2-block GPT step at tp = 2 with sequence
// parallelism: the twelve latency-bound bf16 all-reduces of norm-weight,
// norm-bias and row-parallel bias gradients (partial over the sequence
// shards) become one all-reduce of their concatenation, split back; the
// loss's f32 average stays alone. The step computes the same values.
// RUN: weft-opt %S/../Tools/weft-run/Inputs/gpt_mean_square_bf16.mlir --weft-autodiff --weft-place="grid=tp=2 sequence-parallel func=forward_step" --weft-partition=sequence-parallel --weft-hoist-collectives -o %t.part.mlir
// RUN: weft-opt %t.part.mlir --weft-coalesce-collectives -o %t.bucket.mlir
// RUN: FileCheck %s < %t.bucket.mlir
// RUN: grep -c "shard.all_reduce" %t.part.mlir | FileCheck %s --check-prefix=BEFORE
// RUN: weft-run %t.part.mlir --entry forward_step --random-inputs --seed 5 --outputs %t.out.npz > /dev/null
// RUN: weft-run %t.bucket.mlir --entry forward_step --random-inputs --seed 5 --expect %t.out.npz --rtol 1e-12 | FileCheck %s --check-prefix=SAME

// BEFORE: 13
// CHECK-LABEL: func.func @forward_step
// CHECK: shard.all_reduce %{{[0-9]+}} on @grid grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
// CHECK-NEXT: %[[BUCKET:[0-9]+]] = weft.concat %{{[0-9]+}}, %dgamma, %dbeta, {{.*}} {dim = 0 : i64} : ({{.*}}) -> tensor<1536xbf16>
// CHECK-NEXT: %[[SUM:all_reduce_[0-9]+]] = shard.all_reduce %[[BUCKET]] on @grid grid_axes = [0] : tensor<1536xbf16> -> tensor<1536xbf16>
// CHECK-NEXT: weft.split %[[SUM]] {dim = 0 : i64, sizes = array<i64: 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128>}
// CHECK-NOT: shard.all_reduce
// CHECK: return

// SAME: expect: all results match {{.*}} (max abs err=0, max rel err=0)
