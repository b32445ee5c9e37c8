// weft-emit-attention-kernels layout options: the suffix names the layout
// (head_major keeps today's names) and packed tensors without seq_major are
// refused with the values.
// RUN: weft-opt %s --weft-emit-attention-kernels="head-dim=64 layout=seq_major" | FileCheck %s --check-prefix=SM
// RUN: weft-opt %s --weft-emit-attention-kernels="head-dim=64 backward=true layout=seq_major packed-qkv=true packed-grads=true" | FileCheck %s --check-prefix=PACKED
// RUN: weft-opt %s --weft-emit-attention-kernels="head-dim=64" | FileCheck %s --check-prefix=HM
// RUN: not weft-opt %s --weft-emit-attention-kernels="head-dim=64 packed-qkv=true" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not weft-opt %s --weft-emit-attention-kernels="head-dim=64 backward=true packed-grads=true" 2>&1 | FileCheck %s --check-prefix=ERR-GRAD
// RUN: not weft-opt %s --weft-emit-attention-kernels="head-dim=64 layout=bshd" 2>&1 | FileCheck %s --check-prefix=ERR-NAME

// SM: gpu.func @weft_attn_forward_bf16_d64_full_q64_k64_sm(
// PACKED: gpu.func @weft_attn_backward_dkdv_bf16_d64_full_q64_k64_sm_pqkv_pgrad(
// HM: gpu.func @weft_attn_forward_bf16_d64_full_q64_k64(
// ERR: packed attention tensors (packedQkv = true, packedGrads = false) need the seq_major layout, got head_major
// ERR-GRAD: packed attention tensors (packedQkv = false, packedGrads = true) need the seq_major layout, got head_major
// ERR-NAME: layout must be head_major or seq_major, got 'bshd'
module {}
