// weft-build-plan's entries for a collective matmul (weft-collective-matmul):
// a `weft.chunks = k` all-gather before a GEMM, or reduce-scatter after one,
// as k collectives on stream 1 and the GEMM as k x ranks partial GEMMs on
// stream 0, joined by one event per chunk.
//
// Rank block r of the whole tensor holds rows [r R, (r + 1) R); chunk c of a
// block is its rows [c P, (c + 1) P) (P = R / k). NCCL moves contiguous
// blocks in rank order, so chunk c's collective moves [ranks, P] rows: the
// gathered (or reduced) buffer holds them chunk by chunk, chunk c's block r
// at row (c ranks + r) P, while the GEMM's other side keeps the tensor's own
// order, row (r k + c) P. The partial GEMM (c, r) maps one to the other.
//
// A `weft.local_first` all-gather stays whole on stream 1; its GEMM runs
// the rank's own block of rows from the local shard while the gather runs,
// then, after the gather's event, each other rank's block: rank-relative
// row blocks (plan.gemm rank_blocks), so one plan serves every rank.
#include "ScheduleBuilder.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;

namespace weft {

namespace {

/// The `weft.chunks` reduce-scatter reading `gemm`'s result (through
/// reshapes), or null.
Operation *chunkedScatterOf(Operation *gemm) {
  SmallVector<Value> values(gemm->getResults());
  while (!values.empty()) {
    Value value = values.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isa<shard::ReduceScatterOp>(user) && user->hasAttr(WeftDialect::kChunksAttr))
        return user;
      if (isBufferView(user) && user->getNumOperands() == 1)
        llvm::append_range(values, user->getResults());
    }
  }
  return nullptr;
}

int64_t chunksOf(Operation *collective) {
  return collective->getAttrOfType<IntegerAttr>(WeftDialect::kChunksAttr).getInt();
}

/// The group size of a collective call: its whole tensor over one rank's
/// block (the gathered or scattered operand).
int64_t ranksOf(Operation *collective) {
  auto whole = cast<ShapedType>(isa<shard::AllGatherOp>(collective)
                                    ? collective->getResult(0).getType()
                                    : collective->getOperand(0).getType());
  auto part = cast<ShapedType>(isa<shard::AllGatherOp>(collective)
                                   ? collective->getOperand(0).getType()
                                   : collective->getResult(0).getType());
  return whole.getNumElements() / part.getNumElements();
}

/// The ops reading an all-gather's result through reshapes, in block order.
SmallVector<Operation *> gatherReaders(Operation *op) {
  SmallVector<Operation *> readers;
  SmallVector<Value> values{op->getResult(0)};
  while (!values.empty()) {
    Value value = values.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isBufferView(user) && user->getNumOperands() == 1)
        llvm::append_range(values, user->getResults());
      else if (!llvm::is_contained(readers, user))
        readers.push_back(user);
    }
  }
  llvm::sort(readers, [](Operation *x, Operation *y) {
    return x->getBlock() == y->getBlock() && x->isBeforeInBlock(y);
  });
  return readers;
}

/// The one op reading an all-gather's result (through reshapes), or a
/// diagnostic naming `what` (the gather's kind).
FailureOr<Operation *> soleGatherReader(Operation *op, StringRef what) {
  SmallVector<Operation *> readers = gatherReaders(op);
  if (readers.size() > 1)
    return op->emitError("cannot plan a ")
           << what << " read by more than one op: only its GEMM may see how its rows arrive";
  if (readers.empty())
    return op->emitError("cannot plan a ") << what << " that nothing reads";
  return readers.front();
}

} // namespace

LogicalResult ScheduleBuilder::addLocalFirstGather(Operation *op, const CollectiveCall &call,
                                                   int64_t index) {
  if (!isa<shard::AllGatherOp>(op))
    return op->emitError("cannot plan ")
           << op->getName() << " local-first: weft.local_first is for the all-gather "
           << "before a GEMM";
  SmallVector<Operation *> readers = gatherReaders(op);
  if (readers.empty())
    return op->emitError("cannot plan a local-first all-gather that nothing reads");
  Operation *reader = readers.front();
  Location loc = op->getLoc();
  waitEvent(loc, 1, recordEvent(loc, 0, index), index);
  emitCollective(loc, call, 1, index);
  // The local shard lives until the gather's wait (Liveness): where its GEMM
  // is not that step, the shard's memory could be reused before the GEMM
  // reads it, so stream 0 waits for the whole gather there as for any other.
  if (liveness.getStep(reader) != liveness.getCollectiveWait(op)) {
    pendingWaits[liveness.getCollectiveWait(op)].push_back(recordEvent(loc, 1, index));
    return success();
  }
  LocalFirstGather &gather = localFirstGathers[reader];
  gather.local = call.input;
  gather.gathered = call.output;
  gather.ranks = ranksOf(op);
  gather.axes = call.axes;
  gather.event = recordEvent(loc, 1, index);
  return success();
}

LogicalResult ScheduleBuilder::addLocalFirstGemms(Operation *op, const GemmCall &call,
                                                  int64_t index) {
  const LocalFirstGather &gather = localFirstGathers.find(op)->second;
  int64_t ranks = gather.ranks, rows = ranks > 0 ? call.m / ranks : 0;
  // bf16 or f16 (gemmDtype): 2 bytes an element.
  auto aligned = [](int64_t elements) { return elements * 2 % 256 == 0; };
  if (call.transA || call.batch != 1 || call.epilogue == "bgrad_a" ||
      call.m % ranks != 0 || call.a != gather.gathered || !aligned(rows * call.k) ||
      !aligned(rows * call.n) || (call.aux && !aligned(rows * call.auxLd)))
    return op->emitError("cannot plan this GEMM after a local-first all-gather: it needs the ")
           << "gathered tensor as a non-transposed A of " << ranks << " row blocks ("
           << call.m << " rows), batch 1, an epilogue on columns, and each block's "
           << "operands at multiples of 256 bytes";
  Location loc = op->getLoc();
  GemmCall part = call;
  part.m = rows;
  int64_t d = rows * call.n, aux = call.aux ? rows * call.auxLd : 0;
  // The own block: A is the local shard, D's block is the rank's.
  part.a = gather.local;
  emitGemm(op, part, index, {}, {0, 0, 0, 0, d, aux}, gather.axes);
  waitEvent(loc, 0, gather.event, index);
  part.a = gather.gathered;
  for (int64_t shift = 1; shift < ranks; ++shift)
    emitGemm(op, part, index, {}, {shift, rows * call.k, 0, 0, d, aux}, gather.axes);
  return success();
}

LogicalResult ScheduleBuilder::addChunkedCollective(Operation *op, const CollectiveCall &call,
                                                    int64_t index) {
  if (isa<shard::ReduceScatterOp>(op)) {
    if (issuedScatters.contains(op))
      return success();
    return op->emitError("cannot plan a chunked reduce-scatter (weft.chunks) whose "
                         "operand no GEMM planned before it wrote");
  }
  if (!isa<shard::AllGatherOp>(op))
    return op->emitError("cannot plan ")
           << op->getName() << " in chunks: weft.chunks is for the all-gather before "
           << "a GEMM and the reduce-scatter after one";
  // The GEMM reading the gathered buffer, through reshapes.
  FailureOr<Operation *> found = soleGatherReader(op, "chunked all-gather (weft.chunks)");
  if (failed(found))
    return failure();
  Operation *reader = *found;
  int64_t chunks = chunksOf(op), ranks = ranksOf(op);
  if (chunks < 2 || call.count % (chunks * ranks) != 0)
    return op->emitError("cannot plan ")
           << chunks << " chunks of an all-gather of " << call.count << " elements over "
           << ranks << " ranks";
  int64_t chunk = call.count / chunks; // elements of one chunk's whole
  Location loc = op->getLoc();
  int64_t stream = options.overlapCollectives ? 1 : 0;
  if (stream)
    waitEvent(loc, 1, recordEvent(loc, 0, index), index);
  ChunkedGather &gather = chunkedGathers[reader];
  gather.gathered = call.output;
  gather.ranks = ranks;
  CollectiveCall piece = call;
  piece.count = chunk;
  for (int64_t c = 0; c < chunks; ++c) {
    emitCollective(loc, piece, stream, index, {c * (chunk / ranks), c * chunk});
    gather.events.push_back(stream ? recordEvent(loc, 1, index) : -1);
  }
  return success();
}

LogicalResult ScheduleBuilder::addGemm(Operation *op, const GemmCall &call, int64_t index) {
  if (localFirstGathers.count(op))
    return addLocalFirstGemms(op, call, index);
  if (chunkedGathers.count(op) || chunkedScatterOf(op))
    return addPartialGemms(op, call, index);
  emitGemm(op, call, index);
  return success();
}

LogicalResult ScheduleBuilder::addPartialGemms(Operation *op, const GemmCall &call,
                                               int64_t index) {
  auto gatherIt = chunkedGathers.find(op);
  bool gather = gatherIt != chunkedGathers.end();
  Operation *scatter = gather ? nullptr : chunkedScatterOf(op);
  int64_t ranks = gather ? gatherIt->second.ranks : ranksOf(scatter);
  int64_t chunks = gather ? int64_t(gatherIt->second.events.size()) : chunksOf(scatter);
  if (call.transA || call.batch != 1 || call.epilogue == "bgrad_a" ||
      call.m % (ranks * chunks) != 0 ||
      (gather ? call.a != gatherIt->second.gathered : false))
    return op->emitError("cannot plan this GEMM as the partial GEMMs of a collective "
                         "matmul: it needs a non-transposed A of ")
           << ranks << " x " << chunks << " row blocks, batch 1, an epilogue on columns, "
           << "and (after a chunked all-gather) the gathered tensor as A";
  CollectiveCall scatterCall;
  if (scatter) {
    FailureOr<CollectiveCall> found = collectiveCallOf(scatter);
    if (failed(found))
      return failure();
    if (found->input != call.d)
      return op->emitError("cannot plan a chunked reduce-scatter of another buffer than ")
             << "its GEMM's result";
    scatterCall = *found;
  }
  int64_t rows = call.m / (ranks * chunks); // P
  Location loc = op->getLoc();
  int64_t stream = options.overlapCollectives ? 1 : 0;
  GemmCall part = call;
  part.m = rows;
  for (int64_t c = 0; c < chunks; ++c) {
    if (gather && stream)
      waitEvent(loc, 0, gatherIt->second.events[c], index);
    for (int64_t r = 0; r < ranks; ++r) {
      // The tensor's own row order, and the chunk-by-chunk one.
      int64_t own = (r * chunks + c) * rows, chunked = (c * ranks + r) * rows;
      int64_t aRow = gather ? chunked : own, dRow = gather ? own : chunked;
      emitGemm(op, part, index,
               {aRow * call.k, 0, 0, dRow * call.n, call.aux ? own * call.auxLd : 0});
    }
    if (!scatter)
      continue;
    // Chunk c's reduce-scatter, once its partial GEMMs are done.
    if (stream)
      waitEvent(loc, 1, recordEvent(loc, 0, index), index);
    CollectiveCall piece = scatterCall;
    piece.count = scatterCall.count / chunks;
    emitCollective(scatter->getLoc(), piece, stream, index,
                   {c * piece.count, c * (piece.count / ranks)});
  }
  if (scatter) {
    issuedScatters.insert(scatter);
    if (stream)
      pendingWaits[liveness.getCollectiveWait(scatter)].push_back(
          recordEvent(scatter->getLoc(), 1, index));
  }
  return success();
}

} // namespace weft
