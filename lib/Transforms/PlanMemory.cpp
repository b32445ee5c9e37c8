// weft-plan-memory: arena offsets for every tensor of each function from the
// shared schedule/liveness analysis and the arena planner, written back as
// attributes and, with report=FILE, as JSON.
#include "weft/Analysis/Liveness.h"
#include "weft/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace weft {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

constexpr llvm::StringLiteral kOffsetsAttr = WeftDialect::kOffsetsAttr;
constexpr llvm::StringLiteral kWorkspaceOffsetAttr =
    WeftDialect::kWorkspaceOffsetAttr;
constexpr llvm::StringLiteral kOffsetAttr = WeftDialect::kOffsetAttr;
constexpr llvm::StringLiteral kMemoryPlanAttr = WeftDialect::kMemoryPlanAttr;

/// The `weft.memory_plan` dictionary of one function.
DictionaryAttr buildMemoryPlanAttr(MLIRContext *ctx,
                                   const ScheduleLiveness &liveness,
                                   const MemoryPlan &plan) {
  Builder b(ctx);
  SmallVector<NamedAttribute> categories;
  for (unsigned c = 0; c < kNumBufferCategories; ++c) {
    NamedAttribute fields[] = {
        b.getNamedAttr("at_peak", b.getI64IntegerAttr(plan.bytesAtPeak[c])),
        b.getNamedAttr("total", b.getI64IntegerAttr(plan.bytesTotal[c]))};
    categories.push_back(b.getNamedAttr(
        getBufferCategoryName(BufferCategory(c)), b.getDictionaryAttr(fields)));
  }
  NamedAttribute entries[] = {
      b.getNamedAttr("alignment", b.getI64IntegerAttr(plan.alignment)),
      b.getNamedAttr("peak_bytes", b.getI64IntegerAttr(plan.arena.peakBytes)),
      b.getNamedAttr("lower_bound_bytes",
                     b.getI64IntegerAttr(plan.arena.lowerBound.bytes)),
      b.getNamedAttr("lower_bound_step",
                     b.getI64IntegerAttr(plan.arena.lowerBound.step)),
      b.getNamedAttr("fragmentation",
                     b.getF64FloatAttr(plan.arena.fragmentation())),
      b.getNamedAttr("backward_start",
                     b.getI64IntegerAttr(liveness.getBackwardStart())),
      b.getNamedAttr("strategy", b.getStringAttr(plan.arena.strategy)),
      b.getNamedAttr("categories", b.getDictionaryAttr(categories)),
  };
  SmallVector<NamedAttribute> fields(std::begin(entries), std::end(entries));
  // Arguments the caller binds (weft.bound): bytes outside the arena.
  if (int64_t bound = liveness.getBoundBytes())
    fields.push_back(b.getNamedAttr("bound_bytes", b.getI64IntegerAttr(bound)));
  return b.getDictionaryAttr(fields);
}

/// Writes offsets onto the IR: `weft.offset` on tensor arguments,
/// `weft.offsets` (-1 for a non-tensor result) and `weft.workspace_offset`
/// on ops, `weft.memory_plan` on the function.
void attachMemoryPlan(func::FuncOp func, const ScheduleLiveness &liveness,
                      const MemoryPlan &plan) {
  Builder b(func.getContext());
  auto offsetOf = [&](Value value) -> int64_t {
    std::optional<unsigned> buffer = liveness.lookupBuffer(value);
    return buffer ? plan.arena.offsets[*buffer] : -1;
  };
  for (BlockArgument arg : func.getArguments())
    if (liveness.lookupBuffer(arg))
      func.setArgAttr(arg.getArgNumber(), kOffsetAttr,
                      b.getI64IntegerAttr(offsetOf(arg)));
  for (Operation *op : liveness.getSchedule()) {
    SmallVector<int64_t> offsets;
    bool anyTensor = false;
    for (Value result : op->getResults()) {
      offsets.push_back(offsetOf(result));
      anyTensor |= offsets.back() >= 0;
    }
    if (anyTensor)
      op->setAttr(kOffsetsAttr, b.getDenseI64ArrayAttr(offsets));
    else
      op->removeAttr(kOffsetsAttr);
    if (std::optional<unsigned> ws = liveness.lookupWorkspace(op))
      op->setAttr(kWorkspaceOffsetAttr,
                  b.getI64IntegerAttr(plan.arena.offsets[*ws]));
    else
      op->removeAttr(kWorkspaceOffsetAttr);
  }
  func->setAttr(kMemoryPlanAttr,
                buildMemoryPlanAttr(func.getContext(), liveness, plan));
}

/// How a buffer is named in the report: its root value as the printer names
/// it (%argN, %N, %N#i), or "workspace of <op> at step N".
std::string describeBuffer(const ScheduleLiveness &liveness,
                           const LiveBuffer &buffer, AsmState &asmState) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (buffer.workspaceOf) {
    os << "workspace of " << buffer.workspaceOf->getName() << " at step "
       << liveness.getStep(buffer.workspaceOf);
    return text;
  }
  buffer.values.front().printAsOperand(os, asmState);
  return text;
}

void writeFunctionReport(llvm::json::OStream &json, const ScheduleLiveness &liveness,
                         const MemoryPlan &plan) {
  json.attribute("peak_bytes", plan.arena.peakBytes);
  json.attribute("lower_bound_bytes", plan.arena.lowerBound.bytes);
  json.attribute("lower_bound_step", plan.arena.lowerBound.step);
  json.attribute("fragmentation", plan.arena.fragmentation());
  json.attribute("alignment", plan.alignment);
  json.attribute("strategy", plan.arena.strategy);
  if (int64_t bound = liveness.getBoundBytes())
    json.attribute("bound_bytes", bound);
  json.attribute("num_steps", liveness.getNumSteps());
  json.attribute("backward_start", liveness.getBackwardStart());
  json.attributeObject("categories", [&] {
    for (unsigned c = 0; c < kNumBufferCategories; ++c)
      json.attributeObject(getBufferCategoryName(BufferCategory(c)), [&] {
        json.attribute("at_peak", plan.bytesAtPeak[c]);
        json.attribute("total", plan.bytesTotal[c]);
      });
  });
  AsmState asmState(liveness.getFunction());
  json.attributeArray("buffers", [&] {
    for (auto [index, buffer] : llvm::enumerate(liveness.getBuffers()))
      json.object([&, &buffer = buffer, index = index] {
        json.attribute("value", describeBuffer(liveness, buffer, asmState));
        json.attribute("offset", plan.arena.offsets[index]);
        json.attribute("size", buffer.size);
        json.attribute("start", buffer.start);
        json.attribute("end", buffer.end);
        json.attribute("category", getBufferCategoryName(buffer.category));
        if (buffer.bound)
          json.attribute("bound", true);
      });
  });
}

struct PlanMemoryPass : weft::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment < 1 || alignment > (int64_t(1) << 32) ||
        (alignment & (alignment - 1)) != 0) {
      module.emitError("weft-plan-memory expects a power-of-two alignment of "
                       "at most 2^32, got ")
          << alignment.getValue();
      return signalPassFailure();
    }
    struct Planned {
      func::FuncOp func;
      ScheduleLiveness liveness;
      MemoryPlan plan;
    };
    std::vector<Planned> planned;
    bool foundEntry = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || (!entry.empty() && func.getSymName() != entry))
        continue;
      foundEntry = true;
      FailureOr<ScheduleLiveness> liveness = ScheduleLiveness::compute(func);
      if (failed(liveness))
        return signalPassFailure();
      ArenaOptions options;
      options.alignment = alignment;
      MemoryPlan plan = planMemory(*liveness, options);
      // The planner's own promise, checked: a conflict here is a planner bug.
      if (std::optional<std::string> conflict = findPlacementConflict(
              liveness->getIntervals(), plan.arena.offsets, alignment,
              plan.arena.peakBytes)) {
        func.emitOpError("weft-plan-memory produced an invalid plan: ")
            << *conflict;
        return signalPassFailure();
      }
      attachMemoryPlan(func, *liveness, plan);
      planned.push_back({func, std::move(*liveness), std::move(plan)});
    }
    if (!entry.empty() && !foundEntry) {
      module.emitError("weft-plan-memory: no function with a body named '")
          << entry << "'";
      return signalPassFailure();
    }
    if (report.empty())
      return;
    std::error_code error;
    llvm::raw_fd_ostream file(report, error, llvm::sys::fs::OF_Text);
    if (error) {
      module.emitError("weft-plan-memory cannot write report '")
          << report << "': " << error.message();
      return signalPassFailure();
    }
    {
      llvm::json::OStream json(file, /*IndentSize=*/1);
      json.object([&] {
        json.attributeObject("functions", [&] {
          for (Planned &entry : planned)
            json.attributeObject(entry.func.getSymName(), [&] {
              writeFunctionReport(json, entry.liveness, entry.plan);
            });
        });
      });
    }
    file << "\n";
  }
};

} // namespace
