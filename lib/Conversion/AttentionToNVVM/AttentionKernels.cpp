// The attention kernels' configurations, launch specs and the gpu.module that
// holds them; the bodies come from ForwardKernel.cpp and BackwardKernels.cpp.
#include "weft/Conversion/AttentionKernels.h"

#include "KernelBodies.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace weft::gpu {

namespace {


KernelParam pointer(llvm::StringRef name) {
  return {name.str(), KernelParam::Kind::Pointer};
}

void appendScalars(llvm::SmallVector<KernelParam> &params) {
  for (const char *name : {"batch", "q_heads", "kv_heads", "q_len", "k_len"})
    params.push_back({name, KernelParam::Kind::I32});
  params.push_back({"scale", KernelParam::Kind::F32});
}

KernelSpec spec(const AttentionKernelConfig &config, llvm::StringRef role,
                llvm::ArrayRef<llvm::StringRef> tensors) {
  KernelSpec result;
  result.name = llvm::formatv("weft_attn_{0}_{1}", role, config.suffix()).str();
  result.role = role.str();
  for (llvm::StringRef tensor : tensors)
    result.params.push_back(pointer(tensor));
  appendScalars(result.params);
  return result;
}
} // namespace

std::string AttentionKernelConfig::suffix() const {
  return llvm::formatv("{0}_d{1}_{2}_q{3}_k{4}{5}", bf16 ? "bf16" : "f16", headDim,
                       causal ? "causal" : "full", blockQ, blockK,
                       warpgroupMma ? "_wgmma" : "")
      .str();
}

int64_t dkdvInnerRows(const AttentionKernelConfig &config) {
  return config.headDim > 64 ? std::min<int64_t>(config.blockQ, 32) : config.blockQ;
}
int64_t dqInnerRows(const AttentionKernelConfig &config) {
  return config.headDim > 64 ? std::min<int64_t>(config.blockK, 32) : config.blockK;
}

LogicalResult verifyAttentionKernelConfig(const AttentionKernelConfig &config,
                                          std::string &message) {
  if (config.headDim != 64 && config.headDim != 128) {
    message = llvm::formatv("the GPU attention kernels support head_dim 64 and "
                            "128, got {0}", config.headDim);
    return failure();
  }
  // One warp owns 16 rows of the block the grid walks; the other side is
  // consumed in 16-row mma steps.
  for (auto [name, value] : {std::pair<const char *, int64_t>{"block_q", config.blockQ},
                             {"block_k", config.blockK}}) {
    if (value != 32 && value != 64 && value != 128) {
      message = llvm::formatv("the GPU attention kernels need {0} in {{32, 64, "
                              "128} (16 rows per warp, 2..8 warps), got {1}",
                              name, value);
      return failure();
    }
  }
  // Each warpgroup (4 warps) owns 64 query rows of the CTA.
  if (config.warpgroupMma && config.blockQ != 64 && config.blockQ != 128) {
    message = llvm::formatv("the warpgroup-MMA attention kernels need block_q "
                            "= 64 or 128 (one or two warpgroups of 4 warps), "
                            "got {0}",
                            config.blockQ);
    return failure();
  }
  return success();
}

llvm::SmallVector<KernelSpec> attentionKernelSpecs(const AttentionKernelConfig &config,
                                                   bool backward) {
  auto smem = [&](int64_t tileRows) { return tileRows * tilePitch(config.headDim); };
  if (!backward) {
    KernelSpec forward = spec(config, "forward", {"q", "k", "v", "out", "lse"});
    forward.threads = config.blockQ / 16 * 32;
    forward.rowsPerBlock = config.blockQ;
    forward.dynamicSmemBytes = config.warpgroupMma
                                   ? wgmmaForwardSmemBytes(config)
                                   : smem(config.blockQ) + 2 * smem(config.blockK);
    return {forward};
  }
  KernelSpec preprocess = spec(config, "backward_preprocess", {"out", "dout", "delta"});
  preprocess.threads = kPreprocessRows;
  preprocess.rowsPerBlock = kPreprocessRows;

  KernelSpec dkdv = spec(config, "backward_dkdv",
                         {"q", "k", "v", "dout", "lse", "delta", "dk", "dv"});
  int64_t inner = dkdvInnerRows(config);
  dkdv.threads = config.blockK / 16 * 32;
  dkdv.rowsPerBlock = config.blockK;
  dkdv.overKeys = true;
  dkdv.dynamicSmemBytes = 2 * smem(config.blockK) + 2 * smem(inner) + 2 * inner * 4;

  KernelSpec dq = spec(config, "backward_dq",
                       {"q", "k", "v", "dout", "lse", "delta", "dq"});
  dq.threads = config.blockQ / 16 * 32;
  dq.rowsPerBlock = config.blockQ;
  dq.dynamicSmemBytes = 2 * smem(config.blockQ) + 2 * smem(dqInnerRows(config));
  return {preprocess, dkdv, dq};
}

LogicalResult buildAttentionKernels(ModuleOp module, llvm::StringRef moduleName,
                                    const AttentionKernelConfig &config,
                                    bool backward) {
  std::string message;
  if (failed(verifyAttentionKernelConfig(config, message)))
    return module.emitError(message);
  MLIRContext *context = module.getContext();
  context->loadDialect<mlir::gpu::GPUDialect, LLVM::LLVMDialect>();
  module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(context));
  ImplicitLocOpBuilder b(module.getLoc(), context);
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = mlir::gpu::GPUModuleOp::create(b, moduleName);
  b.setInsertionPointToStart(gpuModule.getBody());
  // The dynamic shared memory: `.extern .shared .align 16 .b8 weft_smem[]`.
  LLVM::GlobalOp::create(b, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                         /*isConstant=*/false, LLVM::Linkage::External,
                         "weft_smem", Attribute(), /*alignment=*/16,
                         /*addrSpace=*/3);

  Type globalPtr = LLVM::LLVMPointerType::get(context, 1);
  for (const KernelSpec &kernel : attentionKernelSpecs(config, backward)) {
    SmallVector<Type> argTypes;
    for (const KernelParam &param : kernel.params)
      argTypes.push_back(param.kind == KernelParam::Kind::Pointer ? globalPtr
                         : param.kind == KernelParam::Kind::I32  ? Type(b.getI32Type())
                                                                 : Type(b.getF32Type()));
    auto func = mlir::gpu::GPUFuncOp::create(b, kernel.name,
                                             b.getFunctionType(argTypes, {}));
    func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
        {static_cast<int32_t>(kernel.threads), 1, 1}));
    if (kernel.role == "forward")
      emitForwardBody(func, config);
    else if (kernel.role == "backward_preprocess")
      emitPreprocessBody(func, config);
    else if (kernel.role == "backward_dkdv")
      emitDkDvBody(func, config);
    else
      emitDqBody(func, config);
  }
  return success();
}

} // namespace weft::gpu
