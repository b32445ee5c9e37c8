// weft-print-cost: prints the CostOpInterface / MemoryOpInterface values of
// every op that implements them, so lit tests can check the cost model.
#include "TestPasses.h"

#include "weft/Dialect/WeftDialect.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace weft {
#define GEN_PASS_DEF_PRINTCOSTPASS
#include "TestPasses.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct PrintCostPass : weft::impl::PrintCostPassBase<PrintCostPass> {
  using Base::Base;

  void runOnOperation() override {
    // NaN and non-positive ceilings would make every roofline meaningless.
    if (!(peakTflops > 0.0) || !(peakGbps > 0.0)) {
      getOperation()->emitError("weft-print-cost expects positive peak-tflops "
                                "and peak-gbps, got ")
          << peakTflops << " and " << peakGbps;
      return signalPassFailure();
    }
    double flopsPerSecond = peakTflops * 1e12;
    double bytesPerSecond = peakGbps * 1e9;
    llvm::raw_ostream &os = llvm::outs();
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      auto cost = dyn_cast<CostOpInterface>(op);
      auto memory = dyn_cast<MemoryOpInterface>(op);
      if (!cost && !memory)
        return;
      os << op->getName() << ":";
      if (cost)
        os << " flops=" << cost.getFlops() << " bytes=" << cost.getBytesMoved();
      else
        os << " flops=- bytes=-";
      os << " workspace=";
      if (memory)
        os << memory.getWorkspaceBytes();
      else
        os << "-";
      os << " roofline_us=";
      if (cost)
        os << llvm::format(
            "%.6g", cost.getRooflineSeconds(flopsPerSecond, bytesPerSecond) * 1e6);
      else
        os << "-";
      os << " result_bytes=";
      if (memory)
        os << memory.getResultBytes();
      else
        os << "-";
      os << "\n";
    });
    markAllAnalysesPreserved();
  }
};

} // namespace
