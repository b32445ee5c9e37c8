// weft-print-saved: lists the saved activations of each function, as the
// schedule/liveness analysis classifies them, with totals per reading layer,
// so tests can check activation-memory counts tensor by tensor.
#include "TestPasses.h"

#include "weft/Analysis/Liveness.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

namespace weft {
#define GEN_PASS_DEF_PRINTSAVEDPASS
#include "TestPasses.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct PrintSavedPass : weft::impl::PrintSavedPassBase<PrintSavedPass> {
  using Base::Base;

  /// The `weft.layer`s of the backward ops reading any tensor of `buffer`;
  /// -1 stands for a reader without one.
  std::set<int64_t> readingLayers(const ScheduleLiveness &liveness,
                                  const LiveBuffer &buffer) {
    std::set<int64_t> layers;
    Block &body = liveness.getFunction().getBody().front();
    for (Value value : buffer.values)
      for (Operation *user : value.getUsers()) {
        int64_t step = liveness.getStep(user);
        if (step < liveness.getBackwardStart())
          continue;
        Operation *top = body.findAncestorOpInBlock(*user);
        if (top->hasTrait<OpTrait::IsTerminator>())
          continue;
        // A backward view of a saved tensor is read where the view is.
        if (isBufferView(top) && buffer.values.size() > 1 &&
            llvm::is_contained(buffer.values, top->getResult(0)))
          continue;
        auto layer = top->getAttrOfType<IntegerAttr>(WeftDialect::kLayerAttr);
        layers.insert(layer ? layer.getInt() : -1);
      }
    return layers;
  }

  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      FailureOr<ScheduleLiveness> liveness = ScheduleLiveness::compute(func);
      if (failed(liveness))
        return signalPassFailure();
      AsmState asmState(func);
      // Per reading layer ("-" for none, "shared" for several).
      std::map<std::string, std::pair<int64_t, int64_t>> byLayer;
      int64_t totalBytes = 0, totalTensors = 0;
      for (const LiveBuffer &buffer : liveness->getBuffers()) {
        if (buffer.category != BufferCategory::SavedActivation)
          continue;
        Value root = buffer.values.front();
        std::set<int64_t> layers = readingLayers(*liveness, buffer);
        std::string layer;
        if (layers.size() > 1)
          layer = "shared";
        else if (layers.empty() || *layers.begin() < 0)
          layer = "-";
        else
          layer = std::to_string(*layers.begin());
        os << "saved @" << func.getSymName() << " ";
        root.printAsOperand(os, asmState);
        if (Operation *def = root.getDefiningOp())
          os << " " << def->getName();
        else
          os << " argument";
        os << " " << root.getType() << " bytes=" << buffer.size
           << " read_by_layer=" << layer << "\n";
        byLayer[layer].first += buffer.size;
        ++byLayer[layer].second;
        totalBytes += buffer.size;
        ++totalTensors;
      }
      for (auto &[layer, entry] : byLayer)
        os << "layer " << layer << ": saved_bytes=" << entry.first
           << " tensors=" << entry.second << "\n";
      os << "total @" << func.getSymName() << ": saved_bytes=" << totalBytes
         << " tensors=" << totalTensors << "\n";
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
