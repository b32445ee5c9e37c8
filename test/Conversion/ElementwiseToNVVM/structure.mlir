// The gpu.funcs ElementwiseToNVVM builds for each kernel shape, before
// lowering (weft-compile --emit=elementwise-ir).
// RUN: weft-compile %s --emit=elementwise-ir | FileCheck %s

// A pointwise group: grid-stride over 8-element vectors (16 bytes of bf16),
// 256 threads, the bias [n] loaded as a vector at (i mod n), a scalar tail.
// CHECK-LABEL: gpu.module @add_gelu_0
// CHECK: gpu.func @add_gelu_0(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: scf.for
// CHECK-DAG: arith.remsi %{{.*}}, %c1000_i64
// CHECK-DAG: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK-DAG: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// The tail: one bf16 element at a time.
// CHECK: scf.for
// CHECK: llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr<1> -> bf16
// CHECK: gpu.return
func.func @add_gelu(%x: tensor<4x1000xbf16>, %b: tensor<1000xbf16>) -> tensor<4x1000xbf16> {
  %y = weft.fused %x, %b {kind = "add+gelu"} : (tensor<4x1000xbf16>, tensor<1000xbf16>) -> tensor<4x1000xbf16> {
  ^bb0(%a: tensor<4x1000xbf16>, %c: tensor<1000xbf16>):
    %s = weft.add %a, %c : (tensor<4x1000xbf16>, tensor<1000xbf16>) -> tensor<4x1000xbf16>
    %g = weft.gelu %s {approximate = "tanh"} : (tensor<4x1000xbf16>) -> tensor<4x1000xbf16>
    weft.yield %g : tensor<4x1000xbf16>
  }
  return %y : tensor<4x1000xbf16>
}

// f32 tensors move 4 elements per 16-byte access.
// CHECK-LABEL: gpu.module @scale_f32_0
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
func.func @scale_f32(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %y = weft.scale %x {value = 0.5 : f64} : (tensor<64x256xf32>) -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

// A row group: one CTA per row (grid-stride over the 8 rows), one 8 x bf16
// vector per thread and pass: 1024 / 8 = 128 threads; mean then variance,
// each a column loop and a block reduction (5 xor shuffles, the 4 warps'
// sums through shared memory between barriers), then the vector stores.
// CHECK-LABEL: gpu.module @layer_norm_0
// CHECK: llvm.mlir.global internal @weft_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8192 x i8>
// CHECK: gpu.func @layer_norm_0({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.block_id x
// CHECK: gpu.grid_dim x
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %c8_i64 step
// CHECK: scf.for {{.*}} iter_args
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args
// CHECK: gpu.shuffle xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// CHECK-NOT: gpu.func
// CHECK: gpu.return
func.func @layer_norm(%x: tensor<8x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>) -> tensor<8x1024xbf16> {
  %y = weft.layer_norm %x, %g, %b {eps = 1.0e-05 : f64} : (tensor<8x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>) -> tensor<8x1024xbf16>
  return %y : tensor<8x1024xbf16>
}

// dgamma, dbeta: the row statistics kernel, the column-sum kernel (32 x 32
// threads, the 32 lanes' partials through shared memory), then the rows.
// CHECK-LABEL: gpu.module @layer_norm_grad_0
// CHECK: gpu.func @layer_norm_grad_0_stats({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>}
// CHECK: gpu.func @layer_norm_grad_0_colsum({{.*}}) kernel attributes {known_block_size = array<i32: 1024, 1, 1>}
// CHECK: gpu.barrier
// CHECK: gpu.func @layer_norm_grad_0({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>}
func.func @layer_norm_grad(%dy: tensor<16x256xbf16>, %x: tensor<16x256xbf16>, %g: tensor<256xbf16>) -> (tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>) {
  %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : (tensor<16x256xbf16>, tensor<16x256xbf16>, tensor<256xbf16>) -> (tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>)
  return %dx, %dg, %db : tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>
}

// The mean loss: per-CTA partials in a module global, the last CTA to
// arrive (atomic counter) adds them in order and resets the counter.
// CHECK-LABEL: gpu.module @cross_entropy_0
// CHECK: llvm.mlir.global internal @weft_loss_partials() {addr_space = 1 : i32, alignment = 16 : i64} : !llvm.array<264 x f32>
// CHECK: llvm.mlir.global internal @weft_loss_counter(0 : i32) {addr_space = 1 : i32, alignment = 4 : i64} : i32
// CHECK: nvvm.memory.barrier <gpu>
// CHECK: llvm.atomicrmw add
// CHECK: llvm.load volatile
func.func @cross_entropy(%l: tensor<32x500xf32>, %t: tensor<32xi64>) -> tensor<f32> {
  %loss = weft.cross_entropy %l, %t : (tensor<32x500xf32>, tensor<32xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// embedding_grad: each chunk of ids is compacted by warp ballots.
// CHECK-LABEL: gpu.module @embedding_grad_0
// CHECK: llvm.call_intrinsic "llvm.nvvm.vote.ballot.sync"
// CHECK: llvm.call_intrinsic "llvm.ctpop.i32"
func.func @embedding_grad(%dy: tensor<2x8x64xbf16>, %ids: tensor<2x8xi64>) -> tensor<100x64xbf16> {
  %t = weft.embedding_grad %dy, %ids : (tensor<2x8x64xbf16>, tensor<2x8xi64>) -> tensor<100x64xbf16>
  return %t : tensor<100x64xbf16>
}

// rms_norm_grad over 512 rows: dgamma's column sums run over 512 / 128 = 4
// row chunks, (64 / 32) x 4 CTAs leaving partials in the dx buffer after the
// 2 x 512 row statistics, then a final kernel adds the 4 partials of each
// column in chunk order.
// CHECK-LABEL: gpu.module @rms_norm_grad_chunks_0
// CHECK: gpu.func @rms_norm_grad_chunks_0_stats(
// CHECK: gpu.func @rms_norm_grad_chunks_0_colsum(
// CHECK: gpu.func @rms_norm_grad_chunks_0_colfinal({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK: gpu.func @rms_norm_grad_chunks_0(
func.func @rms_norm_grad_chunks(%dy: tensor<512x64xbf16>, %x: tensor<512x64xbf16>, %g: tensor<64xbf16>) -> (tensor<512x64xbf16>, tensor<64xbf16>) {
  %dx, %dg = weft.rms_norm_grad %dy, %x, %g : (tensor<512x64xbf16>, tensor<512x64xbf16>, tensor<64xbf16>) -> (tensor<512x64xbf16>, tensor<64xbf16>)
  return %dx, %dg : tensor<512x64xbf16>, tensor<64xbf16>
}
