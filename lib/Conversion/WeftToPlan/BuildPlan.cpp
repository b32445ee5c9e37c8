// weft-build-plan: a step planned by weft-plan-memory -> weft_plan.step. The
// buffers come from the shared schedule/liveness analysis with the offsets
// weft-plan-memory wrote on the IR; ScheduleBuilder (PlanEntries.cpp) makes
// the schedule entries.
#include "weft/Conversion/WeftToPlan/BuildPlan.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

#include "ScheduleBuilder.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FormatVariadic.h"

namespace weft {
#define GEN_PASS_DEF_BUILDPLANPASS
#include "weft/Conversion/WeftToPlan/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

pkg::Role roleOf(BufferCategory category) {
  switch (category) {
  case BufferCategory::Parameter:
    return pkg::Role::Parameter;
  case BufferCategory::OptimizerState:
    return pkg::Role::OptimizerState;
  case BufferCategory::Input:
    return pkg::Role::Input;
  case BufferCategory::Gradient:
    return pkg::Role::Gradient;
  case BufferCategory::SavedActivation:
    return pkg::Role::Activation;
  case BufferCategory::Temporary:
    return pkg::Role::Temporary;
  case BufferCategory::Workspace:
    return pkg::Role::Workspace;
  }
  return pkg::Role::Temporary;
}

/// The offset weft-plan-memory wrote for a buffer's root value or workspace.
FailureOr<int64_t> plannedOffset(func::FuncOp func, const LiveBuffer &buffer) {
  auto missing = [&](Operation *at, const Twine &what) {
    return at->emitError("cannot build the plan: ")
           << what << " has no arena offset; run weft-plan-memory first";
  };
  if (Operation *op = buffer.workspaceOf) {
    auto offset = op->getAttrOfType<IntegerAttr>(WeftDialect::kWorkspaceOffsetAttr);
    if (!offset)
      return missing(op, "the workspace of " + op->getName().getStringRef());
    return offset.getInt();
  }
  Value root = buffer.values.front();
  if (auto arg = dyn_cast<BlockArgument>(root)) {
    auto offset = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                     WeftDialect::kOffsetAttr);
    if (!offset)
      return missing(func, "argument " + Twine(arg.getArgNumber()));
    return offset.getInt();
  }
  auto result = cast<OpResult>(root);
  Operation *op = result.getOwner();
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(WeftDialect::kOffsetsAttr);
  if (!offsets || int64_t(result.getResultNumber()) >= offsets.size() ||
      offsets[result.getResultNumber()] < 0)
    return missing(op, "result " + Twine(result.getResultNumber()) + " of " +
                           op->getName().getStringRef());
  return offsets[result.getResultNumber()];
}

/// @arg3, @s20 / @s20_1 (results of the op at schedule index 20), @ws20.
std::string bufferName(const ScheduleLiveness &liveness, const LiveBuffer &buffer) {
  if (buffer.workspaceOf)
    return llvm::formatv("ws{0}", liveness.getStep(buffer.workspaceOf)).str();
  Value root = buffer.values.front();
  if (auto arg = dyn_cast<BlockArgument>(root))
    return llvm::formatv("arg{0}", arg.getArgNumber()).str();
  auto result = cast<OpResult>(root);
  std::string name =
      llvm::formatv("s{0}", liveness.getStep(result.getOwner())).str();
  if (result.getOwner()->getNumResults() > 1)
    name += llvm::formatv("_{0}", result.getResultNumber()).str();
  return name;
}

} // namespace

FailureOr<HostSchedule> weft::buildHostSchedule(func::FuncOp func,
                                                const BuildPlanOptions &options) {
  auto memoryPlan = func->getAttrOfType<DictionaryAttr>(WeftDialect::kMemoryPlanAttr);
  if (!memoryPlan)
    return func.emitError("cannot build the plan of @")
           << func.getSymName()
           << ": it has no weft.memory_plan; run weft-plan-memory first";
  auto peak = memoryPlan.getAs<IntegerAttr>("peak_bytes");
  auto alignment = memoryPlan.getAs<IntegerAttr>("alignment");
  if (!peak || !alignment)
    return func.emitError("weft.memory_plan lacks peak_bytes or alignment");
  FailureOr<ScheduleLiveness> liveness = ScheduleLiveness::compute(func);
  if (failed(liveness))
    return failure();

  // Callers outside a pass (weft-compile) may have only registered it.
  func.getContext()->getOrLoadDialect<plan::WeftPlanDialect>();
  OpBuilder builder(func.getContext());
  builder.setInsertionPointAfter(func);
  std::string name = (func.getSymName() + "_plan").str();
  auto step = plan::StepOp::create(
      builder, func.getLoc(), name, uint64_t(peak.getInt()),
      uint64_t(alignment.getInt()), options.arch, pkg::kFormatVersion,
      uint64_t(liveness->getNumSteps()), /*num_streams=*/1,
      /*grid=*/DenseI64ArrayAttr(), /*split_axis=*/IntegerAttr());
  // A partitioned step (weft-partition): every rank runs this one plan.
  if (auto gridName = func->getAttrOfType<FlatSymbolRefAttr>(WeftDialect::kGridAttr))
    if (auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(func, gridName)) {
      step.setGridAttr(builder.getDenseI64ArrayAttr(grid.getShape()));
      if (auto axis = func->getAttrOfType<IntegerAttr>(WeftDialect::kGridAxisAttr))
        step.setSplitAxisAttr(builder.getI64IntegerAttr(axis.getInt()));
    }
  step.getBody().emplaceBlock();
  auto fail = [&]() -> FailureOr<HostSchedule> {
    step.erase();
    return failure();
  };

  // Function results without weft.alias are the step's outputs.
  Operation *terminator = liveness->getSchedule().back();
  llvm::DenseMap<unsigned, int64_t> outputs;
  llvm::DenseMap<unsigned, Value> returned;
  for (auto [i, value] : llvm::enumerate(terminator->getOperands()))
    if (!func.getResultAttr(i, WeftDialect::kAliasAttr))
      if (std::optional<unsigned> buffer = liveness->lookupBuffer(value))
        if (outputs.try_emplace(*buffer, int64_t(i)).second)
          returned.try_emplace(*buffer, value);

  builder.setInsertionPointToEnd(&step.getBodyBlock());
  llvm::DenseMap<unsigned, FlatSymbolRefAttr> symbols;
  for (auto [index, buffer] : llvm::enumerate(liveness->getBuffers())) {
    FailureOr<int64_t> offset = plannedOffset(func, buffer);
    if (failed(offset))
      return fail();
    std::string bufferSymbol = bufferName(*liveness, buffer);
    pkg::Role role = roleOf(buffer.category);
    IntegerAttr arg, result, copyOf, splitDim;
    TypeAttr type;
    if (!buffer.values.empty()) {
      // The whole of a packed view's buffer (its concat, not dq).
      // An output's buffer has the type the function returns (a loss
      // summed as [1] and returned through a 0-d view is 0-d).
      Value whole = buffer.values.front();
      auto out = returned.find(unsigned(index));
      if (out != returned.end() &&
          liveness->getValueLifetime(out->second)->size == buffer.size)
        whole = out->second;
      else
        for (Value value : buffer.values)
          if (liveness->getValueLifetime(value)->size == buffer.size) {
            whole = value;
            break;
          }
      type = TypeAttr::get(whole.getType());
      if (auto blockArg = dyn_cast<BlockArgument>(buffer.values.front())) {
        arg = builder.getI64IntegerAttr(blockArg.getArgNumber());
        copyOf = func.getArgAttrOfType<IntegerAttr>(blockArg.getArgNumber(),
                                                    WeftDialect::kCopyOfAttr);
        splitDim = func.getArgAttrOfType<IntegerAttr>(blockArg.getArgNumber(),
                                                      WeftDialect::kSplitDimAttr);
      }
    }
    if (auto it = outputs.find(index); it != outputs.end()) {
      result = builder.getI64IntegerAttr(it->second);
      if (!splitDim)
        splitDim = func.getResultAttrOfType<IntegerAttr>(unsigned(it->second),
                                                         WeftDialect::kSplitDimAttr);
      if (role != pkg::Role::Parameter && role != pkg::Role::OptimizerState &&
          role != pkg::Role::Gradient)
        role = pkg::Role::Output;
    }
    // A bound argument lies in the caller's memory: no arena offset.
    auto planBuffer = plan::BufferOp::create(
        builder, func.getLoc(), bufferSymbol, buffer.bound ? 0 : uint64_t(*offset),
        uint64_t(buffer.size), uint64_t(buffer.start), uint64_t(buffer.end),
        pkg::roleName(role), type, arg, result, copyOf, splitDim);
    if (buffer.bound)
      planBuffer.setBound(true);
    symbols[index] = FlatSymbolRefAttr::get(builder.getContext(), bufferSymbol);
  }

  ScheduleBuilder entries(*liveness, options, step, std::move(symbols));
  bool failedAny = false;
  for (Operation *op : liveness->getSchedule().drop_back())
    failedAny |= failed(entries.addOp(op, liveness->getStep(op)));
  if (failedAny)
    return fail();
  if (entries.usesCommunicationStream())
    step.setNumStreams(2);
  return HostSchedule{step, std::move(entries.attentionImages),
                   std::move(entries.elementwiseImages)};
}

void weft::registerPlanDialect(DialectRegistry &registry) {
  registry.insert<plan::WeftPlanDialect>();
}

namespace {

struct BuildPlanPass : weft::impl::BuildPlanPassBase<BuildPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    BuildPlanOptions options;
    options.arch = arch;
    options.overlapCollectives = overlapCollectives;
    options.chooseTiles = [&](gpu::AttentionKernelConfig &config, bool) {
      config.blockQ = blockQ;
      config.blockK = blockK;
      config.warpgroupMma = warpgroupMma;
    };
    SmallVector<func::FuncOp> planned;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!function.empty() ? func.getSymName() == function
                            : bool(func->getAttr(WeftDialect::kMemoryPlanAttr)))
        planned.push_back(func);
    }
    if (!function.empty() && planned.empty()) {
      getOperation().emitError("weft-build-plan: no function named '")
          << function << "'";
      return signalPassFailure();
    }
    for (func::FuncOp func : planned)
      if (failed(buildHostSchedule(func, options)))
        return signalPassFailure();
  }
};

} // namespace
