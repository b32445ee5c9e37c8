// The pieces of weft-tile-attention shared by its files: the attention problem
// as the nests see it, and the forward and backward nest builders.
#ifndef WEFT_LIB_TRANSFORMS_TILEATTENTION_H
#define WEFT_LIB_TRANSFORMS_TILEATTENTION_H

#include "TileMath.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"

namespace weft::tiling {

/// The discardable attribute on the outer loop of each nest:
/// {block_q = i64, block_k = i64, kind = "forward" | "backward"}.
inline constexpr llvm::StringLiteral kTileAttr = "weft.tile";

struct TileSizes {
  int64_t blockQ, blockK;
};

/// One attention (or attention_grad) op as the nests see it.
struct AttentionProblem {
  int64_t batch, qHeads, kvHeads, qLen, kLen, headDim, valueDim;
  double scale;
  bool causal;
  double dropoutP;
  int64_t rngId;
  /// Element type of q, k, v, out and the gradients.
  mlir::Type ioType;
  /// Where the tile math runs: f64 for f64 IR, else f32.
  mlir::FloatType computeType;

  int64_t group() const { return qHeads / kvHeads; }
  bool hasDropout() const { return dropoutP > 0.0; }
};

/// `weft.tile`'s value.
mlir::DictionaryAttr tileAttr(mlir::MLIRContext *context, TileSizes tiles,
                              llvm::StringRef kind);

/// Which results a forward nest produces.
struct ForwardResults {
  bool out = true;
  /// The row log-sum-exp, in `lseType` ([b, hq, sq]); none when null.
  mlir::Type lseType;
};

/// The FlashAttention-2 forward over (batch, q head, q block) with an inner
/// loop over the key blocks the q block sees. `seed` is the i64 seed (null
/// without dropout). Returns {out} or {out, lse} or {lse} as asked.
llvm::SmallVector<mlir::Value>
buildTiledForward(mlir::ImplicitLocOpBuilder &b, const AttentionProblem &problem,
                  TileSizes tiles, mlir::Value q, mlir::Value k, mlir::Value v,
                  mlir::Value seed, ForwardResults results);

/// The FlashAttention-2 backward: outer loop over key blocks (per batch and
/// kv head), inner over the q heads of the group and their query blocks; dQ
/// accumulated in the compute type. Returns {dq, dk, dv}.
llvm::SmallVector<mlir::Value>
buildTiledBackward(mlir::ImplicitLocOpBuilder &b,
                   const AttentionProblem &problem, TileSizes tiles,
                   mlir::Value dout, mlir::Value q, mlir::Value k,
                   mlir::Value v, mlir::Value out, mlir::Value lse,
                   mlir::Value seed);

/// S = scale * Q K^T of one [m, n] tile at query row q0 and key row k0, with
/// the bottom-right causal mask (key j > query i + sk - sq gets -inf) applied
/// only where the tile crosses the diagonal (an scf.if on the block offsets).
mlir::Value buildScores(TileMath &math, const AttentionProblem &problem,
                        mlir::Value qTile, mlir::Value kTile, mlir::Value q0,
                        mlir::Value k0, mlir::Value kRows);

/// The dropout factors of the [m, n] tile shaped like `like` at (q0, k0) of
/// q head `head` of batch `batch`: 1/(1-p) where the element's Philox draw
/// keeps it, else 0; the element's index is into [b, hq, sq, sk].
mlir::Value buildDropoutFactors(TileMath &math, const AttentionProblem &problem,
                                mlir::Value like, mlir::Value seed,
                                mlir::Value batch, mlir::Value head,
                                mlir::Value q0, mlir::Value k0);

} // namespace weft::tiling

#endif // WEFT_LIB_TRANSFORMS_TILEATTENTION_H
