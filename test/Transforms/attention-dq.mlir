// weft-attention-dq sets or clears atomic_dq on every attention_grad; the
// op's workspace then holds the f32 dQ accumulator after delta.
// RUN: weft-opt %s --weft-attention-dq="mode=atomic" | FileCheck %s --check-prefix=ATOMIC
// RUN: weft-opt %s --weft-attention-dq="mode=atomic" | weft-opt --weft-attention-dq="mode=deterministic" | FileCheck %s --check-prefix=DET
// RUN: not weft-opt %s --weft-attention-dq="mode=sometimes" 2>&1 | FileCheck %s --check-prefix=ERR
// ATOMIC: weft.attention_grad {{.*}} {atomic_dq, causal}
// DET: weft.attention_grad
// DET-NOT: atomic_dq
// ERR: error: weft-attention-dq: mode must be deterministic or atomic, got 'sometimes'
func.func @grad(%q: tensor<1x4x256x128xbf16>, %k: tensor<1x2x256x128xbf16>, %v: tensor<1x2x256x128xbf16>, %dout: tensor<1x4x256x128xbf16>, %out: tensor<1x4x256x128xbf16>, %lse: tensor<1x4x256xf32>) -> tensor<1x4x256x128xbf16> {
  %dq, %dk, %dv = weft.attention_grad %dout, %q, %k, %v, %out, %lse {causal} : (tensor<1x4x256x128xbf16>, tensor<1x4x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x4x256x128xbf16>, tensor<1x4x256xf32>) -> (tensor<1x4x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>)
  return %dq : tensor<1x4x256x128xbf16>
}
