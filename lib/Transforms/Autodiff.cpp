// weft-autodiff: builds @<entry>_step, the training step of a forward
// function that returns a 0-d loss: the forward, its backward (the reverse
// sweep over GradientOpInterface rules) and, with optimizer=adamw, one AdamW
// update per parameter with f32 master weights and moments.
#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/GradientOpInterface.h"
#include "weft/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

namespace weft {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// How the step's arguments come from the entry's: indices into the entry's
/// arguments.
struct StepArguments {
  SmallVector<unsigned> params; // marked weft.param, in order
  SmallVector<unsigned> batch;  // every other argument except the seed
  std::optional<unsigned> seed; // the seed of the entry's random ops
};

struct AdamWSettings {
  double lr, beta1, beta2, eps, weightDecay;
};

bool isScalarI64(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 0 && tensor.getElementType().isInteger(64);
}

/// The entry is a single-block function returning one 0-d floating-point
/// loss, without explicit collectives.
LogicalResult verifyEntry(func::FuncOp entry) {
  if (entry.isExternal())
    return entry.emitOpError("is a declaration; weft-autodiff needs the "
                             "forward's body");
  if (!entry.getBody().hasOneBlock())
    return entry.emitOpError("has ")
           << entry.getBody().getBlocks().size()
           << " blocks; weft-autodiff differentiates a single-block forward";
  if (entry.getNumResults() != 1)
    return entry.emitOpError("expects a single 0-d loss result to "
                             "differentiate, got ")
           << entry.getNumResults() << " results " << entry.getResultTypes();
  auto loss = dyn_cast<RankedTensorType>(entry.getResultTypes()[0]);
  if (!loss || loss.getRank() != 0 || !isa<FloatType>(loss.getElementType()))
    return entry.emitOpError("expects the loss to be a 0-d floating-point "
                             "tensor, got ")
           << entry.getResultTypes()[0];
  // A parameter's gradient (zeros when the loss ignores it) and its
  // optimizer state need a static shape, as every weft tensor has.
  for (BlockArgument arg : entry.getArguments()) {
    auto tensor = dyn_cast<RankedTensorType>(arg.getType());
    if (entry.getArgAttr(arg.getArgNumber(), WeftDialect::kParamAttr) &&
        (!tensor || !tensor.hasStaticShape()))
      return entry.emitOpError("expects parameter #")
             << arg.getArgNumber() << " to have a static shape, got "
             << arg.getType();
  }
  WalkResult walk = entry.walk([](Operation *op) {
    if (!isa<shard::ShardDialect>(op->getDialect()))
      return WalkResult::advance();
    op->emitOpError("is an explicit collective; weft-autodiff differentiates "
                    "the global (unsharded) graph, and partitioning the step "
                    "afterwards places the collectives and their adjoints");
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// The seed is the tensor<i64> argument the entry's random ops (those with a
/// weft.rng_id) read; without random ops, the one tensor<i64> argument
/// nothing reads (a model built with dropout 0 keeps its seed argument).
FailureOr<std::optional<unsigned>> findSeed(func::FuncOp entry) {
  std::optional<unsigned> seed, unused;
  unsigned unusedCount = 0;
  for (BlockArgument arg : entry.getArguments()) {
    if (!isScalarI64(arg.getType()))
      continue;
    if (arg.use_empty()) {
      unused = arg.getArgNumber();
      ++unusedCount;
    }
    bool seedsRandomOp = llvm::any_of(arg.getUses(), [](OpOperand &use) {
      return use.getOwner()->hasAttr(WeftDialect::kRngIdAttr);
    });
    if (!seedsRandomOp)
      continue;
    if (seed)
      return entry.emitOpError("expects one seed argument for its random ops, "
                               "got arguments #")
             << *seed << " and #" << arg.getArgNumber();
    seed = arg.getArgNumber();
  }
  if (!seed && unusedCount == 1)
    seed = unused;
  return seed;
}

StepArguments classifyArguments(func::FuncOp entry, std::optional<unsigned> seed) {
  StepArguments args;
  args.seed = seed;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    if (entry.getArgAttr(i, WeftDialect::kParamAttr))
      args.params.push_back(i);
    else if (i != seed)
      args.batch.push_back(i);
  }
  return args;
}

/// Master weights and moments: f32, or f64 for an f64 parameter.
RankedTensorType masterType(Type paramType) {
  auto tensor = cast<RankedTensorType>(paramType);
  if (tensor.getElementType().isF64())
    return tensor;
  return RankedTensorType::get(tensor.getShape(),
                               Float32Type::get(tensor.getContext()));
}

/// Erases the forward ops of the step nothing reads any more (the values
/// neither the loss nor a gradient rule needs).
void eraseDeadOps(Block &body) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  // Users first, so a chain of dead ops goes in one sweep.
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// The op of `body` that is, or holds, `op`.
Operation *inBody(Block &body, Operation *op) {
  return body.findAncestorOpInBlock(*op);
}

/// Keeps in `latest` the later of itself and `candidate` in their block.
void keepLatest(Operation *&latest, Operation *candidate) {
  if (candidate && (!latest || latest->isBeforeInBlock(candidate)))
    latest = candidate;
}

/// Runs each AdamW update (and the convert that turns its gradient into the
/// master's type) as soon as the gradient is final, instead of after the
/// whole backward: the reverse sweep reaches the masters' converts last, so
/// every gradient, bf16 and then f32, would otherwise live until the end of
/// the backward (the whole parameter set in f32 at the optimizer's start).
/// An update writes its master in place (weft.alias), so it also waits for
/// every read of the master and of the values cast or viewed from it (the
/// bf16 weight copy): a recomputed copy goes before the copy's first
/// backward reader, hence before the update too.
void scheduleUpdatesEarly(Block &body, ArrayRef<AdamWOp> updates,
                          ArrayRef<Value> carriedCopies) {
  for (unsigned u = 0; u < updates.size(); ++u) {
    AdamWOp update = updates[u];
    Value carried = carriedCopies.empty() ? Value() : carriedCopies[u];
    // The gradient's casts and views that only this update reads, from the
    // backward value outwards.
    SmallVector<Operation *> chain;
    for (Value grad = update.getGrad(); Operation *def = grad.getDefiningOp();
         grad = def->getOperand(0)) {
      if (!isa<ConvertOp, ReshapeOp>(def) || !def->hasOneUse() ||
          def->getBlock() != &body)
        break;
      chain.push_back(def);
    }
    // The update computes in f32 whatever its operands' types (as the
    // reference does in f64), so a widening convert of the gradient only
    // adds a buffer twice the bf16 gradient's size: read the bf16 directly.
    if (!chain.empty())
      if (auto widen = dyn_cast<ConvertOp>(chain.front());
          widen && getElementTypeOrSelf(widen.getX().getType()).getIntOrFloatBitWidth() <
                       getElementTypeOrSelf(widen.getType()).getIntOrFloatBitWidth() &&
                   widen.getType() == update.getParam().getType()) {
        update.getGradMutable().assign(widen.getX());
        widen->erase();
        chain.erase(chain.begin());
      }
    for (Operation *op : llvm::reverse(chain))
      if (Operation *source = op->getOperand(0).getDefiningOp();
          source && source->getBlock() == &body)
        op->moveAfter(source);

    Operation *latest = nullptr;
    for (Value operand : update->getOperands())
      if (Operation *def = operand.getDefiningOp())
        keepLatest(latest, inBody(body, def));
    // Readers of the master and of its casts and views (and of its carried
    // copy, which the convert after the update overwrites in place).
    SmallVector<Value> derived{update.getParam()};
    if (carried)
      derived.push_back(carried);
    for (unsigned i = 0; i < derived.size(); ++i)
      for (Operation *user : derived[i].getUsers()) {
        Operation *reader = inBody(body, user);
        if (!reader || reader == update.getOperation() ||
            reader->hasTrait<OpTrait::IsTerminator>())
          continue;
        keepLatest(latest, reader);
        if (isa<ConvertOp, ReshapeOp, TransposeOp>(user))
          llvm::append_range(derived, user->getResults());
      }
    for (Value state : {update.getM(), update.getV()})
      for (Operation *user : state.getUsers())
        if (Operation *reader = inBody(body, user);
            reader && reader != update.getOperation() &&
            !reader->hasTrait<OpTrait::IsTerminator>())
          keepLatest(latest, reader);
    if (!latest)
      update->moveBefore(&body.front());
    else if (latest != update.getOperation())
      update->moveAfter(latest);
    // The carried copy's convert follows its update.
    if (carried)
      for (Operation *user : update.getNewParam().getUsers())
        if (isa<ConvertOp>(user) && user->getBlock() == &body)
          user->moveAfter(update);
  }
}

/// Converts each master right before the first op that reads its copy, not
/// all at the step's start: the forward then holds the copies of the layers
/// it has reached, not of every layer (the backward's copies are weft-remat's
/// to keep or convert again).
void convertMastersLate(Block &body, ArrayRef<Value> masters) {
  for (Value master : masters)
    for (Operation *copy : llvm::make_early_inc_range(master.getUsers())) {
      if (!isa<ConvertOp>(copy) || copy->getBlock() != &body)
        continue;
      Operation *first = nullptr;
      for (Operation *user : copy->getUsers())
        if (Operation *reader = inBody(body, user);
            reader && (!first || reader->isBeforeInBlock(first)))
          first = reader;
      if (first)
        copy->moveBefore(first);
    }
}

/// The i16 low half of a split master of `paramType`'s shape.
RankedTensorType lowHalfType(Type paramType) {
  auto tensor = cast<RankedTensorType>(paramType);
  return RankedTensorType::get(tensor.getShape(),
                               IntegerType::get(tensor.getContext(), 16));
}

/// The parts of @<entry>_step, built in order by buildStep: its signature,
/// the cloned forward, then (with an optimizer) the AdamW updates after the
/// backward. Argument layout with an optimizer: masters, m, v (numParams
/// each), the batch, the step number, the seed, then the carried copies.
class StepBuilder {
public:
  StepBuilder(func::FuncOp entry, const StepArguments &args, Optimizer optimizer,
              WeightCopies copies)
      : entry(entry), args(args), optimizer(optimizer), copies(copies),
        builder(entry.getContext()), entryTypes(entry.getArgumentTypes()),
        numParams(args.params.size()) {}

  /// Creates the step function after `entry`, with its entry block, and
  /// leaves the builder at the block's start.
  func::FuncOp createFunction(StringRef name,
                              const llvm::SmallDenseSet<int64_t> &convertedParams);
  /// Clones the forward into the step; returns the values to differentiate
  /// the loss by, one per parameter, and creates the step's return of it.
  SmallVector<Value> cloneForward();
  /// One AdamW update per parameter before the return; appends the new
  /// masters, moments and carried copies to `stepResults` with their aliases.
  void addAdamWUpdates(const AdamWSettings &adamw, ArrayRef<Value> gradients,
                       SmallVector<Value> &stepResults,
                       SmallVector<AdamWOp> &updates, SmallVector<Value> &carried);

  func::FuncOp step;
  Block *body = nullptr;
  Value loss;
  func::ReturnOp ret;
  /// (master index, copy argument index) of each carried copy.
  SmallVector<std::pair<unsigned, unsigned>> copyArgs;

private:
  DictionaryAttr attrsOf(unsigned i) {
    DictionaryAttr attrs = entry.getArgAttrDict(i);
    return attrs ? attrs : builder.getDictionaryAttr({});
  }
  /// A split master's slot holds its low half; its bf16 copy is the high half.
  bool isSplit(unsigned k) const {
    return copies == WeightCopies::Split &&
           getElementTypeOrSelf(entryTypes[args.params[k]]).isBF16();
  }

  func::FuncOp entry;
  const StepArguments &args;
  Optimizer optimizer;
  WeightCopies copies;
  OpBuilder builder;
  ArrayRef<Type> entryTypes;
  unsigned numParams;
};

func::FuncOp
StepBuilder::createFunction(StringRef name,
                            const llvm::SmallDenseSet<int64_t> &convertedParams) {
  builder.setInsertionPointAfter(entry);
  Type lossType = entry.getResultTypes()[0];
  auto scalarI64 = RankedTensorType::get({}, builder.getI64Type());
  bool carryCopies = copies != WeightCopies::Converted;
  SmallVector<Type> inputs, results{lossType};
  SmallVector<DictionaryAttr> inputAttrs;
  if (optimizer == Optimizer::None) {
    inputs.assign(entryTypes.begin(), entryTypes.end());
    for (unsigned i = 0; i < entry.getNumArguments(); ++i)
      inputAttrs.push_back(attrsOf(i));
    for (unsigned p : args.params)
      results.push_back(entryTypes[p]);
  } else {
    auto param = builder.getDictionaryAttr(
        builder.getNamedAttr(WeftDialect::kParamAttr, builder.getUnitAttr()));
    for (unsigned role = 0; role < 3; ++role)
      for (auto [k, p] : llvm::enumerate(args.params)) {
        inputs.push_back(role == 0 && isSplit(unsigned(k)) ? lowHalfType(entryTypes[p])
                                                            : masterType(entryTypes[p]));
        inputAttrs.push_back(role == 0 ? param : builder.getDictionaryAttr({}));
      }
    for (unsigned b : args.batch) {
      inputs.push_back(entryTypes[b]);
      inputAttrs.push_back(attrsOf(b));
    }
    // The AdamW step number counts from 1.
    inputs.push_back(scalarI64);
    inputAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        WeftDialect::kRangeAttr,
        builder.getDenseI64ArrayAttr({1, int64_t(1) << 31}))));
    inputs.push_back(scalarI64);
    inputAttrs.push_back(args.seed ? attrsOf(*args.seed)
                                   : builder.getDictionaryAttr({}));
    results.append(inputs.begin(), inputs.begin() + 3 * numParams);
    // Carried copies: one argument (and result) per narrower parameter.
    if (carryCopies)
      for (auto [k, p] : llvm::enumerate(args.params)) {
        if (masterType(entryTypes[p]) == entryTypes[p] ||
            convertedParams.contains(int64_t(k)))
          continue;
        copyArgs.push_back({unsigned(k), unsigned(inputs.size())});
        inputs.push_back(entryTypes[p]);
        inputAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
            WeftDialect::kCopyOfAttr, builder.getI64IntegerAttr(int64_t(k)))));
        results.push_back(entryTypes[p]);
      }
  }
  step = func::FuncOp::create(builder, entry.getLoc(), name,
                              builder.getFunctionType(inputs, results));
  step.setAllArgAttrs(inputAttrs);
  body = step.addEntryBlock();
  builder.setInsertionPointToStart(body);
  return step;
}

SmallVector<Value> StepBuilder::cloneForward() {
  // A parameter enters the forward converted from its master.
  IRMapping mapping;
  SmallVector<Value> wrt;
  if (optimizer == Optimizer::None) {
    mapping.map(entry.getArguments(), body->getArguments());
    for (unsigned p : args.params)
      wrt.push_back(body->getArgument(p));
  } else {
    llvm::DenseMap<unsigned, unsigned> copyOf(copyArgs.begin(), copyArgs.end());
    for (auto [k, p] : llvm::enumerate(args.params)) {
      Value master = body->getArgument(k);
      Value forward = master;
      if (auto it = copyOf.find(unsigned(k)); it != copyOf.end()) {
        // The forward reads the carried copy: the gradient is the copy's
        // own, in its type (AdamW reads it as is).
        forward = body->getArgument(it->second);
        wrt.push_back(forward);
      } else {
        wrt.push_back(master);
        if (master.getType() != entryTypes[p])
          forward = ConvertOp::create(builder, entry.getArgument(p).getLoc(),
                                      entryTypes[p], master);
      }
      mapping.map(entry.getArgument(p), forward);
    }
    for (auto [j, b] : llvm::enumerate(args.batch))
      mapping.map(entry.getArgument(b), body->getArgument(3 * numParams + j));
    if (args.seed)
      mapping.map(entry.getArgument(*args.seed),
                  body->getArgument(3 * numParams + args.batch.size() + 1));
  }
  for (Operation &op : entry.front().without_terminator())
    builder.clone(op, mapping);
  Operation *entryReturn = entry.front().getTerminator();
  loss = mapping.lookupOrDefault(entryReturn->getOperand(0));
  ret = func::ReturnOp::create(builder, entryReturn->getLoc(), loss);
  return wrt;
}

void StepBuilder::addAdamWUpdates(const AdamWSettings &adamw,
                                  ArrayRef<Value> gradients,
                                  SmallVector<Value> &stepResults,
                                  SmallVector<AdamWOp> &updates,
                                  SmallVector<Value> &carried) {
  builder.setInsertionPoint(ret);
  Value stepNumber = body->getArgument(3 * numParams + args.batch.size());
  SmallVector<Value> newParams, newM, newV;
  llvm::DenseMap<unsigned, unsigned> copyOf(copyArgs.begin(), copyArgs.end());
  for (unsigned k = 0; k < numParams; ++k) {
    Value master = body->getArgument(k);
    Type type = master.getType(), stateType = body->getArgument(numParams + k).getType();
    // A split master updates its halves: the bf16 copy argument (high) and
    // the master slot (low).
    Value param = master, low;
    Type lowType;
    if (isSplit(k)) {
      param = body->getArgument(copyOf.lookup(k));
      low = master;
      lowType = type;
      type = param.getType();
    }
    auto update = AdamWOp::create(
        builder, master.getLoc(), type, stateType, stateType, lowType, param,
        gradients[k], body->getArgument(numParams + k),
        body->getArgument(2 * numParams + k), stepNumber, low,
        builder.getF64FloatAttr(adamw.lr),
        builder.getF64FloatAttr(adamw.beta1), builder.getF64FloatAttr(adamw.beta2),
        builder.getF64FloatAttr(adamw.eps),
        builder.getF64FloatAttr(adamw.weightDecay));
    updates.push_back(update);
    newParams.push_back(isSplit(k) ? update.getNewParamLow() : update.getNewParam());
    newM.push_back(update.getNewM());
    newV.push_back(update.getNewV());
  }
  llvm::append_range(stepResults, newParams);
  llvm::append_range(stepResults, newM);
  llvm::append_range(stepResults, newV);
  // Result 1 + i updates argument i (params, then m, then v).
  for (unsigned i = 0; i < 3 * numParams; ++i)
    step.setResultAttr(1 + i, WeftDialect::kAliasAttr, builder.getI64IntegerAttr(i));
  // Each carried copy: the new master converted, written over the copy;
  // a split master's high half as its update wrote it.
  for (auto [k, arg] : copyArgs) {
    Value copy = body->getArgument(arg);
    stepResults.push_back(isSplit(k) ? updates[k].getNewParam()
                                     : Value(ConvertOp::create(builder, copy.getLoc(),
                                                               copy.getType(), newParams[k])));
    carried[k] = copy;
    step.setResultAttr(unsigned(stepResults.size() - 1), WeftDialect::kAliasAttr,
                       builder.getI64IntegerAttr(arg));
  }
}

/// Builds @<entry>_step after `entry`; on failure nothing is left behind.
FailureOr<func::FuncOp> buildStep(func::FuncOp entry, StringRef name,
                                  const StepArguments &args, Optimizer optimizer,
                                  const AdamWSettings &adamw,
                                  WeightCopies copies, int64_t gemmWorkspace,
                                  const llvm::SmallDenseSet<int64_t> &convertedParams) {
  StepBuilder parts(entry, args, optimizer, copies);
  func::FuncOp step = parts.createFunction(name, convertedParams);
  Block *body = parts.body;
  unsigned numParams = args.params.size();
  SmallVector<Value> wrt = parts.cloneForward();

  // The backward.
  FailureOr<SmallVector<Value>> gradients =
      GradientState::buildGradients(*body, parts.loss, wrt);
  if (failed(gradients)) {
    step.erase();
    return failure();
  }
  SmallVector<Value> stepResults{parts.loss};
  SmallVector<AdamWOp> updates;
  // Per parameter: its carried copy argument, if any.
  SmallVector<Value> carried(parts.copyArgs.empty() ? 0 : numParams);
  if (optimizer == Optimizer::None) {
    stepResults.append(gradients->begin(), gradients->end());
  } else
    parts.addAdamWUpdates(adamw, *gradients, stepResults, updates, carried);
  parts.ret->setOperands(stepResults);
  if (optimizer == Optimizer::None)
    for (size_t i = 0; i < gradients->size(); ++i)
      step.setResultAttr(unsigned(1 + i), WeftDialect::kGradOfAttr,
                         Builder(entry.getContext()).getI64IntegerAttr(args.params[i]));
  eraseDeadOps(*body);
  if (optimizer != Optimizer::None)
    convertMastersLate(*body, SmallVector<Value>(
                                  body->getArguments().take_front(numParams)));
  scheduleUpdatesEarly(*body, updates, carried);
  if (gemmWorkspace > 0)
    step->setAttr(WeftDialect::kGemmWorkspaceAttr,
                  Builder(entry.getContext()).getI64IntegerAttr(gemmWorkspace));
  return step;
}

struct AutodiffPass : public weft::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerGradientOpModels(registry);
  }

  /// The AdamW options, checked as the adamw verifier would.
  LogicalResult checkAdamW(ModuleOp module) {
    auto finiteAtLeastZero = [](double x) { return x >= 0.0 && std::isfinite(x); };
    auto fail = [&](StringRef name, double value, StringRef expected) {
      return module.emitError("weft-autodiff: option ")
             << name << " = " << value << " must be " << expected;
    };
    if (!finiteAtLeastZero(lr))
      return fail("lr", lr, "finite and >= 0");
    if (!finiteAtLeastZero(weightDecay))
      return fail("weight-decay", weightDecay, "finite and >= 0");
    if (!(beta1 >= 0.0 && beta1 < 1.0))
      return fail("beta1", beta1, "in [0, 1)");
    if (!(beta2 >= 0.0 && beta2 < 1.0))
      return fail("beta2", beta2, "in [0, 1)");
    if (!(eps > 0.0 && std::isfinite(eps)))
      return fail("eps", eps, "positive and finite");
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Optimizer> parsed = parseOptimizer(optimizer);
    if (!parsed) {
      module.emitError("weft-autodiff: unknown optimizer '")
          << optimizer << "' (expected none or adamw)";
      return signalPassFailure();
    }
    Optimizer kind = *parsed;
    if (kind == Optimizer::AdamW && failed(checkAdamW(module)))
      return signalPassFailure();
    auto entryFn = module.lookupSymbol<func::FuncOp>(entry);
    if (!entryFn) {
      module.emitError("weft-autodiff: no function @")
          << entry << " to differentiate (set the entry option)";
      return signalPassFailure();
    }
    std::string stepName = entry + "_step";
    if (Operation *existing = module.lookupSymbol(stepName)) {
      existing->emitOpError("is named @")
          << stepName << ", the name weft-autodiff gives the step of @" << entry;
      return signalPassFailure();
    }
    if (failed(verifyEntry(entryFn)))
      return signalPassFailure();
    // Only the optimizer's signature separates the seed from the batch.
    std::optional<unsigned> seed;
    if (kind == Optimizer::AdamW) {
      FailureOr<std::optional<unsigned>> found = findSeed(entryFn);
      if (failed(found))
        return signalPassFailure();
      seed = *found;
    }
    StepArguments args = classifyArguments(entryFn, seed);
    AdamWSettings adamw{lr, beta1, beta2, eps, weightDecay};
    if (gemmWorkspace < 0) {
      module.emitError("weft-autodiff: option gemm-workspace = ")
          << int64_t(gemmWorkspace) << " must be >= 0 bytes";
      return signalPassFailure();
    }
    // A typed option (PassOptions.h): its parser accepted only these three.
    WeightCopies copies = weightCopies;
    bool carryCopies = copies != WeightCopies::Converted;
    if (carryCopies && kind != Optimizer::AdamW) {
      module.emitError("weft-autodiff: weight-copies=")
          << stringifyWeightCopies(copies)
          << " needs optimizer=adamw (the update writes the copies)";
      return signalPassFailure();
    }
    // Split masters hold a bf16 high half: an f16 parameter has none.
    if (copies == WeightCopies::Split)
      for (auto [k, p] : llvm::enumerate(args.params))
        if (getElementTypeOrSelf(entryFn.getArgumentTypes()[p]).isF16()) {
          mlir::emitError(entryFn.getArgument(p).getLoc(), "weft-autodiff: weight-copies=split "
                          "keeps a bf16 high half of each f32 master, but parameter ")
              << k << " (argument " << p << ") is " << entryFn.getArgumentTypes()[p]
              << "; use carried or converted copies for f16";
          return signalPassFailure();
        }
    llvm::SmallDenseSet<int64_t> converted;
    for (int64_t k : convertedParams) {
      if (k < 0 || k >= int64_t(args.params.size())) {
        module.emitError("weft-autodiff: converted-params names parameter ")
            << k << ", but @" << entry.getValue() << " has " << args.params.size()
            << " parameters (weft.param arguments, counted from 0)";
        return signalPassFailure();
      }
      converted.insert(k);
    }
    if (!converted.empty() && copies != WeightCopies::Carried) {
      module.emitError("weft-autodiff: converted-params keeps some copies "
                       "converted among carried ones; it needs weight-copies=carried");
      return signalPassFailure();
    }
    if (failed(buildStep(entryFn, stepName, args, kind, adamw, copies,
                         gemmWorkspace, converted)))
      return signalPassFailure();
  }
};

} // namespace
