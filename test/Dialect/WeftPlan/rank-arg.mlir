// RUN: weft-opt %s --split-input-file --verify-diagnostics

// Rank-relative launch immediates {base, rank_axes, scale}: an i64 (or i32)
// shard offset on the step's grid; each malformed field is named.

weft_plan.step @ok arena 1024 align 256 arch "sm_90a" version 2 steps 1 streams 1 attributes {grid = array<i64: 2, 4>} {
  weft_plan.buffer @x offset 0 size 1024 live [0, 0] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr", "i64", "i32"]
  weft_plan.launch @k [@x, {base = 0 : i64, rank_axes = array<i64: 1>, scale = 32 : i64}, {base = 3 : i32, rank_axes = array<i64: 0, 1>, scale = 1 : i64}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @scale arena 1024 align 256 arch "sm_90a" version 2 steps 1 streams 1 attributes {grid = array<i64: 2>} {
  weft_plan.kernel @k image "k" entry "k" params ["i64"]
  // expected-error @+1 {{argument 0 (a rank-relative immediate): expects base = N : i64 (or i32) and scale = N : i64}}
  weft_plan.launch @k [{base = 0 : i64, rank_axes = array<i64: 0>}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @axis arena 1024 align 256 arch "sm_90a" version 2 steps 1 streams 1 attributes {grid = array<i64: 2>} {
  weft_plan.kernel @k image "k" entry "k" params ["i64"]
  // expected-error @+1 {{argument 0 (a rank-relative immediate): grid axis 9 is outside [0, 8)}}
  weft_plan.launch @k [{base = 0 : i64, rank_axes = array<i64: 9>, scale = 1 : i64}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @keys arena 1024 align 256 arch "sm_90a" version 2 steps 1 streams 1 attributes {grid = array<i64: 2>} {
  weft_plan.kernel @k image "k" entry "k" params ["i64"]
  // expected-error @+1 {{argument 0 (a rank-relative immediate): expects exactly the keys base, rank_axes and scale}}
  weft_plan.launch @k [{base = 0 : i64, rank_axes = array<i64: 0>, scale = 1 : i64, shift = 1 : i64}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @no_grid arena 1024 align 256 arch "sm_90a" version 2 steps 1 streams 1 {
  weft_plan.kernel @k image "k" entry "k" params ["i64"]
  // expected-error @+1 {{argument 0 is relative to grid axis 0, but the step's grid has 0 axes}}
  weft_plan.launch @k [{base = 0 : i64, rank_axes = array<i64: 0>, scale = 1 : i64}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}
