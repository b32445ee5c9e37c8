// RUN: weft-opt %s --split-input-file --verify-diagnostics

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  // expected-error @+1 {{buffer 'x' at offset 768 with size 512 ends past the arena of 1024 bytes}}
  weft_plan.buffer @x offset 768 size 512 live [0, 1] "input"
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  // expected-error @+1 {{buffer 'y' [256, 768) overlaps buffer 'x' [0, 512) while both are live (schedule indices 1 to 1)}}
  weft_plan.buffer @y offset 256 size 512 live [1, 1] "activation"
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr"]
  // expected-error @+1 {{argument 0 names @nothing, which is not a buffer of the step}}
  weft_plan.launch @k [@nothing] grid [1, 1, 1] block [32, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 3 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr"]
  // expected-error @+1 {{launch 0 argument 0 uses buffer 'x' at schedule index 2, outside its live range [0, 1]}}
  weft_plan.launch @k [@x] grid [1, 1, 1] block [32, 1, 1] smem 0 stream 0 at 2
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr"]
  // expected-error @+1 {{block.x = 2048 is outside [1, 1024]}}
  weft_plan.launch @k [@x] grid [1, 1, 1] block [2048, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr"]
  // expected-error @+1 {{grid.y = 65536 is outside [1, 65535]}}
  weft_plan.launch @k [@x] grid [1, 65536, 1] block [32, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr"]
  // expected-error @+1 {{block of 2048 threads exceeds 1024}}
  weft_plan.launch @k [@x] grid [1, 1, 1] block [1024, 2, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr"]
  // expected-error @+1 {{dynamic shared memory 300000 bytes is outside [0, 232448]}}
  weft_plan.launch @k [@x] grid [1, 1, 1] block [32, 1, 1] smem 300000 stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  // expected-error @+1 {{names kernel @missing, which the step does not declare}}
  weft_plan.launch @missing [@x] grid [1, 1, 1] block [32, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr", "i32"]
  // expected-error @+1 {{launch 0 of 'k' argument 1 is f32, the kernel's parameter 1 is i32}}
  weft_plan.launch @k [@x, 1.0 : f32] grid [1, 1, 1] block [32, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.buffer @y offset 512 size 512 live [0, 1] "output"
  // expected-error @+2 {{gemm 0 operand a: buffer 'x' has 512 bytes, the GEMM reads or writes 2048}}
  // expected-error @+1 {{gemm 0 operand b: buffer 'x' has 512 bytes, the GEMM reads or writes 2048}}
  weft_plan.gemm @y = @x, @x m 16 n 16 k 64 dtype "bf16" stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  // expected-error @+1 {{epilogue 'bias' needs a bias buffer}}
  weft_plan.gemm @x = @x, @x m 4 n 4 k 4 dtype "bf16" stream 0 at 0 {epilogue = "bias"}
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  // expected-error @+1 {{has dtype 'i8', not one of bf16, f16, f32, f64}}
  weft_plan.gemm @x = @x, @x m 4 n 4 k 4 dtype "i8" stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 2 {
  // expected-error @+1 {{wait on event 4 that no earlier entry records}}
  weft_plan.wait_event stream 1 event 4 at 0
  weft_plan.record_event stream 0 event 4 at 1
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  // expected-error @+1 {{has role 'scratch', not one of parameter, optimizer_state, input, output, gradient, activation, temporary, workspace}}
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "scratch"
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  // expected-error @+1 {{expects a live range [first, last] with 0 <= first <= last, got [1, 0]}}
  weft_plan.buffer @x offset 0 size 512 live [1, 0] "input"
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  // expected-error @+1 {{buffer 'x' offset 100 is not a multiple of the alignment 256}}
  weft_plan.buffer @x offset 100 size 4 live [0, 1] "input"
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  // expected-error @+1 {{parameter 1 has kind 'u8', not one of ptr, i32, i64, f32}}
  weft_plan.kernel @k image "k" entry "k" params ["ptr", "u8"]
}

// -----

// expected-error @+1 {{has plan format version 7; this compiler reads and writes version 2}}
weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 7 steps 2 streams 1 {
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr"]
  weft_plan.launch @k [@x] grid [1, 1, 1] block [32, 1, 1] smem 0 stream 0 at 1
  // expected-error @+1 {{schedule index 0 comes after an entry at index 1 (entries must be in schedule order)}}
  weft_plan.launch @k [@x] grid [1, 1, 1] block [32, 1, 1] smem 0 stream 0 at 0
}
