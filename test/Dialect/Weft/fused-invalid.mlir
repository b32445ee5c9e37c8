// RUN: weft-opt %s --split-input-file --verify-diagnostics
// Every verifier message of weft.fused (WeftFused.cpp).

func.func @empty_kind(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'weft.fused' op expects a non-empty 'kind'}}
  %y = weft.fused %x {kind = ""} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %g = weft.gelu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    weft.yield %g : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

func.func @argument_count(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expects one body argument per input (1), got 2}}
  %y = weft.fused %x {kind = "gelu"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>):
    %g = weft.gelu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    weft.yield %g : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

func.func @argument_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expects body argument #0 to have the type of input #0 ('tensor<4x8xf32>'), got 'tensor<4x8xbf16>'}}
  %y = weft.fused %x {kind = "gelu"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xbf16>):
    %g = weft.convert %a : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    weft.yield %g : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

func.func @yield_count(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expects weft.yield to return one value per result (1), got 2}}
  %y = weft.fused %x {kind = "gelu"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %g = weft.gelu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    weft.yield %g, %g : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

func.func @yield_type(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{expects yielded value #0 to have the type of result #0 ('tensor<4x8xbf16>'), got 'tensor<4x8xf32>'}}
  %y = weft.fused %x {kind = "gelu"} : (tensor<4x8xf32>) -> tensor<4x8xbf16> {
  ^bb0(%a: tensor<4x8xf32>):
    %g = weft.gelu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    weft.yield %g : tensor<4x8xf32>
  }
  return %y : tensor<4x8xbf16>
}

// -----

func.func @not_fusible(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %y = weft.fused %x, %w {kind = "matmul"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>):
    // expected-error @+1 {{'weft.matmul' op cannot be fused: a weft.fused body holds only pointwise}}
    %m = weft.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    weft.yield %m : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

func.func @two_domains(%x: tensor<4x8xf32>, %z: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = weft.fused %x, %z {kind = "gelu+gelu"} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>):
    %g = weft.gelu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{'weft.gelu' op iterates over [2, 8], but 'weft.gelu' in the same weft.fused group iterates over [4, 8]}}
    %h = weft.gelu %b : (tensor<2x8xf32>) -> tensor<2x8xf32>
    weft.yield %h : tensor<2x8xf32>
  }
  return %y : tensor<2x8xf32>
}

// -----

func.func @empty_body(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expects at least one op in its body}}
  %y = weft.fused %x {kind = "none"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    weft.yield %a : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

func.func @yield_outside(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.yield' op expects parent op 'weft.fused'}}
  weft.yield %x : tensor<4x8xf32>
}

// -----

// Regression: a layer-norm-gradient group's column-sum scratch is asked for
// by weft.workspace_offset's verifier before the op's own verifier refuses
// its 2^79 elements; its row count wrapped int64 (UBSan). Over 2^48 elements
// it has no workspace.
func.func @huge_column_sum_scratch(%dy: tensor<4294967296x140737488355329x128xbf16>, %g: tensor<128xbf16>) {
  // expected-error @+1 {{'weft.fused' op has 'weft.workspace_offset' but no workspace}}
  %0:3 = weft.fused %dy, %dy, %g, %dy {kind = "layer_norm_grad+add", weft.workspace_offset = 0 : i64} : (tensor<4294967296x140737488355329x128xbf16>, tensor<4294967296x140737488355329x128xbf16>, tensor<128xbf16>, tensor<4294967296x140737488355329x128xbf16>) -> (tensor<128xbf16>, tensor<128xbf16>, tensor<4294967296x140737488355329x128xbf16>) {
  ^bb0(%a: tensor<4294967296x140737488355329x128xbf16>, %b: tensor<4294967296x140737488355329x128xbf16>, %c: tensor<128xbf16>, %d: tensor<4294967296x140737488355329x128xbf16>):
    %dx, %dgamma, %dbeta = weft.layer_norm_grad %a, %b, %c : (tensor<4294967296x140737488355329x128xbf16>, tensor<4294967296x140737488355329x128xbf16>, tensor<128xbf16>) -> (tensor<4294967296x140737488355329x128xbf16>, tensor<128xbf16>, tensor<128xbf16>)
    %s = weft.add %d, %dx : (tensor<4294967296x140737488355329x128xbf16>, tensor<4294967296x140737488355329x128xbf16>) -> tensor<4294967296x140737488355329x128xbf16>
    weft.yield %dgamma, %dbeta, %s : tensor<128xbf16>, tensor<128xbf16>, tensor<4294967296x140737488355329x128xbf16>
  }
  return
}
