// weft-compile --emit=kernels: reads each weft.attention / attention_grad op's
// problem, builds its kernels (buildAttentionKernels), lowers them to PTX,
// assembles them with ptxas and writes the unit's files (AotUnitWriter.cpp).
#include "weft/Target/GPU/AotKernels.h"

#include "AotUnit.h"

#include "weft/Conversion/AttentionKernels.h"
#include "weft/Dialect/WeftDialect.h"
#include "weft/Target/GPU/Serialize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <memory>

using namespace mlir;

namespace weft::gpu {

void chooseAttentionTiles(const KernelEmitOptions &options, AttentionKernelConfig &config,
                          bool backward) {
  AttentionTiles tiles{options.blockQ, options.blockK};
  if (config.headDim == 256)
    tiles = {backward ? 64 : 128, 64, /*warpgroupMma=*/true, /*stages=*/2};
  if (options.tuningTable)
    if (std::optional<AttentionTiles> tuned = options.tuningTable->lookup(
            options.chip, config.bf16, config.headDim, config.causal, backward))
      tiles = *tuned;
  config.blockQ = options.fixedBlockQ.value_or(tiles.blockQ);
  config.blockK = options.fixedBlockK.value_or(tiles.blockK);
  config.warpgroupMma = options.warpgroupMma.value_or(tiles.warpgroupMma);
  config.stages = options.fixedStages.value_or(tiles.stages);
  if (!backward && config.warpgroupMma)
    config.schedule = options.fixedSchedule.value_or(tiles.schedule);
}


namespace {

/// The kernels are specialised on the element type: bf16 or f16 only.
FailureOr<bool> isBf16(Operation *op, ArrayRef<std::pair<StringRef, Value>> tensors) {
  Type first = cast<ShapedType>(tensors.front().second.getType()).getElementType();
  if (!first.isBF16() && !first.isF16())
    return op->emitError("the GPU attention kernels take bf16 or f16 tensors, "
                         "got ")
           << first << " for " << tensors.front().first
           << " (compute in f32/f64 through the CPU path instead)";
  for (auto [name, value] : tensors) {
    Type type = cast<ShapedType>(value.getType()).getElementType();
    if (type != first)
      return op->emitError("the GPU attention kernels need one element type, "
                           "got ")
             << first << " for " << tensors.front().first << " and " << type
             << " for " << name;
  }
  return first.isBF16();
}

template <typename OpTy>
FailureOr<AttentionShapes> shapesOf(OpTy op) {
  ArrayRef<int64_t> q = op.getQ().getType().getShape();
  ArrayRef<int64_t> k = op.getK().getType().getShape();
  ArrayRef<int64_t> v = op.getV().getType().getShape();
  if (q[3] != v[3])
    return op.emitError("the GPU attention kernels need the value dim to "
                        "equal head_dim, got q ")
           << q[3] << " and v " << v[3];
  // A seq-major op's operands are [b, s, h, d].
  int seq = op.getSeqMajor() ? 1 : 2, heads = 3 - seq;
  return AttentionShapes{q[0], q[heads], k[heads], q[seq], k[seq], q[3], op.getScaleValue()};
}

/// The dropout of the op's kernels (p, rng_id): a block of heads of a
/// partitioned attention draws the global mask at its heads' offset, which
/// the kernels do not take.
template <typename OpTy>
LogicalResult dropoutOf(OpTy op, AttentionKernelConfig &config) {
  double p = op.getDropoutP().convertToDouble();
  if (p == 0.0)
    return success();
  // %g: 0.1 reads as written in the IR, not 0.10.
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", p);
  if (op.getHeadOffset())
    return op.emitError("the GPU attention kernels with dropout (dropout_p = ")
           << text << ") draw the mask of a whole attention; this op is a block of its "
           << op.getDropoutHeads().value_or(0)
           << " heads at a run-time head offset, which they do not take";
  auto rngId = op->template getAttrOfType<IntegerAttr>(WeftDialect::kRngIdAttr);
  if (!op.getSeed() || !rngId)
    return op.emitError("the GPU attention kernels with dropout (dropout_p = ")
           << text << ") need the seed operand and " << WeftDialect::kRngIdAttr;
  config.dropoutP = p;
  config.rngId = rngId.getInt();
  return success();
}

/// The backward's dQ accumulation (weft.attention_grad's atomic_dq).
bool atomicDqOf(Operation *op) {
  auto grad = dyn_cast<AttentionGradOp>(op);
  return grad && grad.getAtomicDq();
}

/// What one op needs: its unit's name, configuration and shapes.
struct AttentionSite {
  Operation *op;
  std::string unitName;
  bool backward;
  AttentionKernelConfig config;
  AttentionShapes shapes;
};

/// Split CTAs an sm_90 SM holds at once, from ptxas' registers and the
/// kernel's shared memory: 64K registers allocated per warp in 256s, 228 KiB
/// of shared memory (1 KiB of it reserved per CTA), 64 warps, 32 CTAs.
int64_t residentCtasPerSm(const KernelSpec &kernel, const KernelResources &resources) {
  int64_t warps = llvm::divideCeil(kernel.threads, 32);
  int64_t registersPerWarp = llvm::divideCeil(std::max<int64_t>(resources.registers, 1) * 32, 256) * 256;
  int64_t byRegisters = 65536 / (registersPerWarp * warps);
  int64_t bySmem = (228 * 1024) / (kernel.dynamicSmemBytes + resources.sharedBytes + 1024);
  return std::max<int64_t>(1, std::min({byRegisters, bySmem, 64 / warps, int64_t(32)}));
}

/// The decode kernels' rows per CTA for a forward op, or 0 when the op is not
/// a decoding step (see kDecodeMinKeys).
int64_t decodeRowsFor(const AttentionShapes &shapes, const KernelEmitOptions &options,
                      bool seqMajor) {
  if (seqMajor || options.packed ||
      options.layout != AttentionKernelConfig::Layout::HeadMajor)
    return 0;
  if (shapes.qLen > kDecodeMaxQueryRows || shapes.kLen < kDecodeMinKeys ||
      shapes.qLen >= shapes.kLen || shapes.kvHeads == 0)
    return 0;
  int64_t rows = shapes.qHeads / shapes.kvHeads * shapes.qLen;
  for (int64_t padded : {16, 32, 64, 128})
    if (rows <= padded)
      return padded;
  return 0;
}

/// C identifiers only: a function name's other characters become '_'.
std::string cIdentifier(StringRef name) {
  std::string result;
  for (char c : name)
    result += llvm::isAlnum(c) || c == '_' ? c : '_';
  if (result.empty() || llvm::isDigit(result.front()))
    result.insert(0, "_");
  return result;
}

FailureOr<AttentionSite> describe(Operation *op, const KernelEmitOptions &options,
                                  llvm::StringMap<int64_t> &counters) {
  AttentionSite site{op, "", isa<AttentionGradOp>(op), {}, {}};
  FailureOr<bool> bf16 = failure();
  FailureOr<AttentionShapes> shapes = failure();
  if (auto forward = dyn_cast<AttentionOp>(op)) {
    bf16 = isBf16(op, {{"q", forward.getQ()}, {"k", forward.getK()},
                       {"v", forward.getV()}, {"out", forward.getOut()}});
    shapes = shapesOf(forward);
    site.config.causal = forward.getCausal();
    if (failed(dropoutOf(forward, site.config)))
      return failure();
    if (succeeded(bf16) && forward.getLse() &&
        !forward.getLse().getType().getElementType().isF32())
      return op->emitError("the GPU attention kernels write lse in f32, got ")
             << forward.getLse().getType().getElementType();
  } else {
    auto grad = cast<AttentionGradOp>(op);
    bf16 = isBf16(op, {{"q", grad.getQ()}, {"k", grad.getK()}, {"v", grad.getV()},
                       {"out", grad.getOut()}, {"dout", grad.getDout()}});
    shapes = shapesOf(grad);
    site.config.causal = grad.getCausal();
    if (failed(dropoutOf(grad, site.config)))
      return failure();
    if (succeeded(bf16) && !grad.getLse().getType().getElementType().isF32())
      return op->emitError("the GPU attention kernels read lse in f32, got ")
             << grad.getLse().getType().getElementType();
  }
  if (failed(bf16) || failed(shapes))
    return failure();
  // Decoding is inference: a dropout attention takes the training kernels.
  if (!site.backward && site.config.dropoutP == 0.0) {
    if (int64_t rows = decodeRowsFor(*shapes, options, isSeqMajorAttention(op))) {
      site.shapes = *shapes;
      site.config.bf16 = *bf16;
      site.config.headDim = shapes->headDim;
      site.config.decodeRows = rows;
      site.config.blockQ = rows;
      site.config.blockK = options.fixedBlockK.value_or(defaultDecodeBlockK(site.config));
      site.config.stages = options.fixedStages.value_or(defaultDecodeStages(site.config));
      std::string message;
      if (failed(verifyAttentionKernelConfig(site.config, false, message)))
        return op->emitError(message);
      auto func = op->getParentOfType<func::FuncOp>();
      std::string prefix = cIdentifier(func ? func.getSymName() : "module");
      int64_t &index = counters[prefix + "/attention"];
      site.unitName = llvm::formatv("{0}_attention_{1}", prefix, index++).str();
      return site;
    }
  }
  if (site.config.causal && shapes->qLen != shapes->kLen)
    return op->emitError("the GPU attention kernels implement causal with "
                         "equal q and k lengths only, got q_len ")
           << shapes->qLen << " and k_len " << shapes->kLen
           << " (weft.attention's causal is bottom-right aligned, these kernels' "
              "top-left; the decode kernels take q_len <= "
           << kDecodeMaxQueryRows << " over k_len >= " << kDecodeMinKeys << ")";
  site.shapes = *shapes;
  site.config.bf16 = *bf16;
  site.config.headDim = shapes->headDim;
  chooseAttentionTiles(options, site.config, site.backward);
  site.config.atomicDq = atomicDqOf(op);
  fitDropoutTiles(site.config, site.backward);
  // A seq-major op's tensors are seq-major whatever --attention-layout says.
  site.config.layout = options.layout;
  if (isSeqMajorAttention(op))
    site.config.layout = AttentionKernelConfig::Layout::SeqMajor;
  site.config.packedQkv = options.packed;
  site.config.packedGrads = options.packed && site.backward;
  site.config.groupedQkv = options.packed && options.grouped;
  // One packed tensor has one sequence length.
  if (options.packed && shapes->qLen != shapes->kLen)
    return op->emitError("--attention-layout=packed puts q, k and v in one "
                         "[b, s, (q_heads + 2 kv_heads) * d] tensor, which "
                         "needs q_len == k_len, got ")
           << shapes->qLen << " and " << shapes->kLen;
  std::string message;
  if (failed(verifyAttentionKernelConfig(site.config, site.backward, message)))
    return op->emitError(message);

  auto func = op->getParentOfType<func::FuncOp>();
  std::string kind = site.backward ? "attention_grad" : "attention";
  std::string prefix = cIdentifier(func ? func.getSymName() : "module");
  int64_t &index = counters[prefix + "/" + kind];
  site.unitName = llvm::formatv("{0}_{1}_{2}", prefix, kind, index++).str();
  return site;
}

LogicalResult writeFile(Location loc, StringRef dir, StringRef name,
                        StringRef contents) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (!ec) {
    os << contents;
    os.close();
    ec = os.error();
  }
  if (ec)
    return emitError(loc, "cannot write ") << path << ": " << ec.message();
  return success();
}

LogicalResult makeDirectory(Location loc, StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return emitError(loc, "cannot create the output directory ")
           << dir << ": " << ec.message();
  return success();
}

/// Builds, lowers and assembles the kernels of one configuration in a
/// module of their own (the input module is left as it is).
FailureOr<std::unique_ptr<GpuBinary>>
buildBinary(Operation *op, const AttentionKernelConfig &config, bool backward,
            StringRef chip) {
  // The builder creates nvvm/arith/scf attributes and ops; a dialect that is
  // registered but not loaded makes those crash, so load them all first.
  DialectRegistry registry;
  registerGpuTargetDialects(registry);
  op->getContext()->appendDialectRegistry(registry);
  op->getContext()->loadAllAvailableDialects();
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(op->getLoc());
  std::string moduleName = (backward ? "weft_attention_grad_" : "weft_attention_") +
                           config.suffix();
  if (failed(buildAttentionKernels(*kernels, moduleName, config, backward)))
    return op->emitError("building the GPU attention kernels (")
           << config.suffix() << ") failed";
  FailureOr<std::string> ptx = lowerToPtx(*kernels, moduleName, chip);
  if (failed(ptx))
    return op->emitError("lowering the GPU attention kernels (")
           << config.suffix() << ") to PTX for " << chip << " failed";
  auto binary = std::make_unique<GpuBinary>();
  std::string message;
  if (failed(assemblePtx(*ptx, chip, *binary, message)))
    return op->emitError("assembling the GPU attention kernels (")
           << config.suffix() << "): " << message;
  for (const KernelSpec &kernel : attentionKernelSpecs(config, backward))
    if (!binary->resources.count(kernel.name))
      return op->emitError("ptxas -v reported nothing for kernel ")
             << kernel.name << "; its log:\n"
             << binary->ptxasLog;
  return binary;
}

} // namespace

LogicalResult emitAttentionKernelUnits(ModuleOp module,
                                       const KernelEmitOptions &options) {
  SmallVector<AttentionSite> sites;
  llvm::StringMap<int64_t> counters;
  bool failedAny = false;
  Operation *scope = module;
  if (!options.function.empty()) {
    scope = module.lookupSymbol<func::FuncOp>(options.function);
    if (!scope)
      return module.emitError("no function @")
             << options.function << " to emit kernels for";
  }
  scope->walk([&](Operation *op) {
    if (!isa<AttentionOp, AttentionGradOp>(op))
      return;
    FailureOr<AttentionSite> site = describe(op, options, counters);
    if (failed(site))
      failedAny = true;
    else
      sites.push_back(*site);
  });
  if (failedAny)
    return failure();
  if (sites.empty())
    return scope->emitError("no weft.attention or weft.attention_grad op to "
                            "emit kernels for");
  llvm::StringSet<> names;
  for (const AttentionSite &site : sites)
    if (!names.insert(site.unitName).second)
      return site.op->emitError("two units are named ")
             << site.unitName
             << " (function names that differ only in characters C "
                "identifiers lack); rename one function";
  if (findPtxas().empty())
    return module.emitError(
        "--emit=kernels needs ptxas (the CUDA toolkit) to make cubins: none "
        "at $WEFT_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin or on PATH");
  if (failed(makeDirectory(module.getLoc(), options.outputDir)))
    return failure();

  // One build per (configuration, direction); units of the same one share it.
  std::map<std::string, std::unique_ptr<GpuBinary>> binaries;
  SmallVector<std::string> unitNames;
  for (const AttentionSite &site : sites) {
    std::string key = (site.backward ? "bwd_" : "fwd_") + site.config.suffix();
    std::unique_ptr<GpuBinary> &binary = binaries[key];
    if (!binary) {
      FailureOr<std::unique_ptr<GpuBinary>> built =
          buildBinary(site.op, site.config, site.backward, options.chip);
      if (failed(built))
        return failure();
      binary = std::move(*built);
    }
    AotUnit unit;
    unit.name = site.unitName;
    unit.backward = site.backward;
    unit.config = site.config;
    unit.shapes = site.shapes;
    unit.chip = options.chip;
    unit.kernels = attentionKernelSpecs(site.config, site.backward);
    unit.binary = binary.get();
    if (site.config.decodeRows) {
      const KernelSpec &split = unit.kernels.front();
      unit.ctasPerSm = residentCtasPerSm(split, binary->resources.lookup(split.name));
      unit.smCount = options.smCount;
      unit.decode = chooseDecodeSplits(site.config, site.shapes.batch * site.shapes.kvHeads,
                                       site.shapes.kLen, options.smCount, unit.ctasPerSm);
    }
    std::string source, message;
    if (failed(writeUnitSource(unit, source, message)))
      return site.op->emitError(message);
    Location loc = site.op->getLoc();
    StringRef dir = options.outputDir;
    StringRef cubin(binary->cubin.data(), binary->cubin.size());
    if (failed(writeFile(loc, dir, unit.name + ".ptx", binary->ptx)) ||
        failed(writeFile(loc, dir, unit.name + ".cubin", cubin)) ||
        failed(writeFile(loc, dir, unit.name + ".h", writeUnitHeader(unit))) ||
        failed(writeFile(loc, dir, unit.name + ".c", source)) ||
        failed(writeFile(loc, dir, unit.name + ".json", writeUnitJson(unit))))
      return failure();
    unitNames.push_back(unit.name);
  }
  return writeFile(module.getLoc(), options.outputDir, "kernels.json",
                   writeUnitIndex(options.chip, unitNames));
}

LogicalResult emitGpuModuleBinaries(ModuleOp module, StringRef outputDir,
                                    StringRef chip, llvm::raw_ostream &report) {
  SmallVector<std::string> names;
  for (auto gpuModule : module.getOps<mlir::gpu::GPUModuleOp>())
    names.push_back(gpuModule.getSymName().str());
  if (names.empty())
    return module.emitError("no gpu.module to lower");
  if (failed(makeDirectory(module.getLoc(), outputDir)))
    return failure();
  for (const std::string &name : names) {
    FailureOr<std::string> ptx = lowerToPtx(module, name, chip);
    if (failed(ptx))
      return failure();
    GpuBinary binary;
    std::string message;
    if (failed(assemblePtx(*ptx, chip, binary, message)))
      return module.emitError("gpu.module @") << name << ": " << message;
    StringRef cubin(binary.cubin.data(), binary.cubin.size());
    if (failed(writeFile(module.getLoc(), outputDir, name + ".ptx", *ptx)) ||
        failed(writeFile(module.getLoc(), outputDir, name + ".cubin", cubin)))
      return failure();
    // Sorted, so the report does not depend on the hash map's order.
    SmallVector<StringRef> kernels;
    for (const auto &entry : binary.resources)
      kernels.push_back(entry.getKey());
    llvm::sort(kernels);
    for (StringRef kernel : kernels) {
      const KernelResources &r = binary.resources.lookup(kernel);
      report << llvm::formatv("{0} {1}: registers={2} spill_stores={3} "
                              "spill_loads={4} stack={5} smem={6}\n",
                              name, kernel, r.registers, r.spillStoreBytes,
                              r.spillLoadBytes, r.stackBytes, r.sharedBytes);
    }
  }
  return success();
}

} // namespace weft::gpu
