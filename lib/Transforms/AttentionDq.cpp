// weft-attention-dq: how the GPU attention backward forms dQ, recorded on
// every weft.attention_grad as its `atomic_dq` unit attribute (which also
// sizes the op's workspace).
#include "weft/Dialect/WeftDialect.h"
#include "weft/Transforms/Passes.h"

namespace weft {
#define GEN_PASS_DEF_ATTENTIONDQPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct AttentionDqPass : public weft::impl::AttentionDqPassBase<AttentionDqPass> {
  using Base::Base;

  void runOnOperation() override {
    if (mode != "deterministic" && mode != "atomic") {
      getOperation().emitError("weft-attention-dq: mode must be deterministic or atomic, got '")
          << mode << "'";
      return signalPassFailure();
    }
    UnitAttr atomic = mode == "atomic" ? UnitAttr::get(&getContext()) : UnitAttr();
    getOperation().walk([&](AttentionGradOp op) { op.setAtomicDqAttr(atomic); });
  }
};

} // namespace
