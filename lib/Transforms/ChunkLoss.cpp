// weft-chunk-loss: the lm_head linear and its cross_entropy over row chunks,
// each loss its share of the mean over all the labels, so no op holds the
// whole [rows, vocab] logits or (after weft-autodiff) their gradient.
#include "weft/Transforms/Passes.h"

#include "weft/Support/ByteSize.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "weft-chunk-loss"

namespace weft {
#define GEN_PASS_DEF_CHUNKLOSSPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

constexpr int64_t kMinChunkRows = 64;

/// A loss over the logits of one linear, through reshapes nothing else reads.
struct LinearLoss {
  CrossEntropyOp loss;
  LinearOp linear;
  SmallVector<ReshapeOp> views; // between the linear and the loss, loss side first
};

std::optional<LinearLoss> matchLinearLoss(CrossEntropyOp loss) {
  LinearLoss match{loss, nullptr, {}};
  Value value = loss.getLogits();
  while (auto view = value.getDefiningOp<ReshapeOp>()) {
    if (!view->hasOneUse())
      return std::nullopt;
    match.views.push_back(view);
    value = view.getX();
  }
  match.linear = value.getDefiningOp<LinearOp>();
  if (!match.linear || !match.linear->hasOneUse())
    return std::nullopt;
  // The views keep the vocabulary as the last dimension: rows stay rows.
  auto logits = cast<RankedTensorType>(loss.getLogits().getType());
  if (logits.getShape().back() != match.linear.getY().getType().getShape().back())
    return std::nullopt;
  return match;
}

/// Rows of each chunk: `rows` split as evenly as `chunks` allow.
SmallVector<int64_t> chunkSizes(int64_t rows, int64_t chunks) {
  SmallVector<int64_t> sizes;
  for (int64_t c = 0; c < chunks; ++c)
    sizes.push_back(rows / chunks + (c < rows % chunks ? 1 : 0));
  return sizes;
}

/// `value` viewed as [rows] or [rows, trailing].
Value rowsView(OpBuilder &builder, Location loc, Value value, int64_t rows,
               std::optional<int64_t> trailing) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape{rows};
  if (trailing)
    shape.push_back(*trailing);
  if (type.getShape() == ArrayRef<int64_t>(shape))
    return value;
  return ReshapeOp::create(builder, loc, type.clone(shape), value);
}

ValueRange splitRows(OpBuilder &builder, Location loc, Value value,
                     ArrayRef<int64_t> sizes) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<Type> pieces;
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = size;
    pieces.push_back(type.clone(shape));
  }
  return SplitOp::create(builder, loc, pieces, value, 0, sizes).getPieces();
}

/// Replaces the loss by the sum of its chunks' shares.
void chunkLinearLoss(LinearLoss match, int64_t chunks) {
  CrossEntropyOp loss = match.loss;
  LinearOp linear = match.linear;
  OpBuilder builder(loss);
  Location loc = loss.getLoc();
  auto xType = cast<RankedTensorType>(linear.getX().getType());
  auto yType = linear.getY().getType();
  int64_t hidden = xType.getShape().back(), vocab = yType.getShape().back();
  int64_t rows = xType.getNumElements() / hidden;
  SmallVector<int64_t> sizes = chunkSizes(rows, chunks);

  Value x = rowsView(builder, linear.getLoc(), linear.getX(), rows, hidden);
  Value labels = rowsView(builder, loc, loss.getLabels(), rows, std::nullopt);
  ValueRange xs = splitRows(builder, linear.getLoc(), x, sizes);
  ValueRange ys = splitRows(builder, loc, labels, sizes);
  Value total;
  auto one = cast<RankedTensorType>(loss.getLoss().getType()).clone({1});
  for (int64_t c = 0; c < chunks; ++c) {
    auto logitsType = yType.clone({sizes[c], vocab});
    Value logits = LinearOp::create(builder, linear.getLoc(), logitsType, xs[c],
                                    linear.getW(), linear.getBias());
    Value share = CrossEntropyOp::create(builder, loc, loss.getLoss().getType(), logits,
                                         ys[c], labels, loss.getIgnoreIndexAttr());
    // Summed as [1] tensors: a 0-d add has no kernel domain on the GPU.
    share = ReshapeOp::create(builder, loc, one, share);
    total = total ? AddOp::create(builder, loc, one, total, share).getResult() : share;
  }
  LDBG() << "loss at " << loc << ": " << rows << " rows in " << chunks << " chunks";
  total = ReshapeOp::create(builder, loc, loss.getLoss().getType(), total);
  loss.getLoss().replaceAllUsesWith(total);
  loss.erase();
  for (ReshapeOp view : match.views)
    view.erase();
  linear.erase();
}

struct ChunkLossPass : weft::impl::ChunkLossPassBase<ChunkLossPass> {
  using ChunkLossPassBase::ChunkLossPassBase;

  /// The chunks of `match`: forced, or the fewest halvings whose logits
  /// take at most 1/16 of the budget (the row count caps them).
  FailureOr<int64_t> chunkCount(LinearLoss match) {
    auto logits = match.linear.getY().getType();
    int64_t vocab = logits.getShape().back();
    int64_t rows = logits.getNumElements() / vocab;
    if (chunks >= 1)
      return std::min<int64_t>(chunks, rows);
    if (budget.empty())
      return 1;
    std::optional<int64_t> bytes = parseByteSize(budget);
    if (!bytes || *bytes <= 0) {
      match.loss.emitOpError("weft-chunk-loss: budget '")
          << budget << "' is not a positive size";
      return failure();
    }
    int64_t rowBytes = vocab * logits.getElementTypeBitWidth() / 8;
    // Chunks of fewer than kMinChunkRows rows would leave the GEMMs
    // too thin to run near the roofline: that many rows is the floor.
    int64_t most = std::max<int64_t>(1, rows / kMinChunkRows);
    int64_t count = 1;
    while (count < most && (rows / count) * rowBytes > *bytes / 16)
      count *= 2;
    return std::min(count, most);
  }

  void runOnOperation() override {
    if (chunks < 0) {
      getOperation().emitError("weft-chunk-loss: chunks must be 0 (from the budget) or "
                               "at least 1, got ")
          << chunks;
      return signalPassFailure();
    }
    SmallVector<LinearLoss> matches;
    getOperation().walk([&](CrossEntropyOp loss) {
      if (std::optional<LinearLoss> match = matchLinearLoss(loss))
        matches.push_back(*match);
    });
    int64_t most = 1;
    for (LinearLoss &match : matches) {
      FailureOr<int64_t> count = chunkCount(match);
      if (failed(count))
        return signalPassFailure();
      most = std::max(most, *count);
      if (*count > 1)
        chunkLinearLoss(match, *count);
    }
    if (most > 1)
      getOperation()->setAttr(WeftDialect::kLossChunksAttr,
                              IntegerAttr::get(IntegerType::get(&getContext(), 64), most));
  }
};

} // namespace
