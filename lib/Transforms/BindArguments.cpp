// weft-bind-arguments: marks the step arguments whose bytes the caller binds
// (weft.bound), so liveness leaves them out of the arena and the package
// records them as bound by the caller.
#include "weft/Analysis/Liveness.h"
#include "weft/Transforms/Passes.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/IR/BuiltinTypes.h"

namespace weft {
#define GEN_PASS_DEF_BINDARGUMENTSPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct BindArgumentsPass : weft::impl::BindArgumentsPassBase<BindArgumentsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool params = which == "params";
    if (!params && which != "all") {
      module.emitError("weft-bind-arguments: which must be params or all, got '")
          << which.getValue() << "'";
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func || func.isExternal()) {
      module.emitError("weft-bind-arguments: no function with a body named '")
          << entry.getValue() << "'";
      return signalPassFailure();
    }
    UnitAttr unit = UnitAttr::get(&getContext());
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      auto tensor = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
      if (!tensor || !tensor.hasStaticShape() ||
          func.getArgAttr(i, WeftDialect::kCopyOfAttr))
        continue;
      if (params && !func.getArgAttr(i, WeftDialect::kParamAttr))
        continue;
      func.setArgAttr(i, kBoundAttrName, unit);
    }
  }
};

} // namespace
