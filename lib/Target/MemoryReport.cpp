// The memory and FLOP report of a planned training step: reads the plan
// weft-plan-memory attached, classifies ops through the shared liveness
// analysis, sums CostOpInterface FLOPs and writes JSON.
#include "weft/Target/MemoryReport.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <map>

using namespace mlir;
using namespace weft;

namespace {

constexpr llvm::StringLiteral kMemoryPlanAttr = "weft.memory_plan";
constexpr llvm::StringLiteral kAliasAttr = "weft.alias";
/// weft-remat's mark on the clones it places in the backward.
constexpr llvm::StringLiteral kRecomputeAttr = "weft.recompute";

/// a + b, saturating: FLOP counts of huge steps are clamped, never wrapped.
int64_t addSaturating(int64_t a, int64_t b) {
  int64_t sum;
  return llvm::AddOverflow(a, b, sum) ? std::numeric_limits<int64_t>::max()
                                      : sum;
}

/// An error about `step`, located at it (without printing the whole
/// function, as Operation::emitError would).
InFlightDiagnostic stepError(func::FuncOp step) {
  InFlightDiagnostic diag = emitError(step.getLoc());
  diag << "@" << step.getSymName() << " ";
  return diag;
}

/// Reads one i64 field of the plan dictionary.
FailureOr<int64_t> planInt(func::FuncOp step, DictionaryAttr dict,
                           StringRef key) {
  auto value = dict.getAs<IntegerAttr>(key);
  if (!value)
    return stepError(step) << "has a 'weft.memory_plan' without an integer '"
                           << key << "': " << dict;
  return value.getInt();
}

/// Copies the plan weft-plan-memory attached into the report.
LogicalResult readMemoryPlan(func::FuncOp step, TrainingStepReport &report) {
  auto plan = step->getAttrOfType<DictionaryAttr>(kMemoryPlanAttr);
  if (!plan)
    return stepError(step) << "has no 'weft.memory_plan': run weft-plan-memory "
                              "on it before reporting it";
  FailureOr<int64_t> peak = planInt(step, plan, "peak_bytes");
  FailureOr<int64_t> lower = planInt(step, plan, "lower_bound_bytes");
  FailureOr<int64_t> alignment = planInt(step, plan, "alignment");
  if (failed(peak) || failed(lower) || failed(alignment))
    return failure();
  auto fragmentation = plan.getAs<FloatAttr>("fragmentation");
  auto categories = plan.getAs<DictionaryAttr>("categories");
  if (!fragmentation || !categories)
    return stepError(step) << "has a 'weft.memory_plan' without "
                              "'fragmentation' or 'categories': "
                           << plan;
  report.peakBytes = *peak;
  report.lowerBoundBytes = *lower;
  report.alignment = *alignment;
  report.fragmentation = fragmentation.getValueAsDouble();
  for (unsigned c = 0; c < kNumBufferCategories; ++c) {
    StringRef name = getBufferCategoryName(BufferCategory(c));
    auto entry = categories.getAs<DictionaryAttr>(name);
    if (!entry)
      return stepError(step)
             << "has a 'weft.memory_plan' without category '" << name << "'";
    FailureOr<int64_t> atPeak = planInt(step, entry, "at_peak");
    FailureOr<int64_t> total = planInt(step, entry, "total");
    if (failed(atPeak) || failed(total))
      return failure();
    report.bytesAtPeak[c] = *atPeak;
    report.bytesTotal[c] = *total;
  }
  return success();
}

/// Whether every result of `op` goes only to the return, as a result tied to
/// an argument by weft.alias: the optimizer's in-place updates.
bool writesOnlyAliasedResults(Operation *op, func::FuncOp step) {
  if (op->getNumResults() == 0)
    return false;
  for (Value result : op->getResults()) {
    if (result.use_empty())
      return false;
    for (OpOperand &use : result.getUses())
      if (!isa<func::ReturnOp>(use.getOwner()) ||
          !step.getResultAttr(use.getOperandNumber(), kAliasAttr))
        return false;
  }
  return true;
}

std::optional<int64_t> layerOf(Operation *op) {
  if (!op)
    return std::nullopt;
  if (auto layer = op->getAttrOfType<IntegerAttr>(WeftDialect::kLayerAttr))
    return layer.getInt();
  return std::nullopt;
}

/// The grid of a partitioned step and its collectives, per layer and in all.
void addCommunication(func::FuncOp step, const ScheduleLiveness &liveness,
                      TrainingStepReport &report,
                      llvm::function_ref<LayerMemory &(int64_t)> layerEntry) {
  auto gridName = step->getAttrOfType<FlatSymbolRefAttr>(WeftDialect::kGridAttr);
  if (!gridName)
    return;
  if (auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(step, gridName))
    report.gridShape.assign(grid.getShape().begin(), grid.getShape().end());
  if (auto axis = step->getAttrOfType<IntegerAttr>(WeftDialect::kGridAxisAttr))
    report.tensorParallelAxis = axis.getInt();
  SymbolTableCollection symbols;
  for (Operation *op : liveness.getSchedule()) {
    if (!isCommunicating(op))
      continue;
    double bytes = getCollectiveBusBytes(op, symbols);
    double seconds = getCollectiveSeconds(op, symbols, report.link);
    ++report.collectives;
    if (auto chunks = op->getAttrOfType<IntegerAttr>(WeftDialect::kChunksAttr))
      ++report.collectiveMatmulChunks[chunks.getInt()];
    report.communicationBytes += bytes;
    report.communicationSeconds += seconds;
    if (std::optional<int64_t> layer = layerOf(op)) {
      LayerMemory &entry = layerEntry(*layer);
      ++entry.collectives;
      entry.communicationBytes += bytes;
      entry.communicationSeconds += seconds;
      if (op->hasAttr(kRecomputeAttr))
        ++entry.recomputedCollectives;
    }
  }
}

} // namespace

FailureOr<TrainingStepReport>
weft::buildTrainingStepReport(func::FuncOp step, std::optional<int64_t> budget,
                              StringRef rematPolicy,
                              const RooflineCeilings &ceilings) {
  TrainingStepReport report;
  report.function = step.getSymName().str();
  report.rematPolicy = rematPolicy.str();
  report.budgetBytes = budget;
  report.ceilings = ceilings;
  if (failed(readMemoryPlan(step, report)))
    return failure();
  if (auto module = step->getParentOfType<ModuleOp>())
    for (auto function : module.getOps<func::FuncOp>())
      if (auto chunks = function->getAttrOfType<IntegerAttr>(WeftDialect::kLossChunksAttr))
        report.lossChunks = std::max(report.lossChunks, chunks.getInt());
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (auto master = step.getArgAttrOfType<IntegerAttr>(i, WeftDialect::kCopyOfAttr)) {
      Type masterType = master.getInt() >= 0 && master.getInt() < step.getNumArguments()
                            ? step.getArgument(master.getInt()).getType()
                            : Type();
      if (masterType && getElementTypeOrSelf(masterType).isInteger(16))
        ++report.splitMasters;
      else
        ++report.carriedCopies;
    }
  FailureOr<ScheduleLiveness> liveness = ScheduleLiveness::compute(step);
  if (failed(liveness))
    return failure();
  report.boundBytes = liveness->getBoundBytes();

  std::map<int64_t, LayerMemory> layers;
  auto layerEntry = [&](int64_t layer) -> LayerMemory & {
    LayerMemory &entry = layers[layer];
    entry.layer = layer;
    return entry;
  };

  int64_t backwardStart = liveness->getBackwardStart();
  for (auto [index, op] : llvm::enumerate(liveness->getSchedule())) {
    auto cost = dyn_cast<CostOpInterface>(op);
    if (!cost)
      continue;
    int64_t flops = cost.getFlops();
    double seconds = cost.getRooflineSeconds(ceilings.flopsPerSecond,
                                             ceilings.bytesPerSecond);
    report.stepSeconds += seconds;
    if (op->hasAttr(kRecomputeAttr)) {
      report.recomputeFlops = addSaturating(report.recomputeFlops, flops);
      report.recomputeSeconds += seconds;
      ++report.recomputedOps;
      if (std::optional<int64_t> layer = layerOf(op)) {
        LayerMemory &entry = layerEntry(*layer);
        ++entry.recomputedOps;
        entry.recomputeFlops = addSaturating(entry.recomputeFlops, flops);
      }
    } else if (int64_t(index) < backwardStart) {
      report.forwardFlops = addSaturating(report.forwardFlops, flops);
    } else if (writesOnlyAliasedResults(op, step)) {
      report.optimizerFlops = addSaturating(report.optimizerFlops, flops);
    } else {
      report.backwardFlops = addSaturating(report.backwardFlops, flops);
    }
  }

  for (const LiveBuffer &buffer : liveness->getBuffers()) {
    if (buffer.category != BufferCategory::SavedActivation ||
        buffer.values.empty())
      continue;
    if (std::optional<int64_t> layer =
            layerOf(buffer.values.front().getDefiningOp()))
      layerEntry(*layer).savedBytes += buffer.size;
    else
      report.unlayeredSavedBytes += buffer.size;
  }
  addCommunication(step, *liveness, report, layerEntry);
  for (auto &entry : layers)
    report.layers.push_back(entry.second);
  return report;
}

void weft::writeTrainingStepReport(const TrainingStepReport &report,
                                   llvm::raw_ostream &os) {
  llvm::json::OStream json(os, /*IndentSize=*/2);
  auto writeCategories = [&](const CategoryBytes &bytes) {
    for (unsigned c = 0; c < kNumBufferCategories; ++c)
      json.attribute(getBufferCategoryName(BufferCategory(c)), bytes[c]);
  };
  json.object([&] {
    json.attribute("function", report.function);
    json.attribute("remat_policy", report.rematPolicy);
    json.attribute("peak_bytes", report.peakBytes);
    if (report.budgetBytes)
      json.attribute("budget_bytes", *report.budgetBytes);
    else
      json.attribute("budget_bytes", nullptr);
    json.attribute("lower_bound_bytes", report.lowerBoundBytes);
    json.attribute("fragmentation", report.fragmentation);
    json.attribute("alignment", report.alignment);
    if (report.boundBytes)
      json.attribute("bound_bytes", report.boundBytes);
    json.attributeObject("categories",
                         [&] { writeCategories(report.bytesAtPeak); });
    json.attributeObject("category_totals",
                         [&] { writeCategories(report.bytesTotal); });
    json.attribute("forward_flops", report.forwardFlops);
    json.attribute("backward_flops", report.backwardFlops);
    json.attribute("recompute_flops", report.recomputeFlops);
    json.attribute("optimizer_flops", report.optimizerFlops);
    json.attribute("recomputed_ops", report.recomputedOps);
    json.attribute("recompute_time_estimate_s", report.recomputeSeconds);
    json.attribute("step_time_estimate_s", report.stepSeconds);
    json.attributeObject("weight_copies", [&] {
      json.attribute("carried", report.carriedCopies);
      json.attribute("split", report.splitMasters);
    });
    json.attributeObject("roofline", [&] {
      json.attribute("flops_per_s", report.ceilings.flopsPerSecond);
      json.attribute("bytes_per_s", report.ceilings.bytesPerSecond);
    });
    json.attributeArray("layers", [&] {
      for (const LayerMemory &layer : report.layers)
        json.object([&] {
          json.attribute("layer", layer.layer);
          json.attribute("saved_bytes", layer.savedBytes);
          json.attribute("recomputed_ops", layer.recomputedOps);
          json.attribute("recompute_flops", layer.recomputeFlops);
          if (!report.gridShape.empty()) {
            json.attribute("collectives", layer.collectives);
            json.attribute("recomputed_collectives", layer.recomputedCollectives);
            json.attribute("communication_bytes", layer.communicationBytes);
            json.attribute("communication_time_estimate_s", layer.communicationSeconds);
          }
        });
    });
    json.attribute("unlayered_saved_bytes", report.unlayeredSavedBytes);
    json.attribute("loss_chunks", report.lossChunks);
    if (!report.gridShape.empty())
      json.attributeObject("partition", [&] {
        json.attribute("per_rank", true);
        json.attributeArray("grid", [&] {
          for (int64_t size : report.gridShape)
            json.value(size);
        });
        json.attribute("tp_axis", report.tensorParallelAxis);
        json.attribute("tp", report.gridShape[report.tensorParallelAxis]);
        json.attributeObject("link_model", [&] {
          json.attribute("bus_bytes_per_s", report.link.busBytesPerSecond);
          json.attribute("latency_s", report.link.latencySeconds);
          json.attribute("source", "NCCL bus bandwidth of a 1 GiB bf16 all-reduce "
                                   "(332 GB/s) and a 1 MiB all-gather (45.8 us) "
                                   "on 2 lent H100s, ../shared/anchors/"
                                   "h100x2_nccl_anchors_2026-11-26.json");
        });
        json.attribute("collectives", report.collectives);
        json.attribute("communication_bytes", report.communicationBytes);
        json.attribute("communication_time_estimate_s", report.communicationSeconds);
        // weft-collective-matmul: collectives pipelined with partial GEMMs,
        // by their chunk count.
        json.attributeObject("collective_matmul_chunks", [&] {
          for (auto [chunks, count] : report.collectiveMatmulChunks)
            json.attribute(std::to_string(chunks), count);
        });
      });
  });
  os << "\n";
}
