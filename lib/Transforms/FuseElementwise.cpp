// weft-fuse-elementwise: groups pointwise, normalization and row-reduction
// ops into weft.fused ops (one kernel each), then restores a topological
// order of the block.
#include "weft/Analysis/Liveness.h"
#include "weft/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/DebugLog.h"

#include <numeric>
#include <queue>

#define DEBUG_TYPE "weft-fuse-elementwise"

namespace weft {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Calls `fn` with every top-level op of `block` that `op` (or an op nested
/// in it) reads a value of: its dependencies in the block.
template <typename Fn>
void forEachDependency(Operation *op, Block &block, Fn fn) {
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (Operation *top = block.findAncestorOpInBlock(*def); top && top != op)
          fn(top);
  });
}

/// A pointwise op without row statistics or random draws: grouping it with a
/// sibling changes neither kernel shape nor the rules a group must meet.
bool isPlainPointwise(Operation *op) {
  auto fusion = dyn_cast<FusionOpInterface>(op);
  return fusion && fusion.getRowStatCount() == 0 && op->getNumResults() == 1 &&
         !op->hasAttr(WeftDialect::kRngIdAttr);
}

/// One group being formed: members in block order and what they share.
struct Group {
  SmallVector<Operation *> members;
  SmallVector<int64_t> domain;
  bool backward = false;
  Attribute layer;
};

class ElementwiseFuser {
public:
  explicit ElementwiseFuser(func::FuncOp func)
      : func(func), block(func.getBody().front()) {}

  LogicalResult run();

private:
  void formGroups();
  /// Whether some op outside `members` depends on one of them and is read
  /// by one of them: fusing them would make the group a cycle.
  bool hasOutsidePath(ArrayRef<Operation *> members) const;
  /// Bytes live across the ops between the producer group and `op` when
  /// `op` joins it (`fused`) and when it does not.
  struct GapBytes {
    int64_t fused = 0, unfused = 0;
  };
  GapBytes gapBytes(ArrayRef<Operation *> producer, Operation *op) const;
  void buildFusedOp(ArrayRef<Operation *> members);
  LogicalResult sortBlock();

  func::FuncOp func;
  Block &block;
  llvm::DenseMap<Operation *, int64_t> position;
  SmallVector<Group> groups;
  llvm::DenseMap<Operation *, unsigned> groupOf;
};

bool ElementwiseFuser::hasOutsidePath(ArrayRef<Operation *> members) const {
  llvm::DenseSet<Operation *> inGroup(members.begin(), members.end());
  int64_t first = position.lookup(members.front());
  for (Operation *member : members)
    first = std::min(first, position.lookup(member));
  // Walk up from the outside ops the group reads; an op before the group's
  // first member cannot depend on it, which bounds the walk.
  SmallVector<Operation *> worklist;
  llvm::DenseSet<Operation *> visited;
  for (Operation *member : members)
    forEachDependency(member, block, [&](Operation *def) {
      if (!inGroup.contains(def) && position.lookup(def) > first)
        worklist.push_back(def);
    });
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!visited.insert(op).second)
      continue;
    bool cycle = false;
    forEachDependency(op, block, [&](Operation *def) {
      if (inGroup.contains(def))
        cycle = true;
      else if (position.lookup(def) > first)
        worklist.push_back(def);
    });
    if (cycle)
      return true;
  }
  return false;
}

/// A fused op runs at its last member's position, so every input of an
/// earlier member lives until then. Fusing the producer group into `op`'s
/// group keeps the producer's inputs that die in it (no later reader) alive
/// from its last member to `op`; unfused, what lives across that gap is the
/// producer's results that `op` or a later op reads. A chain of adds summing
/// per-chunk weight gradients (weft-chunk-loss), each partial made by a GEMM
/// between two adds, would otherwise become one n-ary kernel at the chain's
/// end, every partial live until it: the running sum, op by op, holds two.
/// Nothing when `op` directly follows the producer.
ElementwiseFuser::GapBytes ElementwiseFuser::gapBytes(ArrayRef<Operation *> producer,
                                                      Operation *op) const {
  int64_t last = 0;
  for (Operation *member : producer)
    last = std::max(last, position.lookup(member));
  int64_t at = position.lookup(op);
  GapBytes bytes;
  if (at <= last + 1)
    return bytes;
  llvm::DenseSet<Operation *> inProducer(producer.begin(), producer.end());
  auto lastUse = [&](Value value) {
    int64_t use = 0;
    for (Operation *user : value.getUsers())
      if (Operation *top = block.findAncestorOpInBlock(*user))
        use = std::max(use, position.lookup(top));
    return use;
  };
  llvm::DenseSet<Value> seen;
  for (Operation *member : producer) {
    for (Value operand : member->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && !inProducer.contains(def) && isa<RankedTensorType>(operand.getType()) &&
          seen.insert(operand).second && lastUse(operand) <= last)
        bytes.fused += tensorBytes(operand.getType());
    }
    for (Value result : member->getResults())
      if (isa<RankedTensorType>(result.getType()) && lastUse(result) >= at)
        bytes.unfused += tensorBytes(result.getType());
  }
  return bytes;
}

void ElementwiseFuser::formGroups() {
  int64_t backwardStart = findBackwardStart(func);
  for (Operation &op : block) {
    std::optional<SmallVector<int64_t>> domain = getFusionDomain(&op);
    if (!domain)
      continue;
    Group mine;
    mine.members.push_back(&op);
    mine.domain = *domain;
    mine.backward = position.lookup(&op) >= backwardStart;
    mine.layer = op.getAttr(WeftDialect::kLayerAttr);

    // Producer groups this op may join: same domain, phase and layer,
    // reached through a domain-shaped value (a broadcast operand is an
    // input, not fused data flow).
    SmallVector<unsigned> producers;
    for (Value operand : op.getOperands()) {
      auto it = groupOf.find(operand.getDefiningOp());
      if (it == groupOf.end() || llvm::is_contained(producers, it->second))
        continue;
      const Group &producer = groups[it->second];
      auto type = cast<RankedTensorType>(operand.getType());
      if (producer.domain == mine.domain &&
          type.getShape() == ArrayRef<int64_t>(mine.domain) &&
          producer.backward == mine.backward && producer.layer == mine.layer)
        producers.push_back(it->second);
    }
    llvm::SmallDenseSet<unsigned, 4> siblings;
    // Pointwise sibling groups reading one of this op's domain-shaped
    // operands too (SwiGLU's backward: dh * silu(g) beside dh's silu_grad
    // term): one kernel reads the shared value once.
    if (isPlainPointwise(&op))
      for (Value operand : op.getOperands()) {
        auto type = dyn_cast<RankedTensorType>(operand.getType());
        if (!type || type.getShape() != ArrayRef<int64_t>(mine.domain))
          continue;
        for (Operation *user : operand.getUsers()) {
          auto it = groupOf.find(user);
          if (user == &op || it == groupOf.end() ||
              llvm::is_contained(producers, it->second))
            continue;
          const Group &sibling = groups[it->second];
          if (sibling.domain == mine.domain && sibling.backward == mine.backward &&
              sibling.layer == mine.layer && llvm::all_of(sibling.members, isPlainPointwise)) {
            producers.push_back(it->second);
            siblings.insert(it->second);
          }
        }
      }
    for (unsigned index : producers) {
      SmallVector<Operation *> merged(groups[index].members);
      llvm::append_range(merged, mine.members);
      llvm::sort(merged, [&](Operation *a, Operation *b) {
        return position.lookup(a) < position.lookup(b);
      });
      if (hasOutsidePath(merged)) {
        LDBG() << "not fusing " << op.getName() << " into a group of "
               << groups[index].members.size() << ": a cycle";
        continue;
      }
      // Up to twice what lives there unfused: a producer's two operands
      // for its one result (the residual gradient's add into rms_norm_grad)
      // stay fused; a chain that keeps absorbing adds does not.
      // Pointwise producers only: such a kernel is cheap on its own, and
      // it is what accumulating chains are made of; a norm gradient keeps
      // the residual add it feeds (one kernel fewer a layer), as before.
      GapBytes gap;
      if (!siblings.contains(index) && llvm::all_of(groups[index].members, isPlainPointwise))
        gap = gapBytes(groups[index].members, &op);
      if (gap.fused > 2 * gap.unfused) {
        LDBG() << "not fusing " << op.getName() << " at " << op.getLoc() << " into a group of "
               << groups[index].members.size() << ": " << gap.fused
               << " bytes would live across the ops between, not " << gap.unfused;
        continue;
      }
      mine.members = std::move(merged);
      groups[index].members.clear(); // absorbed
    }
    unsigned index = groups.size();
    for (Operation *member : mine.members)
      groupOf[member] = index;
    groups.push_back(std::move(mine));
  }
}

/// "dropout+add+layer_norm": the members' mnemonics, each once, in order.
std::string groupKind(ArrayRef<Operation *> members) {
  SmallVector<StringRef> names;
  for (Operation *op : members) {
    StringRef name = op->getName().stripDialect();
    if (!llvm::is_contained(names, name))
      names.push_back(name);
  }
  return llvm::join(names, "+");
}

void ElementwiseFuser::buildFusedOp(ArrayRef<Operation *> members) {
  llvm::DenseSet<Operation *> inGroup(members.begin(), members.end());
  llvm::SetVector<Value> inputs;
  SmallVector<Value> outputs;
  for (Operation *member : members) {
    for (Value operand : member->getOperands())
      if (!inGroup.contains(operand.getDefiningOp()))
        inputs.insert(operand);
    for (Value result : member->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !inGroup.contains(block.findAncestorOpInBlock(*user));
          }))
        outputs.push_back(result);
  }

  Operation *last = members.back();
  OpBuilder builder(last);
  SmallVector<Location> locations;
  for (Operation *member : members)
    locations.push_back(member->getLoc());
  Location loc = builder.getFusedLoc(locations);
  SmallVector<Type> resultTypes;
  for (Value output : outputs)
    resultTypes.push_back(output.getType());
  auto fused = FusedOp::create(builder, loc, resultTypes,
                               inputs.getArrayRef(), groupKind(members));
  if (Attribute layer = members.front()->getAttr(WeftDialect::kLayerAttr))
    fused->setAttr(WeftDialect::kLayerAttr, layer);

  SmallVector<Type> inputTypes;
  SmallVector<Location> inputLocs;
  for (Value input : inputs) {
    inputTypes.push_back(input.getType());
    inputLocs.push_back(input.getLoc());
  }
  OpBuilder bodyBuilder(builder.getContext());
  Block *body = bodyBuilder.createBlock(&fused.getBody(), {}, inputTypes,
                                        inputLocs);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  for (Operation *member : members)
    bodyBuilder.clone(*member, mapping);
  SmallVector<Value> yielded;
  for (Value output : outputs)
    yielded.push_back(mapping.lookup(output));
  YieldOp::create(bodyBuilder, loc, yielded);

  for (auto [output, result] : llvm::zip(outputs, fused.getResults()))
    output.replaceAllUsesWith(result);
  for (Operation *member : llvm::reverse(members)) {
    member->dropAllUses(); // uses by later members, erased already
    member->erase();
  }
}

/// Kahn's algorithm over the block, smallest old position first: the old
/// order wherever it is still valid. A fused op sits at its last member's
/// position, so outside ops that read its results and came earlier wait for
/// it, and outside ops its later members read are placed before it.
LogicalResult ElementwiseFuser::sortBlock() {
  Operation *terminator = block.getTerminator();
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, unsigned> indexOf;
  for (Operation &op : block.without_terminator()) {
    indexOf[&op] = ops.size();
    ops.push_back(&op);
  }
  SmallVector<unsigned> pending(ops.size(), 0);
  SmallVector<SmallVector<unsigned>> readers(ops.size());
  for (auto [index, op] : llvm::enumerate(ops)) {
    llvm::SmallDenseSet<Operation *, 8> seen;
    forEachDependency(op, block, [&](Operation *def) {
      if (def == terminator || !seen.insert(def).second)
        return;
      ++pending[index];
      readers[indexOf.lookup(def)].push_back(index);
    });
  }
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<unsigned>>
      ready;
  for (unsigned index = 0; index < ops.size(); ++index)
    if (pending[index] == 0)
      ready.push(index);
  SmallVector<Operation *> sorted;
  while (!ready.empty()) {
    unsigned index = ready.top();
    ready.pop();
    sorted.push_back(ops[index]);
    for (unsigned reader : readers[index])
      if (--pending[reader] == 0)
        ready.push(reader);
  }
  if (sorted.size() != ops.size())
    return func.emitOpError("weft-fuse-elementwise left a cycle: ")
           << ops.size() - sorted.size() << " ops cannot be ordered";
  for (Operation *op : sorted)
    op->moveBefore(terminator);
  return success();
}

LogicalResult ElementwiseFuser::run() {
  for (Operation &op : block)
    position[&op] = position.size();
  formGroups();
  int64_t count = 0;
  for (Group &group : groups)
    if (!group.members.empty()) {
      buildFusedOp(group.members);
      ++count;
    }
  LDBG() << "formed " << count << " groups in @" << func.getSymName();
  return count == 0 ? success() : sortBlock();
}

/// A reduction of a whole tensor is one row to its kernel: one CTA walks
/// every element (28 ms for the anchor GPT's 16M-element mean-of-squares on
/// the H100). Past one CTA's worth, sum the columns first (the column-sum
/// kernel spreads the rows over CTAs), then (scaled, for a mean) the short
/// row of column sums.
constexpr int64_t kWideReduction = int64_t(1) << 16;

void splitWideReductions(func::FuncOp func) {
  SmallVector<Operation *> wide;
  func.walk([&](Operation *op) {
    if (!isa<ReduceSumOp, ReduceMeanOp>(op) || op->getParentOp() != func)
      return;
    auto type = cast<RankedTensorType>(op->getOperand(0).getType());
    auto dims = op->getAttrOfType<DenseI64ArrayAttr>("dims");
    if (type.getRank() < 2 || !type.hasStaticShape() || op->hasAttr("keepdim") ||
        int64_t(dims.size()) != type.getRank() || type.getNumElements() < kWideReduction)
      return;
    wide.push_back(op);
  });
  for (Operation *op : wide) {
    OpBuilder b(op);
    Value x = op->getOperand(0);
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> leading(rank - 1);
    std::iota(leading.begin(), leading.end(), 0);
    auto columnsType = RankedTensorType::get({type.getShape().back()}, type.getElementType());
    Value columns = ReduceSumOp::create(b, op->getLoc(), columnsType, x,
                                        b.getDenseI64ArrayAttr(leading), nullptr);
    // The mean's scale on the column sums, where it fuses into the row sum.
    Value row = columns;
    if (isa<ReduceMeanOp>(op))
      row = ScaleOp::create(b, op->getLoc(), columnsType, columns,
                            b.getF64FloatAttr(1.0 / double(type.getNumElements())));
    Value total = ReduceSumOp::create(b, op->getLoc(), op->getResult(0).getType(), row,
                                      b.getDenseI64ArrayAttr({0}), nullptr);
    for (Value created : {columns, row, total})
      for (NamedAttribute attr : op->getDiscardableAttrs())
        created.getDefiningOp()->setAttr(attr.getName(), attr.getValue());
    op->getResult(0).replaceAllUsesWith(total);
    op->erase();
  }
}

struct FuseElementwisePass
    : public weft::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
      return;
    splitWideReductions(func);
    if (failed(ElementwiseFuser(func).run()))
      return signalPassFailure();
    // dW and db of each linear as one GEMM; reduce_sum joins no elementwise
    // group, so the order of the two rewrites does not matter.
    if (biasGrad)
      fuseBiasGradients(func);
  }
};

} // namespace
