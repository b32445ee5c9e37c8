// weft-fuse-attention's rewrite: the unfused softmax(Q K^T) V chain (GQA by
// repeated kv heads included) becomes one weft.attention.
#ifndef WEFT_TRANSFORMS_FUSEATTENTION_H
#define WEFT_TRANSFORMS_FUSEATTENTION_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Types.h"

#include <cstdint>
#include <optional>

namespace weft {

/// Adds the pattern that replaces
///   matmul(Q, K^T) -> [scale] -> [causal_mask (fill -inf)] -> softmax(last)
///   -> [dropout] -> matmul(P, V)
/// on [b, h, s, d] operands by weft.attention, rooted at the P V matmul. K^T
/// is `transpose_b` or a weft.transpose of K's last two dims. K and V built
/// by repeating each of hkv heads hq/hkv times consecutively (reshape and
/// concat, as torch's repeat_interleave) become the fused op's kv operands
/// (GQA, MQA). Intermediates of the chain must have no other users.
void populateFuseAttentionPatterns(mlir::RewritePatternSet &patterns);

/// The `scale` attribute weft.attention needs to multiply its scores by
/// `factor` (weft.scale's f64 value) on operands of `elementType` with
/// `headDim`:
/// - `factor` exactly representable in f32: that f32 (exact);
/// - else within one f64 ulp of 1/sqrt(headDim): no attribute, the op's
///   default (a relative difference of at most 2^-52, far below the 1e-12
///   the reference comparison of f64 IR allows);
/// - else, for f32/f16/bf16 operands, `factor` rounded to f32 (a relative
///   change of at most 2^-24, no more than the rounding of the scores that
///   the unfused chain already stores in that type);
/// - else (f64 operands) no attribute reproduces it: failure, not fused.
/// A factor of 0 or a non-finite one (weft.attention rejects them) fails.
mlir::FailureOr<std::optional<float>>
fusedAttentionScale(double factor, int64_t headDim, mlir::Type elementType);

} // namespace weft

#endif // WEFT_TRANSFORMS_FUSEATTENTION_H
