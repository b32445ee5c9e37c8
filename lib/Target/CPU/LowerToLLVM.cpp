// Lowering of tiled attention nests (tensors, scf, linalg, arith, math) to the
// LLVM dialect for the host: one-shot bufferization over the whole module,
// ownership-based deallocation, linalg to loops, then the conversions to LLVM.
#include "weft/Target/CPU/CpuRunner.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace weft::cpu {

void registerCpuLoweringInterfaces(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

LogicalResult verifyNoWeftOps(ModuleOp module) {
  Operation *remaining = nullptr;
  module.walk([&](Operation *op) {
    if (isa<WeftDialect>(op->getDialect())) {
      remaining = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (!remaining)
    return success();
  auto func = remaining->getParentOfType<func::FuncOp>();
  InFlightDiagnostic diag = remaining->emitError("'")
                            << remaining->getName()
                            << "' remains in @"
                            << (func ? func.getSymName() : StringRef("?"))
                            << ": the CPU path runs tiled nests only (no weft "
                               "ops); run weft-opt --weft-tile-attention first";
  return diag;
}

/// Weft's argument attributes (weft.param, weft.range) mean nothing to LLVM.
static void dropWeftArgumentAttributes(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    for (unsigned index = 0; index < func.getNumArguments(); ++index) {
      DictionaryAttr attrs = func.getArgAttrDict(index);
      if (!attrs)
        continue;
      SmallVector<StringAttr> weftNames;
      for (NamedAttribute attr : attrs)
        if (attr.getName().getValue().starts_with("weft."))
          weftNames.push_back(attr.getName());
      for (StringAttr name : weftNames)
        func.removeArgAttr(index, name);
    }
}

/// memref.copy between strided views lowers to a call of the runtime's
/// memrefCopy, which the JIT does not link: make every copy a linalg.copy,
/// which convert-linalg-to-loops turns into loops.
struct CopyAsLinalgCopy : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp copy,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
    return success();
  }
};

struct CopiesAsLinalgPass
    : PassWrapper<CopiesAsLinalgPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CopiesAsLinalgPass)
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<CopyAsLinalgCopy>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

LogicalResult lowerToLLVM(ModuleOp module, StringRef entry) {
  if (failed(verifyNoWeftOps(module)))
    return failure();
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func || func.isExternal())
    return module.emitError("no function @") << entry << " to lower";
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(module.getContext()));
  dropWeftArgumentAttributes(module);

  PassManager pm(module.getContext());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // The running max and sum are updated in place, but a yielded fresh tile
  // is legal too; the deallocation pipeline frees it.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // At module level: the lowering of deallocations may add a helper function.
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(std::make_unique<CopiesAsLinalgPass>());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // bf16 conversions as integer ops: the host target has no bf16 libcalls.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return pm.run(module);
}

} // namespace weft::cpu
