// Schedule and liveness of a function's body (see Liveness.h for the rules):
// one walk over ops and uses, a union-find for views and in-place updates,
// then lifetimes and categories per buffer.
#include "weft/Analysis/Liveness.h"

#include "weft/Analysis/LinkModel.h"


#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <set>

using namespace mlir;
using namespace weft;

/// The result attribute autodiff writes on in-place updates.
static constexpr llvm::StringLiteral kAliasAttrName = WeftDialect::kAliasAttr;

StringRef weft::getBufferCategoryName(BufferCategory category) {
  // In BufferCategory's order (Liveness.h).
  static constexpr llvm::StringLiteral names[kNumBufferCategories] = {
      "parameters",        "optimizer_state", "inputs",    "gradients",
      "saved_activations", "temporaries",     "workspaces"};
  assert(unsigned(category) < kNumBufferCategories && "unknown buffer category");
  return names[unsigned(category)];
}

namespace weft {

/// Builds a ScheduleLiveness; one instance per compute() call.
class LivenessBuilder {
public:
  LivenessBuilder(ScheduleLiveness &result, func::FuncOp func)
      : result(result), func(func) {}

  LogicalResult build();

private:
  struct ValueState {
    Value value;
    int64_t size = 0;
    int64_t defStep = 0;
    int64_t lastUse = 0;
    int64_t firstUse = -1; // the first step reading it, -1 when none
    int64_t lastNonReturnUse = -1;
    Operation *lastUser = nullptr;
    unsigned parent = 0; // union-find
  };

  LogicalResult registerValue(Value value, int64_t step, Location loc,
                              StringRef what);
  /// A collective runs beside the compute stream until the first step that
  /// reads its result: its operands stay live until then.
  void extendCollectiveOperands();
  unsigned find(unsigned id) {
    while (states[id].parent != id) {
      states[id].parent = states[states[id].parent].parent;
      id = states[id].parent;
    }
    return id;
  }
  /// Keeps the earlier-registered id as the root, so a class's root is its
  /// first member (an argument, or the op result that writes the bytes).
  void unite(unsigned a, unsigned b) {
    a = find(a);
    b = find(b);
    if (a == b)
      return;
    if (b < a)
      std::swap(a, b);
    states[b].parent = a;
  }
  LogicalResult tieAliases();
  bool readByOtherThan(Value value, Operation *writer);
  void computeBackwardStart();
  void buildBuffers();
  LogicalResult markBound();
  void classify();

  ScheduleLiveness &result;
  func::FuncOp func;
  SmallVector<ValueState> states;
  llvm::DenseMap<Value, unsigned> ids;
  /// Per class root: the argument index tied to it by weft.alias, if any.
  llvm::DenseMap<unsigned, unsigned> tiedArgument;
  /// Ops writing a weft.alias result (the optimizer updates).
  llvm::SmallPtrSet<Operation *, 8> aliasWriters;
  std::set<unsigned> persistentArgs;
  int64_t lastStep = 0;
  int64_t totalBytes = 0;
  static constexpr int64_t kMaxArenaBytes = int64_t(1) << 60;
};

} // namespace weft

LogicalResult LivenessBuilder::registerValue(Value value, int64_t step,
                                             Location loc, StringRef what) {
  if (!isa<TensorType>(value.getType()))
    return success();
  auto tensor = dyn_cast<RankedTensorType>(value.getType());
  if (!tensor || !tensor.hasStaticShape())
    return emitError(loc) << "weft liveness: " << what << " has type "
                          << value.getType()
                          << "; only statically shaped tensors can be planned";
  if (!tensor.getElementType().isIntOrFloat())
    return emitError(loc) << "weft liveness: " << what << " has type "
                          << value.getType()
                          << "; only integer and floating-point elements have "
                             "a size";
  int64_t size = tensorBytes(tensor);
  // The arena's arithmetic stays far from int64 overflow.
  totalBytes += size;
  if (size < 0 || size > kMaxArenaBytes || totalBytes > kMaxArenaBytes)
    return emitError(loc) << "weft liveness: " << what << " (" << value.getType()
                          << ") brings the function's tensors past 2^60 "
                             "bytes; cannot plan them";
  unsigned id = states.size();
  ValueState state;
  state.value = value;
  state.size = size;
  state.defStep = state.lastUse = step;
  state.parent = id;
  states.push_back(state);
  ids[value] = id;
  return success();
}

LogicalResult LivenessBuilder::build() {
  result.function = func;
  if (func.isExternal())
    return func.emitOpError("weft liveness expects a function with a body");
  Region &body = func.getBody();
  if (!llvm::hasSingleElement(body))
    return func.emitOpError("weft liveness expects a straight-line body of "
                            "one block, got ")
           << body.getBlocks().size() << " blocks";
  Block &block = body.front();
  for (Operation &op : block) {
    result.stepOf[&op] = result.schedule.size();
    result.schedule.push_back(&op);
  }
  lastStep = int64_t(result.schedule.size()) - 1;

  for (BlockArgument arg : block.getArguments())
    if (failed(registerValue(arg, 0, func.getLoc(),
                             "argument " + std::to_string(arg.getArgNumber()))))
      return failure();
  for (auto [step, op] : llvm::enumerate(result.schedule))
    for (OpResult value : op->getResults())
      if (failed(registerValue(value, step, op->getLoc(),
                               "result " + std::to_string(value.getResultNumber()))))
        return failure();

  // Uses, including those inside nested regions, count at the body op's step.
  for (auto [step, op] : llvm::enumerate(result.schedule)) {
    bool isReturn = op->hasTrait<OpTrait::IsTerminator>();
    op->walk([&, step = int64_t(step), op = op](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        auto it = ids.find(operand);
        if (it == ids.end())
          continue;
        ValueState &state = states[it->second];
        if (state.firstUse < 0 || step < state.firstUse)
          state.firstUse = step;
        if (step >= state.lastUse) {
          state.lastUse = step;
          state.lastUser = op;
        }
        if (!isReturn)
          state.lastNonReturnUse = std::max(state.lastNonReturnUse, step);
      }
    });
  }

  // Views share their operands' buffer (BufferViewOpInterface): reshapes,
  // and the split / concat around attention that the kernels read and write
  // packed.
  for (Operation *op : result.schedule) {
    if (!isBufferView(op))
      continue;
    Value root = op->getOperand(0);
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
      unite(ids.lookup(root), ids.lookup(value));
  }

  extendCollectiveOperands();
  for (BlockArgument arg : block.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), WeftDialect::kParamAttr) &&
        ids.count(arg))
      persistentArgs.insert(arg.getArgNumber());
  if (failed(tieAliases()))
    return failure();
  computeBackwardStart();
  buildBuffers();
  if (failed(markBound()))
    return failure();
  classify();
  return success();
}

/// The op whose result `value` views (through reshapes), or null.
static Operation *chunkedGemmOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isBufferView(def) || def->getNumOperands() != 1)
      return def;
    value = def->getOperand(0);
  }
  return nullptr;
}

void LivenessBuilder::extendCollectiveOperands() {
  for (auto [step, op] : llvm::enumerate(result.schedule)) {
    if (!isCommunicating(op) || op->getNumResults() != 1)
      continue;
    auto resultIt = ids.find(op->getResult(0));
    if (resultIt == ids.end())
      continue;
    // The first step reading the result's buffer (it or a view of it).
    unsigned root = find(resultIt->second);
    int64_t wait = lastStep;
    for (unsigned id = 0; id < states.size(); ++id)
      if (states[id].firstUse > int64_t(step) && find(id) == root)
        wait = std::min(wait, states[id].firstUse);
    result.collectiveWaits[op] = wait;
    for (Value operand : op->getOperands())
      if (auto it = ids.find(operand); it != ids.end())
        states[it->second].lastUse = std::max(states[it->second].lastUse, wait);
    // A chunked reduce-scatter (weft-collective-matmul) writes its first
    // chunks while its GEMM still runs: its result lives from the GEMM on.
    if (op->hasAttr(WeftDialect::kChunksAttr) && op->getNumOperands() == 1)
      if (Operation *gemm = chunkedGemmOf(op->getOperand(0)))
        states[resultIt->second].defStep =
            std::min(states[resultIt->second].defStep, result.stepOf.lookup(gemm));
  }
}

LogicalResult LivenessBuilder::tieAliases() {
  Block &block = func.getBody().front();
  Operation *terminator = block.getTerminator();
  unsigned numArgs = block.getNumArguments();
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    Attribute attr = func.getResultAttr(i, kAliasAttrName);
    if (!attr)
      continue;
    auto index = dyn_cast<IntegerAttr>(attr);
    if (!index)
      return func.emitOpError("expects '")
             << kAliasAttrName << "' on result " << i
             << " to be an integer argument index, got " << attr;
    int64_t j = index.getInt();
    if (j < 0 || j >= int64_t(numArgs))
      return func.emitOpError("'")
             << kAliasAttrName << "' on result " << i << " names argument "
             << j << ", but the function has " << numArgs << " arguments";
    if (i >= terminator->getNumOperands())
      return terminator->emitOpError("returns ")
             << terminator->getNumOperands() << " values, but the function "
             << "ties result " << i << " with '" << kAliasAttrName << "'";
    Value argument = block.getArgument(j);
    Value updated = terminator->getOperand(i);
    auto argIt = ids.find(argument), updIt = ids.find(updated);
    if (argIt == ids.end() || updIt == ids.end())
      return func.emitOpError("'")
             << kAliasAttrName << "' ties result " << i << " to argument " << j
             << ", but both must be tensors; got " << updated.getType()
             << " and " << argument.getType();
    if (states[argIt->second].size != states[updIt->second].size)
      return func.emitOpError("'")
             << kAliasAttrName << "' ties result " << i << " ("
             << states[updIt->second].size << " bytes, " << updated.getType()
             << ") to argument " << j << " (" << states[argIt->second].size
             << " bytes, " << argument.getType() << "); sizes must match";
    unsigned argRoot = find(argIt->second), updRoot = find(updIt->second);
    persistentArgs.insert(j);
    if (argRoot == updRoot) // returned unchanged (or a view of itself)
      continue;
    if (tiedArgument.count(argRoot))
      return func.emitOpError("argument ")
             << j << " is tied by '" << kAliasAttrName
             << "' to more than one result (again by result " << i << ")";
    if (tiedArgument.count(updRoot))
      return func.emitOpError("result ")
             << i << " is tied by '" << kAliasAttrName
             << "' to two arguments: " << tiedArgument.lookup(updRoot)
             << " and " << j;
    Value updRootValue = states[updRoot].value;
    if (auto other = dyn_cast<BlockArgument>(updRootValue))
      return func.emitOpError("'")
             << kAliasAttrName << "' ties result " << i << " to argument " << j
             << ", but the result is argument " << other.getArgNumber()
             << " (or a view of it), not an update of argument " << j;
    // The update writes the argument's bytes at its root's step; reading the
    // old value later (the writer itself may read it) would see new data.
    int64_t writeStep = states[updRoot].defStep;
    for (ValueState &state : states) {
      if (find(&state - states.data()) != argRoot || state.lastUse <= writeStep)
        continue;
      InFlightDiagnostic diag = func.emitOpError("argument ")
                                << j << " is updated in place by result " << i
                                << " (weft.alias) at step " << writeStep
                                << " but read at step " << state.lastUse;
      diag.attachNote(states[updRoot].value.getLoc()) << "updated here";
      if (state.lastUser)
        diag.attachNote(state.lastUser->getLoc()) << "read here";
      return diag;
    }
    tiedArgument[argRoot] = j;
    tiedArgument[updRoot] = j;
    aliasWriters.insert(updRootValue.getDefiningOp());
    unite(argRoot, updRoot);
  }
  return success();
}

/// A gradient op, or a weft.fused group holding one.
static bool isGradientOp(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return nested->getName().stripDialect().ends_with("_grad")
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

int64_t weft::findBackwardStart(func::FuncOp func) {
  if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
    return 0;
  Block &block = func.getBody().front();
  llvm::DenseMap<Operation *, int64_t> stepOf;
  int64_t numSteps = 0;
  int64_t start = -1;
  for (Operation &op : block) {
    if (start < 0 && isGradientOp(&op))
      start = numSteps;
    stepOf[&op] = numSteps++;
  }
  if (start < 0)
    start = numSteps;
  int64_t lastStep = numSteps - 1;
  Operation *terminator = block.empty() ? nullptr : &block.back();
  for (unsigned i = 0, e = func.getNumResults(); terminator && i < e; ++i) {
    if (func.getResultAttr(i, kAliasAttrName) ||
        i >= terminator->getNumOperands())
      continue;
    Value value = terminator->getOperand(i);
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || type.getRank() != 0 || !isa<FloatType>(type.getElementType()))
      continue;
    if (Operation *def = value.getDefiningOp()) {
      int64_t next = stepOf.lookup(def) + 1;
      // A loss followed only by the return has no backward.
      if (next < lastStep)
        start = std::min(start, next);
    }
    break;
  }
  return start;
}

void LivenessBuilder::computeBackwardStart() {
  result.backwardStart = findBackwardStart(func);
}

void LivenessBuilder::buildBuffers() {
  llvm::DenseMap<unsigned, unsigned> bufferOfRoot;
  auto addValue = [&](unsigned id) {
    unsigned root = find(id);
    auto [it, inserted] = bufferOfRoot.try_emplace(root, result.buffers.size());
    if (inserted) {
      LiveBuffer buffer;
      buffer.start = states[id].defStep;
      buffer.end = states[id].lastUse;
      result.buffers.push_back(buffer);
    }
    LiveBuffer &buffer = result.buffers[it->second];
    const ValueState &state = states[id];
    buffer.values.push_back(state.value);
    buffer.size = std::max(buffer.size, state.size);
    buffer.start = std::min(buffer.start, state.defStep);
    buffer.end = std::max(buffer.end, state.lastUse);
    result.values[state.value] = {state.size, state.defStep, state.lastUse,
                                  it->second};
  };
  // Ids are registered arguments first, then results in schedule order, so
  // this visits buffers in the documented order.
  unsigned id = 0;
  Block &block = func.getBody().front();
  for (; id < states.size() && isa<BlockArgument>(states[id].value); ++id)
    addValue(id);
  for (auto [step, op] : llvm::enumerate(result.schedule)) {
    for (; id < states.size() && states[id].value.getDefiningOp() == op; ++id)
      addValue(id);
    auto memory = dyn_cast<MemoryOpInterface>(op);
    int64_t workspace = memory ? memory.getWorkspaceBytes() : 0;
    if (workspace > 0) {
      LiveBuffer buffer;
      buffer.size = workspace;
      buffer.start = buffer.end = step;
      buffer.category = BufferCategory::Workspace;
      buffer.workspaceOf = op;
      result.workspaces[op] = result.buffers.size();
      result.buffers.push_back(buffer);
    }
  }
  // The persistent training state lives through the whole step.
  for (unsigned j : persistentArgs)
    result.buffers[result.values.lookup(block.getArgument(j)).buffer].end =
        lastStep;
}

/// Arguments marked weft.bound keep their bytes in the caller's memory: their
/// buffer must hold nothing the step writes there except the argument's own
/// in-place update (views only read it).
LogicalResult LivenessBuilder::markBound() {
  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments()) {
    if (!func.getArgAttr(arg.getArgNumber(), kBoundAttrName))
      continue;
    std::optional<unsigned> index = result.lookupBuffer(arg);
    if (!index)
      continue;
    LiveBuffer &buffer = result.buffers[*index];
    for (Value value : buffer.values) {
      if (value == arg)
        continue;
      Operation *def = value.getDefiningOp();
      if (def && (isBufferView(def) || aliasWriters.contains(def)))
        continue;
      InFlightDiagnostic diag =
          func.emitOpError("argument ")
          << arg.getArgNumber() << " is bound by the caller ('"
          << kBoundAttrName << "'), but its buffer also holds ";
      if (auto other = dyn_cast<BlockArgument>(value))
        diag << "argument " << other.getArgNumber();
      else
        diag << "a result of " << def->getName() << ", written into the caller's memory";
      if (def)
        diag.attachNote(def->getLoc()) << "written here";
      return diag;
    }
    buffer.bound = true;
  }
  return success();
}

bool LivenessBuilder::readByOtherThan(Value value, Operation *writer) {
  for (Operation *user : value.getUsers()) {
    int64_t step = result.getStep(user);
    if (step < 0)
      continue;
    Operation *top = result.schedule[step];
    if (top == writer || top->hasTrait<OpTrait::IsTerminator>())
      continue;
    // A view is read where its results are.
    if (isBufferView(top)) {
      if (llvm::any_of(top->getResults(),
                       [&](Value view) { return readByOtherThan(view, writer); }))
        return true;
      continue;
    }
    return true;
  }
  return false;
}

void LivenessBuilder::classify() {
  Block &block = func.getBody().front();
  Operation *terminator = block.getTerminator();
  int64_t backward = result.backwardStart;
  llvm::DenseSet<unsigned> returnedPlain, optimizerOperands;
  for (unsigned i = 0, e = terminator->getNumOperands(); i < e; ++i)
    if (i >= func.getNumResults() || !func.getResultAttr(i, kAliasAttrName))
      if (auto it = result.values.find(terminator->getOperand(i));
          it != result.values.end())
        returnedPlain.insert(it->second.buffer);
  for (Operation *writer : aliasWriters)
    for (Value operand : writer->getOperands())
      if (auto it = result.values.find(operand); it != result.values.end())
        optimizerOperands.insert(it->second.buffer);

  for (auto [index, buffer] : llvm::enumerate(result.buffers)) {
    if (buffer.workspaceOf)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(buffer.values.front())) {
      unsigned j = arg.getArgNumber();
      bool tied = persistentArgs.count(j) &&
                  !func.getArgAttr(j, WeftDialect::kParamAttr);
      if (!tied) {
        buffer.category = persistentArgs.count(j) ? BufferCategory::Parameter
                                                  : BufferCategory::Input;
        continue;
      }
      // Tied without weft.param: a parameter when anything but its update
      // reads it, else optimizer state. The update is the writer of the
      // buffer's other root (the op result in the same buffer).
      Operation *writer = nullptr;
      for (Value value : buffer.values)
        if (Operation *def = value.getDefiningOp();
            def && aliasWriters.contains(def))
          writer = def;
      buffer.category = readByOtherThan(arg, writer)
                            ? BufferCategory::Parameter
                            : BufferCategory::OptimizerState;
      continue;
    }
    int64_t lastRead = -1;
    for (Value value : buffer.values)
      lastRead = std::max(lastRead, states[ids.lookup(value)].lastNonReturnUse);
    if (buffer.start >= backward &&
        (returnedPlain.contains(index) || optimizerOperands.contains(index)))
      buffer.category = BufferCategory::Gradient;
    else if (buffer.start < backward && lastRead >= backward)
      buffer.category = BufferCategory::SavedActivation;
    else
      buffer.category = BufferCategory::Temporary;
  }
}

FailureOr<ScheduleLiveness> ScheduleLiveness::compute(func::FuncOp func) {
  ScheduleLiveness liveness;
  LivenessBuilder builder(liveness, func);
  if (failed(builder.build()))
    return failure();
  return liveness;
}

int64_t ScheduleLiveness::getStep(Operation *op) const {
  Block *body = &func::FuncOp(function).getBody().front();
  while (op && op->getBlock() != body)
    op = op->getParentOp();
  if (!op)
    return -1;
  auto it = stepOf.find(op);
  return it == stepOf.end() ? -1 : it->second;
}

std::optional<unsigned> ScheduleLiveness::lookupBuffer(Value value) const {
  auto it = values.find(value);
  if (it == values.end())
    return std::nullopt;
  return it->second.buffer;
}

std::optional<unsigned> ScheduleLiveness::lookupWorkspace(Operation *op) const {
  auto it = workspaces.find(op);
  if (it == workspaces.end())
    return std::nullopt;
  return it->second;
}

std::optional<ValueLifetime>
ScheduleLiveness::getValueLifetime(Value value) const {
  auto it = values.find(value);
  if (it == values.end())
    return std::nullopt;
  return it->second;
}

SmallVector<unsigned> ScheduleLiveness::getLiveBuffers(int64_t step) const {
  SmallVector<unsigned> live;
  for (auto [index, buffer] : llvm::enumerate(buffers))
    if (buffer.isLiveAt(step))
      live.push_back(index);
  return live;
}

SmallVector<int64_t>
ScheduleLiveness::getLiveBytesPerStep(int64_t alignment) const {
  SmallVector<int64_t> bytes(getNumSteps() + 1, 0);
  for (const LiveBuffer &buffer : buffers) {
    int64_t size = alignTo(buffer.arenaSize(), alignment);
    bytes[buffer.start] += size;
    bytes[buffer.end + 1] -= size;
  }
  for (int64_t step = 1; step < int64_t(bytes.size()); ++step)
    bytes[step] += bytes[step - 1];
  bytes.pop_back();
  return bytes;
}

MaxLive ScheduleLiveness::getMaxLive(int64_t alignment) const {
  return computeMaxLive(getIntervals(), alignment);
}

CategoryBytes ScheduleLiveness::getCategoryBytesAt(int64_t step,
                                                   int64_t alignment) const {
  CategoryBytes bytes{};
  for (const LiveBuffer &buffer : buffers)
    if (buffer.isLiveAt(step))
      bytes[unsigned(buffer.category)] += alignTo(buffer.arenaSize(), alignment);
  return bytes;
}

CategoryBytes ScheduleLiveness::getCategoryBytesTotal(int64_t alignment) const {
  CategoryBytes bytes{};
  for (const LiveBuffer &buffer : buffers)
    bytes[unsigned(buffer.category)] += alignTo(buffer.arenaSize(), alignment);
  return bytes;
}

int64_t ScheduleLiveness::getBoundBytes() const {
  int64_t bytes = 0;
  for (const LiveBuffer &buffer : buffers)
    if (buffer.bound)
      bytes += buffer.size;
  return bytes;
}

SmallVector<BufferInterval> ScheduleLiveness::getIntervals() const {
  SmallVector<BufferInterval> intervals;
  intervals.reserve(buffers.size());
  for (const LiveBuffer &buffer : buffers)
    intervals.push_back(buffer.interval());
  return intervals;
}

MemoryPlan weft::planMemory(const ScheduleLiveness &liveness,
                            const ArenaOptions &options) {
  MemoryPlan plan;
  plan.alignment = options.alignment;
  plan.arena = planArena(liveness.getIntervals(), options);
  plan.bytesAtPeak =
      liveness.getCategoryBytesAt(plan.arena.lowerBound.step, options.alignment);
  plan.bytesTotal = liveness.getCategoryBytesTotal(options.alignment);
  return plan;
}

Operation *weft::findBackwardStartOp(func::FuncOp func) {
  int64_t start = findBackwardStart(func);
  if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
    return nullptr;
  for (auto [step, op] : llvm::enumerate(func.getBody().front()))
    if (int64_t(step) == start)
      return &op;
  return nullptr;
}

FailureOr<PlannedPeak> weft::planPeak(func::FuncOp func, int64_t alignment) {
  FailureOr<ScheduleLiveness> liveness = ScheduleLiveness::compute(func);
  if (failed(liveness))
    return failure();
  ArenaOptions options;
  options.alignment = alignment;
  MemoryPlan plan = planMemory(*liveness, options);
  return PlannedPeak{plan.arena.lowerBound.bytes, plan.arena.peakBytes};
}
