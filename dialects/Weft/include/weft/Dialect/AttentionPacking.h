// Packed attention operands: when a step splits the qkv linear's output
// [b, s, (hq + 2 hk) d] into q, k and v only for seq-major attention ops, and
// concatenates their dq, dk, dv only into the gradient of that output, the
// GPU kernels read and write the packed tensors with strides (layout
// SeqMajor, packedQkv / packedGrads), so the split and the concat are views
// that run nothing. Liveness gives them one buffer; weft-build-plan's
// schedule skips them and tells the kernels.
#ifndef WEFT_DIALECT_ATTENTIONPACKING_H
#define WEFT_DIALECT_ATTENTIONPACKING_H

#include "weft/Dialect/WeftDialect.h"

#include <optional>

namespace weft {

/// How q, k and v sit in the packed [b, s, (hq + 2 hk) d] tensor, in head
/// columns of d elements (g = hq / hk):
///   Blocked: q's heads, then k's, then v's ([b, s, 3, h, d] at g = 1: a
///     [b, s, C] tensor split along its last dim);
///   Grouped: per kv head j, its g q heads, then k, then v (Megatron-LM's
///     [b, s, hk, g + 2, d], split along dim 3 with sizes (g, 1, 1)).
enum class QkvPacking { Blocked, Grouped };

/// The packing of `split` when it cuts q, k and v out of a packed tensor
/// (either form above) and each piece's users are reshapes to [b, s, h, d]
/// read only as the q (piece 0), k (1) or v (2) of seq-major weft.attention
/// / weft.attention_grad ops whose q, k and v all come from this split;
/// nullopt otherwise.
std::optional<QkvPacking> packedQkvSplit(SplitOp split);

/// The packing of the split the q, k and v of a seq-major attention or
/// attention_grad come from; nullopt when they do not come from one.
std::optional<QkvPacking> packedQkvOf(mlir::Operation *attention);

/// The concat of a seq-major attention_grad's dq, dk and dv (each read only
/// by a reshape, each reshape only by the concat, in that order) into the
/// packed gradient of either form, when its packing agrees with the q, k, v
/// operands' (if those are packed); null otherwise.
ConcatOp packedGradsTarget(AttentionGradOp grad);
/// packedGradsTarget's packing.
std::optional<QkvPacking> packedGradsOf(AttentionGradOp grad);

/// Whether `concat` is packedGradsTarget of the attention_grad it reads.
bool isPackedGradConcat(ConcatOp concat);

} // namespace weft

#endif // WEFT_DIALECT_ATTENTIONPACKING_H
