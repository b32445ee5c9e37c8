// weft_plan.step + kernel images -> pkg::Package. The attention images are
// built as weft-compile --emit=kernels builds them (buildAttentionKernels,
// lowerToPtx, assemblePtx), the other ops' by ElementwiseToNVVM.
#include "weft/Target/Package/PlanPackage.h"

#include "weft/Conversion/ElementwiseKernels.h"
#include "weft/Target/GPU/Serialize.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

namespace weft {

namespace {

/// `module`'s kernels lowered to PTX for `chip` and assembled: one image.
FailureOr<gpu::GpuBinary> lowerImage(ModuleOp module, StringRef name, StringRef chip,
                                     Location loc) {
  FailureOr<std::string> ptx = gpu::lowerToPtx(module, name, chip);
  if (failed(ptx))
    return emitError(loc, "lowering image ") << name << " to PTX for " << chip << " failed";
  gpu::GpuBinary binary;
  std::string message;
  if (failed(gpu::assemblePtx(*ptx, chip, binary, message)))
    return emitError(loc, "assembling image ") << name << ": " << message;
  binary.ptx = *ptx;
  return binary;
}

/// One attention image, built in a module of its own.
FailureOr<gpu::GpuBinary> buildAttentionImage(MLIRContext *context,
                                              const AttentionImage &image,
                                              StringRef chip, Location loc) {
  DialectRegistry registry;
  gpu::registerGpuTargetDialects(registry);
  context->appendDialectRegistry(registry);
  context->loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  if (failed(gpu::buildAttentionKernels(*module, image.name, image.config,
                                        image.backward)))
    return emitError(loc, "building the attention kernels of image ")
           << image.name << " failed";
  return lowerImage(*module, image.name, chip, loc);
}

/// The kernels of one elementwise op (ElementwiseToNVVM), in a module of
/// their own.
FailureOr<gpu::GpuBinary> buildElementwiseImage(MLIRContext *context,
                                                const ElementwiseImage &image,
                                                StringRef chip, Location loc) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  if (failed(gpu::buildElementwiseKernels(*module, image.name, image.op)))
    return failure();
  return lowerImage(*module, image.name, chip, loc);
}

} // namespace

FailureOr<pkg::Package> makePackage(const HostSchedule &built, StringRef chip,
                                    StringRef weftVersion,
                                    llvm::raw_ostream &notes) {
  plan::StepOp step = built.step;
  FailureOr<pkg::Package> package = plan::exportStep(step);
  if (failed(package))
    return failure();
  package->weftVersion = weftVersion.str();
  Location loc = step.getLoc();
  bool havePtxas = !gpu::findPtxas().empty();
  if (!havePtxas &&
      !(built.attentionImages.empty() && built.elementwiseImages.empty()))
    notes << "note: no ptxas ($WEFT_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin, "
             "PATH): the "
          << built.attentionImages.size() << " attention and "
          << built.elementwiseImages.size()
          << " elementwise image(s) are not in the package\n";
  for (const AttentionImage &image : built.attentionImages) {
    if (!havePtxas)
      break;
    FailureOr<gpu::GpuBinary> binary =
        buildAttentionImage(step.getContext(), image, chip, loc);
    if (failed(binary))
      return failure();
    pkg::Image entry;
    entry.name = image.name;
    entry.cubin = std::string(binary->cubin.begin(), binary->cubin.end());
    entry.ptx = binary->ptx;
    package->images.push_back(std::move(entry));
  }
  for (const ElementwiseImage &image : built.elementwiseImages) {
    if (!havePtxas)
      break;
    FailureOr<gpu::GpuBinary> binary =
        buildElementwiseImage(step.getContext(), image, chip, image.op->getLoc());
    if (failed(binary))
      return failure();
    pkg::Image entry;
    entry.name = image.name;
    entry.cubin = std::string(binary->cubin.begin(), binary->cubin.end());
    entry.ptx = binary->ptx;
    package->images.push_back(std::move(entry));
  }
  size_t missing = 0;
  for (pkg::Kernel &kernel : package->kernels) {
    for (size_t i = 0; i < package->images.size(); ++i)
      if (package->images[i].name == kernel.imageName)
        kernel.image = uint32_t(i);
    missing += kernel.image == pkg::kNone;
  }
  if (missing)
    notes << "note: " << missing << " of " << package->kernels.size()
          << " kernels have no image (ops without a GPU kernel, each warned "
             "about above, or no ptxas); the package records them as "
             "missing\n";
  return package;
}

} // namespace weft
