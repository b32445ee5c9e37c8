// PTX through MLIR's NVVM target (nvvm-attach-target, the gpu.module lowering
// to NVVM/LLVM, serialization in isa format) and cubin through ptxas -v, whose
// per-kernel register / spill / stack / shared-memory lines are parsed.
#include "weft/Target/GPU/Serialize.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "weft/Conversion/AttentionKernels.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace weft::gpu {

void registerGpuTargetDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect,
                  cf::ControlFlowDialect, func::FuncDialect,
                  mlir::gpu::GPUDialect, index::IndexDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  NVVM::NVVMDialect, nvgpu::NVGPUDialect, scf::SCFDialect,
                  ub::UBDialect, vector::VectorDialect>();
  // Without these convert-gpu-to-nvvm leaves arith/cf/... ops behind
  // without a word: it converts through the ConvertToLLVM interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  // Serialization segfaults without the target's external model.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  mlir::gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

namespace {

/// The passes from gpu/nvgpu/vector/scf/memref/affine to the LLVM dialect
/// with NVVM intrinsics, run on one gpu.module.
void addGpuModuleLowering(OpPassManager &pm) {
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertGpuOpsToNVVMOps());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// The CUDA toolkit that holds the ptxas findPtxas() picks, when it has
/// libdevice. Passed explicitly so that linking libdevice (which calls such
/// as __nv_fmaxf need) does not depend on whether $CUDA_HOME happens to be
/// set, as MLIR's default lookup does.
std::string toolkitWithLibdevice() {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    return {};
  SmallString<256> root(llvm::sys::path::parent_path(
      llvm::sys::path::parent_path(ptxas)));
  SmallString<256> libdevice(root);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  return llvm::sys::fs::exists(libdevice) ? root.str().str() : std::string();
}

/// Kernel parameters listed in weft_grid_constant_args (CUtensorMaps) become
/// 128-byte, 64-byte-aligned by-value grid constants, whose generic address
/// (cvta.param) TMA instructions take: convert-gpu-to-nvvm keeps only the
/// alignment of such an argument, so byval and grid_constant are set here.
void markGridConstantArgs(mlir::gpu::GPUModuleOp gpuModule) {
  MLIRContext *context = gpuModule.getContext();
  gpuModule.walk([&](LLVM::LLVMFuncOp func) {
    auto indices = func->getAttrOfType<DenseI32ArrayAttr>(kGridConstantArgsAttrName);
    if (!indices)
      return;
    Type bytes = LLVM::LLVMArrayType::get(IntegerType::get(context, 8), 128);
    for (int32_t index : indices.asArrayRef()) {
      func.setArgAttr(index, LLVM::LLVMDialect::getByValAttrName(), TypeAttr::get(bytes));
      func.setArgAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                      IntegerAttr::get(IntegerType::get(context, 64), 64));
      func.setArgAttr(index, NVVM::NVVMDialect::getGridConstantAttrName(),
                      UnitAttr::get(context));
    }
    func->removeAttr(kGridConstantArgsAttrName);
  });
}

} // namespace

FailureOr<std::string> lowerToPtx(ModuleOp module, StringRef moduleName,
                                  StringRef chip) {
  auto gpuModule = module.lookupSymbol<mlir::gpu::GPUModuleOp>(moduleName);
  if (!gpuModule)
    return module.emitError("no gpu.module @") << moduleName << " to lower";
  MLIRContext *context = module.getContext();
  // The conversions create ops of these dialects; load them before the
  // passes run (a pass manager on a nested op cannot load dialects).
  DialectRegistry registry;
  registerGpuTargetDialects(registry);
  context->appendDialectRegistry(registry);
  context->loadAllAvailableDialects();

  // The target is attached on the module, matching only this gpu.module
  // (the matcher is a regex searched in the name: anchor and escape it).
  PassManager attach(context);
  GpuNVVMAttachTargetOptions target;
  target.moduleMatcher = "^" + llvm::Regex::escape(moduleName) + "$";
  target.chip = chip.str();
  target.features = "+ptx80";
  target.optLevel = 3;
  attach.addPass(createGpuNVVMAttachTarget(target));
  if (failed(attach.run(module)))
    return failure();

  // The lowering runs on the named gpu.module only, so other gpu.modules in
  // `module` are left as they are.
  PassManager lower(context, mlir::gpu::GPUModuleOp::getOperationName());
  addGpuModuleLowering(lower);
  if (failed(lower.run(gpuModule)))
    return failure();
  markGridConstantArgs(gpuModule);

  // What gpu-module-to-binary{format=isa} does, for this module alone.
  ArrayAttr targets = gpuModule.getTargetsAttr();
  auto nvvmTarget = targets && targets.size() == 1
                        ? dyn_cast<mlir::gpu::TargetAttrInterface>(targets[0])
                        : nullptr;
  if (!nvvmTarget)
    return gpuModule.emitError("expected exactly one NVVM target on "
                               "gpu.module @")
           << moduleName << " after nvvm-attach-target";
  std::string toolkit = toolkitWithLibdevice();
  mlir::gpu::TargetOptions options(
      toolkit, /*librariesToLink=*/{}, /*cmdOptions=*/{},
      /*elfSection=*/{}, mlir::gpu::CompilationTarget::Assembly);
  std::optional<SmallVector<char, 0>> serialized =
      nvvmTarget.serializeToObject(gpuModule, options);
  if (!serialized)
    return gpuModule.emitError("serializing gpu.module @")
           << moduleName << " to PTX for " << chip << " failed";
  Attribute object =
      nvvmTarget.createObject(gpuModule, *serialized, options);
  auto objectAttr = dyn_cast_or_null<mlir::gpu::ObjectAttr>(object);
  if (!objectAttr)
    return gpuModule.emitError("the NVVM target made no #gpu.object for @")
           << moduleName;
  std::string ptx = objectAttr.getObject().getValue().str();
  OpBuilder builder(gpuModule);
  mlir::gpu::BinaryOp::create(builder, gpuModule.getLoc(), moduleName,
                              /*offloadingHandler=*/nullptr,
                              ArrayRef<Attribute>{object});
  gpuModule.erase();
  // The NVPTX backend ends the text with a NUL for the driver's JIT.
  while (!ptx.empty() && ptx.back() == '\0')
    ptx.pop_back();
  return ptx;
}

std::string findPtxas() {
  auto isExecutable = [](const std::string &path) {
    return !path.empty() && llvm::sys::fs::can_execute(path);
  };
  if (const char *explicitPath = std::getenv("WEFT_PTXAS"))
    return isExecutable(explicitPath) ? std::string(explicitPath)
                                      : std::string();
  if (const char *cudaHome = std::getenv("CUDA_HOME")) {
    SmallString<256> path(cudaHome);
    llvm::sys::path::append(path, "bin", "ptxas");
    if (isExecutable(path.str().str()))
      return path.str().str();
  }
  if (isExecutable("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda/bin/ptxas";
  if (llvm::ErrorOr<std::string> onPath =
          llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  return {};
}

namespace {

/// The first integer before `unit` in `line` ("... 40 bytes spill stores").
std::optional<int64_t> numberBefore(StringRef line, StringRef unit) {
  size_t at = line.find(unit);
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef head = line.take_front(at).rtrim();
  size_t start = head.find_last_not_of("0123456789");
  StringRef digits = start == StringRef::npos ? head : head.drop_front(start + 1);
  int64_t value;
  if (digits.getAsInteger(10, value))
    return std::nullopt;
  return value;
}

} // namespace

/// Reads ptxas -v's lines into per-kernel resources. An entry's lines follow
/// its "Compiling entry function 'NAME'" line; the stack/spill line follows
/// "Function properties for NAME", which ptxas also prints for device
/// functions (not kernels): those are skipped.
void parsePtxasLog(StringRef log, llvm::StringMap<KernelResources> &resources) {
  KernelResources *current = nullptr;
  std::string currentName;
  bool otherFunction = false;
  SmallVector<StringRef> lines;
  log.split(lines, '\n');
  auto quotedOrRest = [](StringRef text) {
    text = text.trim();
    if (text.consume_front("'"))
      return text.take_until([](char c) { return c == '\''; });
    return text;
  };
  for (StringRef line : lines) {
    StringRef compiling = "Compiling entry function ";
    if (size_t at = line.find(compiling); at != StringRef::npos) {
      currentName = quotedOrRest(line.drop_front(at + compiling.size())).str();
      current = &resources[currentName];
      otherFunction = false;
      continue;
    }
    StringRef properties = "Function properties for ";
    if (size_t at = line.find(properties); at != StringRef::npos) {
      otherFunction =
          quotedOrRest(line.drop_front(at + properties.size())) != currentName;
      continue;
    }
    if (!current)
      continue;
    if (auto registers = numberBefore(line, " registers"))
      current->registers = *registers;
    if (auto smem = numberBefore(line, " bytes smem"))
      current->sharedBytes = *smem;
    if (otherFunction)
      continue;
    if (auto stack = numberBefore(line, " bytes stack frame"))
      current->stackBytes = *stack;
    if (auto stores = numberBefore(line, " bytes spill stores"))
      current->spillStoreBytes = *stores;
    if (auto loads = numberBefore(line, " bytes spill loads"))
      current->spillLoadBytes = *loads;
  }
}

LogicalResult assemblePtx(StringRef ptx, StringRef chip, GpuBinary &binary,
                          std::string &message) {
  std::string ptxas = findPtxas();
  if (ptxas.empty()) {
    message = "ptxas not found (looked at $WEFT_PTXAS, $CUDA_HOME/bin/ptxas, "
              "/usr/local/cuda/bin/ptxas and PATH); install the CUDA toolkit "
              "or set WEFT_PTXAS";
    return failure();
  }
  SmallString<128> ptxPath, cubinPath, logPath;
  llvm::scope_exit removeFiles([&] {
    for (const SmallString<128> &path : {ptxPath, cubinPath, logPath})
      if (!path.empty())
        llvm::sys::fs::remove(path);
  });
  int ptxFd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "weft-kernel", "ptx", ptxFd, ptxPath)) {
    message = "cannot create a temporary PTX file: " + ec.message();
    return failure();
  }
  {
    llvm::raw_fd_ostream os(ptxFd, /*shouldClose=*/true);
    os << ptx;
  }
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "weft-kernel", "cubin", cubinPath)) {
    message = "cannot create a temporary cubin file: " + ec.message();
    return failure();
  }
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("weft-ptxas", "log", logPath)) {
    message = "cannot create a temporary log file: " + ec.message();
    return failure();
  }
  std::string arch = ("-arch=" + chip).str();
  SmallVector<StringRef> args = {ptxas, arch, "-v", "-o", cubinPath, ptxPath};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath),
                                          StringRef(logPath)};
  std::string execError;
  int status = llvm::sys::ExecuteAndWait(ptxas, args, /*Env=*/std::nullopt,
                                         redirects, /*SecondsToWait=*/0,
                                         /*MemoryLimit=*/0, &execError);
  auto log = llvm::MemoryBuffer::getFile(logPath);
  binary.ptxasLog = log ? (*log)->getBuffer().str() : std::string();
  if (status != 0) {
    message = (ptxas + " " + arch + " failed (" +
               (execError.empty() ? "exit status " + std::to_string(status)
                                  : execError) +
               "):\n" + binary.ptxasLog);
    return failure();
  }
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!cubin) {
    message = "ptxas wrote no cubin: " + cubin.getError().message();
    return failure();
  }
  binary.ptx = ptx.str();
  binary.cubin.assign((*cubin)->getBufferStart(), (*cubin)->getBufferEnd());
  binary.resources.clear();
  parsePtxasLog(binary.ptxasLog, binary.resources);
  return success();
}

} // namespace weft::gpu
