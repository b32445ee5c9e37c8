// weft-test-break-result: miscompiles on purpose (the first weft.add of each
// function becomes weft.sub) so the tests of --weft-diff-each-pass catch it.
#include "TestPasses.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace weft {
#define GEN_PASS_DEF_TESTBREAKRESULTPASS
#include "TestPasses.h.inc"
} // namespace weft

using namespace mlir;

namespace {

struct TestBreakResultPass
    : weft::impl::TestBreakResultPassBase<TestBreakResultPass> {
  using Base::Base;

  void runOnOperation() override {
    Operation *root = getOperation();
    SmallVector<func::FuncOp> functions;
    if (auto function = dyn_cast<func::FuncOp>(root))
      functions.push_back(function);
    else
      for (Region &region : root->getRegions())
        for (Block &block : region)
          llvm::append_range(functions, block.getOps<func::FuncOp>());
    unsigned broken = 0;
    for (func::FuncOp function : functions) {
      if (function.isExternal() ||
          (!func.empty() && function.getSymName() != func))
        continue;
      weft::AddOp add;
      function.walk([&](weft::AddOp op) {
        add = op;
        return WalkResult::interrupt();
      });
      if (!add)
        continue;
      OpBuilder builder(add);
      auto sub = weft::SubOp::create(builder, add.getLoc(), add.getType(),
                                     add.getLhs(), add.getRhs());
      sub->setDiscardableAttrs(add->getDiscardableAttrDictionary());
      add.replaceAllUsesWith(sub.getResult());
      add.erase();
      ++broken;
    }
    // A test pass that silently does nothing would make its tests vacuous;
    // nested on a function it may skip the functions `func` does not name.
    if (broken == 0 && (isa<ModuleOp>(root) || func.empty())) {
      emitError(root->getLoc(),
                "weft-test-break-result found no weft.add to break")
          << (func.empty() ? std::string() : " in @" + func);
      signalPassFailure();
    }
  }
};

} // namespace
