// RUN: weft-opt %s --split-input-file --weft-plan-memory --weft-build-plan --verify-diagnostics

func.func @f32_attention(%q: tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32> {
  // expected-error @+1 {{cannot plan weft.attention: the GPU attention kernels take bf16 or f16, got 'f32'}}
  %o, %lse = weft.attention %q, %q, %q : (tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>) -> (tensor<1x2x16x64xf32>, tensor<1x2x16xf32>)
  return %o : tensor<1x2x16x64xf32>
}

// -----

func.func @head_dim(%q: tensor<1x2x16x32xbf16>) -> tensor<1x2x16x32xbf16> {
  // expected-error @+1 {{cannot plan weft.attention: the GPU attention kernels support head_dim 64, 128 and 256, got 32}}
  %o, %lse = weft.attention %q, %q, %q : (tensor<1x2x16x32xbf16>, tensor<1x2x16x32xbf16>, tensor<1x2x16x32xbf16>) -> (tensor<1x2x16x32xbf16>, tensor<1x2x16xf32>)
  return %o : tensor<1x2x16x32xbf16>
}

// -----

func.func @no_lse(%q: tensor<1x2x16x64xbf16>) -> tensor<1x2x16x64xbf16> {
  // expected-error @+1 {{cannot plan weft.attention without its lse result}}
  %o = weft.attention %q, %q, %q : (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>) -> tensor<1x2x16x64xbf16>
  return %o : tensor<1x2x16x64xbf16>
}

// -----

// A constant other than a float splat lives in a kernel image: at most 1 MiB.
func.func @dense_too_large(%x: tensor<262145xi64>) -> tensor<262145xi64> {
  // expected-error @+1 {{cannot plan arith.constant of 'tensor<262145xi64>': a constant of 262145 elements of 8 bytes: the kernel image holds at most 1048576 bytes}}
  %c = arith.constant dense<1> : tensor<262145xi64>
  return %c : tensor<262145xi64>
}

// -----

func.func @f32_linear(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{cannot plan weft.linear as a cuBLASLt GEMM: operands must be bf16 or f16 (accumulated in f32), got 'f32'; build the model in bf16 (f32 master weights stay f32)}}
  %y = weft.linear %x, %w : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @f64_matmul(%a: tensor<8x32xf64>, %b: tensor<32x16xf64>) -> tensor<8x16xf64> {
  // expected-error @+1 {{cannot plan weft.matmul as a cuBLASLt GEMM: operands must be bf16 or f16 (accumulated in f32), got 'f64'}}
  %c = weft.matmul %a, %b : (tensor<8x32xf64>, tensor<32x16xf64>) -> tensor<8x16xf64>
  return %c : tensor<8x16xf64>
}

// -----

func.func @causal_decode(%q: tensor<1x4x2x64xbf16>, %k: tensor<1x2x16x64xbf16>) -> tensor<1x4x2x64xbf16> {
  // expected-error @+1 {{cannot plan weft.attention: the training attention kernels implement causal with equal q and k lengths only, got q 'tensor<1x4x2x64xbf16>' and k 'tensor<1x2x16x64xbf16>' (weft.attention's causal is bottom-right aligned)}}
  %o, %lse = weft.attention %q, %k, %k {causal} : (tensor<1x4x2x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>) -> (tensor<1x4x2x64xbf16>, tensor<1x4x2xf32>)
  return %o : tensor<1x4x2x64xbf16>
}

// -----

// A shard's offset must be a launch immediate: constants and the grid
// position, not a function argument.
func.func @offset_argument(%ids: tensor<4xi64>, %table: tensor<8x64xbf16>, %off: index) -> tensor<4x64xbf16> {
  // expected-error @+1 {{cannot plan weft.embedding: its index operand is not a launch immediate: it is a block argument, not computed from the grid position}}
  %y = weft.embedding %ids, %table, %off : (tensor<4xi64>, tensor<8x64xbf16>, index) -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}

// -----

shard.grid @grid2(shape = 2x2)

// Two grid positions multiplied: not base + position x scale.
func.func @offset_product(%ids: tensor<4xi64>, %table: tensor<8x64xbf16>) -> tensor<4x64xbf16> {
  %i, %j = shard.process_multi_index on @grid2 axes = [0, 1] : index, index
  %off = arith.muli %i, %j : index
  // expected-error @+1 {{cannot plan weft.embedding: its index operand is not a launch immediate: it multiplies two grid positions}}
  %y = weft.embedding %ids, %table, %off : (tensor<4xi64>, tensor<8x64xbf16>, index) -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}
