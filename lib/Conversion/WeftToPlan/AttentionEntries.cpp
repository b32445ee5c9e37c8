// weft-build-plan's attention entries: the GPU attention kernels
// (attentionKernelSpecs) of a weft.attention / attention_grad, their
// configuration from the op (layout, packing, dropout, a block of
// partitioned heads) and each kernel parameter's argument.
#include "RankIndex.h"
#include "ScheduleBuilder.h"

#include "weft/Dialect/AttentionPacking.h"
#include "weft/Dialect/WeftDialect.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace weft {

namespace {

/// What the attention kernels read of an attention or attention_grad op (the
/// gradient operands null for the forward).
struct AttentionOperands {
  bool backward;
  Value q, k, v, out, lse, dout, dq, dk, dv, seed;
  /// A block of partitioned heads: its first global head (index) and the
  /// global q heads; null and 0 otherwise.
  Value headOffset;
  int64_t dropoutHeads = 0;
  double scale, dropout;
  bool causal;
  std::string dtype;
};

AttentionOperands attentionOperandsOf(Operation *op) {
  AttentionOperands o;
  o.backward = isa<AttentionGradOp>(op);
  if (auto forward = dyn_cast<AttentionOp>(op)) {
    o.q = forward.getQ(), o.k = forward.getK(), o.v = forward.getV();
    o.out = forward.getOut(), o.lse = forward.getLse();
    o.scale = forward.getScaleValue();
    o.dropout = forward.getDropoutP().convertToDouble();
    o.seed = forward.getSeed();
    o.headOffset = forward.getHeadOffset();
    o.dropoutHeads = int64_t(forward.getDropoutHeads().value_or(0));
    o.causal = forward.getCausal();
  } else {
    auto grad = cast<AttentionGradOp>(op);
    o.q = grad.getQ(), o.k = grad.getK(), o.v = grad.getV(), o.out = grad.getOut();
    o.lse = grad.getLse(), o.dout = grad.getDout();
    o.dq = grad.getDq(), o.dk = grad.getDk(), o.dv = grad.getDv();
    o.scale = grad.getScaleValue();
    o.dropout = grad.getDropoutP().convertToDouble();
    o.seed = grad.getSeed();
    o.headOffset = grad.getHeadOffset();
    o.dropoutHeads = int64_t(grad.getDropoutHeads().value_or(0));
    o.causal = grad.getCausal();
  }
  o.dtype = elementTypeName(o.q.getType()).str();
  return o;
}

/// The kernel configuration of the op: what the GPU kernels implement
/// (AotKernels.cpp checks the same), its layout and packing, and the tiles
/// `options` chooses; a diagnostic at the op when no kernel fits.
FailureOr<gpu::AttentionKernelConfig>
attentionConfigOf(Operation *op, const AttentionOperands &o,
                  const BuildPlanOptions &options) {
  if (o.dtype != "bf16" && o.dtype != "f16")
    return op->emitError("cannot plan ")
           << op->getName() << ": the GPU attention kernels take bf16 or f16, got "
           << cast<ShapedType>(o.q.getType()).getElementType();
  auto rngId = op->getAttrOfType<IntegerAttr>(WeftDialect::kRngIdAttr);
  if (o.dropout > 0.0 && (!o.seed || !rngId))
    return op->emitError("cannot plan ")
           << op->getName() << " with dropout_p = " << o.dropout
           << ": the GPU kernels draw the mask from the seed operand and "
           << WeftDialect::kRngIdAttr << ", and the op lacks "
           << (o.seed ? "the attribute" : "the seed");
  if (!o.lse)
    return op->emitError("cannot plan weft.attention without its lse result: "
                         "the forward kernel writes the row log-sum-exp");
  ArrayRef<int64_t> qShape = cast<ShapedType>(o.q.getType()).getShape();
  ArrayRef<int64_t> vShape = cast<ShapedType>(o.v.getType()).getShape();
  if (qShape[3] != vShape[3])
    return op->emitError("cannot plan ")
           << op->getName() << ": the GPU attention kernels need the value dim ("
           << vShape[3] << ") to equal head_dim (" << qShape[3] << ")";
  ArrayRef<int64_t> kShape = cast<ShapedType>(o.k.getType()).getShape();
  int seqDim = isSeqMajorAttention(op) ? 1 : 2;
  if (o.causal && qShape[seqDim] != kShape[seqDim])
    return op->emitError("cannot plan ")
           << op->getName() << ": the training attention kernels implement "
           << "causal with equal q and k lengths only, got q " << o.q.getType()
           << " and k " << o.k.getType()
           << " (weft.attention's causal is bottom-right aligned)";
  gpu::AttentionKernelConfig config;
  config.bf16 = o.dtype == "bf16";
  config.headDim = qShape[3];
  config.causal = o.causal;
  if (o.dropout > 0.0) {
    config.dropoutP = o.dropout;
    config.rngId = rngId.getInt();
    if (o.headOffset)
      config.dropoutHeads = o.dropoutHeads;
  }
  if (auto grad = dyn_cast<AttentionGradOp>(op))
    config.atomicDq = grad.getAtomicDq();
  if (isSeqMajorAttention(op)) {
    config.layout = gpu::AttentionKernelConfig::Layout::SeqMajor;
    std::optional<QkvPacking> packing = packedQkvOf(op);
    config.packedQkv = packing.has_value();
    if (auto grad = dyn_cast<AttentionGradOp>(op))
      if (std::optional<QkvPacking> grads = packedGradsOf(grad)) {
        config.packedGrads = true;
        packing = grads; // equal to the operands' when both are packed
      }
    config.groupedQkv = packing == QkvPacking::Grouped;
  }
  if (options.chooseTiles)
    options.chooseTiles(config, o.backward);
  gpu::fitDropoutTiles(config, o.backward);
  std::string message;
  if (failed(gpu::verifyAttentionKernelConfig(config, o.backward, message)))
    return op->emitError("cannot plan ") << op->getName() << ": " << message;
  return config;
}

} // namespace

struct ScheduleBuilder::AttentionCall {
  /// Operands by the kernels' parameter names; delta (attention_grad) and
  /// mask (attention with dropout) are the op's workspace.
  llvm::StringMap<Value> tensors;
  /// A block of partitioned heads' first global head (index), else null.
  Value headOffset;
  FlatSymbolRefAttr workspace;
  gpu::AttentionKernelConfig config;
  std::string dtype;
  double scale;
  int64_t batch, qHeads, kvHeads, qLen, kLen;
};

FailureOr<std::pair<StringRef, Attribute>>
ScheduleBuilder::attentionArg(Operation *op, const gpu::KernelSpec &spec,
                          const gpu::KernelParam &param, const AttentionCall &call) {
  switch (param.kind) {
  case gpu::KernelParam::Kind::Pointer: {
    if (param.name == "delta" || param.name == "mask") {
      if (!call.workspace)
        return op->emitError("cannot plan ")
               << op->getName() << ": kernel " << spec.name << " takes the op's workspace ('"
               << param.name << "') but none is planned";
      return std::pair<StringRef, Attribute>{"ptr", call.workspace};
    }
    Value tensor = call.tensors.lookup(param.name);
    if (!tensor)
      return op->emitError("cannot plan ")
             << op->getName() << ": kernel " << spec.name
             << " takes a tensor '" << param.name << "' the op does not have";
    FailureOr<FlatSymbolRefAttr> buffer = bufferOf(op, tensor);
    if (failed(buffer))
      return failure();
    return std::pair<StringRef, Attribute>{"ptr", *buffer};
  }
  case gpu::KernelParam::Kind::I32: {
    if (param.name == "head_offset") {
      // The block's first head: relative to the rank (the partitioner's
      // grid position times the heads a rank holds).
      std::string why;
      FailureOr<RankIndex> first =
          call.headOffset ? evaluateRankIndex(call.headOffset, why) : FailureOr<RankIndex>();
      if (failed(first))
        return op->emitError("cannot plan ")
               << op->getName() << ": kernel " << spec.name << " takes the head offset, "
               << (call.headOffset ? "which is not a launch immediate: " + why
                                   : std::string("which the op does not have"));
      return std::pair<StringRef, Attribute>{"i32", rankIndexArg(builder, *first, /*i32=*/true)};
    }
    int64_t value = llvm::StringSwitch<int64_t>(param.name)
                        .Case("batch", call.batch)
                        .Case("q_heads", call.qHeads)
                        .Case("kv_heads", call.kvHeads)
                        .Case("q_len", call.qLen)
                        .Case("k_len", call.kLen)
                        .Default(-1);
    if (value < 0)
      return op->emitError("cannot plan ")
             << op->getName() << ": kernel " << spec.name
             << " takes an i32 '" << param.name << "' the planner does not know";
    return std::pair<StringRef, Attribute>{"i32",
                                           builder.getI32IntegerAttr(int32_t(value))};
  }
  case gpu::KernelParam::Kind::F32:
    return std::pair<StringRef, Attribute>{"f32",
                                           builder.getF32FloatAttr(float(call.scale))};
  case gpu::KernelParam::Kind::TensorMap: {
    // The TMA view KernelParam documents (attentionTensorMap): rank 4
    // (d, len, heads, batch), box (64, boxRows, 1, 1), 128-byte swizzle;
    // encoded by the runtime at load.
    Value tensor = call.tensors.lookup(param.name);
    FailureOr<FlatSymbolRefAttr> buffer =
        tensor ? bufferOf(op, tensor) : FailureOr<FlatSymbolRefAttr>(failure());
    if (failed(buffer))
      return op->emitError("cannot plan ")
             << op->getName() << ": kernel " << spec.name
             << " takes a tensor map of '" << param.name
             << "' without an arena buffer";
    gpu::AttentionTensorMap map =
        gpu::attentionTensorMap(call.config, param, call.batch, call.qHeads,
                                call.kvHeads, call.qLen, call.kLen);
    return std::pair<StringRef, Attribute>{
        "tensormap",
        builder.getDictionaryAttr({
            builder.getNamedAttr("tensormap", *buffer),
            builder.getNamedAttr("dtype", builder.getStringAttr(call.dtype)),
            builder.getNamedAttr("dims", builder.getDenseI64ArrayAttr(map.dims)),
            builder.getNamedAttr("strides", builder.getDenseI64ArrayAttr(map.strides)),
            builder.getNamedAttr("box", builder.getDenseI64ArrayAttr(map.box)),
            builder.getNamedAttr("swizzle", builder.getI64IntegerAttr(128)),
        })};
  }
  }
  llvm_unreachable("every KernelParam kind is handled");
}

LogicalResult ScheduleBuilder::addAttention(Operation *op, int64_t index) {
  AttentionOperands o = attentionOperandsOf(op);
  FailureOr<gpu::AttentionKernelConfig> config = attentionConfigOf(op, o, options);
  if (failed(config))
    return failure();
  AttentionCall call;
  call.config = *config;
  call.dtype = o.dtype;
  call.scale = o.scale;
  call.headOffset = o.headOffset;
  call.tensors = {{"q", o.q},     {"k", o.k},       {"v", o.v},
                  {"out", o.out}, {"lse", o.lse},   {"dout", o.dout},
                  {"dq", o.dq},   {"dk", o.dk},     {"dv", o.dv},
                  {"seed", o.seed}};
  std::optional<unsigned> workspace = liveness.lookupWorkspace(op);
  auto it = workspace ? bufferSymbols.find(*workspace) : bufferSymbols.end();
  if (it != bufferSymbols.end())
    call.workspace = it->second;
  else if (o.backward)
    return op->emitError("cannot plan weft.attention_grad: no planned "
                         "workspace for delta");
  // [b, h, s, d], or [b, s, h, d] for a seq-major op.
  ArrayRef<int64_t> qShape = cast<ShapedType>(o.q.getType()).getShape();
  ArrayRef<int64_t> kShape = cast<ShapedType>(o.k.getType()).getShape();
  int seqDim = isSeqMajorAttention(op) ? 1 : 2, headsDim = 3 - seqDim;
  call.batch = qShape[0], call.qHeads = qShape[headsDim];
  call.kvHeads = kShape[headsDim];
  call.qLen = qShape[seqDim], call.kLen = kShape[seqDim];
  std::string image = (o.backward ? "weft_attention_grad_" : "weft_attention_") +
                      config->suffix();
  if (images.insert(image).second)
    attentionImages.push_back({image, *config, o.backward});
  for (const gpu::KernelSpec &spec : gpu::attentionKernelSpecs(*config, o.backward)) {
    SmallVector<StringRef> kinds;
    SmallVector<Attribute> args;
    for (const gpu::KernelParam &param : spec.params) {
      FailureOr<std::pair<StringRef, Attribute>> arg = attentionArg(op, spec, param, call);
      if (failed(arg))
        return failure();
      kinds.push_back(arg->first);
      args.push_back(arg->second);
    }
    declareKernel(spec.name, image, kinds);
    // Grid: (ceil(len / rows per block), heads, batch), as KernelSpec says.
    int64_t len = spec.overKeys ? call.kLen : call.qLen;
    int64_t heads = spec.overKeys ? call.kvHeads : call.qHeads;
    launch(op->getLoc(), spec.name, args,
           {(len + spec.rowsPerBlock - 1) / spec.rowsPerBlock, heads, call.batch},
           spec.threads, spec.dynamicSmemBytes, index);
  }
  return success();
}
} // namespace weft
