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
  // expected-error @+1 {{expects kind all_reduce / all_gather / reduce_scatter, dtype bf16 / f16 / f32 / f64 and reduction sum / max / min / avg, got 'broadcast', 'bf16', 'sum'}}
  weft_plan.collective "broadcast" @x -> @x count 256 dtype "bf16" axes [0] stream 0 at 1
}
