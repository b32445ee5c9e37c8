// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=64 causal=true" | FileCheck %s --check-prefix=FWD
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=f16 head-dim=128 backward=true" | FileCheck %s --check-prefix=BWD
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=64" | mlir-opt -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 cubin-format=isa" | FileCheck %s --check-prefix=PTX
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=64 wgmma=true" | FileCheck %s --check-prefix=WGMMA
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=128 wgmma=true block-q=128 block-k=128 stages=3" | FileCheck %s --check-prefix=WGMMA-2WG
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=128 wgmma=true block-q=128 block-k=128 backward=true" | FileCheck %s --check-prefix=WGMMA-BWD
// RUN: not weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=128 wgmma=true block-q=128 block-k=128 stages=3 backward=true" 2>&1 | FileCheck %s --check-prefix=ERR-SMEM-BWD
// RUN: not weft-opt %s --weft-emit-attention-kernels="wgmma=true stages=5" 2>&1 | FileCheck %s --check-prefix=ERR-STAGES
// RUN: not weft-opt %s --weft-emit-attention-kernels="wgmma=true head-dim=128 block-q=128 block-k=128 stages=4" 2>&1 | FileCheck %s --check-prefix=ERR-SMEM
// RUN: not weft-opt %s --weft-emit-attention-kernels="head-dim=96" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not weft-opt %s --weft-emit-attention-kernels="wgmma=true block-q=32" 2>&1 | FileCheck %s --check-prefix=ERR-WGMMA
// RUN: not weft-opt %s --weft-emit-attention-kernels="block-q=48" 2>&1 | FileCheck %s --check-prefix=ERR-TILE
// RUN: not weft-opt %s --weft-emit-attention-kernels="dtype=f32" 2>&1 | FileCheck %s --check-prefix=ERR-DTYPE

module {}

// The forward at block_q = block_k = 64, d = 64: 4 warps of 16 query rows.
// S = Q K^T is 8 key tiles x 4 k-steps = 32 mma.sync per warp and O += P V
// 4 k-steps x 8 d tiles = 32 more; ldmatrix: 4 for Q's fragments, 4 pairs x
// 4 k-steps for K and 4 x 4 for V (transposed) = 36.
// FWD: gpu.module @weft_attn_fwd_bf16_d64_causal_q64_k64
// FWD: llvm.mlir.global external @weft_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// FWD: gpu.func @weft_attn_forward_bf16_d64_causal_q64_k64(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: f32) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// FWD-COUNT-4: nvvm.ldmatrix
// FWD: scf.for
// FWD-COUNT-32: nvvm.mma.sync
// FWD-NOT: nvvm.mma.sync
// FWD: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
// FWD-COUNT-32: nvvm.mma.sync
// FWD-NOT: nvvm.mma.sync
// FWD: gpu.return

// The backward at d = 128 walks 32-row inner tiles (dkdvInnerRows /
// dqInnerRows). dK/dV kernel per warp and step: S^T = K Q^T (4 query tiles x
// 8 k-steps = 32), dV += P^T dO (2 steps x 16 d tiles = 32), dP^T = V dO^T
// (32), dK += dS^T Q (32) = 128. dQ kernel: S (32), dP (32), dQ += dS K (32).
// BWD: gpu.module @weft_attn_bwd_f16_d128_full_q64_k64
// BWD-LABEL: gpu.func @weft_attn_backward_preprocess_f16_d128_full_q64_k64
// BWD-NOT: nvvm.mma.sync
// BWD-LABEL: gpu.func @weft_attn_backward_dkdv_f16_d128_full_q64_k64
// BWD-COUNT-128: nvvm.mma.sync
// BWD-NOT: nvvm.mma.sync
// BWD-LABEL: gpu.func @weft_attn_backward_dq_f16_d128_full_q64_k64
// BWD-COUNT-96: nvvm.mma.sync
// BWD-NOT: nvvm.mma.sync

// PTX: gpu.binary @weft_attn_fwd_bf16_d64_full_q64_k64
// PTX-SAME: .target sm_90a
// PTX-SAME: .extern .shared .align 1024 .b8 weft_smem[]
// PTX-SAME: .entry weft_attn_forward_bf16_d64_full_q64_k64(
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-SAME: ex2.approx.ftz.f32
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16

// The warpgroup forward at d = 64, block_q = block_k = 64, 2 stages: warpgroup
// 0 produces, warpgroup 1 consumes (256 threads, one CTA per SM asked of
// ptxas). q, k, v are by-value tensor maps (weft_grid_constant_args lists
// them for lowerToPtx). Thread 0 initialises 1 + 3 * 2 mbarriers (Q, K and V
// full with 1 arrival each, empty with one per consumer warp = 4), fences
// them, then the CTA barrier. Producer thread: expect_tx + 1 TMA box for Q
// (64 columns = one 128-byte swizzle slab), then per key block: wait for the
// slot's release from block j - 2, expect_tx + 1 box for K, the same for V.
// Consumer: waits for Q, then per block: wait K, S = Q K^T as 4 k-steps of
// m64n64k16 with A and B by descriptor (SS form: "1, 1, 0, 0"), commit,
// wait 0; the masked softmax only where the block needs a mask (scf.if);
// wait V, O += P V as 4 k-steps with P in registers and V read transposed
// (RS form: "1, 1, 1"), commit, wait 0; lane 0 of each warp releases the slot.
// No CTA barrier after the split and no setmaxnreg with one consumer.
// WGMMA: gpu.func @weft_attn_forward_bf16_d64_full_q64_k64_wgmma_s2(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, {{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32, weft_grid_constant_args = array<i32: 0, 1, 2>}
// WGMMA: scf.if
// WGMMA-COUNT-7: mbarrier.init.shared::cta.b64
// WGMMA: fence.mbarrier_init.release.cluster;
// WGMMA: gpu.barrier
// WGMMA-NOT: gpu.barrier
// WGMMA-NOT: setmaxnreg
// WGMMA: mbarrier.arrive.expect_tx.shared::cta.b64
// WGMMA: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// WGMMA: scf.for
// WGMMA: mbarrier.try_wait.parity.shared::cta.b64
// WGMMA: mbarrier.arrive.expect_tx.shared::cta.b64
// WGMMA: cp.async.bulk.tensor.4d
// WGMMA: mbarrier.arrive.expect_tx.shared::cta.b64
// WGMMA: cp.async.bulk.tensor.4d
// WGMMA: } else {
// WGMMA: mbarrier.try_wait.parity.shared::cta.b64
// WGMMA: scf.for
// WGMMA: mbarrier.try_wait.parity.shared::cta.b64
// WGMMA: nvvm.wgmma.fence.aligned
// WGMMA-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// WGMMA-NOT: wgmma.mma_async
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA: scf.if
// WGMMA: mbarrier.try_wait.parity.shared::cta.b64
// WGMMA: nvvm.wgmma.fence.aligned
// WGMMA-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// WGMMA-NOT: wgmma.mma_async
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA: mbarrier.arrive.shared::cta.b64
// WGMMA-NOT: gpu.barrier
// WGMMA: gpu.return

// Two consumer warpgroups (block_q 128, 384 threads) trade registers with
// the producer: setmaxnreg.dec to 24 there, .inc to 240 in the consumers;
// d = 128 is two slabs: 2 TMA boxes per tile; 3 stages = 10 mbarriers, the
// empty ones expecting 8 consumer warps; S is 8 k-steps of m64n128k16.
// WGMMA-2WG: gpu.func @weft_attn_forward_bf16_d128_full_q128_k128_wgmma_s3({{.*}}) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32
// WGMMA-2WG-COUNT-10: mbarrier.init.shared::cta.b64
// WGMMA-2WG: setmaxnreg.dec.sync.aligned.u32 24;
// WGMMA-2WG: mbarrier.arrive.expect_tx
// WGMMA-2WG-COUNT-2: cp.async.bulk.tensor.4d
// WGMMA-2WG: setmaxnreg.inc.sync.aligned.u32 240;
// WGMMA-2WG-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// WGMMA-2WG-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;

// The Hopper backward: dK/dV keeps 128 keys of K and V (two consumer
// warpgroups of 64 keys) and streams 64 query rows of Q and dO (d = 128);
// 2 stages = 5 mbarriers, the full ones expecting the TMA thread and the 32
// lanes that load lse and delta. Per query tile S^T and dP^T are 8 k-steps
// of m64n64k16 each (both operands by descriptor), then dK and dV 4 k-steps
// of m64n128k16 with dS^T and P^T in registers. dQ keeps 128 query rows and
// streams 128 keys: S and dP 8 k-steps of m64n128k16 each, dQ 8 more.
// WGMMA-BWD: gpu.func @weft_attn_backward_dkdv_bf16_d128_full_q128_k128_wgmma_s2(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr<1>, {{.*}}) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32, weft_grid_constant_args = array<i32: 0, 1, 2, 3>}
// WGMMA-BWD-COUNT-5: mbarrier.init.shared::cta.b64
// WGMMA-BWD: setmaxnreg.dec.sync.aligned.u32 24;
// WGMMA-BWD-COUNT-4: cp.async.bulk.tensor.4d
// WGMMA-BWD: cp.async.bulk.tensor.4d
// WGMMA-BWD: mbarrier.arrive.shared::cta.b64
// WGMMA-BWD: setmaxnreg.inc.sync.aligned.u32 240;
// WGMMA-BWD-COUNT-16: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// WGMMA-BWD-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// WGMMA-BWD: gpu.func @weft_attn_backward_dq_bf16_d128_full_q128_k128_wgmma_s2(
// WGMMA-BWD-COUNT-16: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// WGMMA-BWD-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// ERR-SMEM-BWD: error: the warpgroup-MMA attention backward dQ with block_q 128, block_k 128, head_dim 128 and 3 stages needs 262200 bytes of shared memory, more than the 232448 a CTA can have

// ERR-STAGES: error: the warpgroup-MMA attention kernels need 2..4 pipeline stages, got 5
// ERR-SMEM: error: the warpgroup-MMA attention forward with block_q 128, block_k 128, head_dim 128 and 4 stages needs 295016 bytes of shared memory, more than the 232448 a CTA can have
// ERR-WGMMA: error: the warpgroup-MMA attention kernels need block_q = 64 or 128 (one or two consumer warpgroups of 4 warps), got 32
// ERR: error: the GPU attention kernels support head_dim 64, 128 and 256, got 96
// ERR-TILE: error: the GPU attention kernels need block_q in {32, 64, 128} (16 rows per warp, 2..8 warps), got 48
// ERR-DTYPE: error: weft-emit-attention-kernels: dtype must be bf16 or f16, got 'f32'
