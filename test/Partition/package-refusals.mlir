// What a partitioned token model's host schedule cannot hold yet is refused
// by name (docs/partitioning.md): gathers and scatters along a sequence that
// a batch of 2 makes non-contiguous (NCCL moves contiguous blocks). The
// vocabulary-parallel embedding plans (package-shard-offsets.mlir).
// RUN: weft-compile %S/../Tools/weft-run/Inputs/gpt_bf16.mlir --entry forward --train --optimizer=adamw --grid=tp=2 --sequence-parallel -o %t.mlir
// RUN: not weft-opt %t.mlir --weft-build-plan -o /dev/null 2>&1 | FileCheck %s

// CHECK-NOT: cannot plan weft.embedding
// CHECK-DAG: error: cannot plan shard.reduce_scatter along dimension 1 of 'tensor<2x16x128xbf16>': NCCL moves contiguous blocks, and the dimensions before it are not all 1
// CHECK-DAG: error: cannot plan shard.all_gather along dimension 1 of 'tensor<2x16x128xbf16>': NCCL moves contiguous blocks
