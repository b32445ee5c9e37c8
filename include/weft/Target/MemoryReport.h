// The memory and FLOP report of a planned training step, as weft-compile
// --memory-report writes it: the arena plan weft-plan-memory attached, bytes
// by category, FLOPs of the forward, backward, recomputation and optimizer
// (CostOpInterface), the roofline time of the recomputation, and the saved
// activations of each weft.layer.
#ifndef WEFT_TARGET_MEMORYREPORT_H
#define WEFT_TARGET_MEMORYREPORT_H

#include "weft/Analysis/LinkModel.h"
#include "weft/Analysis/Liveness.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace weft {

/// The roofline ceilings of the time estimates: an H100 SXM's dense bf16
/// tensor-core peak and its HBM3 bandwidth.
struct RooflineCeilings {
  double flopsPerSecond = 989e12;
  double bytesPerSecond = 3.35e12;
};

struct LayerMemory {
  int64_t layer = 0;
  /// Bytes of the saved activations written by ops of this layer (tensor
  /// sizes, not rounded to the arena alignment).
  int64_t savedBytes = 0;
  int64_t recomputedOps = 0;
  int64_t recomputeFlops = 0;
  /// The shard collectives carrying this weft.layer (partitioned steps):
  /// how many, their NCCL bus bytes and their time under the link model;
  /// recomputed ones (weft.recompute: re-gathers) also counted apart.
  int64_t collectives = 0;
  double communicationBytes = 0;
  double communicationSeconds = 0;
  int64_t recomputedCollectives = 0;
};

struct TrainingStepReport {
  std::string function;
  std::string rematPolicy;
  /// From the function's `weft.memory_plan`.
  int64_t peakBytes = 0;
  int64_t lowerBoundBytes = 0;
  int64_t alignment = 1;
  double fragmentation = 0;
  /// Bytes by category (indexed by BufferCategory, each buffer rounded up to
  /// the alignment) live at the max-live step (they sum to lowerBoundBytes),
  /// and over all buffers of the step.
  CategoryBytes bytesAtPeak{};
  CategoryBytes bytesTotal{};
  std::optional<int64_t> budgetBytes;
  /// CostOpInterface FLOPs: forward ops (before the backward start), backward
  /// ops, ops marked `weft.recompute` (wherever they are), and the optimizer
  /// (ops whose results are all returned tied by `weft.alias`).
  int64_t forwardFlops = 0;
  int64_t backwardFlops = 0;
  int64_t recomputeFlops = 0;
  int64_t optimizerFlops = 0;
  int64_t recomputedOps = 0;
  /// Roofline seconds (slower of compute and memory per op) of the
  /// recomputed ops and of every op of the step.
  double recomputeSeconds = 0;
  double stepSeconds = 0;
  RooflineCeilings ceilings;
  /// One entry per weft.layer that has a saved activation or a recomputed
  /// op, in layer order; saved activations of ops outside any layer.
  llvm::SmallVector<LayerMemory> layers;
  int64_t unlayeredSavedBytes = 0;
  /// Row chunks of the lm_head linear + loss (weft-chunk-loss records them
  /// as `weft.loss_chunks` on the forward); 1: the loss is whole.
  int64_t lossChunks = 1;
  /// Step arguments marked weft.copy_of: bf16 copies carried beside f32
  /// masters, and the bf16 high halves of split masters (i16 low halves).
  int64_t carriedCopies = 0;
  int64_t splitMasters = 0;
  /// Bytes of the arguments bound by the caller (weft.bound): outside the
  /// arena, so in no category above.
  int64_t boundBytes = 0;
  /// A partitioned step (weft.grid): every byte above is per rank. The grid
  /// shape, the tensor-parallel axis, and all of the step's communication.
  llvm::SmallVector<int64_t> gridShape;
  int64_t tensorParallelAxis = -1;
  LinkModel link;
  int64_t collectives = 0;
  double communicationBytes = 0;
  double communicationSeconds = 0;
  /// Collective matmuls (weft.chunks): how many collectives pipeline with
  /// partial GEMMs, by chunk count.
  std::map<int64_t, int64_t> collectiveMatmulChunks;
};

/// Builds the report of `step`, which must carry `weft.memory_plan`. Fails
/// with a diagnostic on the function otherwise, or when its liveness cannot
/// be computed.
mlir::FailureOr<TrainingStepReport>
buildTrainingStepReport(mlir::func::FuncOp step, std::optional<int64_t> budget,
                        llvm::StringRef rematPolicy,
                        const RooflineCeilings &ceilings = {});

/// The report as a JSON object (indented, newline-terminated).
void writeTrainingStepReport(const TrainingStepReport &report,
                             llvm::raw_ostream &os);

/// The memory plan of `step` (which carries weft-plan-memory's offsets) as a
/// self-contained HTML page: the arena over the schedule, a block per buffer
/// coloured by category, recomputed ones hatched, the budget and the peak as
/// lines (MemoryReportHtml.cpp). Fails with a diagnostic when the step's
/// liveness cannot be computed.
mlir::LogicalResult writeMemoryPlanHtml(mlir::func::FuncOp step,
                                        const TrainingStepReport &report,
                                        llvm::raw_ostream &os);

/// --memory-report's file: the HTML page when `path` ends in .html (or
/// .htm), the JSON report otherwise.
mlir::LogicalResult writeMemoryReport(mlir::func::FuncOp step,
                                      const TrainingStepReport &report,
                                      llvm::StringRef path, llvm::raw_ostream &os);

} // namespace weft

#endif // WEFT_TARGET_MEMORYREPORT_H
