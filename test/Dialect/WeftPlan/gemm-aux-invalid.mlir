// RUN: weft-opt %s --split-input-file --verify-diagnostics

// The GELU epilogues' aux matrix: required by gelu_aux / gelu_aux_bias /
// dgelu, refused elsewhere, with a leading dimension of at least n that is a
// multiple of 8 (cuBLASLt's EPILOGUE_AUX_LD), batch 1, and a buffer live at
// the GEMM that holds [m, n] at that pitch.

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  // expected-error @+1 {{epilogue 'dgelu' needs an aux buffer}}
  weft_plan.gemm @x = @x, @x m 8 n 8 k 8 dtype "bf16" stream 0 at 0 {epilogue = "dgelu"}
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  // expected-error @+1 {{epilogue 'none' takes no aux buffer}}
  weft_plan.gemm @x = @x, @x aux @x ld 8 m 8 n 8 k 8 dtype "bf16" stream 0 at 0
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  // expected-error @+1 {{aux leading dimension 12 must be at least n (8) and a multiple of 8 (cuBLASLt's EPILOGUE_AUX_LD)}}
  weft_plan.gemm @x = @x, @x aux @x ld 12 m 8 n 8 k 8 dtype "bf16" stream 0 at 0 {epilogue = "gelu_aux"}
}

// -----

weft_plan.step @s arena 1024 align 256 arch "sm_90a" version 2 steps 2 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 1] "input"
  // expected-error @+1 {{epilogue 'gelu_aux' needs batch 1, got batch 2}}
  weft_plan.gemm @x = @x, @x aux @x ld 8 m 4 n 8 k 4 dtype "bf16" stream 0 at 0 {epilogue = "gelu_aux", batch = 2 : i64, strides = array<i64: 16, 32, 32, 32>}
}

// -----

// [8, 16] bf16 at pitch 16 is 256 bytes; @u has 128. The aux buffer must be
// live at the GEMM's index like any operand.
weft_plan.step @s arena 2048 align 256 arch "sm_90a" version 2 steps 3 streams 1 {
  weft_plan.buffer @x offset 0 size 512 live [0, 2] "input"
  weft_plan.buffer @u offset 512 size 128 live [0, 2] "temporary"
  weft_plan.buffer @v offset 1024 size 256 live [2, 2] "temporary"
  // expected-error @+1 {{gemm 0 operand aux: buffer 'u' has 128 bytes, the GEMM reads or writes 256}}
  weft_plan.gemm @x = @x, @x aux @u ld 16 m 8 n 16 k 8 dtype "bf16" stream 0 at 0 {epilogue = "dgelu"}
  // expected-error @+1 {{gemm 1 operand aux uses buffer 'v' at schedule index 1, outside its live range [2, 2]}}
  weft_plan.gemm @x = @x, @x aux @v ld 16 m 8 n 16 k 8 dtype "bf16" stream 0 at 1 {epilogue = "dgelu"}
}
