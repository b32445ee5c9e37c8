// weft-coalesce-collectives: a partitioned step's latency-bound all-reduces
// over the same grid axes as one all-reduce of their concatenation
// (Passes.td).
#include "weft/Analysis/LinkModel.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace weft {
#define GEN_PASS_DEF_COALESCECOLLECTIVESPASS
#include "weft/Partition/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// What all-reduces must share to travel as one: the grid, its axes, the
/// reduction and the element type.
using BucketKey = std::tuple<Attribute, Attribute, Attribute, Type>;

/// Where an all-reduce's operand is defined and its result first read, as
/// positions in the step's block (-1: a block argument), its readers (ops
/// of the block) and the position of the first op reading any of theirs.
struct Member {
  mutable shard::AllReduceOp op; // read through const views
  int64_t defined, firstRead;
  SmallVector<Operation *> readers;
  int64_t readersFirstRead;
};

/// The members one all-reduce can serve once every member's operand is
/// defined: those first read after that point, and those whose readers can
/// wait until then (an AdamW step updates each parameter right after its
/// gradient; that update then moves below the bucket, which the step's
/// values allow as nothing reads it before). The rest drop out until the
/// others agree.
SmallVector<Member> agreeing(SmallVector<Member> members) {
  while (members.size() > 1) {
    int64_t lastDefined = -1;
    DenseSet<Operation *> inputs; // what defines the bucket's pieces
    for (const Member &m : members) {
      lastDefined = std::max(lastDefined, m.defined);
      inputs.insert(m.op.getInput().getDefiningOp());
    }
    auto canWait = [&](const Member &m) {
      return m.readersFirstRead > lastDefined &&
             llvm::none_of(m.readers, [&](Operation *r) { return inputs.contains(r); });
    };
    SmallVector<Member> kept;
    for (const Member &m : members)
      if (m.firstRead > lastDefined || canWait(m))
        kept.push_back(m);
    if (kept.size() == members.size())
      break;
    members = std::move(kept);
  }
  return members;
}

/// Replaces `members` by reshape-to-1-D + concat + one all-reduce + split +
/// reshape back, before the earliest first reader `at`.
void coalesce(ArrayRef<Member> members, Operation *at) {
  OpBuilder b(at);
  Location loc = members.front().op.getLoc();
  SmallVector<Value> flat;
  SmallVector<int64_t> sizes;
  Type element = cast<RankedTensorType>(members.front().op.getType()).getElementType();
  for (const Member &m : members) {
    auto type = cast<RankedTensorType>(m.op.getInput().getType());
    auto vector = RankedTensorType::get({type.getNumElements()}, element);
    Value input = m.op.getInput();
    flat.push_back(type == vector ? input : ReshapeOp::create(b, loc, vector, input).getResult());
    sizes.push_back(type.getNumElements());
  }
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size;
  auto bucketType = RankedTensorType::get({total}, element);
  Value bucket = ConcatOp::create(b, loc, bucketType, flat, b.getI64IntegerAttr(0));
  Operation *reduce = b.clone(*members.front().op);
  reduce->setOperand(0, bucket);
  reduce->getResult(0).setType(bucketType);
  reduce->removeAttr(WeftDialect::kLayerAttr); // a bucket spans layers
  SmallVector<Type> pieceTypes;
  for (int64_t size : sizes)
    pieceTypes.push_back(RankedTensorType::get({size}, element));
  auto split = SplitOp::create(b, loc, pieceTypes, reduce->getResult(0),
                               b.getI64IntegerAttr(0), b.getDenseI64ArrayAttr(sizes));
  for (auto [m, piece] : llvm::zip(members, split.getPieces())) {
    Type type = m.op.getType();
    Value result = piece;
    if (piece.getType() != type)
      result = ReshapeOp::create(b, loc, type, piece);
    m.op.getResult().replaceAllUsesWith(result);
    m.op.erase();
  }
}

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

/// Fills `m`'s readers (the block's ops that read its result, directly or
/// from a nested region) and when the first of their results is read;
/// false when a reader's results leave the block.
bool readersOf(shard::AllReduceOp reduce, Block &body,
               const DenseMap<Operation *, int64_t> &position, Member &m) {
  for (Operation *user : reduce.getResult().getUsers()) {
    Operation *top = body.findAncestorOpInBlock(*user);
    if (!top)
      return false;
    m.firstRead = std::min(m.firstRead, position.lookup(top));
    if (!llvm::is_contained(m.readers, top))
      m.readers.push_back(top);
  }
  for (Operation *reader : m.readers)
    for (Operation *user : reader->getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top)
        return false;
      m.readersFirstRead = std::min(m.readersFirstRead, position.lookup(top));
    }
  return true;
}

struct CoalesceCollectivesPass
    : public weft::impl::CoalesceCollectivesPassBase<CoalesceCollectivesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(WeftDialect::kGridAttr) || func.getBody().empty())
      return;
    Block &body = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    SmallVector<Operation *> atPosition;
    for (Operation &op : body) {
      position[&op] = int64_t(atPosition.size());
      atPosition.push_back(&op);
    }
    SymbolTableCollection symbols;
    LinkModel link;
    // Buckets in the order of their first member, members in block order.
    SmallVector<BucketKey> order;
    DenseMap<BucketKey, SmallVector<Member>> buckets;
    for (Operation &op : body) {
      auto reduce = dyn_cast<shard::AllReduceOp>(&op);
      if (!reduce || reduce.getInput().getType() != reduce.getType() ||
          getCollectiveSeconds(reduce, symbols, link) >= 2 * link.latencySeconds)
        continue;
      auto type = dyn_cast<RankedTensorType>(reduce.getType());
      if (!type || !type.hasStaticShape())
        continue;
      Operation *def = reduce.getInput().getDefiningOp();
      Member member{reduce, def ? position.lookup(def) : -1, kNever, {}, kNever};
      if (reduce.getResult().use_empty() || !readersOf(reduce, body, position, member))
        continue;
      BucketKey key{reduce.getGridAttr(), reduce.getGridAxesAttr(), reduce.getReductionAttr(),
                    type.getElementType()};
      if (!buckets.count(key))
        order.push_back(key);
      buckets[key].push_back(std::move(member));
    }
    for (const BucketKey &key : order) {
      SmallVector<Member> members = agreeing(buckets[key]);
      if (members.size() < 2)
        continue;
      int64_t lastDefined = -1, at = kNever;
      for (const Member &m : members)
        lastDefined = std::max(lastDefined, m.defined);
      for (const Member &m : members)
        at = std::min(at, m.firstRead > lastDefined ? m.firstRead : lastDefined + 1);
      // Readers above the bucket move below it, in their order.
      SetVector<Operation *> sunk;
      for (const Member &m : members)
        for (Operation *reader : m.readers)
          if (position.lookup(reader) < at)
            sunk.insert(reader);
      SmallVector<Operation *> ordered(sunk.begin(), sunk.end());
      llvm::sort(ordered, [&](Operation *a, Operation *b) {
        return position.lookup(a) < position.lookup(b);
      });
      // Positions are of the original block: a bucket only replaces its own
      // members and moves their readers, so later buckets' stay ordered.
      // The bucket goes before the first op from `at` on that stays where
      // it is (the members go, the sunk readers move).
      DenseSet<Operation *> leaving(sunk.begin(), sunk.end());
      for (const Member &m : members)
        leaving.insert(m.op);
      while (leaving.contains(atPosition[at]))
        ++at; // the block's terminator ends it
      Operation *anchor = atPosition[at];
      coalesce(members, anchor);
      for (Operation *reader : ordered)
        reader->moveBefore(anchor);
    }
  }
};

} // namespace
