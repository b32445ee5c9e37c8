// RUN: weft-opt %s --split-input-file --verify-diagnostics

// Tensor-map launch arguments: each malformed field is named, and the view
// must stay inside its buffer (the package's plan checks, at the launch).

weft_plan.step @s arena 4096 align 256 arch "sm_90a" version 2 steps 1 streams 1 {
  weft_plan.buffer @x offset 0 size 4096 live [0, 0] "input"
  weft_plan.kernel @k image "k" entry "k" params ["tensormap"]
  // expected-error @+1 {{argument 0 (a tensor map): expects rank 1..5 with as many box extents and rank - 1 strides, got 2 dims, 2 box extents, 2 strides}}
  weft_plan.launch @k [{tensormap = @x, dtype = "bf16", dims = array<i64: 64, 32>, strides = array<i64: 128, 4096>, box = array<i64: 64, 32>, swizzle = 128 : i64}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 4096 align 256 arch "sm_90a" version 2 steps 1 streams 1 {
  weft_plan.buffer @x offset 0 size 4096 live [0, 0] "input"
  weft_plan.kernel @k image "k" entry "k" params ["tensormap"]
  // expected-error @+1 {{argument 0 (a tensor map): expects swizzle = 0, 32, 64 or 128 (bytes)}}
  weft_plan.launch @k [{tensormap = @x, dtype = "bf16", dims = array<i64: 64, 32>, strides = array<i64: 128>, box = array<i64: 64, 32>, swizzle = 96 : i64}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 4096 align 256 arch "sm_90a" version 2 steps 1 streams 1 {
  weft_plan.buffer @x offset 0 size 4096 live [0, 0] "input"
  weft_plan.kernel @k image "k" entry "k" params ["tensormap"]
  // 64 x 64 bf16 rows of 128 bytes reach byte 8192 of a 4096-byte buffer.
  // expected-error @+1 {{launch 0 argument 0: tensor map 0 over buffer 'x' reaches byte 8192 but the buffer has 4096}}
  weft_plan.launch @k [{tensormap = @x, dtype = "bf16", dims = array<i64: 64, 64>, strides = array<i64: 128>, box = array<i64: 64, 32>, swizzle = 128 : i64}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}

// -----

weft_plan.step @s arena 4096 align 256 arch "sm_90a" version 2 steps 1 streams 1 {
  weft_plan.buffer @x offset 0 size 4096 live [0, 0] "input"
  weft_plan.kernel @k image "k" entry "k" params ["ptr"]
  // expected-error @+1 {{launch 0 of 'k' argument 0 is tensormap, the kernel's parameter 0 is ptr}}
  weft_plan.launch @k [{tensormap = @x, dtype = "bf16", dims = array<i64: 64, 32>, strides = array<i64: 128>, box = array<i64: 64, 32>, swizzle = 128 : i64}] grid [1, 1, 1] block [128, 1, 1] smem 0 stream 0 at 0
}
