// weft-compile --emit=kernels refuses what the GPU attention kernels do not
// implement, at the op, naming the value; every such op is reported.
// RUN: not weft-compile %s --emit=kernels -o %t 2>&1 | FileCheck %s
// Tile sizes the kernels lack: the builder's message at the op.
// RUN: not weft-compile %s --emit=kernels -o %t --block-q=48 2>&1 | FileCheck %s --check-prefix=TILE
// Nothing to emit, and no output directory.
// RUN: not weft-compile %S/../../Tools/weft-compile/Inputs/mlp.mlir --emit=kernels -o %t 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not weft-compile %s --emit=kernels 2>&1 | FileCheck %s --check-prefix=NO-DIR
// RUN: not weft-compile %s --emit=ptx -o %t 2>&1 | FileCheck %s --check-prefix=EMIT
// None of the failures leaves an output directory behind.
// RUN: not test -e %t

// TILE: error: the GPU attention kernels need block_q in {32, 64, 128} (16 rows per warp, 2..8 warps), got 48
// NONE: error: no weft.attention or weft.attention_grad op to emit kernels for
// NO-DIR: error: --emit=kernels writes several files: give the directory with -o DIR
// EMIT: error: --emit=ptx is not one of step, kernels, gpu-binary

func.func @f32(%q: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  // CHECK: emit-kernels-errors.mlir:[[@LINE+1]]:8: error: the GPU attention kernels take bf16 or f16 tensors, got 'f32' for q
  %o = weft.attention %q, %q, %q : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  return %o : tensor<1x2x64x64xf32>
}

func.func @dropout_head_block(%q: tensor<1x2x64x64xbf16>, %seed: tensor<i64>, %offset: index) -> tensor<1x2x64x64xbf16> {
  // CHECK: emit-kernels-errors.mlir:[[@LINE+1]]:8: error: the GPU attention kernels with dropout (dropout_p = 0.1) draw the mask of a whole attention; this op is a block of its 4 heads at a run-time head offset, which they do not take
  %o = weft.attention %q, %q, %q, %seed, %offset {dropout_p = 0.1 : f64, dropout_heads = 4 : i64, weft.rng_id = 1 : i64} : (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<i64>, index) -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

func.func @head_dim_96(%q: tensor<1x2x64x96xf16>) -> tensor<1x2x64x96xf16> {
  // CHECK: emit-kernels-errors.mlir:[[@LINE+1]]:8: error: the GPU attention kernels support head_dim 64, 128 and 256, got 96
  %o = weft.attention %q, %q, %q : (tensor<1x2x64x96xf16>, tensor<1x2x64x96xf16>, tensor<1x2x64x96xf16>) -> tensor<1x2x64x96xf16>
  return %o : tensor<1x2x64x96xf16>
}

func.func @value_dim(%q: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x128xbf16>) -> tensor<1x2x64x128xbf16> {
  // CHECK: emit-kernels-errors.mlir:[[@LINE+1]]:8: error: the GPU attention kernels need the value dim to equal head_dim, got q 64 and v 128
  %o = weft.attention %q, %q, %v : (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x128xbf16>) -> tensor<1x2x64x128xbf16>
  return %o : tensor<1x2x64x128xbf16>
}

func.func @grad_f32(%do: tensor<1x2x16x64xf32>, %q: tensor<1x2x16x64xf32>, %lse: tensor<1x2x16xf32>) -> tensor<1x2x16x64xf32> {
  // CHECK: emit-kernels-errors.mlir:[[@LINE+1]]:19: error: the GPU attention kernels take bf16 or f16 tensors, got 'f32' for q
  %dq, %dk, %dv = weft.attention_grad %do, %q, %q, %q, %q, %lse : (tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16xf32>) -> (tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>)
  return %dq : tensor<1x2x16x64xf32>
}

// Causal with q_len != k_len is bottom-right aligned (weft.attention's
// definition); the training kernels mask top-left, and 32 query rows are too
// many for the decode kernels.
func.func @causal_decode(%q: tensor<1x4x32x64xbf16>, %k: tensor<1x2x256x64xbf16>) -> tensor<1x4x32x64xbf16> {
  // CHECK: emit-kernels-errors.mlir:[[@LINE+1]]:8: error: the GPU attention kernels implement causal with equal q and k lengths only, got q_len 32 and k_len 256 (weft.attention's causal is bottom-right aligned, these kernels' top-left; the decode kernels take q_len <= 16 over k_len >= 256)
  %o = weft.attention %q, %k, %k {causal} : (tensor<1x4x32x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> tensor<1x4x32x64xbf16>
  return %o : tensor<1x4x32x64xbf16>
}

// A valid op next to the invalid ones: still only the errors, no files.
func.func @fine(%q: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = weft.attention %q, %q, %q : (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}
