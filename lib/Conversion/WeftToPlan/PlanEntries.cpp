// weft-build-plan's schedule entries: GEMMs for linear / matmul (and a
// matmul with its bias gradient, epilogue bgrad_a; GELU groups in
// GeluGemmEntries.cpp), one kernel launch per other weft op or fused group,
// a fill kernel per float splat constant and the collectives; the attention
// kernels are AttentionEntries.cpp's, copies BlockEntries.cpp's.
#include "RankIndex.h"
#include "ScheduleBuilder.h"

#include "weft/Analysis/LinkModel.h"

#include "weft/Conversion/ElementwiseKernels.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"

#include <algorithm>

using namespace mlir;

namespace weft {

namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t result = 1;
  for (int64_t d : dims)
    result *= d;
  return result;
}


/// Kernel names for ops: weft.layer_norm_grad -> layer_norm_grad.
std::string identifier(StringRef text) {
  std::string result;
  for (char c : text)
    result += llvm::isAlnum(c) ? c : '_';
  return result;
}

} // namespace

FailureOr<FlatSymbolRefAttr> ScheduleBuilder::bufferOf(Operation *op, Value value) {
  std::optional<unsigned> buffer = liveness.lookupBuffer(value);
  auto it = buffer ? bufferSymbols.find(*buffer) : bufferSymbols.end();
  if (it == bufferSymbols.end())
    return op->emitError("cannot plan ")
           << op->getName() << ": an operand or result has no arena buffer";
  return it->second;
}

void ScheduleBuilder::declareKernel(StringRef name, StringRef image,
                                ArrayRef<StringRef> params) {
  if (!kernels.insert(name).second)
    return;
  OpBuilder::InsertionGuard guard(builder);
  if (firstEntry)
    builder.setInsertionPoint(firstEntry);
  SmallVector<Attribute> kinds;
  for (StringRef param : params)
    kinds.push_back(builder.getStringAttr(param));
  // The entry point is the kernel's own name (the gpu.func / PTX entry).
  plan::KernelOp::create(builder, step.getLoc(), name, image, name,
                         builder.getArrayAttr(kinds));
}

void ScheduleBuilder::launch(Location loc, StringRef kernel, ArrayRef<Attribute> args,
                         ArrayRef<int64_t> grid, int64_t threads, int64_t smem,
                         int64_t index) {
  auto op = plan::LaunchOp::create(builder, loc, kernel, builder.getArrayAttr(args),
                                   grid, {threads, 1, 1}, smem, /*stream=*/0,
                                   index);
  if (!firstEntry)
    firstEntry = op;
}

FailureOr<std::string> ScheduleBuilder::gemmDtype(Operation *op, Type type) {
  // What weft_gemm_check accepts: bf16 / f16 operands, f32 accumulation.
  std::string dtype = elementTypeName(type).str();
  if (dtype != "bf16" && dtype != "f16")
    return op->emitError("cannot plan ")
           << op->getName() << " as a cuBLASLt GEMM: operands must be bf16 or "
           << "f16 (accumulated in f32), got "
           << cast<ShapedType>(type).getElementType()
           << "; build the model in bf16 (f32 master weights stay f32)";
  return dtype;
}

FlatSymbolRefAttr ScheduleBuilder::workspaceOf(Operation *op) {
  // Planned when the step has weft.gemm_workspace (MemoryOpInterface).
  std::optional<unsigned> workspace = liveness.lookupWorkspace(op);
  return workspace ? bufferSymbols.lookup(*workspace) : FlatSymbolRefAttr();
}

void ScheduleBuilder::emitGemm(Operation *op, const GemmCall &call, int64_t index,
                               ArrayRef<int64_t> offsets, ArrayRef<int64_t> rankBlocks,
                               ArrayRef<int64_t> rankAxes) {
  auto gemm = plan::GemmOp::create(
      builder, op->getLoc(), call.d, call.a, call.b, nullptr, call.bias, workspaceOf(op),
      call.aux, call.aux ? builder.getI64IntegerAttr(call.auxLd) : IntegerAttr(),
      builder.getI64IntegerAttr(call.m), builder.getI64IntegerAttr(call.n),
      builder.getI64IntegerAttr(call.k), builder.getI64IntegerAttr(call.batch), call.strides,
      call.transA ? builder.getUnitAttr() : nullptr,
      call.transB ? builder.getUnitAttr() : nullptr, builder.getStringAttr(call.dtype),
      builder.getStringAttr(call.epilogue), builder.getF32FloatAttr(1.0f),
      builder.getF32FloatAttr(0.0f), nullptr,
      offsets.empty() ? DenseI64ArrayAttr() : builder.getDenseI64ArrayAttr(offsets),
      rankAxes.empty() ? DenseI64ArrayAttr() : builder.getDenseI64ArrayAttr(rankAxes),
      rankBlocks.empty() ? DenseI64ArrayAttr() : builder.getDenseI64ArrayAttr(rankBlocks),
      builder.getI64IntegerAttr(0), builder.getI64IntegerAttr(index));
  if (!firstEntry)
    firstEntry = gemm;
}

LogicalResult ScheduleBuilder::addLinear(Operation *op, int64_t index) {
  auto linear = cast<LinearOp>(op);
  auto x = linear.getX().getType();
  auto w = cast<RankedTensorType>(linear.getW().getType());
  int64_t k = x.getShape().back();
  int64_t m = product(x.getShape().drop_back());
  int64_t n = w.getShape()[0];
  FailureOr<std::string> dtype = gemmDtype(op, x);
  if (failed(dtype))
    return failure();
  FailureOr<FlatSymbolRefAttr> a = bufferOf(op, linear.getX()),
                               b = bufferOf(op, linear.getW()),
                               d = bufferOf(op, linear.getY());
  FailureOr<FlatSymbolRefAttr> bias = FlatSymbolRefAttr();
  if (linear.getBias())
    bias = bufferOf(op, linear.getBias());
  if (failed(a) || failed(b) || failed(d) || failed(bias))
    return failure();
  // y[m, n] = x[m, k] w[n, k]^T (+ bias[n]): cuBLASLt's bias epilogue.
  GemmCall call{*d, *a, *b, *bias, m, n, k};
  call.transB = true;
  call.dtype = *dtype;
  call.epilogue = *bias ? "bias" : "none";
  return addGemm(op, call, index);
}

LogicalResult ScheduleBuilder::addMatmul(Operation *op, int64_t index) {
  auto matmul = cast<MatmulOp>(op);
  auto aType = cast<RankedTensorType>(matmul.getA().getType());
  auto bType = cast<RankedTensorType>(matmul.getB().getType());
  ArrayRef<int64_t> aShape = aType.getShape(), bShape = bType.getShape();
  bool transA = matmul.getTransposeA(), transB = matmul.getTransposeB();
  int64_t m = transA ? aShape.back() : aShape[aShape.size() - 2];
  int64_t k = transA ? aShape[aShape.size() - 2] : aShape.back();
  int64_t n = transB ? bShape[bShape.size() - 2] : bShape.back();
  int64_t batch = product(aShape.drop_back(2));
  bool sharedB = bShape.size() == 2 && aShape.size() > 2;
  if (sharedB && !transA) {
    // Every batch of a times one b: one GEMM over batch * m rows.
    m *= batch;
    batch = 1;
  } else if (sharedB && batch > 1) {
    return op->emitError("cannot plan weft.matmul: a transposed batched a (")
           << aType << ") times a shared 2-d b (" << bType
           << ") is not one strided cuBLASLt GEMM";
  }
  FailureOr<std::string> dtype = gemmDtype(op, aType);
  if (failed(dtype))
    return failure();
  FailureOr<FlatSymbolRefAttr> a = bufferOf(op, matmul.getA()),
                               b = bufferOf(op, matmul.getB()),
                               d = bufferOf(op, matmul.getC());
  if (failed(a) || failed(b) || failed(d))
    return failure();
  DenseI64ArrayAttr strides;
  if (batch > 1)
    strides = builder.getDenseI64ArrayAttr({m * k, k * n, m * n, m * n});
  GemmCall call{*d, *a, *b, nullptr, m, n, k, batch, strides, transA, transB};
  call.dtype = *dtype;
  return addGemm(op, call, index);
}

LogicalResult ScheduleBuilder::addBiasGradGemm(Operation *op, int64_t index) {
  std::string why;
  std::optional<BiasGradGemm> group = getBiasGradGemm(op, &why);
  if (!group)
    return op->emitError("cannot plan a bias-gradient GEMM group: ") << why;
  auto matmul = cast<MatmulOp>(group->matmul);
  // dW[m, n] = dY[k, m]^T X[k, n] and db[m] = sum over k of dY[k, m]: the
  // bias gradient of A's rows (cuBLASLt's BGRADB on the column-major problem).
  ArrayRef<int64_t> aShape = matmul.getA().getType().getShape();
  int64_t k = aShape[0], m = aShape[1];
  int64_t n = matmul.getB().getType().getShape()[1];
  FailureOr<std::string> dtype = gemmDtype(op, matmul.getA().getType());
  if (failed(dtype))
    return failure();
  // dY's buffer is A's: the reshape in the group is a view.
  FailureOr<FlatSymbolRefAttr> a = bufferOf(op, op->getOperand(group->dyInput)),
                               b = bufferOf(op, op->getOperand(group->xInput)),
                               d = bufferOf(op, op->getResult(0)),
                               bias = bufferOf(op, op->getResult(1));
  if (failed(a) || failed(b) || failed(d) || failed(bias))
    return failure();
  GemmCall call{*d, *a, *b, *bias, m, n, k};
  call.transA = true;
  call.dtype = *dtype;
  call.epilogue = "bgrad_a";
  return addGemm(op, call, index);
}


LogicalResult ScheduleBuilder::addKernelPerOp(Operation *op, int64_t index) {
  std::string name;
  if (op->getNumRegions() == 0) {
    name = "weft_" + identifier(op->getName().stripDialect());
  } else if (auto kind = op->getAttrOfType<StringAttr>("kind");
             kind && op->getName().getStringRef() == "weft.fused") {
    name = "weft_fused_" + identifier(kind.getValue());
  } else {
    return op->emitError("cannot plan ")
           << op->getName() << ": an op with regions that is not a fused group";
  }
  name += llvm::formatv("_{0}", index).str();
  // Pointers to every tensor operand, result and the workspace, in order.
  SmallVector<StringRef> kinds;
  SmallVector<Attribute> args;
  int64_t elements = 1;
  auto addTensor = [&](Value value) -> LogicalResult {
    if (value.getType().isIndex()) {
      // A shard's place in the global tensor (vocabulary rows, a dropout
      // block): an i64 immediate, relative to the rank when it varies.
      std::string why;
      FailureOr<RankIndex> rankIndex = evaluateRankIndex(value, why);
      if (failed(rankIndex))
        return op->emitError("cannot plan ")
               << op->getName() << ": its index operand is not a launch immediate: " << why;
      kinds.push_back("i64");
      args.push_back(rankIndexArg(builder, *rankIndex));
      return success();
    }
    if (!isa<RankedTensorType>(value.getType()))
      return op->emitError("cannot plan ")
             << op->getName() << ": it has a non-tensor operand or result of type "
             << value.getType();
    FailureOr<FlatSymbolRefAttr> buffer = bufferOf(op, value);
    if (failed(buffer))
      return failure();
    kinds.push_back("ptr");
    args.push_back(*buffer);
    elements = std::max(elements, tensorElements(value.getType()));
    return success();
  };
  for (Value operand : op->getOperands())
    if (failed(addTensor(operand)))
      return failure();
  for (Value result : op->getResults())
    if (failed(addTensor(result)))
      return failure();
  if (std::optional<unsigned> workspace = liveness.lookupWorkspace(op)) {
    kinds.push_back("ptr");
    args.push_back(bufferSymbols.lookup(*workspace));
  }
  // ElementwiseToNVVM's kernels (one, or stats + column sums + rows), all
  // taking these arguments; an op it cannot run keeps an imageless kernel,
  // which weft-run --check reports, and a warning says why.
  std::string reason;
  FailureOr<SmallVector<gpu::ElementwiseLaunch>> launches =
      gpu::planElementwiseKernels(op, name, reason);
  if (succeeded(launches)) {
    if (images.insert(name).second)
      elementwiseImages.push_back({name, op});
    for (const gpu::ElementwiseLaunch &kernel : *launches) {
      declareKernel(kernel.kernel, name, kinds);
      launch(op->getLoc(), kernel.kernel, args, {kernel.gridX, 1, 1},
             kernel.threads, /*smem=*/0, index);
    }
    return success();
  }
  op->emitWarning("no GPU kernel image for ")
      << op->getName() << " (" << name << "): " << reason;
  declareKernel(name, name, kinds);
  // One thread per element of the largest tensor, 256 per block.
  constexpr int64_t kThreads = 256;
  int64_t blocks = std::min<int64_t>((elements + kThreads - 1) / kThreads,
                                     int64_t(pkg::kMaxGridX));
  launch(op->getLoc(), name, args, {std::max<int64_t>(blocks, 1), 1, 1},
         kThreads, /*smem=*/0, index);
  return success();
}

LogicalResult ScheduleBuilder::addConstant(Operation *op, int64_t index) {
  auto value = dyn_cast<SplatElementsAttr>(cast<arith::ConstantOp>(op).getValue());
  if (!value || !isa<FloatType>(value.getElementType()))
    return addDenseConstant(op, index);
  FailureOr<FlatSymbolRefAttr> buffer = bufferOf(op, op->getResult(0));
  if (failed(buffer))
    return failure();
  // One fill kernel per element type: (ptr, i64 elements, f32 value).
  std::string name = ("weft_fill_" + elementTypeName(value.getType())).str();
  declareKernel(name, name, {"ptr", "i64", "f32"});
  std::string reason;
  if (images.insert(name).second &&
      succeeded(gpu::planElementwiseKernels(op, name, reason)))
    elementwiseImages.push_back({name, op});
  int64_t elements = value.getNumElements();
  float splat = float(value.getSplatValue<APFloat>().convertToDouble());
  constexpr int64_t kThreads = 256;
  launch(op->getLoc(), name,
         {*buffer, builder.getI64IntegerAttr(elements), builder.getF32FloatAttr(splat)},
         {std::max<int64_t>((elements + kThreads - 1) / kThreads, 1), 1, 1},
         kThreads, /*smem=*/0, index);
  return success();
}

/// NCCL's collectives move contiguous blocks in rank order: a gather or
/// scatter along a dimension is one when every dimension before it is 1.
static LogicalResult checkContiguousAlong(Operation *op, RankedTensorType type,
                                          int64_t axis) {
  if (llvm::all_of(type.getShape().take_front(axis),
                   [](int64_t size) { return size == 1; }))
    return success();
  return op->emitError("cannot plan ")
         << op->getName() << " along dimension " << axis << " of " << type
         << ": NCCL moves contiguous blocks, and the dimensions before it are "
            "not all 1 (a [seq, batch, hidden] layout is not built yet)";
}

/// shard.all_to_all as NCCL's (grouped send/recv): block j of the input goes
/// to position j of the group and block i of the result comes from position
/// i, so both must be contiguous (every dimension before split_axis of the
/// input and before concat_axis of the result is 1) and the group in NCCL's
/// order (grid axes increasing).
static LogicalResult checkAllToAll(shard::AllToAllOp op) {
  auto input = cast<RankedTensorType>(op.getInput().getType());
  auto result = cast<RankedTensorType>(op.getResult().getType());
  int64_t split = op.getSplitAxis().getSExtValue();
  int64_t concat = op.getConcatAxis().getSExtValue();
  auto ones = [](RankedTensorType type, int64_t axis) {
    return axis >= 0 && axis < type.getRank() &&
           llvm::all_of(type.getShape().take_front(axis), [](int64_t size) { return size == 1; });
  };
  if (!ones(input, split) || !ones(result, concat))
    return op.emitError("cannot plan shard.all_to_all with split_axis ")
           << split << " and concat_axis " << concat << " (" << input << " -> " << result
           << "): NCCL's all-to-all sends and receives one contiguous block per rank, so "
              "every dimension before split_axis of the input and before concat_axis of "
              "the result must be 1";
  if (!llvm::is_sorted(op.getGridAxes()) ||
      llvm::adjacent_find(op.getGridAxes()) != op.getGridAxes().end())
    return op.emitError("cannot plan shard.all_to_all over grid_axes [")
           << llvm::interleaved(op.getGridAxes(), ", ")
           << "]: the blocks go to ranks in the order of NCCL's communicator, "
              "increasing grid axes";
  return success();
}

/// shard.shift as a send_recv along its shift_axis alone (the other grid
/// axes do not move data): a shift inside the axis, nonzero. With rotate an
/// offset past the axis wraps; without, it would leave every rank zeros.
static FailureOr<int64_t> shiftOf(shard::ShiftOp op) {
  int64_t axis = op.getShiftAxis().getSExtValue(), offset = int64_t(op.getOffset());
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  if (!grid || axis < 0 || axis >= int64_t(grid.getShape().size()) ||
      ShapedType::isDynamic(grid.getShape()[axis]))
    return op.emitError("cannot plan shard.shift along grid axis ")
           << axis << ": the grid @" << op.getGrid() << " has no static size there";
  int64_t extent = grid.getShape()[axis];
  if (op.getRotate())
    offset %= extent;
  if (offset == 0 || std::abs(offset) >= extent)
    return op.emitError("cannot plan shard.shift by ")
           << int64_t(op.getOffset()) << (op.getRotate() ? " with" : " without")
           << " rotate along grid axis " << axis << " of size " << extent << ": "
           << (offset == 0 ? "every tensor stays where it is"
                           : "no rank has a source (the result is all zeros)");
  return offset;
}

FailureOr<ScheduleBuilder::CollectiveCall> ScheduleBuilder::collectiveCallOf(Operation *op) {
  Value input = op->getOperand(0), output = op->getResult(0);
  CollectiveCall call;
  auto whole = cast<RankedTensorType>(output.getType());
  std::optional<shard::ReductionKind> reduction;
  ArrayRef<shard::GridAxis> axes;
  SmallVector<shard::GridAxis, 1> shiftAxis;
  if (auto allToAll = dyn_cast<shard::AllToAllOp>(op)) {
    call.kind = "all_to_all";
    axes = allToAll.getGridAxes();
    if (failed(checkAllToAll(allToAll)))
      return failure();
  } else if (auto shift = dyn_cast<shard::ShiftOp>(op)) {
    call.kind = "send_recv";
    FailureOr<int64_t> offset = shiftOf(shift);
    if (failed(offset))
      return failure();
    call.shift = *offset;
    call.rotate = shift.getRotate();
    shiftAxis.push_back(shard::GridAxis(shift.getShiftAxis().getSExtValue()));
    axes = shiftAxis;
  } else if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
    call.kind = "all_reduce";
    reduction = reduce.getReduction();
    axes = reduce.getGridAxes();
  } else if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
    call.kind = "all_gather";
    axes = gather.getGridAxes();
    if (failed(checkContiguousAlong(op, whole, gather.getGatherAxis().getSExtValue())))
      return failure();
  } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
    call.kind = "reduce_scatter";
    whole = cast<RankedTensorType>(input.getType());
    reduction = scatter.getReduction();
    axes = scatter.getGridAxes();
    if (failed(checkContiguousAlong(op, whole, scatter.getScatterAxis().getSExtValue())))
      return failure();
  } else {
    return op->emitError("cannot plan ")
           << op->getName() << ": the host schedule has all-reduce, all-gather, "
           << "reduce-scatter, all-to-all and shift (send/recv) collectives";
  }
  call.reduction = "sum";
  if (reduction) {
    if (*reduction == shard::ReductionKind::Max)
      call.reduction = "max";
    else if (*reduction == shard::ReductionKind::Min)
      call.reduction = "min";
    else if (*reduction == shard::ReductionKind::Average)
      call.reduction = "avg";
    else if (*reduction != shard::ReductionKind::Sum)
      return op->emitError("cannot plan ")
             << op->getName() << " with reduction "
             << shard::stringifyReductionKind(*reduction)
             << ": NCCL runs sum, max, min and avg";
  }
  call.dtype = elementTypeName(whole).str();
  call.count = whole.getNumElements();
  FailureOr<FlatSymbolRefAttr> in = bufferOf(op, input), out = bufferOf(op, output);
  if (failed(in) || failed(out))
    return failure();
  call.input = *in;
  call.output = *out;
  call.axes.assign(axes.begin(), axes.end());
  return call;
}

int64_t ScheduleBuilder::recordEvent(Location loc, int64_t stream, int64_t index) {
  int64_t event = nextEvent++;
  plan::RecordEventOp::create(builder, loc, builder.getI64IntegerAttr(stream),
                              builder.getI64IntegerAttr(event),
                              builder.getI64IntegerAttr(index));
  return event;
}

void ScheduleBuilder::waitEvent(Location loc, int64_t stream, int64_t event, int64_t index) {
  plan::WaitEventOp::create(builder, loc, builder.getI64IntegerAttr(stream),
                            builder.getI64IntegerAttr(event), builder.getI64IntegerAttr(index));
}

void ScheduleBuilder::emitCollective(Location loc, const CollectiveCall &call, int64_t stream,
                                     int64_t index, ArrayRef<int64_t> offsets) {
  auto i64 = [&](int64_t v) { return builder.getI64IntegerAttr(v); };
  auto collective = plan::CollectiveOp::create(
      builder, loc, builder.getStringAttr(call.kind), call.input, call.output,
      i64(call.count), builder.getStringAttr(call.dtype),
      builder.getDenseI64ArrayAttr(call.axes), builder.getStringAttr(call.reduction),
      offsets.empty() ? DenseI64ArrayAttr() : builder.getDenseI64ArrayAttr(offsets),
      call.shift ? i64(call.shift) : IntegerAttr(),
      call.rotate ? builder.getUnitAttr() : UnitAttr(), i64(stream), i64(index));
  if (!firstEntry)
    firstEntry = collective;
}

LogicalResult ScheduleBuilder::addCollective(Operation *op, int64_t index) {
  FailureOr<CollectiveCall> call = collectiveCallOf(op);
  if (failed(call))
    return failure();
  if (op->hasAttr(WeftDialect::kChunksAttr))
    return addChunkedCollective(op, *call, index);
  if (op->hasAttr(WeftDialect::kLocalFirstAttr) && options.overlapCollectives)
    return addLocalFirstGather(op, *call, index);
  // On stream 1 after its producers (an event recorded on stream 0), with an
  // event after it that stream 0 waits for where the result is first read.
  int64_t stream = options.overlapCollectives ? 1 : 0;
  Location loc = op->getLoc();
  if (stream)
    waitEvent(loc, 1, recordEvent(loc, 0, index), index);
  emitCollective(loc, *call, stream, index);
  if (stream)
    pendingWaits[liveness.getCollectiveWait(op)].push_back(recordEvent(loc, 1, index));
  return success();
}

void ScheduleBuilder::waitForCollectives(int64_t index) {
  auto it = pendingWaits.find(index);
  if (it == pendingWaits.end())
    return;
  for (int64_t event : it->second)
    plan::WaitEventOp::create(builder, step.getLoc(), builder.getI64IntegerAttr(0),
                              builder.getI64IntegerAttr(event),
                              builder.getI64IntegerAttr(index));
  pendingWaits.erase(it);
}

LogicalResult ScheduleBuilder::addOp(Operation *op, int64_t index) {
  waitForCollectives(index);
  // Index arithmetic on the grid position: the kernels that read it take
  // the value as a (rank-relative) immediate.
  if (isRankIndexOp(op))
    return success();
  if (isa<arith::ConstantOp>(op))
    return addConstant(op, index);
  if (isCommunicating(op))
    return addCollective(op, index);
  if (isa<shard::AllSliceOp>(op))
    return addAllSlice(op, index);
  if (!isa<WeftDialect>(op->getDialect()))
    return op->emitError("cannot plan ")
           << op->getName() << ": weft-build-plan has no kernel for ops of the '"
           << op->getDialect()->getNamespace() << "' dialect";
  // A view of its operands' buffer (a reshape, or the split and concat that
  // packed attention kernels read and write in place): nothing to run.
  if (isBufferView(op))
    return success();
  if (isa<LinearOp>(op))
    return addLinear(op, index);
  if (isa<MatmulOp>(op))
    return addMatmul(op, index);
  if (isa<AttentionOp, AttentionGradOp>(op))
    return addAttention(op, index);
  if (auto fused = dyn_cast<FusedOp>(op);
      fused && fused.getKind() == kBiasGradGemmKind)
    return addBiasGradGemm(op, index);
  if (auto fused = dyn_cast<FusedOp>(op);
      fused && (fused.getKind() == kLinearGeluGemmKind || fused.getKind() == kDGeluGemmKind))
    return addGeluGemm(op, index);
  return addKernelPerOp(op, index);
}

} // namespace weft
