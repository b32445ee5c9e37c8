// RUN: weft-opt %s --split-input-file --verify-diagnostics

// A GELU GEMM group must be what one cuBLASLt GELU epilogue computes: an
// exact gelu is not.
func.func @erf(%x: tensor<4x32xbf16>, %w: tensor<64x32xbf16>) -> tensor<4x64xbf16> {
  // expected-error @+1 {{is not a GELU GEMM group (a linear and its tanh gelu, or dY W and its tanh gelu_grad): the gelu is exact (approximate = "none"); cuBLASLt's GELU epilogue is the tanh approximation}}
  %r = weft.fused %x, %w {kind = "linear+gelu"} : (tensor<4x32xbf16>, tensor<64x32xbf16>) -> tensor<4x64xbf16> {
  ^bb0(%a: tensor<4x32xbf16>, %b: tensor<64x32xbf16>):
    %u = weft.linear %a, %b : (tensor<4x32xbf16>, tensor<64x32xbf16>) -> tensor<4x64xbf16>
    %g = weft.gelu %u : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
    weft.yield %g : tensor<4x64xbf16>
  }
  return %r : tensor<4x64xbf16>
}

// -----

// The aux matrix (u yielded) needs rows of a multiple of 8 elements.
func.func @aux_ld(%x: tensor<4x32xbf16>, %w: tensor<36x32xbf16>) -> (tensor<4x36xbf16>, tensor<4x36xbf16>) {
  // expected-error @+1 {{the pre-activation has 36 columns; cuBLASLt's GELU aux leading dimension must be a multiple of 8}}
  %r:2 = weft.fused %x, %w {kind = "linear+gelu"} : (tensor<4x32xbf16>, tensor<36x32xbf16>) -> (tensor<4x36xbf16>, tensor<4x36xbf16>) {
  ^bb0(%a: tensor<4x32xbf16>, %b: tensor<36x32xbf16>):
    %u = weft.linear %a, %b : (tensor<4x32xbf16>, tensor<36x32xbf16>) -> tensor<4x36xbf16>
    %g = weft.gelu %u {approximate = "tanh"} : (tensor<4x36xbf16>) -> tensor<4x36xbf16>
    weft.yield %g, %u : tensor<4x36xbf16>, tensor<4x36xbf16>
  }
  return %r#0, %r#1 : tensor<4x36xbf16>, tensor<4x36xbf16>
}

// -----

// The backward group never yields dg: it exists only in the accumulator.
func.func @yields_dg(%dz: tensor<4x16xbf16>, %w: tensor<16x64xbf16>, %u: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  // expected-error @+1 {{the body does not yield the gelu_grad's result alone}}
  %r = weft.fused %dz, %w, %u {kind = "matmul+gelu_grad"} : (tensor<4x16xbf16>, tensor<16x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  ^bb0(%a: tensor<4x16xbf16>, %b: tensor<16x64xbf16>, %c: tensor<4x64xbf16>):
    %dg = weft.matmul %a, %b : (tensor<4x16xbf16>, tensor<16x64xbf16>) -> tensor<4x64xbf16>
    %du = weft.gelu_grad %dg, %c {approximate = "tanh"} : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
    weft.yield %dg : tensor<4x64xbf16>
  }
  return %r : tensor<4x64xbf16>
}

// -----

// f32 has no cuBLASLt GELU epilogue here (bf16 or f16 only).
func.func @f32(%dz: tensor<4x16xf32>, %w: tensor<16x64xf32>, %u: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{the element type is f32; the cuBLASLt GELU epilogues take bf16 or f16}}
  %r = weft.fused %dz, %w, %u {kind = "matmul+gelu_grad"} : (tensor<4x16xf32>, tensor<16x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x16xf32>, %b: tensor<16x64xf32>, %c: tensor<4x64xf32>):
    %dg = weft.matmul %a, %b : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
    %du = weft.gelu_grad %dg, %c {approximate = "tanh"} : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
    weft.yield %du : tensor<4x64xf32>
  }
  return %r : tensor<4x64xf32>
}

// -----

// A well-formed group under the other kind's name is refused (the planner
// picks the epilogue by kind).
func.func @wrong_kind(%dz: tensor<4x16xbf16>, %w: tensor<16x64xbf16>, %u: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  // expected-error @+1 {{is a GELU GEMM group but has kind 'linear+gelu', expected 'matmul+gelu_grad'}}
  %r = weft.fused %dz, %w, %u {kind = "linear+gelu"} : (tensor<4x16xbf16>, tensor<16x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  ^bb0(%a: tensor<4x16xbf16>, %b: tensor<16x64xbf16>, %c: tensor<4x64xbf16>):
    %dg = weft.matmul %a, %b : (tensor<4x16xbf16>, tensor<16x64xbf16>) -> tensor<4x64xbf16>
    %du = weft.gelu_grad %dg, %c {approximate = "tanh"} : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x64xbf16>
    weft.yield %du : tensor<4x64xbf16>
  }
  return %r : tensor<4x64xbf16>
}
