// weft-remat's view of a training step: layers, saved activations per scope
// of forward ops, their recompute cost and solver model, isomorphism
// signatures, and the clone-into-the-backward rewrite.
#include "RematStep.h"

#include "weft/Analysis/LinkModel.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
using namespace weft;
using namespace weft::remat;

//===----------------------------------------------------------------------===//
// Cost
//===----------------------------------------------------------------------===//


double weft::remat::getRecomputeSeconds(Operation *op,
                                        SymbolTableCollection &symbols) {
  if (isBufferView(op))
    return 0.0;
  if (auto cost = dyn_cast<CostOpInterface>(op))
    return cost.getRooflineSeconds(kPeakFlopsPerSecond, kPeakBytesPerSecond);
  if (isa<shard::ShardDialect>(op->getDialect()))
    return getCollectiveSeconds(op, symbols);
  return 0.0;
}

//===----------------------------------------------------------------------===//
// StepStructure
//===----------------------------------------------------------------------===//

FailureOr<StepStructure> StepStructure::analyze(func::FuncOp func) {
  FailureOr<ScheduleLiveness> liveness = ScheduleLiveness::compute(func);
  if (failed(liveness))
    return failure();
  StepStructure step(std::move(*liveness));
  std::map<int64_t, ForwardLayer> layers;
  int64_t backward = step.liveness.getBackwardStart();
  for (Operation *op : step.liveness.getSchedule().take_front(backward)) {
    auto layer = op->getAttrOfType<IntegerAttr>(WeftDialect::kLayerAttr);
    if (!layer)
      continue;
    ForwardLayer &entry = layers[layer.getInt()];
    entry.index = layer.getInt();
    entry.ops.push_back(op);
  }
  for (auto &[index, layer] : layers)
    step.layers.push_back(std::move(layer));
  return step;
}

bool StepStructure::isForward(Operation *op) const {
  int64_t step = liveness.getStep(op);
  return step >= 0 && step < liveness.getBackwardStart();
}

bool StepStructure::isBackward(Operation *op) const {
  int64_t step = liveness.getStep(op);
  return step >= liveness.getBackwardStart() &&
         step < liveness.getNumSteps() - 1;
}

//===----------------------------------------------------------------------===//
// Saved activations of a scope
//===----------------------------------------------------------------------===//

namespace {

/// A weft.fused group clones with its body (it is isolated from above and
/// pure when its body is), so remat recomputes groups as well as ops.
bool isCloneable(Operation *op) {
  return (op->getNumRegions() == 0 || isa<FusedOp>(op)) &&
         isMemoryEffectFree(op) &&
         !op->hasTrait<OpTrait::IsTerminator>();
}

bool readInBackward(const StepStructure &step, Value value) {
  return llvm::any_of(value.getUsers(),
                      [&](Operation *user) { return step.isBackward(user); });
}

} // namespace

ScopeActivations weft::remat::classifyScope(const StepStructure &step,
                                            ArrayRef<Operation *> scopeOps) {
  ScopeActivations result;
  result.ops.insert(scopeOps.begin(), scopeOps.end());
  const ScheduleLiveness &liveness = step.getLiveness();
  Operation *terminator = liveness.getSchedule().back();

  // Ops that can be cloned together with everything they derive from inside
  // the scope (scope ops are in schedule order, so operands come first).
  llvm::DenseSet<Operation *> cloneable;
  for (Operation *op : scopeOps) {
    bool ok = isCloneable(op) && llvm::all_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return !def || !result.ops.contains(def) || cloneable.contains(def);
    });
    if (ok)
      cloneable.insert(op);
  }

  // Values the backward reads, grouped by buffer; a group is pinned when any
  // of its tensors must stay.
  llvm::SmallVector<Value> read;
  std::map<unsigned, llvm::SmallVector<Value, 2>> byBuffer;
  llvm::DenseSet<unsigned> pinnedBuffers;
  for (Operation *op : scopeOps)
    for (Value value : op->getResults()) {
      std::optional<unsigned> buffer = liveness.lookupBuffer(value);
      if (!buffer || !readInBackward(step, value))
        continue;
      read.push_back(value);
      byBuffer[*buffer].push_back(value);
      bool pin = !cloneable.contains(op);
      for (Operation *user : value.getUsers()) {
        Operation *top = user->getBlock() == terminator->getBlock()
                             ? user
                             : terminator->getBlock()->findAncestorOpInBlock(*user);
        if (top == terminator ||
            (step.isForward(user) && !result.ops.contains(top)))
          pin = true;
      }
      // A view of a forward tensor from outside the scope (or of an
      // argument) frees nothing when recomputed; views the backward takes
      // follow their operand.
      for (Value shared : liveness.getBuffers()[*buffer].values) {
        Operation *def = shared.getDefiningOp();
        if (!def || (step.isForward(def) && !result.ops.contains(def)))
          pin = true;
      }
      if (pin)
        pinnedBuffers.insert(*buffer);
    }
  for (Value value : read) {
    unsigned buffer = *liveness.lookupBuffer(value);
    if (pinnedBuffers.contains(buffer))
      result.pinned.insert(value);
    else
      result.candidates.push_back(value);
  }
  return result;
}

RecomputeScope weft::remat::weightCopyScope(const StepStructure &step) {
  RecomputeScope scope;
  func::FuncOp func = step.getFunction();
  Block &body = func.getBody().front();
  const ScheduleLiveness &liveness = step.getLiveness();
  auto isParam = [&](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &body &&
           func.getArgAttr(arg.getArgNumber(), WeftDialect::kParamAttr);
  };
  for (Operation *op :
       liveness.getSchedule().take_front(liveness.getBackwardStart())) {
    if (isBufferView(op) || op->getNumResults() != 1 ||
        op->getNumOperands() == 0 || !isCloneable(op) ||
        !llvm::all_of(op->getOperands(), isParam))
      continue;
    Value copy = op->getResult(0);
    bool returned = llvm::any_of(copy.getUsers(), [](Operation *user) {
      return user->hasTrait<OpTrait::IsTerminator>();
    });
    if (returned || !readInBackward(step, copy))
      continue;
    scope.ops.push_back(op);
    scope.recompute.push_back(copy);
  }
  return scope;
}

//===----------------------------------------------------------------------===//
// The solver's model and the isomorphism signature
//===----------------------------------------------------------------------===//

ScopeModel weft::remat::buildScopeModel(const StepStructure &step,
                                        const ScopeActivations &activations,
                                        int64_t alignment,
                                        SymbolTableCollection &symbols) {
  ScopeModel result;
  LayerRematModel &model = result.model;
  llvm::DenseMap<Value, unsigned> valueIndex;
  for (auto [opIndex, op] : llvm::enumerate(activations.ops)) {
    RematOp node;
    node.seconds = getRecomputeSeconds(op, symbols);
    for (Value operand : op->getOperands())
      if (auto it = valueIndex.find(operand); it != valueIndex.end())
        node.operands.push_back(it->second);
    model.ops.push_back(node);
    for (Value value : op->getResults()) {
      valueIndex[value] = model.producers.size();
      model.producers.push_back(activations.pinned.contains(value) ? -1
                                                                   : int(opIndex));
    }
  }

  // One unit per buffer, in schedule order.
  const ScheduleLiveness &liveness = step.getLiveness();
  std::map<unsigned, unsigned> unitOfBuffer;
  for (Value value : activations.candidates) {
    unsigned buffer = *liveness.lookupBuffer(value);
    auto [it, inserted] = unitOfBuffer.try_emplace(buffer, model.units.size());
    if (inserted) {
      SavedUnit unit;
      unit.bytes = alignTo(liveness.getBuffers()[buffer].arenaSize(), alignment);
      model.units.push_back(unit);
      result.unitValues.emplace_back();
    }
    model.units[it->second].values.push_back(valueIndex.lookup(value));
    result.unitValues[it->second].push_back(value);
  }
  // Too many to enumerate: merge the adjacent pair holding the fewest bytes.
  while (model.units.size() > kMaxRematUnits) {
    unsigned best = 0;
    for (unsigned u = 1; u + 1 < model.units.size(); ++u)
      if (model.units[u].bytes + model.units[u + 1].bytes <
          model.units[best].bytes + model.units[best + 1].bytes)
        best = u;
    model.units[best].bytes += model.units[best + 1].bytes;
    llvm::append_range(model.units[best].values, model.units[best + 1].values);
    llvm::append_range(result.unitValues[best], result.unitValues[best + 1]);
    model.units.erase(model.units.begin() + best + 1);
    result.unitValues.erase(result.unitValues.begin() + best + 1);
  }
  return result;
}

/// An op's attributes but those that differ between isomorphic layers.
static void printSignatureAttributes(Operation *op, llvm::raw_ostream &os) {
  for (NamedAttribute attr : op->getAttrDictionary()) {
    StringRef name = attr.getName().getValue();
    if (name == WeftDialect::kLayerAttr || name == WeftDialect::kRngIdAttr)
      continue;
    os << name << "=" << attr.getValue() << ",";
  }
}

std::string weft::remat::getLayerSignature(const ForwardLayer &layer,
                                           const ScopeActivations &activations) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DenseMap<Value, std::pair<unsigned, unsigned>> local;
  llvm::DenseSet<Value> candidates(activations.candidates.begin(),
                                   activations.candidates.end());
  for (auto [index, op] : llvm::enumerate(layer.ops)) {
    os << op->getName() << "(";
    for (Value operand : op->getOperands()) {
      if (auto it = local.find(operand); it != local.end())
        os << "%" << it->second.first << "#" << it->second.second << ",";
      else
        os << "ext:" << operand.getType() << ",";
    }
    os << "){";
    printSignatureAttributes(op, os);
    os << "}";
    // Two groups of one kind may differ in their bodies.
    if (auto fused = dyn_cast<FusedOp>(op)) {
      os << "[";
      for (Operation &inner : fused.getBodyBlock()) {
        os << inner.getName() << "(";
        for (Value operand : inner.getOperands())
          os << operand.getType() << ",";
        os << "){";
        printSignatureAttributes(&inner, os);
        os << "};";
      }
      os << "]";
    }
    os << "->";
    for (OpResult result : op->getResults()) {
      local[result] = {unsigned(index), result.getResultNumber()};
      char role = candidates.contains(result)           ? 'c'
                  : activations.pinned.contains(result) ? 'p'
                                                        : '-';
      os << result.getType() << ":" << role << ",";
    }
    os << ";";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

RecomputeStats weft::remat::applyRecompute(const StepStructure &step,
                                           ArrayRef<RecomputeScope> scopes,
                                           SymbolTableCollection &symbols) {
  RecomputeStats stats;
  const ScheduleLiveness &liveness = step.getLiveness();
  Block &body = step.getFunction().getBody().front();
  auto topLevel = [&](Operation *op) { return body.findAncestorOpInBlock(*op); };
  MLIRContext *context = step.getFunction().getContext();

  // Decided before any rewrite: which scope values the backward reads.
  llvm::DenseSet<Value> readByBackward;
  for (const RecomputeScope &scope : scopes)
    for (Operation *op : scope.ops)
      for (Value value : op->getResults())
        if (readInBackward(step, value))
          readByBackward.insert(value);

  for (const RecomputeScope &scope : scopes) {
    llvm::DenseSet<Operation *> inScope(scope.ops.begin(), scope.ops.end());
    llvm::DenseSet<Value> recompute(scope.recompute.begin(), scope.recompute.end());
    auto available = [&](Value value) {
      Operation *def = value.getDefiningOp();
      return !def || !inScope.contains(def) ||
             (readByBackward.contains(value) && !recompute.contains(value));
    };
    // Each value's closure; values whose closures share an op are one segment.
    llvm::SmallVector<Value> values;
    llvm::SmallVector<llvm::SmallVector<Operation *>> closures;
    llvm::SmallVector<unsigned> parent; // union-find over values
    auto find = [&](unsigned i) {
      while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
      return i;
    };
    llvm::DenseMap<Operation *, unsigned> claimedBy;
    for (Value value : scope.recompute) {
      if (!readByBackward.contains(value) || available(value))
        continue;
      unsigned index = values.size();
      values.push_back(value);
      parent.push_back(index);
      llvm::SmallVector<Operation *> closure;
      llvm::DenseSet<Operation *> seen;
      llvm::SmallVector<Value> worklist{value};
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        if (available(v))
          continue;
        Operation *def = v.getDefiningOp();
        if (!seen.insert(def).second)
          continue;
        closure.push_back(def);
        auto [it, inserted] = claimedBy.try_emplace(def, index);
        if (!inserted) {
          // Keep the smaller index as the root: segments follow value order.
          unsigned a = find(it->second), b = find(index);
          parent[std::max(a, b)] = std::min(a, b);
        }
        llvm::append_range(worklist, def->getOperands());
      }
      closures.push_back(std::move(closure));
    }

    for (unsigned root = 0; root < values.size(); ++root) {
      if (find(root) != root)
        continue;
      llvm::SetVector<Operation *> ops;
      llvm::SmallVector<Value> segmentValues;
      Operation *insertBefore = nullptr;
      for (unsigned index = root; index < values.size(); ++index) {
        if (find(index) != root)
          continue;
        segmentValues.push_back(values[index]);
        ops.insert(closures[index].begin(), closures[index].end());
        for (Operation *user : values[index].getUsers()) {
          if (!step.isBackward(user))
            continue;
          Operation *top = topLevel(user);
          if (!insertBefore || liveness.getStep(top) < liveness.getStep(insertBefore))
            insertBefore = top;
        }
      }
      if (!insertBefore)
        continue;
      llvm::SmallVector<Operation *> ordered(ops.begin(), ops.end());
      llvm::sort(ordered, [&](Operation *a, Operation *b) {
        return liveness.getStep(a) < liveness.getStep(b);
      });
      OpBuilder builder(insertBefore);
      IRMapping mapping;
      for (Operation *op : ordered) {
        Operation *clone = builder.clone(*op, mapping);
        clone->setAttr(WeftDialect::kRecomputeAttr, UnitAttr::get(context));
        ++stats.clonedOps;
        stats.seconds += getRecomputeSeconds(op, symbols);
        if (auto cost = dyn_cast<CostOpInterface>(op))
          stats.flops += cost.getFlops();
      }
      for (Value value : segmentValues)
        value.replaceUsesWithIf(mapping.lookup(value), [&](OpOperand &use) {
          return step.isBackward(use.getOwner());
        });
      ++stats.segments;
    }
  }

  // Forward ops whose only readers were in the backward are dead now.
  int64_t backward = liveness.getBackwardStart();
  for (Operation *op :
       llvm::reverse(liveness.getSchedule().take_front(backward)))
    if (isOpTriviallyDead(op))
      op->erase();
  return stats;
}
