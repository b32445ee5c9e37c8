// weft_plan.step -> pkg::Package (symbols resolved to indices), and the step's
// verifier: the package's plan checks, each reported at the op it concerns.
#include "weft/Plan/PlanDialect.h"

#include "llvm/ADT/StringMap.h"

#include <cstdlib>
#include <limits>

using namespace mlir;
using namespace weft;
using namespace weft::plan;

namespace {

/// Index fields of the package are 32-bit.
bool fitsU32(int64_t value) {
  return value >= 0 && value <= int64_t(std::numeric_limits<uint32_t>::max());
}

class StepExporter {
public:
  StepExporter(StepOp step, bool diagnose) : step(step), diagnose(diagnose) {}

  FailureOr<pkg::Package> run();
  /// The ops behind the package's tables, for diagnostics.
  SmallVector<Operation *> bufferOps, kernelOps, launchOps, gemmOps, eventOps,
      collectiveOps;

private:
  InFlightDiagnostic error(Operation *op) {
    return diagnose ? op->emitOpError() : InFlightDiagnostic();
  }
  FailureOr<uint32_t> lookupBuffer(Operation *op, FlatSymbolRefAttr symbol,
                                   const Twine &what);
  LogicalResult addLaunch(LaunchOp launch, pkg::Package &package);
  LogicalResult addGemm(GemmOp gemm, pkg::Package &package);
  LogicalResult addCollective(CollectiveOp collective, pkg::Package &package);

  StepOp step;
  bool diagnose;
  llvm::StringMap<uint32_t> buffers, kernels;
};

FailureOr<uint32_t> StepExporter::lookupBuffer(Operation *op,
                                               FlatSymbolRefAttr symbol,
                                               const Twine &what) {
  auto it = buffers.find(symbol.getValue());
  if (it != buffers.end())
    return it->second;
  if (kernels.count(symbol.getValue()))
    error(op) << what << " names " << symbol << ", a kernel, not a buffer";
  else
    error(op) << what << " names " << symbol
              << ", which is not a buffer of the step";
  return failure();
}

LogicalResult StepExporter::addLaunch(LaunchOp launch, pkg::Package &package) {
  auto kernel = kernels.find(launch.getKernel());
  if (kernel == kernels.end()) {
    error(launch) << "names kernel @" << launch.getKernel()
                  << ", which the step does not declare";
    return failure();
  }
  pkg::Launch entry;
  entry.kernel = kernel->second;
  for (int d = 0; d < 3; ++d) {
    entry.grid[d] = uint32_t(launch.getGrid()[d]);
    entry.block[d] = uint32_t(launch.getBlock()[d]);
  }
  if (!fitsU32(int64_t(launch.getStream())) || !fitsU32(int64_t(launch.getIndex()))) {
    error(launch) << "stream " << int64_t(launch.getStream()) << " or index "
                  << int64_t(launch.getIndex()) << " does not fit 32 bits";
    return failure();
  }
  entry.smem = uint32_t(int64_t(launch.getSmem()));
  entry.stream = uint32_t(int64_t(launch.getStream()));
  entry.index = uint32_t(int64_t(launch.getIndex()));
  for (auto [i, arg] : llvm::enumerate(launch.getArgs())) {
    pkg::Arg value;
    if (auto symbol = dyn_cast<FlatSymbolRefAttr>(arg)) {
      FailureOr<uint32_t> buffer =
          lookupBuffer(launch, symbol, "argument " + Twine(i));
      if (failed(buffer))
        return failure();
      value = {pkg::ArgKind::Buffer, *buffer};
    } else if (auto dict = dyn_cast<DictionaryAttr>(arg); dict && dict.contains("rank_axes")) {
      // Verified by LaunchOp::verify: base, scale and axes below kMaxGridAxes.
      auto base = dict.getAs<IntegerAttr>("base");
      value = {base.getType().isInteger(32) ? pkg::ArgKind::I32 : pkg::ArgKind::I64,
               uint64_t(base.getInt())};
      value.rankScale = dict.getAs<IntegerAttr>("scale").getInt();
      for (int64_t axis : dict.getAs<DenseI64ArrayAttr>("rank_axes").asArrayRef()) {
        if (axis >= int64_t(package.grid.size())) {
          error(launch) << "argument " << i << " is relative to grid axis " << axis
                        << ", but the step's grid has " << package.grid.size() << " axes";
          return failure();
        }
        value.rankAxes |= 1u << axis;
      }
    } else if (auto dict = dyn_cast<DictionaryAttr>(arg)) {
      // Verified by LaunchOp::verify: every key present, rank 1..5.
      FailureOr<uint32_t> buffer = lookupBuffer(
          launch, dict.getAs<FlatSymbolRefAttr>("tensormap"),
          "argument " + Twine(i) + " (a tensor map)");
      if (failed(buffer))
        return failure();
      pkg::TensorMap map;
      map.buffer = *buffer;
      map.dtype = *pkg::parseDType(dict.getAs<StringAttr>("dtype").str());
      ArrayRef<int64_t> dims = dict.getAs<DenseI64ArrayAttr>("dims").asArrayRef();
      ArrayRef<int64_t> strides =
          dict.getAs<DenseI64ArrayAttr>("strides").asArrayRef();
      ArrayRef<int64_t> box = dict.getAs<DenseI64ArrayAttr>("box").asArrayRef();
      map.rank = uint32_t(dims.size());
      map.swizzle = uint32_t(dict.getAs<IntegerAttr>("swizzle").getInt());
      for (size_t d = 0; d < dims.size(); ++d) {
        map.dims[d] = uint64_t(dims[d]);
        map.box[d] = uint32_t(box[d]);
      }
      for (size_t d = 0; d < strides.size(); ++d)
        map.strides[d] = uint64_t(strides[d]);
      value = {pkg::ArgKind::TensorMap, uint64_t(package.tensorMaps.size())};
      package.tensorMaps.push_back(map);
    } else if (auto integer = dyn_cast<IntegerAttr>(arg)) {
      bool is32 = integer.getType().isInteger(32);
      value = {is32 ? pkg::ArgKind::I32 : pkg::ArgKind::I64,
               is32 ? uint64_t(uint32_t(integer.getInt()))
                    : uint64_t(integer.getInt())};
    } else {
      float f = float(cast<FloatAttr>(arg).getValueAsDouble());
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      value = {pkg::ArgKind::F32, bits};
    }
    entry.args.push_back(value);
  }
  package.schedule.push_back({pkg::EntryKind::Launch,
                              uint32_t(package.launches.size())});
  package.launches.push_back(std::move(entry));
  launchOps.push_back(launch);
  return success();
}

LogicalResult StepExporter::addCollective(CollectiveOp collective,
                                          pkg::Package &package) {
  pkg::Collective entry;
  std::optional<pkg::CollectiveKind> kind =
      pkg::parseCollectiveKind(collective.getKind().str());
  std::optional<pkg::DType> dtype = pkg::parseDType(collective.getDtype().str());
  std::optional<pkg::Reduction> reduction =
      pkg::parseReduction(collective.getReduction().str());
  if (!kind || !dtype || !reduction) {
    error(collective) << "expects kind all_reduce / all_gather / reduce_scatter / "
                         "all_to_all / send_recv, dtype bf16 / f16 / f32 / f64 and "
                         "reduction sum / max / min / avg, got '"
                      << collective.getKind() << "', '" << collective.getDtype()
                      << "', '" << collective.getReduction() << "'";
    return failure();
  }
  // send_recv's shift (the checker bounds it by the group's ranks); the
  // other kinds move no data along the group and have none.
  std::optional<int64_t> shift = collective.getShift();
  if (*kind == pkg::CollectiveKind::SendRecv
          ? !shift || *shift == 0 || std::abs(*shift) > pkg::kMaxShift
          : shift.has_value() || collective.getRotate()) {
    if (*kind == pkg::CollectiveKind::SendRecv)
      error(collective) << "send_recv expects a nonzero shift of magnitude at most "
                        << pkg::kMaxShift << ", got "
                        << (shift ? std::to_string(*shift) : std::string("none"));
    else
      error(collective) << collective.getKind()
                        << " has no shift or rotate (only send_recv does)";
    return failure();
  }
  uint32_t axes = 0;
  for (int64_t axis : collective.getAxes()) {
    if (axis < 0 || axis >= int64_t(pkg::kMaxGridAxes)) {
      error(collective) << "names grid axis " << axis << ", outside [0, "
                        << pkg::kMaxGridAxes << ")";
      return failure();
    }
    axes |= 1u << axis;
  }
  int64_t stream = collective.getStream(), index = collective.getIndex();
  if (!fitsU32(stream) || !fitsU32(index) || collective.getCount() < 1) {
    error(collective) << "expects a positive count and stream and index in "
                         "[0, 2^32), got count "
                      << collective.getCount() << ", stream " << stream
                      << ", index " << index;
    return failure();
  }
  FailureOr<uint32_t> input = lookupBuffer(collective, collective.getInputAttr(), "input");
  FailureOr<uint32_t> output =
      lookupBuffer(collective, collective.getOutputAttr(), "output");
  if (failed(input) || failed(output))
    return failure();
  entry.kind = *kind;
  entry.dtype = *dtype;
  entry.reduction = *reduction;
  entry.shift = int32_t(shift.value_or(0));
  entry.rotate = collective.getRotate();
  entry.input = *input;
  entry.output = *output;
  entry.count = collective.getCount();
  entry.axes = axes;
  if (std::optional<ArrayRef<int64_t>> offsets = collective.getOffsets()) {
    if (offsets->size() != 2) {
      error(collective) << "expects 2 offsets (input, output), got " << offsets->size();
      return failure();
    }
    entry.inputOffset = (*offsets)[0];
    entry.outputOffset = (*offsets)[1];
  }
  entry.stream = uint32_t(stream);
  entry.index = uint32_t(index);
  package.schedule.push_back(
      {pkg::EntryKind::Collective, uint32_t(package.collectives.size())});
  package.collectives.push_back(entry);
  collectiveOps.push_back(collective);
  return success();
}

LogicalResult StepExporter::addGemm(GemmOp gemm, pkg::Package &package) {
  pkg::Gemm entry;
  struct Operand {
    const char *name;
    FlatSymbolRefAttr symbol;
    uint32_t *field;
  } operands[] = {{"operand a", gemm.getAAttr(), &entry.a},
                  {"operand b", gemm.getBAttr(), &entry.b},
                  {"operand c", gemm.getCAttr(), &entry.c},
                  {"operand d", gemm.getDAttr(), &entry.d},
                  {"bias", gemm.getBiasAttr(), &entry.bias},
                  {"workspace", gemm.getWorkspaceAttr(), &entry.workspace},
                  {"aux", gemm.getAuxAttr(), &entry.aux}};
  for (Operand &operand : operands) {
    if (!operand.symbol)
      continue;
    FailureOr<uint32_t> buffer = lookupBuffer(gemm, operand.symbol, operand.name);
    if (failed(buffer))
      return failure();
    *operand.field = *buffer;
  }
  if (!fitsU32(int64_t(gemm.getStream())) || !fitsU32(int64_t(gemm.getIndex()))) {
    error(gemm) << "stream " << int64_t(gemm.getStream()) << " or index "
                << int64_t(gemm.getIndex()) << " does not fit 32 bits";
    return failure();
  }
  entry.m = int64_t(gemm.getM());
  entry.n = int64_t(gemm.getN());
  entry.k = int64_t(gemm.getK());
  entry.batch = int64_t(gemm.getBatch());
  if (gemm.getStrides())
    for (int s = 0; s < 4; ++s)
      entry.strides[s] = (*gemm.getStrides())[s];
  if (gemm.getOffsets())
    for (int o = 0; o < 5; ++o)
      entry.offsets[o] = (*gemm.getOffsets())[o];
  if (gemm.getRankAxes() && gemm.getRankBlocks()) {
    for (int64_t axis : *gemm.getRankAxes()) {
      if (axis < 0 || axis >= int64_t(pkg::kMaxGridAxes)) {
        error(gemm) << "names grid axis " << axis << " in rank_axes, outside [0, "
                    << pkg::kMaxGridAxes << ")";
        return failure();
      }
      entry.rankAxes |= 1u << axis;
    }
    entry.rankShift = (*gemm.getRankBlocks())[0];
    for (int o = 0; o < 5; ++o)
      entry.rankStrides[o] = (*gemm.getRankBlocks())[o + 1];
  }
  entry.auxLd = gemm.getAuxLd() ? int64_t(*gemm.getAuxLd()) : 0;
  entry.transA = gemm.getTransA();
  entry.transB = gemm.getTransB();
  entry.dtype = *pkg::parseDType(gemm.getDtype().str());
  entry.epilogue = *pkg::parseEpilogue(gemm.getEpilogue().str());
  entry.alpha = gemm.getAlpha().convertToFloat();
  entry.beta = gemm.getBeta().convertToFloat();
  if (gemm.getAlgo()) {
    entry.hasAlgo = true;
    for (int i = 0; i < 64; ++i)
      entry.algo[i] = uint8_t((*gemm.getAlgo())[i]);
  }
  entry.stream = uint32_t(int64_t(gemm.getStream()));
  entry.index = uint32_t(int64_t(gemm.getIndex()));
  package.schedule.push_back({pkg::EntryKind::Gemm, uint32_t(package.gemms.size())});
  package.gemms.push_back(entry);
  gemmOps.push_back(gemm);
  return success();
}

FailureOr<pkg::Package> StepExporter::run() {
  pkg::Package package;
  if (int64_t(step.getFormatVersion()) != pkg::kFormatVersion) {
    error(step) << "has plan format version " << int64_t(step.getFormatVersion())
                << "; this compiler reads and writes version "
                << pkg::kFormatVersion;
    return failure();
  }
  if (int64_t(step.getArenaBytes()) < 0 || int64_t(step.getAlignment()) < 1 ||
      !fitsU32(int64_t(step.getNumSteps())) || int64_t(step.getNumStreams()) < 1 ||
      !fitsU32(int64_t(step.getNumStreams()))) {
    error(step) << "expects arena >= 0, align >= 1, 0 <= steps < 2^32 and 1 "
                   "<= streams < 2^32, got arena "
                << int64_t(step.getArenaBytes()) << ", align " << int64_t(step.getAlignment())
                << ", steps " << int64_t(step.getNumSteps()) << ", streams "
                << int64_t(step.getNumStreams());
    return failure();
  }
  package.arch = step.getArch().str();
  package.stepName = step.getSymName().str();
  package.arenaBytes = uint64_t(int64_t(step.getArenaBytes()));
  package.alignment = uint64_t(int64_t(step.getAlignment()));
  package.numSteps = uint32_t(int64_t(step.getNumSteps()));
  package.numStreams = uint32_t(int64_t(step.getNumStreams()));
  if (std::optional<ArrayRef<int64_t>> grid = step.getGrid()) {
    if (grid->empty() || grid->size() > pkg::kMaxGridAxes ||
        llvm::any_of(*grid, [](int64_t size) { return size < 1; })) {
      error(step) << "expects a grid of 1 to " << pkg::kMaxGridAxes
                  << " positive axis sizes, got " << step.getGridAttr();
      return failure();
    }
    package.grid.assign(grid->begin(), grid->end());
  }
  if (std::optional<uint64_t> axis = step.getSplitAxis()) {
    if (int64_t(*axis) < 0 || *axis >= package.grid.size()) {
      error(step) << "expects split_axis in [0, " << package.grid.size()
                  << "), the grid's axes, got " << int64_t(*axis);
      return failure();
    }
    package.splitAxis = int32_t(*axis);
  }

  // Declarations first: the schedule may name buffers declared after it.
  for (Operation &op : step.getBodyBlock()) {
    if (auto buffer = dyn_cast<BufferOp>(op)) {
      if (!fitsU32(int64_t(buffer.getLast()))) {
        error(buffer) << "live range end " << int64_t(buffer.getLast())
                      << " does not fit 32 bits";
        return failure();
      }
      pkg::Buffer entry;
      entry.name = buffer.getSymName().str();
      if (buffer.getType()) {
        llvm::raw_string_ostream os(entry.type);
        os << *buffer.getType();
      }
      entry.offset = uint64_t(int64_t(buffer.getOffset()));
      entry.size = uint64_t(int64_t(buffer.getSize()));
      entry.first = uint32_t(int64_t(buffer.getFirst()));
      entry.last = uint32_t(int64_t(buffer.getLast()));
      entry.role = *pkg::parseRole(buffer.getRole().str());
      entry.arg = buffer.getArg() ? int32_t(*buffer.getArg()) : -1;
      entry.result = buffer.getResult() ? int32_t(*buffer.getResult()) : -1;
      entry.copyOf = buffer.getCopyOf() ? int32_t(*buffer.getCopyOf()) : -1;
      entry.bound = buffer.getBound();
      if (std::optional<uint64_t> dim = buffer.getSplitDim()) {
        if (package.splitAxis < 0 || int64_t(*dim) < 0 || int64_t(*dim) > 7) {
          error(buffer) << "has split_dim " << int64_t(*dim)
                        << " but the step has no split_axis, or it is outside [0, 8)";
          return failure();
        }
        package.splits.push_back({uint32_t(package.buffers.size()), int32_t(*dim)});
      }
      buffers[entry.name] = uint32_t(package.buffers.size());
      package.buffers.push_back(std::move(entry));
      bufferOps.push_back(buffer);
    } else if (auto kernel = dyn_cast<KernelOp>(op)) {
      pkg::Kernel entry;
      entry.name = kernel.getSymName().str();
      entry.entry = kernel.getEntry().str();
      entry.imageName = kernel.getImage().str();
      for (StringRef param : kernel.getParams().getAsValueRange<StringAttr>())
        entry.params.push_back(*pkg::parseParamKind(param.str()));
      kernels[entry.name] = uint32_t(package.kernels.size());
      package.kernels.push_back(std::move(entry));
      kernelOps.push_back(kernel);
    }
  }
  for (Operation &op : step.getBodyBlock()) {
    if (auto launch = dyn_cast<LaunchOp>(op)) {
      if (failed(addLaunch(launch, package)))
        return failure();
    } else if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (failed(addGemm(gemm, package)))
        return failure();
    } else if (auto collective = dyn_cast<CollectiveOp>(op)) {
      if (failed(addCollective(collective, package)))
        return failure();
    } else if (isa<RecordEventOp, WaitEventOp>(op)) {
      auto [stream, event, index] =
          isa<RecordEventOp>(op)
              ? std::tuple(int64_t(cast<RecordEventOp>(op).getStream()),
                           cast<RecordEventOp>(op).getEvent(),
                           int64_t(cast<RecordEventOp>(op).getIndex()))
              : std::tuple(int64_t(cast<WaitEventOp>(op).getStream()),
                           cast<WaitEventOp>(op).getEvent(),
                           int64_t(cast<WaitEventOp>(op).getIndex()));
      if (!fitsU32(stream) || !fitsU32(event) || !fitsU32(index)) {
        error(&op) << "expects stream, event and index in [0, 2^32), got "
                   << stream << ", " << event << ", " << index;
        return failure();
      }
      package.schedule.push_back(
          {pkg::EntryKind::Event, uint32_t(package.events.size())});
      package.events.push_back({isa<RecordEventOp>(op), uint32_t(stream),
                                uint32_t(event), uint32_t(index)});
      eventOps.push_back(&op);
    } else if (!isa<BufferOp, KernelOp>(op)) {
      error(&op) << "is not a weft_plan op; a step holds only buffers, "
                    "kernels, launches, GEMMs, collectives and events";
      return failure();
    }
  }
  return package;
}

} // namespace

FailureOr<pkg::Package> weft::plan::exportStep(StepOp step, bool diagnose) {
  return StepExporter(step, diagnose).run();
}

LogicalResult StepOp::verifyRegions() {
  StepExporter exporter(*this, /*diagnose=*/true);
  FailureOr<pkg::Package> package = exporter.run();
  if (failed(package))
    return failure();
  pkg::CheckOptions options;
  options.requireImages = false; // images are the package writer's business
  std::vector<pkg::Problem> problems = pkg::checkPackage(*package, options);
  for (const pkg::Problem &problem : problems) {
    Operation *op = getOperation();
    auto pick = [&](ArrayRef<Operation *> ops) {
      if (problem.index < ops.size())
        op = ops[problem.index];
    };
    switch (problem.subject) {
    case pkg::Subject::Buffer:
      pick(exporter.bufferOps);
      break;
    case pkg::Subject::Kernel:
      pick(exporter.kernelOps);
      break;
    case pkg::Subject::Launch:
      pick(exporter.launchOps);
      break;
    case pkg::Subject::Gemm:
      pick(exporter.gemmOps);
      break;
    case pkg::Subject::Event:
      pick(exporter.eventOps);
      break;
    case pkg::Subject::Collective:
      pick(exporter.collectiveOps);
      break;
    case pkg::Subject::Step:
    case pkg::Subject::Image:
      break;
    }
    op->emitOpError(problem.message);
  }
  return success(problems.empty());
}
