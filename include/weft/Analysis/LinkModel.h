// The communication model of the shard collectives: NCCL's ring algorithms
// over one link per GPU, time = bus bytes / bus bandwidth + latency. The
// defaults are what the lent H100s measured (../shared/anchors,
// h100x2_nccl_anchors_2026-11-26.json): a 1 GiB bf16 all-reduce at 332 GB/s
// bus bandwidth, and ~45 us for a 1 MiB all-gather.
#ifndef WEFT_ANALYSIS_LINKMODEL_H
#define WEFT_ANALYSIS_LINKMODEL_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"

namespace weft {

struct LinkModel {
  double busBytesPerSecond = 330e9;
  double latencySeconds = 45e-6;
};

/// The compute side the collectives are weighed against: an H100 SXM's dense
/// bf16 peak and HBM3 bandwidth.
struct ComputeModel {
  double flopsPerSecond = 989e12;
  double bytesPerSecond = 3.35e12;
};

/// `op`'s roofline seconds under `model` (CostOpInterface); 0 for ops
/// without a cost.
double getComputeSeconds(mlir::Operation *op, const ComputeModel &model = {});

/// Whether `op` is a shard collective that moves data between ranks.
bool isCommunicating(mlir::Operation *op);

/// NCCL's bus bytes of collective `op` (what crosses each GPU's link): an
/// all-gather or reduce-scatter (n-1)/n of the whole tensor, an all-reduce
/// twice that, an all-to-all (n-1)/n of its input; point-to-point and rooted
/// collectives their operands. 0 for other ops and for groups of one.
double getCollectiveBusBytes(mlir::Operation *op,
                             mlir::SymbolTableCollection &symbols);

/// The seconds `op` communicates under `link`: its bus bytes over the bus
/// bandwidth plus one latency (0 when it moves nothing).
double getCollectiveSeconds(mlir::Operation *op,
                            mlir::SymbolTableCollection &symbols,
                            const LinkModel &link = {});

} // namespace weft

#endif // WEFT_ANALYSIS_LINKMODEL_H
