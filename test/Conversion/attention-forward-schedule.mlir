// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=128 wgmma=true block-q=128 block-k=128 stages=3" | FileCheck %s --check-prefix=SERIAL
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=bf16 head-dim=128 wgmma=true block-q=128 block-k=128 stages=3 schedule=overlap" | FileCheck %s --check-prefix=OVERLAP
// RUN: weft-opt %s --weft-emit-attention-kernels="dtype=f16 head-dim=64 causal=true wgmma=true block-q=128 block-k=128 schedule=pingpong" | FileCheck %s --check-prefix=PINGPONG
// RUN: not weft-opt %s --weft-emit-attention-kernels="wgmma=true head-dim=128 block-q=64 schedule=pingpong" 2>&1 | FileCheck %s --check-prefix=ERR-PP-TILE
// RUN: not weft-opt %s --weft-emit-attention-kernels="wgmma=true block-q=128 block-k=128 schedule=overlap backward=true" 2>&1 | FileCheck %s --check-prefix=ERR-BWD
// RUN: not weft-opt %s --weft-emit-attention-kernels="schedule=overlap" 2>&1 | FileCheck %s --check-prefix=ERR-BWD
// RUN: not weft-opt %s --weft-emit-attention-kernels="wgmma=true schedule=fast" 2>&1 | FileCheck %s --check-prefix=ERR-NAME

// The warpgroup forward's schedules (AttentionKernelConfig::ForwardSchedule).
// Serial keeps its name and waits for every wgmma group at once.
// SERIAL-LABEL: gpu.func @weft_attn_forward_bf16_d128_full_q128_k128_wgmma_s3(
// SERIAL-NOT: nvvm.wgmma.wait.group.sync.aligned 1
// SERIAL: gpu.return

// Overlap ("_ov"): K and V of a slot are released apart, so 1 + 4 * 3 = 13
// mbarriers; block 0's S is waited for alone, then each of the two loops
// (blocks without and with the mask) issues S and the previous block's P V
// (8 + 8 wgmmas), waits for S only (wait_group 1) and for P V after the
// softmax; the last P V (8 wgmmas) follows the loops.
// OVERLAP-LABEL: gpu.func @weft_attn_forward_bf16_d128_full_q128_k128_wgmma_s3_ov(
// OVERLAP-COUNT-13: mbarrier.init.shared::cta.b64
// OVERLAP-NOT: mbarrier.init
// OVERLAP: nvvm.wgmma.fence.aligned
// OVERLAP-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 0
// OVERLAP: scf.for
// OVERLAP-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// OVERLAP: nvvm.wgmma.commit.group.sync.aligned
// OVERLAP: nvvm.wgmma.fence.aligned
// OVERLAP-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// OVERLAP: nvvm.wgmma.commit.group.sync.aligned
// OVERLAP-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// OVERLAP: ex2.approx
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 0
// OVERLAP: scf.for
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 1
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 0
// OVERLAP-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 0
// OVERLAP-NOT: bar.sync
// OVERLAP: gpu.return

// PingPong ("_pp"): consumer 1 gives consumer 0 the first turn; each turn
// is a named-barrier wait before the wgmmas are issued and an arrival for
// the other warpgroup after them; consumer 0 takes the last arrival at the
// end.
// PINGPONG-LABEL: gpu.func @weft_attn_forward_f16_d64_causal_q128_k128_wgmma_s2_pp(
// PINGPONG: "bar.arrive $0, 256;"
// PINGPONG: "bar.sync $0, 256;"
// PINGPONG: wgmma.mma_async
// PINGPONG: "bar.arrive $0, 256;"
// PINGPONG-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// PINGPONG: scf.for
// PINGPONG: "bar.sync $0, 256;"
// PINGPONG: "bar.arrive $0, 256;"
// PINGPONG-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// PINGPONG: "bar.sync $0, 256;"
// PINGPONG: gpu.return

// ERR-PP-TILE: error: the 'pingpong' schedule alternates two consumer warpgroups: it needs block_q = 128, got 64
// ERR-BWD: error: the 'overlap' schedule is the warpgroup-MMA training forward's; the other kernels are serial
// ERR-NAME: error: weft-emit-attention-kernels: schedule must be serial, overlap or pingpong, got 'fast'
module {}
