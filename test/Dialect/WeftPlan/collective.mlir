// weft_plan.collective: the collectives of a partitioned step, checked
// against the step's grid and their buffers.
// RUN: weft-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: weft_plan.step @ok
// CHECK: weft_plan.collective "reduce_scatter" @partial -> @shard count 256 dtype "bf16" axes [1] stream 0 at 1
// CHECK: weft_plan.collective "all_gather" @shard -> @whole count 256 dtype "bf16" axes [1] stream 0 at 2
// CHECK: weft_plan.collective "all_reduce" @loss -> @loss count 1 dtype "f32" axes [1] stream 0 at 3 {reduction = "avg"}
weft_plan.step @ok arena 2048 align 256 arch "sm_90a" version 2 steps 4 streams 1 attributes {grid = array<i64: 2, 4>} {
  weft_plan.buffer @partial offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @shard offset 512 size 256 live [1, 2] "activation"
  weft_plan.buffer @whole offset 1024 size 512 live [2, 3] "output"
  weft_plan.buffer @loss offset 1536 size 256 live [0, 3] "output"
  weft_plan.collective "reduce_scatter" @partial -> @shard count 256 dtype "bf16" axes [1] stream 0 at 1
  weft_plan.collective "all_gather" @shard -> @whole count 256 dtype "bf16" axes [1] stream 0 at 2
  weft_plan.collective "all_reduce" @loss -> @loss count 1 dtype "f32" axes [1] stream 0 at 3 {reduction = "avg"}
}

// -----

weft_plan.step @no_grid arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  // expected-error @+1 {{collective 0 (all_reduce) names grid axes mask 1 but the step's grid has 0 axes}}
  weft_plan.collective "all_reduce" @x -> @x count 256 dtype "bf16" axes [0] stream 0 at 1
}

// -----

weft_plan.step @small arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 4>} {
  weft_plan.buffer @x offset 0 size 256 live [0, 1] "activation"
  weft_plan.buffer @y offset 256 size 256 live [0, 1] "activation"
  // expected-error @+1 {{collective 0 (all_gather) output: buffer 'y' has 256 bytes, the collective moves 512}}
  weft_plan.collective "all_gather" @x -> @y count 256 dtype "bf16" axes [0] stream 0 at 1
}

// -----

weft_plan.step @odd arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 512 live [0, 1] "activation"
  // expected-error @+1 {{collective 0 (reduce_scatter) has count 6, not a positive multiple of its 4 ranks}}
  weft_plan.collective "reduce_scatter" @x -> @y count 6 dtype "bf16" axes [0] stream 0 at 1
}

// -----

weft_plan.step @dead arena 1024 align 256 arch "sm_90a" version 2 steps 3 streams 1 attributes {grid = array<i64: 2>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 512 live [0, 2] "activation"
  // expected-error @+1 {{collective 0 input uses buffer 'x' at schedule index 2, outside its live range [0, 1]}}
  weft_plan.collective "all_reduce" @x -> @y count 256 dtype "bf16" axes [0] stream 0 at 2
}

// -----

weft_plan.step @kind arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 2>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  // expected-error @+1 {{expects kind all_reduce / all_gather / reduce_scatter / all_to_all / send_recv, dtype bf16 / f16 / f32 / f64 and reduction sum / max / min / avg, got 'broadcast', 'bf16', 'sum'}}
  weft_plan.collective "broadcast" @x -> @x count 256 dtype "bf16" axes [0] stream 0 at 1
}

// -----

// all_to_all and send_recv: both buffers hold the whole count (256 bf16, 512
// bytes) on 4 ranks of axis 1; a shift of -3 is inside the group.
// CHECK-LABEL: weft_plan.step @moves
// CHECK: weft_plan.collective "all_to_all" @x -> @y count 256 dtype "bf16" axes [1] stream 0 at 1
// CHECK: weft_plan.collective "send_recv" @y -> @z count 256 dtype "bf16" axes [1] stream 0 at 2 {rotate, shift = -3 : i64}
weft_plan.step @moves arena 2048 align 256 arch "sm_90a" version 2 steps 3 streams 1 attributes {grid = array<i64: 2, 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 512 live [1, 2] "activation"
  weft_plan.buffer @z offset 1024 size 512 live [2, 2] "output"
  weft_plan.collective "all_to_all" @x -> @y count 256 dtype "bf16" axes [1] stream 0 at 1
  weft_plan.collective "send_recv" @y -> @z count 256 dtype "bf16" axes [1] stream 0 at 2 {rotate, shift = -3 : i64}
}

// -----

weft_plan.step @a2a_blocks arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 512 live [0, 1] "activation"
  // expected-error @+1 {{collective 0 (all_to_all) has count 6, not a positive multiple of its 4 ranks}}
  weft_plan.collective "all_to_all" @x -> @y count 6 dtype "bf16" axes [0] stream 0 at 1
}

// -----

weft_plan.step @a2a_small arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 256 live [0, 1] "activation"
  // expected-error @+1 {{collective 0 (all_to_all) output: buffer 'y' has 256 bytes, the collective moves 512}}
  weft_plan.collective "all_to_all" @x -> @y count 256 dtype "bf16" axes [0] stream 0 at 1
}

// -----

weft_plan.step @a2a_in_place arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  // expected-error @+1 {{collective 0 (all_to_all) cannot run in place: its input and output (512 bytes each, from arena bytes 0 and 0) overlap}}
  weft_plan.collective "all_to_all" @x -> @x count 256 dtype "bf16" axes [0] stream 0 at 1
}

// -----

weft_plan.step @shift_past arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 2, 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 512 live [0, 1] "activation"
  // expected-error @+1 {{collective 0 (send_recv) shifts by 4 positions, not a nonzero shift of magnitude below its 4 ranks}}
  weft_plan.collective "send_recv" @x -> @y count 256 dtype "bf16" axes [1] stream 0 at 1 {shift = 4 : i64}
}

// -----

weft_plan.step @shift_missing arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 512 live [0, 1] "activation"
  // expected-error @+1 {{send_recv expects a nonzero shift of magnitude at most 8388607, got none}}
  weft_plan.collective "send_recv" @x -> @y count 256 dtype "bf16" axes [0] stream 0 at 1
}

// -----

weft_plan.step @shift_huge arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 512 live [0, 1] "activation"
  // expected-error @+1 {{send_recv expects a nonzero shift of magnitude at most 8388607, got 8388608}}
  weft_plan.collective "send_recv" @x -> @y count 256 dtype "bf16" axes [0] stream 0 at 1 {shift = 8388608 : i64}
}

// -----

weft_plan.step @shift_on_gather arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 attributes {grid = array<i64: 4>} {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "activation"
  weft_plan.buffer @y offset 512 size 512 live [0, 1] "activation"
  // expected-error @+1 {{all_to_all has no shift or rotate (only send_recv does)}}
  weft_plan.collective "all_to_all" @x -> @y count 256 dtype "bf16" axes [0] stream 0 at 1 {rotate}
}
