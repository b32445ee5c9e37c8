// The decode kernels' key block at head_dim 64: 16384 / 64 = 256 keys where
// the warps split each block's keys (16 or 32 rows), the smaller 128 where a
// warp holds a whole block's scores (64 or 128 rows; 256 spilled 112-144
// bytes); --block-k 256 with 64 rows is refused.
// REQUIRES: ptxas
// RUN: rm -rf %t && weft-compile %s --emit=kernels -o %t
// RUN: FileCheck %s --check-prefix=WIDE < %t/narrow_attention_0.json
// RUN: FileCheck %s --check-prefix=NARROW < %t/narrow_attention_1.json
// RUN: not weft-compile %s --emit=kernels --block-k 256 -o %t2 2>&1 | FileCheck %s --check-prefix=REFUSED

// WIDE: "name": "weft_attn_decode_split_bf16_d64_full_k256_dec16_s3",
// WIDE: "spill_store_bytes": 0,
// NARROW: "name": "weft_attn_decode_split_bf16_d64_full_k128_dec64_s3",
// NARROW: "spill_store_bytes": 0,
// REFUSED: emit-kernels-decode-narrow.mlir:[[@LINE+6]]:14: error: the decode split kernel's warps would score 256 keys of each 256-key block at head_dim 64 with 64 query rows, more than the 128 their registers hold

func.func @narrow(%q: tensor<1x32x1x64xbf16>, %q8: tensor<1x32x8x64xbf16>,
                  %k: tensor<1x4x4096x64xbf16>)
    -> (tensor<1x32x1x64xbf16>, tensor<1x32x8x64xbf16>) {
  %o, %l = weft.attention %q, %k, %k : (tensor<1x32x1x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>) -> (tensor<1x32x1x64xbf16>, tensor<1x32x1xf32>)
  %o8, %l8 = weft.attention %q8, %k, %k : (tensor<1x32x8x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>) -> (tensor<1x32x8x64xbf16>, tensor<1x32x8xf32>)
  return %o, %o8 : tensor<1x32x1x64xbf16>, tensor<1x32x8x64xbf16>
}
