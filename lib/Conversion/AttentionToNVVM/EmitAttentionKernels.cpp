// weft-emit-attention-kernels: appends the GPU attention kernels of the
// configuration given by the pass options (for inspection and lit tests).
#include "weft/Conversion/AttentionKernels.h"
#include "weft/Conversion/Passes.h"

namespace weft {

#define GEN_PASS_DEF_EMITATTENTIONKERNELSPASS
#include "weft/Conversion/Passes.h.inc"

namespace {

struct EmitAttentionKernelsPass
    : public impl::EmitAttentionKernelsPassBase<EmitAttentionKernelsPass> {
  using EmitAttentionKernelsPassBase::EmitAttentionKernelsPassBase;

  void runOnOperation() override {
    if (dtype != "bf16" && dtype != "f16") {
      getOperation().emitError("weft-emit-attention-kernels: dtype must be "
                               "bf16 or f16, got '")
          << dtype << "'";
      return signalPassFailure();
    }
    if (layout != "head_major" && layout != "seq_major") {
      getOperation().emitError("weft-emit-attention-kernels: layout must be "
                               "head_major or seq_major, got '")
          << layout << "'";
      return signalPassFailure();
    }
    std::optional<gpu::AttentionKernelConfig::ForwardSchedule> parsedSchedule =
        gpu::parseSchedule(schedule);
    if (!parsedSchedule) {
      getOperation().emitError("weft-emit-attention-kernels: schedule must be "
                               "serial, overlap or pingpong, got '")
          << schedule << "'";
      return signalPassFailure();
    }
    gpu::AttentionKernelConfig config;
    config.schedule = *parsedSchedule;
    config.layout = layout == "seq_major" ? gpu::AttentionKernelConfig::Layout::SeqMajor
                                          : gpu::AttentionKernelConfig::Layout::HeadMajor;
    config.packedQkv = packedQkv;
    config.packedGrads = packedGrads;
    config.bf16 = dtype == "bf16";
    config.headDim = headDim;
    config.causal = causal;
    config.blockQ = blockQ;
    config.blockK = blockK;
    config.warpgroupMma = warpgroupMma;
    config.stages = stages;
    std::string name = (backward ? "weft_attn_bwd_" : "weft_attn_fwd_") + config.suffix();
    if (failed(gpu::buildAttentionKernels(getOperation(), name, config, backward)))
      signalPassFailure();
  }
};

} // namespace
} // namespace weft
