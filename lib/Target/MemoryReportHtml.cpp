// The memory plan as a picture: weft-compile --memory-report=PLAN.html. One
// self-contained HTML page (inline SVG and CSS, no script, no network): the
// arena over the schedule, each buffer a block at its offset and lifetime
// coloured by category, blocks written by recomputed ops hatched, the budget
// and the planned peak as lines, the forward/backward boundary, and the
// report's numbers beside it.
#include "weft/Target/MemoryReport.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace weft;

namespace {

/// weft-remat's mark on the clones it places in the backward.
constexpr llvm::StringLiteral kRecomputeAttr = "weft.recompute";

/// One category's fill, in BufferCategory order.
constexpr const char *kCategoryColours[kNumBufferCategories] = {
    "#4c72b0", // parameters
    "#8172b3", // optimizer_state
    "#937860", // inputs
    "#dd8452", // gradients
    "#55a868", // saved_activations
    "#c44e52", // temporaries
    "#8c8c8c", // workspaces
};
constexpr const char *kBudgetColour = "#e8000b";
constexpr const char *kPeakColour = "#222222";

// The plot's geometry in SVG units.
constexpr double kLeft = 90, kTop = 20, kWidth = 1100, kHeight = 560;

/// A buffer as drawn: where it lives in the arena and in the schedule.
struct PlanBlock {
  int64_t offset = 0, size = 0, start = 0, end = 0;
  BufferCategory category = BufferCategory::Temporary;
  bool recomputed = false;
  std::string name, producer;
  std::optional<int64_t> layer;
};

/// The offset weft-plan-memory gave `buffer`: weft.offset on an argument,
/// weft.offsets on the op of a result, weft.workspace_offset on the op of a
/// workspace; none when the IR lacks it.
std::optional<int64_t> plannedOffset(func::FuncOp step, const LiveBuffer &buffer) {
  if (buffer.workspaceOf) {
    if (auto attr = buffer.workspaceOf->getAttrOfType<IntegerAttr>(
            WeftDialect::kWorkspaceOffsetAttr))
      return attr.getInt();
    return std::nullopt;
  }
  if (buffer.values.empty())
    return std::nullopt;
  Value root = buffer.values.front();
  if (auto arg = dyn_cast<BlockArgument>(root)) {
    if (auto attr = step.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                       WeftDialect::kOffsetAttr))
      return attr.getInt();
    return std::nullopt;
  }
  auto result = cast<OpResult>(root);
  auto offsets = result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(WeftDialect::kOffsetsAttr);
  if (!offsets || int64_t(result.getResultNumber()) >= offsets.size() ||
      offsets[result.getResultNumber()] < 0)
    return std::nullopt;
  return offsets[result.getResultNumber()];
}

SmallVector<PlanBlock> collectBlocks(func::FuncOp step, const ScheduleLiveness &liveness) {
  SmallVector<PlanBlock> blocks;
  AsmState asmState(step);
  for (const LiveBuffer &buffer : liveness.getBuffers()) {
    std::optional<int64_t> offset = plannedOffset(step, buffer);
    // A bound argument lies in the caller's memory, not in the arena drawn.
    if (!offset || buffer.bound)
      continue;
    PlanBlock block;
    block.offset = *offset;
    block.size = buffer.size;
    block.start = buffer.start;
    block.end = buffer.end;
    block.category = buffer.category;
    Operation *producer = buffer.workspaceOf;
    llvm::raw_string_ostream name(block.name);
    if (buffer.workspaceOf) {
      name << "workspace";
    } else {
      buffer.values.front().printAsOperand(name, asmState);
      producer = buffer.values.front().getDefiningOp();
    }
    if (producer) {
      block.producer = producer->getName().getStringRef().str();
      block.recomputed = producer->hasAttr(kRecomputeAttr);
      if (auto layer = producer->getAttrOfType<IntegerAttr>(WeftDialect::kLayerAttr))
        block.layer = layer.getInt();
    } else {
      block.producer = "argument";
    }
    blocks.push_back(std::move(block));
  }
  return blocks;
}

std::string escape(StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// Bytes in binary units with three significant digits ("1.50 GiB").
std::string bytes(int64_t n) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(n);
  int unit = 0;
  while (value >= 1024 && unit < 4)
    value /= 1024, ++unit;
  return llvm::formatv("{0:f2} {1}", value, units[unit]).str();
}

void writeStyle(llvm::raw_ostream &os) {
  os << "<style>body{font:14px sans-serif;margin:16px;color:#222}"
        "table{border-collapse:collapse;margin:8px 0}"
        "td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #ddd}"
        "th{text-align:left}.swatch{display:inline-block;width:12px;height:12px;"
        "margin-right:4px;vertical-align:middle}</style>\n";
}

void writeSummary(const TrainingStepReport &report, llvm::raw_ostream &os) {
  os << "<h1>Memory plan of @" << escape(report.function) << "</h1>\n<table>"
     << "<tr><th>planned peak</th><td>" << bytes(report.peakBytes) << "</td></tr>"
     << "<tr><th>budget</th><td>"
     << (report.budgetBytes ? bytes(*report.budgetBytes) : std::string("none"))
     << "</td></tr><tr><th>lower bound (max live)</th><td>"
     << bytes(report.lowerBoundBytes) << "</td></tr><tr><th>fragmentation</th><td>"
     << llvm::formatv("{0:f2} %", 100 * report.fragmentation).str()
     << "</td></tr><tr><th>remat policy</th><td>" << escape(report.rematPolicy)
     << "</td></tr><tr><th>recomputed ops</th><td>" << report.recomputedOps
     << "</td></tr><tr><th>step estimate (roofline)</th><td>"
     << llvm::formatv("{0:f2} ms", 1e3 * report.stepSeconds).str() << "</td></tr></table>\n";
  os << "<table><tr><th>category</th><th>at the peak</th><th>over the step</th></tr>";
  for (unsigned c = 0; c < kNumBufferCategories; ++c)
    os << "<tr><th><span class=\"swatch\" style=\"background:" << kCategoryColours[c]
       << "\"></span>" << getBufferCategoryName(BufferCategory(c)) << "</th><td>"
       << bytes(report.bytesAtPeak[c]) << "</td><td>" << bytes(report.bytesTotal[c])
       << "</td></tr>";
  os << "</table>\n";
}

/// A horizontal line across the plot at `y` with a label at its right end.
/// Labelled at the plot's right end, or its left end (`left`), so two close
/// lines keep their labels apart.
void writeLevel(llvm::raw_ostream &os, double y, const char *colour, StringRef id,
                StringRef label, bool dashed, bool left) {
  os << llvm::formatv("<line id=\"{0}\" x1=\"{1}\" x2=\"{2}\" y1=\"{3:f2}\" y2=\"{3:f2}\" "
                      "stroke=\"{4}\" stroke-width=\"3\"{5}/>",
                      id, kLeft, kLeft + kWidth, y, colour,
                      dashed ? " stroke-dasharray=\"12 6\"" : "")
     << llvm::formatv("<text x=\"{0}\" y=\"{1:f2}\" fill=\"{2}\" text-anchor=\"{3}\">{4}</text>\n",
                      left ? kLeft + 4 : kLeft + kWidth - 4, y - 6, colour,
                      left ? "start" : "end", escape(label));
}

void writePlot(const TrainingStepReport &report, const ScheduleLiveness &liveness,
               ArrayRef<PlanBlock> blocks, llvm::raw_ostream &os) {
  double steps = std::max<int64_t>(liveness.getNumSteps(), 1);
  int64_t top = std::max<int64_t>({report.peakBytes, report.budgetBytes.value_or(0), 1});
  double ymax = double(top) * 1.05;
  auto xAt = [&](double step) { return kLeft + kWidth * step / steps; };
  auto yAt = [&](double byte) { return kTop + kHeight * (1 - byte / ymax); };
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                      "font-size=\"13\">\n",
                      kLeft + kWidth + 20, kTop + kHeight + 50);
  os << "<defs><pattern id=\"recompute\" width=\"6\" height=\"6\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"2\" height=\"6\" fill=\"#000\" fill-opacity=\"0.45\"/></pattern></defs>\n";
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" fill=\"#fafafa\" "
                      "stroke=\"#999\"/>\n",
                      kLeft, kTop, kWidth, kHeight);
  for (const PlanBlock &b : blocks) {
    double x = xAt(b.start), w = std::max(xAt(b.end + 1) - x, 0.75);
    double y = yAt(double(b.offset + b.size)), h = std::max(yAt(double(b.offset)) - y, 0.75);
    std::string title = llvm::formatv("{0} = {1}{2}: {3}, {4} at {5}, steps {6}-{7}{8}",
                                      b.name, b.producer,
                                      b.layer ? " (layer " + std::to_string(*b.layer) + ")"
                                              : std::string(),
                                      getBufferCategoryName(b.category), bytes(b.size),
                                      bytes(b.offset), b.start, b.end,
                                      b.recomputed ? ", recomputed" : "")
                            .str();
    os << llvm::formatv("<rect class=\"{0}\" x=\"{1:f2}\" y=\"{2:f2}\" width=\"{3:f2}\" "
                        "height=\"{4:f2}\" fill=\"{5}\" stroke=\"#fff\" stroke-width=\"0.3\">"
                        "<title>{6}</title></rect>",
                        getBufferCategoryName(b.category), x, y, w, h,
                        kCategoryColours[unsigned(b.category)], escape(title));
    if (b.recomputed)
      os << llvm::formatv("<rect class=\"recomputed\" x=\"{0:f2}\" y=\"{1:f2}\" width=\"{2:f2}\" "
                          "height=\"{3:f2}\" fill=\"url(#recompute)\"/>",
                          x, y, w, h);
    os << "\n";
  }
  double backward = xAt(double(liveness.getBackwardStart()));
  os << llvm::formatv("<line x1=\"{0:f2}\" x2=\"{0:f2}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#444\" "
                      "stroke-dasharray=\"4 4\"/><text x=\"{3:f2}\" y=\"{4}\">backward</text>\n",
                      backward, kTop, kTop + kHeight, backward + 4, kTop + 14);
  writeLevel(os, yAt(double(report.peakBytes)), kPeakColour, "peak",
             "planned peak " + bytes(report.peakBytes), false, /*left=*/true);
  if (report.budgetBytes)
    writeLevel(os, yAt(double(*report.budgetBytes)), kBudgetColour, "budget",
               "budget " + bytes(*report.budgetBytes), true, /*left=*/false);
  for (int tick = 0; tick <= 4; ++tick) {
    double byte = ymax * tick / 4;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:f2}\" text-anchor=\"end\">{2}</text>",
                        kLeft - 6, yAt(byte) + 4, bytes(int64_t(byte)));
  }
  os << llvm::formatv("\n<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">schedule step "
                      "(0 to {2}); arena offset upward</text>\n</svg>\n",
                      kLeft + kWidth / 2, kTop + kHeight + 34, int64_t(steps) - 1);
}

} // namespace

LogicalResult weft::writeMemoryPlanHtml(func::FuncOp step, const TrainingStepReport &report,
                                        llvm::raw_ostream &os) {
  FailureOr<ScheduleLiveness> liveness = ScheduleLiveness::compute(step);
  if (failed(liveness))
    return failure();
  SmallVector<PlanBlock> blocks = collectBlocks(step, *liveness);
  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Memory plan of @"
     << escape(report.function) << "</title>\n";
  writeStyle(os);
  os << "</head><body>\n";
  writeSummary(report, os);
  os << "<p>Each block is a buffer: left to right its lifetime in the schedule, bottom to top "
        "its place in the arena. Hatched: written by a recomputed op. Hover a block for its "
        "value, op, layer and size. "
     << blocks.size() << " buffers.</p>\n";
  writePlot(report, *liveness, blocks, os);
  os << "</body></html>\n";
  return success();
}

LogicalResult weft::writeMemoryReport(func::FuncOp step, const TrainingStepReport &report,
                                      StringRef path, llvm::raw_ostream &os) {
  if (path.ends_with_insensitive(".html") || path.ends_with_insensitive(".htm"))
    return writeMemoryPlanHtml(step, report, os);
  writeTrainingStepReport(report, os);
  return success();
}
