// weft-collective-matmul: the all-gather before a GEMM and the
// reduce-scatter after one, split into chunks that pipeline with partial
// GEMMs (Passes.td).
#include "weft/Analysis/LinkModel.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace weft {
#define GEN_PASS_DEF_COLLECTIVEMATMULPASS
#include "weft/Partition/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The one op reading `value`'s buffer through views (reshapes), and the
/// views on the way; null unless there is exactly one such read.
Operation *soleReader(Value value, SmallVectorImpl<Operation *> &views) {
  Operation *reader = nullptr;
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isBufferView(user) && user->getNumOperands() == 1 && user->getNumResults() == 1) {
      views.push_back(user);
      Operation *inner = soleReader(user->getResult(0), views);
      if (!inner || reader)
        return nullptr;
      reader = inner;
      continue;
    }
    if (reader)
      return nullptr;
    reader = user;
  }
  return reader;
}

/// `value` with the views it was made through peeled off.
Value viewRoot(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isBufferView(def) || def->getNumOperands() != 1 || def->getNumResults() != 1)
      break;
    value = def->getOperand(0);
  }
  return value;
}

/// A collective and the GEMM it pipelines with: the gathered value is the
/// GEMM's A, or the scattered one its only result.
struct CollectiveMatmul {
  Operation *collective = nullptr, *gemm = nullptr;
  bool gather = false;
  int64_t ranks = 1;
  /// Rows of A and D per rank block, A's columns, D's columns, bytes per
  /// element.
  int64_t rows = 0, k = 0, n = 0, elementBytes = 0;
};

int64_t lastDim(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape().back();
}

/// Whether NCCL's rank blocks of `type` along `axis` are contiguous (every
/// dimension before it is 1), as weft-build-plan needs.
bool contiguousAlong(RankedTensorType type, int64_t axis) {
  return llvm::all_of(type.getShape().take_front(axis),
                      [](int64_t size) { return size == 1; });
}

/// The first op in block order reading `value` through views, or null.
Operation *firstReader(Value value) {
  Operation *first = nullptr;
  SmallVector<Value> values{value};
  while (!values.empty()) {
    Value current = values.pop_back_val();
    for (Operation *user : current.getUsers()) {
      if (isBufferView(user) && user->getNumOperands() == 1 && user->getNumResults() == 1) {
        values.push_back(user->getResult(0));
        continue;
      }
      if (!first || (user->getBlock() == first->getBlock() && user->isBeforeInBlock(first)))
        first = user;
    }
  }
  return first;
}

/// An all-gather whose result `reader` reads as a GEMM's rows.
std::optional<CollectiveMatmul> matchGatherReader(shard::AllGatherOp gather, Operation *reader,
                                                  SymbolTableCollection &symbols) {
  auto rows = dyn_cast_or_null<GemmRowsOpInterface>(reader);
  if (!rows || !rows.getGemmRowOperand())
    return std::nullopt;
  Value a = reader->getOperand(*rows.getGemmRowOperand());
  if (viewRoot(a) != gather.getResult() ||
      !contiguousAlong(cast<RankedTensorType>(gather.getResult().getType()), gather.getGatherAxis().getSExtValue()))
    return std::nullopt;
  CollectiveMatmul match{gather, reader, /*gather=*/true};
  shard::GridOp grid = shard::getGridOrNull(gather, gather.getGridAttr(), symbols);
  if (!grid)
    return std::nullopt;
  match.ranks = shard::collectiveProcessGroupSize(gather.getGridAxes(), grid);
  match.k = lastDim(a);
  match.n = lastDim(reader->getResult(0));
  int64_t perRank = gather.getResult().getType().getNumElements() / match.ranks;
  if (match.k <= 0 || perRank % match.k != 0)
    return std::nullopt;
  match.rows = perRank / match.k;
  match.elementBytes = gather.getResult().getType().getElementTypeBitWidth() / 8;
  return match;
}

/// A chunked gather's GEMM is its only reader: the chunk-by-chunk layout is
/// for it alone.
std::optional<CollectiveMatmul> matchGather(shard::AllGatherOp gather,
                                            SymbolTableCollection &symbols) {
  SmallVector<Operation *> views;
  return matchGatherReader(gather, soleReader(gather.getResult(), views), symbols);
}

/// A local-first gather keeps the tensor's own row order, so later readers
/// (a data gradient's GEMM first, then the weight gradient's) see the whole
/// gather: its GEMM need only be the first reader.
std::optional<CollectiveMatmul> matchLocalFirst(shard::AllGatherOp gather,
                                                SymbolTableCollection &symbols) {
  return matchGatherReader(gather, firstReader(gather.getResult()), symbols);
}

std::optional<CollectiveMatmul> matchScatter(shard::ReduceScatterOp scatter,
                                             SymbolTableCollection &symbols) {
  Value partial = viewRoot(scatter.getInput());
  Operation *producer = partial.getDefiningOp();
  auto rows = dyn_cast_or_null<GemmRowsOpInterface>(producer);
  if (!rows || !rows.getGemmRowOperand() || producer->getNumResults() != 1 ||
      producer->getBlock() != scatter->getBlock())
    return std::nullopt;
  SmallVector<Operation *> views;
  if (soleReader(partial, views) != scatter.getOperation() ||
      !contiguousAlong(cast<RankedTensorType>(scatter.getInput().getType()), scatter.getScatterAxis().getSExtValue()))
    return std::nullopt;
  CollectiveMatmul match{scatter, producer, /*gather=*/false};
  shard::GridOp grid = shard::getGridOrNull(scatter, scatter.getGridAttr(), symbols);
  if (!grid)
    return std::nullopt;
  match.ranks = shard::collectiveProcessGroupSize(scatter.getGridAxes(), grid);
  match.k = lastDim(producer->getOperand(*rows.getGemmRowOperand()));
  match.n = lastDim(partial);
  int64_t perRank = scatter.getInput().getType().getNumElements() / match.ranks;
  if (match.n <= 0 || perRank % match.n != 0)
    return std::nullopt;
  match.rows = perRank / match.n;
  match.elementBytes = scatter.getInput().getType().getElementTypeBitWidth() / 8;
  return match;
}

/// The fewest rows the cost model gives a partial GEMM, what each costs
/// beyond its share of the FLOPs (a launch, a smaller tile count), and what
/// each chunk costs beyond its collective's latency: the compute the NCCL
/// kernels take from the GEMMs they overlap. Measured on 4 H200s
/// (2026-11-26, bench/RESULTS.md): chunking the anchor's collectives at
/// tp = 2 into 2 or 4 added 70 us per collective instead of saving their
/// link time; at 50 us a chunk the model keeps those whole and chunks only
/// collectives long enough to gain.
constexpr int64_t kMinRows = 128;
constexpr double kPartialGemmSeconds = 4e-6;
constexpr double kChunkSeconds = 50e-6;
/// An all-gather chunk on the copy engines (weft-run --collectives=
/// copy-engine): the ready and done flag handshakes over NVLink (stream
/// memory operations, ~1-2 us each) and the start of its pulls; it takes no
/// SMs. An estimate until measured on the GPUs.
constexpr double kCopyEngineChunkSeconds = 8e-6;
constexpr int64_t kMaxChunks = 8;

/// Whether `chunks` chunks of `match` keep every partial GEMM's and
/// chunk's operands aligned (kOperandAlignment bytes) and at least
/// `minRows` rows.
bool fits(const CollectiveMatmul &match, int64_t chunks, int64_t minRows) {
  if (chunks < 1 || match.rows % chunks != 0)
    return false;
  int64_t rows = match.rows / chunks;
  constexpr int64_t kAlignment = 256; // pkg::kOperandAlignment
  return rows >= minRows && rows * match.k * match.elementBytes % kAlignment == 0 &&
         rows * match.n * match.elementBytes % kAlignment == 0;
}

/// The pipeline's time with `chunks` chunks: the first chunk's collective
/// (a gather) or the last's (a scatter) is exposed, the others overlap the
/// partial GEMMs; each chunk pays the link's latency and `chunkSeconds`, and
/// each of its `ranks` partial GEMMs kPartialGemmSeconds.
double pipelineSeconds(const CollectiveMatmul &match, int64_t chunks, double link,
                       double latency, double compute, double chunkSeconds) {
  double chunk = (link - latency) / double(chunks) + latency;
  double gemm = compute / double(chunks);
  if (chunks == 1)
    return link + compute;
  return chunk + gemm + double(chunks - 1) * std::max(chunk, gemm) +
         double(chunks * match.ranks) * kPartialGemmSeconds + double(chunks) * chunkSeconds;
}

/// What a local-first gather saves against the whole gather then the GEMM:
/// the gather hides behind the own block's GEMM (compute / ranks), and pays
/// a partial GEMM per block and one chunk's cost of NCCL kernels beside it.
double localFirstGain(const CollectiveMatmul &match, double link, double compute) {
  return std::min(link, compute / double(match.ranks)) -
         double(match.ranks) * kPartialGemmSeconds - kChunkSeconds;
}

struct CollectiveMatmulPass
    : public weft::impl::CollectiveMatmulPassBase<CollectiveMatmulPass> {
  using CollectiveMatmulPassBase::CollectiveMatmulPassBase;

  int64_t chooseChunks(const CollectiveMatmul &match, SymbolTableCollection &symbols) {
    if (chunks >= 1)
      return fits(match, chunks, /*minRows=*/1) ? int64_t(chunks) : 1;
    LinkModel link;
    double seconds = getCollectiveSeconds(match.collective, symbols, link);
    double compute = getComputeSeconds(match.gemm);
    double chunkSeconds =
        match.gather && engine == "copy-engine" ? kCopyEngineChunkSeconds : kChunkSeconds;
    int64_t best = 1;
    double bestSeconds =
        pipelineSeconds(match, 1, seconds, link.latencySeconds, compute, chunkSeconds);
    for (int64_t count = 2; count <= kMaxChunks; count *= 2) {
      double time =
          pipelineSeconds(match, count, seconds, link.latencySeconds, compute, chunkSeconds);
      if (fits(match, count, kMinRows) && time < bestSeconds)
        best = count, bestSeconds = time;
    }
    return best;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (sides != "both" && sides != "gather" && sides != "scatter") {
      func.emitError("weft-collective-matmul: sides '")
          << sides << "' is not both, gather or scatter";
      return signalPassFailure();
    }
    if (localFirst != "off" && localFirst != "auto" && localFirst != "on") {
      func.emitError("weft-collective-matmul: local-first '")
          << localFirst << "' is not off, auto or on";
      return signalPassFailure();
    }
    if (engine != "nccl" && engine != "copy-engine") {
      func.emitError("weft-collective-matmul: engine '")
          << engine << "' is not nccl or copy-engine";
      return signalPassFailure();
    }
    if (!func->hasAttr(WeftDialect::kGridAttr) || func.getBody().empty() || chunks == 0)
      return;
    SymbolTableCollection symbols;
    SmallVector<CollectiveMatmul> matches, localFirstOnly;
    func.walk([&](Operation *op) {
      std::optional<CollectiveMatmul> match;
      auto gather = dyn_cast<shard::AllGatherOp>(op);
      auto scatter = dyn_cast<shard::ReduceScatterOp>(op);
      if (gather && sides != "scatter") {
        match = matchGather(gather, symbols);
        if (!match && localFirst != "off")
          if (std::optional<CollectiveMatmul> first = matchLocalFirst(gather, symbols))
            if (first->ranks > 1)
              localFirstOnly.push_back(*first);
      }
      else if (scatter && sides != "gather")
        match = matchScatter(scatter, symbols);
      if (match && match->ranks > 1)
        matches.push_back(*match);
    });
    Builder builder(func.getContext());
    auto markLocalFirst = [&](const CollectiveMatmul &match) {
      if (localFirst == "off" || !match.gather ||
          !fits(match, 1, localFirst == "on" ? 1 : kMinRows))
        return;
      LinkModel link;
      if (localFirst == "on" ||
          localFirstGain(match, getCollectiveSeconds(match.collective, symbols, link),
                         getComputeSeconds(match.gemm)) > 0)
        match.collective->setAttr(WeftDialect::kLocalFirstAttr, builder.getUnitAttr());
    };
    for (const CollectiveMatmul &match : localFirstOnly)
      markLocalFirst(match);
    for (const CollectiveMatmul &match : matches) {
      int64_t count = chooseChunks(match, symbols);
      if (count <= 1) {
        markLocalFirst(match);
        continue;
      }
      match.collective->setAttr(WeftDialect::kChunksAttr, builder.getI64IntegerAttr(count));
      if (match.gather)
        continue;
      // The scatter's chunks follow the partial GEMMs as they finish: it
      // and the views it reads through come right after its GEMM.
      SmallVector<Operation *> chain;
      for (Value value = match.collective->getOperand(0); value.getDefiningOp() != match.gemm;
           value = value.getDefiningOp()->getOperand(0))
        chain.push_back(value.getDefiningOp());
      Operation *point = match.gemm;
      for (Operation *view : llvm::reverse(chain)) {
        view->moveAfter(point);
        point = view;
      }
      match.collective->moveAfter(point);
    }
  }
};

} // namespace
