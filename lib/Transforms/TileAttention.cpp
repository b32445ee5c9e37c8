// weft-tile-attention: rewrites weft.attention and weft.attention_grad into
// the FlashAttention-2 loop nests built by TileAttentionForward.cpp and
// TileAttentionBackward.cpp (target-neutral: scf, tensor, linalg, arith, math).
#include "TileAttention.h"

#include "weft/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-tile-attention"

using namespace mlir;

namespace weft {

#define GEN_PASS_DEF_TILEATTENTIONPASS
#include "weft/Transforms/Passes.h.inc"

namespace {

using tiling::AttentionProblem;
using tiling::TileSizes;

/// The problem of an attention or attention_grad op (both verified: the
/// shapes agree and kv heads divide q heads).
template <typename OpTy>
AttentionProblem problemOf(OpTy op) {
  ArrayRef<int64_t> qShape = op.getQ().getType().getShape();
  ArrayRef<int64_t> kShape = op.getK().getType().getShape();
  ArrayRef<int64_t> vShape = op.getV().getType().getShape();
  Type ioType = op.getQ().getType().getElementType();
  MLIRContext *context = op.getContext();
  FloatType computeType = ioType.isF64() ? FloatType(Float64Type::get(context))
                                         : FloatType(Float32Type::get(context));
  int64_t rngId = 0;
  if (auto id = op->template getAttrOfType<IntegerAttr>(WeftDialect::kRngIdAttr))
    rngId = id.getInt();
  return AttentionProblem{qShape[0],
                          qShape[1],
                          kShape[1],
                          qShape[2],
                          kShape[2],
                          qShape[3],
                          vShape[3],
                          op.getScaleValue(),
                          op.getCausal(),
                          op.getDropoutP().convertToDouble(),
                          rngId,
                          ioType,
                          computeType};
}

/// The i64 seed (a 0-d tensor operand) when the op drops out, else null.
Value seedScalar(ImplicitLocOpBuilder &b, const AttentionProblem &problem,
                 Value seed) {
  if (!problem.hasDropout())
    return {};
  return tensor::ExtractOp::create(b, seed, ValueRange{});
}

struct TileAttentionPass
    : public impl::TileAttentionPassBase<TileAttentionPass> {
  using TileAttentionPassBase::TileAttentionPassBase;

  void runOnOperation() override {
    TileSizes tiles{blockQ.getValue(), blockK.getValue()};
    if (tiles.blockQ <= 0 || tiles.blockK <= 0) {
      getOperation()->emitError("weft-tile-attention expects positive tile "
                                "sizes, got block-q=")
          << tiles.blockQ << " block-k=" << tiles.blockK;
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      // The tiled nest indexes [b, h, s, d]; seq-major ops are for the GPU
      // kernels (weft-fold-attention-layout makes them).
      if (isPartitionedAttention(op)) {
        op->emitError("weft-tile-attention: the tiled nest draws the dropout "
                      "mask at its own heads; this ")
            << op->getName() << " is a block of a partitioned attention";
        return signalPassFailure();
      }
      if (isSeqMajorAttention(op)) {
        op->emitError("weft-tile-attention takes [b, h, s, d] operands; this ")
            << op->getName() << " is seq_major";
        return signalPassFailure();
      }
      ImplicitLocOpBuilder b(op->getLoc(), op);
      SmallVector<Value> replacements;
      if (auto attention = dyn_cast<AttentionOp>(op)) {
        AttentionProblem problem = problemOf(attention);
        tiling::ForwardResults results;
        if (attention.getLse())
          results.lseType = attention.getLse().getType().getElementType();
        replacements = tiling::buildTiledForward(
            b, problem, tiles, attention.getQ(), attention.getK(),
            attention.getV(), seedScalar(b, problem, attention.getSeed()),
            results);
      } else {
        auto grad = cast<AttentionGradOp>(op);
        AttentionProblem problem = problemOf(grad);
        replacements = tiling::buildTiledBackward(
            b, problem, tiles, grad.getDout(), grad.getQ(), grad.getK(),
            grad.getV(), grad.getOut(), grad.getLse(),
            seedScalar(b, problem, grad.getSeed()));
      }
      LDBG() << "tiled " << op->getName() << " at " << op->getLoc()
             << " with block_q=" << tiles.blockQ
             << " block_k=" << tiles.blockK;
      op->replaceAllUsesWith(replacements);
      op->erase();
    }
  }
};

} // namespace

} // namespace weft
