// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=64 causal=true" | FileCheck %s --check-prefix=FWD
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=f16 head-dim=128 backward=true" | FileCheck %s --check-prefix=BWD
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=64" | mlir-opt -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 cubin-format=isa" | FileCheck %s --check-prefix=PTX
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=64 wgmma=true" | FileCheck %s --check-prefix=WGMMA
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=128 wgmma=true" | mlir-opt -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 cubin-format=isa" | FileCheck %s --check-prefix=WGMMA-PTX
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
// FWD: llvm.mlir.global external @weft_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
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
// PTX-SAME: .extern .shared .align 16 .b8 weft_smem[]
// PTX-SAME: .entry weft_attn_forward_bf16_d64_full_q64_k64(
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-SAME: ex2.approx.ftz.f32
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16

// The warpgroup-MMA forward at d = 64, software-pipelined: K and V live in
// two shared-memory stages and block j + 1 is fetched by cp.async while block
// j is computed. A 64 x 64 tile is 64 * 64 * 2 / 16 = 512 16-byte chunks, 4
// per thread at 128 threads, so K and V of one block are 8 cp.async per
// thread. Prologue: block 0's 8 cp.async (guarded: there may be no key
// block), commit, Q through registers, then wait 0 -> fence.proxy.async (the
// wgmma reads what cp.async wrote through the generic proxy) -> barrier; Q's
// 4 fragments (d / 16 k-steps) by ldmatrix, and a barrier before the first
// prefetch reuses Q's space (stage 1). Each iteration: prefetch block j + 1
// (8 cp.async, guarded) + commit; S = Q K^T (4 k-steps of m64n64k16, K by
// descriptor, trans-b 0), commit, wait 0; softmax; O += P V (4 k-steps of
// m64n64k16, V read transposed, trans-b 1), commit, wait 0; then wait for the
// prefetch, fence and barrier: one barrier per key block. ptxas caps the
// registers for 4 CTAs per SM at d = 64 (nvvm.minctasm).
// WGMMA: gpu.func @weft_attn_forward_bf16_d64_full_q64_k64_wgmma({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.minctasm = 4 : i32}
// WGMMA: scf.if
// WGMMA-COUNT-8: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// WGMMA-NOT: nvvm.cp.async.shared.global
// WGMMA: nvvm.cp.async.commit.group
// WGMMA-NOT: gpu.barrier
// WGMMA: nvvm.cp.async.wait.group 0
// WGMMA-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WGMMA-NEXT: gpu.barrier
// WGMMA-COUNT-4: nvvm.ldmatrix
// WGMMA-NOT: nvvm.ldmatrix
// WGMMA: gpu.barrier
// WGMMA: scf.for
// WGMMA-NOT: gpu.barrier
// WGMMA: scf.if
// WGMMA-COUNT-8: nvvm.cp.async.shared.global
// WGMMA-NOT: nvvm.cp.async.shared.global
// WGMMA: nvvm.cp.async.commit.group
// WGMMA-NOT: gpu.barrier
// WGMMA: nvvm.wgmma.fence.aligned
// WGMMA-NOT: gpu.barrier
// WGMMA-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0;
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA-NOT: gpu.barrier
// WGMMA: nvvm.wgmma.fence.aligned
// WGMMA-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// WGMMA-NOT: wgmma.mma_async
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA-NEXT: nvvm.cp.async.wait.group 0
// WGMMA-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WGMMA-NEXT: gpu.barrier
// WGMMA-NEXT: scf.yield
// WGMMA-NOT: nvvm.cp.async
// WGMMA-NOT: gpu.barrier
// WGMMA: gpu.return

// The same order in the PTX at d = 128 (8 k-steps of m64n64k16 for S, 4 of
// m64n128k16 for P V; 128 * 64 * 2 / 16 / 128 = 8 cp.async per tile), with
// zero-filling cp.async (src-size operand) and 3 CTAs per SM. The PTX sits
// in one string with its tabs escaped as \09.
// WGMMA-PTX: .entry weft_attn_forward_bf16_d128_full_q64_k64_wgmma(
// WGMMA-PTX-SAME: .minnctapersm 3
// WGMMA-PTX-SAME: cp.async.cg.shared.global [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// WGMMA-PTX-SAME: cp.async.commit_group;
// WGMMA-PTX-SAME: cp.async.wait_group \090;
// WGMMA-PTX-SAME: fence.proxy.async.shared::cta;
// WGMMA-PTX-SAME: bar.sync \090;
// WGMMA-PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// WGMMA-PTX-SAME: bar.sync \090;
// WGMMA-PTX-SAME: cp.async.commit_group;
// WGMMA-PTX-SAME: wgmma.fence.sync.aligned
// WGMMA-PTX-SAME: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// WGMMA-PTX-SAME: wgmma.commit_group.sync.aligned
// WGMMA-PTX-SAME: wgmma.wait_group.sync.aligned \090;
// WGMMA-PTX-SAME: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// WGMMA-PTX-SAME: wgmma.wait_group.sync.aligned \090;
// WGMMA-PTX-SAME: cp.async.wait_group \090;
// WGMMA-PTX-SAME: fence.proxy.async.shared::cta;
// WGMMA-PTX-SAME: bar.sync \090;

// ERR-WGMMA: error: the warpgroup-MMA attention kernels need block_q = 64 or 128 (one or two warpgroups of 4 warps), got 32
// ERR: error: the GPU attention kernels support head_dim 64 and 128, got 96
// ERR-TILE: error: the GPU attention kernels need block_q in {32, 64, 128} (16 rows per warp, 2..8 warps), got 48
// ERR-DTYPE: error: weft-emit-attention-kernels: dtype must be bf16 or f16, got 'f32'
