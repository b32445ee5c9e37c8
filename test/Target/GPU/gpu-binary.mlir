// A hand-written gpu.module (vector add) through lowerToPtx and assemblePtx:
// PTX with the entry for sm_90a, a cubin, and ptxas -v's resources.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=gpu-binary -o %t | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: od -A n -t x1 -N 4 %t/kernels.cubin | FileCheck %s --check-prefix=ELF
// Without ptxas the tool says so instead of writing half a result.
// RUN: env WEFT_PTXAS=%t/no-such-ptxas not weft-compile %s --emit=gpu-binary -o %t/none 2>&1 | FileCheck %s --check-prefix=NOPTXAS

// A 4-register kernel with no local arrays cannot spill.
// CHECK: kernels vector_add: registers={{[1-9][0-9]*}} spill_stores=0 spill_loads=0 stack=0 smem=0

// PTX: .target sm_90a
// PTX: .entry vector_add(
// PTX: add.rn.f32

// The ELF magic: 0x7f 'E' 'L' 'F'.
// ELF: 7f 45 4c 46

// NOPTXAS: error: gpu.module @kernels: ptxas not found
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @vector_add(%a: memref<1024xf32>, %b: memref<1024xf32>, %c: memref<1024xf32>) kernel {
      %block = gpu.block_id x
      %thread = gpu.thread_id x
      %size = gpu.block_dim x
      %base = arith.muli %block, %size : index
      %i = arith.addi %base, %thread : index
      %x = memref.load %a[%i] : memref<1024xf32>
      %y = memref.load %b[%i] : memref<1024xf32>
      %sum = arith.addf %x, %y : f32
      memref.store %sum, %c[%i] : memref<1024xf32>
      gpu.return
    }
  }
}
