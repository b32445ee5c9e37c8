// weft-fuse-attention: replaces the unfused attention chain
// matmul(Q, K^T) -> scale -> causal_mask -> softmax -> dropout -> matmul(P, V)
// by weft.attention, GQA/MQA by repeated kv heads included.
//
// Only chains whose fused form computes the same values are rewritten:
// - the mask is top-left causal with fill -inf in both forms, so masked
//   probabilities are exactly 0 either way; weft.attention's causal is
//   bottom-right, the same mask only when q and k lengths are equal;
// - dropout acts on the [b, hq, sq, sk] probabilities with the same seed,
//   weft.rng_id and row-major element index in both (the dropout op's global
//   index and attention's ((b*hq + h)*sq + i)*sk + j are the same number), so
//   the Philox masks are equal bit for bit;
// - the scale follows fusedAttentionScale (FuseAttention.h): exact for f64
//   IR, or within the rounding the low-precision chain already carries;
// - kv heads are folded into GQA only when the repetition is proven to be
//   repeat_interleave's order, which is weft.attention's q-head -> kv-head rule.
#include "weft/Transforms/FuseAttention.h"

#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/Passes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/DebugLog.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

#define DEBUG_TYPE "weft-fuse-attention"

namespace weft {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

//===----------------------------------------------------------------------===//
// The scale rule
//===----------------------------------------------------------------------===//

FailureOr<std::optional<float>>
weft::fusedAttentionScale(double factor, int64_t headDim, Type elementType) {
  if (!std::isfinite(factor) || factor == 0.0)
    return failure();
  float single = static_cast<float>(factor);
  if (static_cast<double>(single) == factor)
    return std::optional<float>(single);
  if (headDim > 0) {
    // weft.attention's default, computed as AttentionOp::getScaleValue does.
    double byDefault = 1.0 / std::sqrt(static_cast<double>(headDim));
    if (factor == byDefault || factor == std::nextafter(byDefault, 0.0) ||
        factor == std::nextafter(byDefault, 1.0))
      return std::optional<float>();
  }
  if (!elementType.isF64() && std::isfinite(single) && single != 0.0f)
    return std::optional<float>(single);
  return failure();
}

namespace {

//===----------------------------------------------------------------------===//
// Repeated kv heads
//===----------------------------------------------------------------------===//

/// Where the heads of a value `[b, heads..., s, d]` come from: flattened head
/// `i` of the value is head `sourceHead[i]` of `source` (`[b, hkv, s, d]`).
struct HeadOrigin {
  Value source;
  SmallVector<int64_t> sourceHead;
};

/// Reshapes and concats deeper than this are not followed.
constexpr int kMaxTraceDepth = 16;
/// Values with more (flattened) heads than this are not traced.
constexpr int64_t kMaxTracedHeads = int64_t(1) << 16;

/// The product of the dims between the batch dim and the last two.
int64_t flatHeads(RankedTensorType type) {
  int64_t heads = 1;
  for (int64_t dim : type.getShape().drop_front().drop_back(2))
    heads *= dim;
  return heads;
}

/// Both `[b, ..., s, d]` with the same b, s and d: a row-major reshape between
/// them only regroups the head dims and keeps the flattened head index.
bool sameBatchAndRows(RankedTensorType a, RankedTensorType b) {
  return a.getRank() >= 3 && b.getRank() >= 3 &&
         a.getDimSize(0) == b.getDimSize(0) &&
         a.getShape().take_back(2) == b.getShape().take_back(2);
}

/// Follows reshapes that regroup head dims and concats along a head dim back
/// to one rank-4 source. Fails when the heads come from several values (then
/// the value is a genuine [b, h, s, d] operand, not a repetition) or from a
/// value that is not rank 4.
std::optional<HeadOrigin> traceHeads(Value value, int depth) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() < 3 || depth > kMaxTraceDepth ||
      flatHeads(type) > kMaxTracedHeads)
    return std::nullopt;
  if (auto reshape = value.getDefiningOp<ReshapeOp>()) {
    if (sameBatchAndRows(type, reshape.getX().getType()))
      return traceHeads(reshape.getX(), depth + 1);
  }
  if (auto concat = value.getDefiningOp<ConcatOp>()) {
    int64_t rank = type.getRank();
    // I64Attr's getter is unsigned: read it back as the signed dim it is.
    int64_t dim = static_cast<int64_t>(concat.getDim());
    if (dim < 0)
      dim += rank;
    if (dim >= 1 && dim <= rank - 3) {
      // Flattened head index = (outer * extent + position) * inner + rest,
      // with `position` along the concat dim.
      ArrayRef<int64_t> shape = type.getShape();
      int64_t outer = 1, inner = 1;
      for (int64_t i = 1; i < dim; ++i)
        outer *= shape[i];
      for (int64_t i = dim + 1; i < rank - 2; ++i)
        inner *= shape[i];
      HeadOrigin origin;
      origin.sourceHead.assign(flatHeads(type), -1);
      int64_t offset = 0;
      for (Value piece : concat.getPieces()) {
        std::optional<HeadOrigin> pieceOrigin = traceHeads(piece, depth + 1);
        if (!pieceOrigin || (origin.source && pieceOrigin->source != origin.source))
          return std::nullopt;
        origin.source = pieceOrigin->source;
        int64_t extent = cast<RankedTensorType>(piece.getType()).getDimSize(dim);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t t = 0; t < extent; ++t)
            for (int64_t r = 0; r < inner; ++r)
              origin.sourceHead[(o * shape[dim] + offset + t) * inner + r] =
                  pieceOrigin->sourceHead[(o * extent + t) * inner + r];
        offset += extent;
      }
      if (origin.source)
        return origin;
    }
  }
  if (type.getRank() != 4)
    return std::nullopt;
  HeadOrigin origin{value, {}};
  for (int64_t head = 0; head < type.getDimSize(1); ++head)
    origin.sourceHead.push_back(head);
  return origin;
}

/// What weft.attention reads for the chain's K or V operand (`[b, hq, s, d]`).
struct KvOperand {
  /// The source of a repeat_interleave repetition, or the operand itself.
  Value value;
  /// The operand repeats one value's heads in another order: the chain must
  /// stay unfused (see the pass description).
  bool otherRepetition = false;
};

KvOperand resolveKvOperand(Value operand) {
  std::optional<HeadOrigin> origin = traceHeads(operand, 0);
  if (!origin || origin->source == operand)
    return {operand};
  int64_t qHeads = cast<RankedTensorType>(operand.getType()).getDimSize(1);
  int64_t kvHeads = cast<RankedTensorType>(origin->source.getType()).getDimSize(1);
  if (kvHeads > 0 && qHeads % kvHeads == 0 &&
      int64_t(origin->sourceHead.size()) == qHeads) {
    int64_t group = qHeads / kvHeads;
    bool interleaved = true;
    for (int64_t head = 0; head < qHeads; ++head)
      interleaved &= origin->sourceHead[head] == head / group;
    if (interleaved)
      return {origin->source};
  }
  return {operand, /*otherRepetition=*/true};
}

std::string headMapString(Value operand) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (std::optional<HeadOrigin> origin = traceHeads(operand, 0)) {
    os << "[";
    llvm::interleaveComma(origin->sourceHead, os);
    os << "]";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// The chain
//===----------------------------------------------------------------------===//

bool isRank4(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank() == 4;
}

/// The pattern, rooted at the P V matmul; walks the chain backwards.
struct FuseAttentionChain : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rewriter) const override {
    if (pv.getTransposeA() || pv.getTransposeB())
      return rewriter.notifyMatchFailure(pv, "P V matmul with a transpose");
    if (!isRank4(pv.getA()) || !isRank4(pv.getB()))
      return rewriter.notifyMatchFailure(pv, "P V operands are not rank 4");
    // Each intermediate feeds only the next op of the chain.
    auto singleUse = [&](Value value) { return value.hasOneUse(); };

    Value probs = pv.getA();
    auto dropout = probs.getDefiningOp<DropoutOp>();
    if (dropout) {
      if (!singleUse(probs))
        return rewriter.notifyMatchFailure(pv, "dropped probabilities have other users");
      probs = dropout.getX();
    }
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax)
      return rewriter.notifyMatchFailure(pv, "P is not a softmax (after an optional dropout)");
    if (!singleUse(probs))
      return rewriter.notifyMatchFailure(pv, "probabilities have other users");
    int64_t softmaxDim = static_cast<int64_t>(softmax.getDim());
    if (softmaxDim != -1 && softmaxDim != 3)
      return rewriter.notifyMatchFailure(pv, [&](Diagnostic &diag) {
        diag << "softmax over dim " << softmaxDim << ", not the last (3)";
      });

    Value scores = softmax.getX();
    bool causal = false;
    if (auto mask = scores.getDefiningOp<CausalMaskOp>()) {
      if (!singleUse(scores))
        return rewriter.notifyMatchFailure(pv, "masked scores have other users");
      double fill = mask.getFillValue();
      if (!(std::isinf(fill) && fill < 0))
        return rewriter.notifyMatchFailure(pv, [&](Diagnostic &diag) {
          diag << "causal_mask fills with " << fill << ", not -inf";
        });
      ArrayRef<int64_t> maskShape = cast<RankedTensorType>(scores.getType()).getShape();
      if (maskShape.size() == 4 && maskShape[2] != maskShape[3])
        return rewriter.notifyMatchFailure(pv, [&](Diagnostic &diag) {
          diag << "causal_mask is top-left over " << scores.getType()
               << "; weft.attention's causal is bottom-right (equal only when "
                  "q and k lengths are equal)";
        });
      causal = true;
      scores = mask.getX();
    }
    double factor = 1.0;
    if (auto scale = scores.getDefiningOp<ScaleOp>()) {
      if (!singleUse(scores))
        return rewriter.notifyMatchFailure(pv, "scaled scores have other users");
      factor = scale.getValue().convertToDouble();
      scores = scale.getX();
    }

    auto qk = scores.getDefiningOp<MatmulOp>();
    if (!qk || qk.getTransposeA())
      return rewriter.notifyMatchFailure(pv, "scores are not matmul(Q, K^T)");
    if (!singleUse(scores))
      return rewriter.notifyMatchFailure(pv, "raw scores have other users");
    Value q = qk.getA(), k = qk.getB();
    if (!qk.getTransposeB()) {
      // K^T written as a transpose of K's last two dims.
      auto kT = k.getDefiningOp<TransposeOp>();
      if (!kT || !llvm::equal(kT.getPerm(), ArrayRef<int64_t>{0, 1, 3, 2}))
        return rewriter.notifyMatchFailure(pv, "scores are not matmul(Q, K^T)");
      k = kT.getX();
    }
    Value v = pv.getB();
    if (!isRank4(q) || !isRank4(k))
      return rewriter.notifyMatchFailure(pv, "Q or K is not rank 4");

    Type elementType = cast<RankedTensorType>(q.getType()).getElementType();
    for (Value value : SmallVector<Value>{k, v, scores, probs, pv.getA(), pv.getC()})
      if (cast<RankedTensorType>(value.getType()).getElementType() != elementType)
        return rewriter.notifyMatchFailure(pv, [&](Diagnostic &diag) {
          diag << "element type of " << value.getType() << " differs from Q's "
               << elementType;
        });

    int64_t headDim = cast<RankedTensorType>(q.getType()).getDimSize(3);
    FailureOr<std::optional<float>> scaleAttr =
        fusedAttentionScale(factor, headDim, elementType);
    if (failed(scaleAttr))
      return rewriter.notifyMatchFailure(pv, [&](Diagnostic &diag) {
        diag << "scale " << llvm::formatv("{0:e16}", factor).str()
             << " is neither an f32 value nor 1/sqrt(" << headDim
             << ") on " << elementType << " operands";
      });

    KvOperand kOperand = resolveKvOperand(k), vOperand = resolveKvOperand(v);
    if (kOperand.otherRepetition || vOperand.otherRepetition)
      return rewriter.notifyMatchFailure(pv, [&](Diagnostic &diag) {
        diag << "kv heads repeated in an order other than repeat_interleave: K "
             << headMapString(k) << ", V " << headMapString(v);
      });
    auto headsOf = [](Value value) {
      return cast<RankedTensorType>(value.getType()).getDimSize(1);
    };
    if (headsOf(kOperand.value) != headsOf(vOperand.value)) {
      // weft.attention needs K and V with equal heads: read the repeated
      // tensors themselves (plain multi-head attention, still equal).
      kOperand.value = k;
      vOperand.value = v;
    }

    double dropoutP = dropout ? dropout.getP().convertToDouble() : 0.0;
    Value seed = dropoutP > 0.0 ? dropout.getSeed() : Value();
    FloatAttr scale;
    if (*scaleAttr)
      scale = rewriter.getF32FloatAttr(**scaleAttr);
    auto attention = AttentionOp::create(
        rewriter, pv.getLoc(), pv.getC().getType(), /*lse=*/Type(), q,
        kOperand.value, vOperand.value, seed ? ValueRange(seed) : ValueRange(),
        causal, scale, llvm::APFloat(dropoutP), /*seq_major=*/false,
        /*dropout_heads=*/IntegerAttr());
    if (dropoutP > 0.0)
      attention->setDiscardableAttr(WeftDialect::kRngIdAttr,
                                    dropout->getAttr(WeftDialect::kRngIdAttr));
    if (Attribute layer = pv->getDiscardableAttr(WeftDialect::kLayerAttr))
      attention->setDiscardableAttr(WeftDialect::kLayerAttr, layer);
    LDBG() << "fused attention at " << pv.getLoc() << ": kv heads "
           << headsOf(kOperand.value) << " of " << headsOf(q) << " q heads"
           << (causal ? ", causal" : "") << ", dropout " << dropoutP;
    rewriter.replaceOp(pv, attention.getOut());
    return success();
  }
};

struct FuseAttentionPass
    : weft::impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseAttentionPatterns(patterns);
    // Only the fusion: no folding of unrelated ops, no region rewrites.
    GreedyRewriteConfig config;
    config.enableFolding(false).setRegionSimplificationLevel(
        GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config))) {
      getOperation().emitError("weft-fuse-attention did not converge on @")
          << getOperation().getSymName();
      signalPassFailure();
    }
  }
};

} // namespace

void weft::populateFuseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAttentionChain>(patterns.getContext());
}
