// The attention kernels' configurations, launch specs and the gpu.module that
// holds them; the bodies come from ForwardKernel.cpp and BackwardKernels.cpp.
#include "weft/Conversion/AttentionKernels.h"

#include "KernelBodies.h"
#include "TmaPipeline.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;

namespace weft::gpu {

uint64_t dropoutThreshold(double p) { return static_cast<uint64_t>(std::ldexp(p, 32)); }

llvm::StringRef scheduleName(AttentionKernelConfig::ForwardSchedule schedule) {
  switch (schedule) {
  case AttentionKernelConfig::ForwardSchedule::Serial:
    return "serial";
  case AttentionKernelConfig::ForwardSchedule::Overlap:
    return "overlap";
  case AttentionKernelConfig::ForwardSchedule::PingPong:
    return "pingpong";
  }
  llvm_unreachable("unknown forward schedule");
}

std::optional<AttentionKernelConfig::ForwardSchedule> parseSchedule(llvm::StringRef name) {
  for (auto schedule : {AttentionKernelConfig::ForwardSchedule::Serial,
                        AttentionKernelConfig::ForwardSchedule::Overlap,
                        AttentionKernelConfig::ForwardSchedule::PingPong})
    if (name == scheduleName(schedule))
      return schedule;
  return std::nullopt;
}

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
  // The kernels that draw the mask (not the delta preprocess) read the seed
  // last, so the tensor and scalar indices stay those of the dropout-free
  // kernels. (The Hopper dK/dV and dQ kernels read the keep mask instead,
  // but keep the parameter: one signature per role.)
  // A block of partitioned heads takes its first global head just before.
  if (config.dropoutP > 0.0 && role != "backward_preprocess") {
    if (config.dropoutHeads)
      result.params.push_back({"head_offset", KernelParam::Kind::I32});
    result.params.push_back(pointer("seed"));
  }
  return result;
}
/// The Hopper kernels' keep-mask kernel (KeepMask.h), writing the workspace
/// behind `workspace` ("mask": the forward's, "delta": the backward's).
KernelSpec keepMaskSpec(const AttentionKernelConfig &config, llvm::StringRef workspace) {
  KernelSpec keepMask = spec(config, "keep_mask", {workspace});
  keepMask.threads = kKeepMaskThreads;
  keepMask.rowsPerBlock = kKeepMaskRows;
  return keepMask;
}
} // namespace

std::string AttentionKernelConfig::scheduleSuffix() const {
  // Serial adds nothing: the names (and the packages' bytes) of the kernels
  // before the other schedules stay as they were.
  switch (schedule) {
  case ForwardSchedule::Serial:
    return "";
  case ForwardSchedule::Overlap:
    return "_ov";
  case ForwardSchedule::PingPong:
    return "_pp";
  }
  llvm_unreachable("unknown forward schedule");
}

std::string AttentionKernelConfig::suffix() const {
  // HeadMajor adds nothing, so the names of today's kernels stay as they are.
  std::string layoutPart;
  if (layout == Layout::SeqMajor)
    layoutPart = std::string("_sm") + (packedQkv ? "_pqkv" : "") + (packedGrads ? "_pgrad" : "") +
                 (groupedQkv ? "_grp" : "");
  if (dropoutP > 0.0)
    layoutPart += llvm::formatv("_drop{0}_r{1}", dropoutThreshold(dropoutP), rngId).str() +
                  (dropoutHeads ? llvm::formatv("_dh{0}", dropoutHeads).str() : std::string());
  if (atomicDq)
    layoutPart += "_adq";
  if (decodeRows)
    return llvm::formatv("{0}_d{1}_{2}_k{3}_dec{4}_s{5}", bf16 ? "bf16" : "f16", headDim,
                         causal ? "causal" : "full", blockK, decodeRows, stages)
        .str();
  return llvm::formatv("{0}_d{1}_{2}_q{3}_k{4}{5}{6}", bf16 ? "bf16" : "f16", headDim,
                       causal ? "causal" : "full", blockQ, blockK,
                       warpgroupMma ? llvm::formatv("_wgmma_s{0}{1}", stages, scheduleSuffix())
                                          .str()
                                    : std::string(),
                       layoutPart)
      .str();
}

llvm::StringRef layoutName(const AttentionKernelConfig &config) {
  if (config.layout == AttentionKernelConfig::Layout::HeadMajor)
    return "head_major";
  if (!config.packedQkv && !config.packedGrads)
    return "seq_major";
  return config.groupedQkv ? "packed_grouped" : "packed";
}

AttentionTensorMap attentionTensorMap(const AttentionKernelConfig &config,
                                      const KernelParam &param, int64_t batch,
                                      int64_t qHeads, int64_t kvHeads, int64_t qLen,
                                      int64_t kLen) {
  const int64_t d = config.headDim, element = 2;
  int64_t len = param.lenName == "q_len" ? qLen : kLen;
  int64_t heads = param.headsName == "q_heads" ? qHeads : kvHeads;
  AttentionTensorMap map;
  map.box = {64, param.boxRows, 1, 1};
  if (config.layout == AttentionKernelConfig::Layout::HeadMajor) {
    map.dims = {d, len, heads, batch};
    map.strides = {d * element, len * d * element, heads * len * d * element};
    return map;
  }
  // Only q, k, v and dout are read through tensor maps; dout is never packed.
  bool packed = config.packedQkv && (param.name == "q" || param.name == "k" || param.name == "v");
  if (packed)
    heads = qHeads + 2 * kvHeads;
  int64_t pitch = heads * d;
  map.dims = {d, len, heads, batch};
  map.strides = {pitch * element, d * element, len * pitch * element};
  return map;
}

int64_t dkdvInnerRows(const AttentionKernelConfig &config) {
  // The Hopper dK/dV holds S^T and dP^T (64 x inner each) beside dK and dV
  // (64 x head_dim each) in a consumer's registers; with dropout the mask's
  // Philox rounds and bits need room too (ptxas spilled 100 bytes at
  // head_dim 64 and inner 128).
  if (config.warpgroupMma && config.headDim > 128 && config.dropoutP > 0.0)
    return 32; // (64 spilled 4 bytes at head_dim 256 with dropout)
  // (The atomic dQ at head_dim 64 spilled 32-44 bytes at 128.)
  if (config.warpgroupMma)
    return config.headDim > 64 || config.dropoutP > 0.0 || config.atomicDq ? 64
                                                                           : config.blockQ;
  return config.headDim > 64 ? std::min<int64_t>(config.blockQ, 32) : config.blockQ;
}
int64_t dkdvColumnGroups(const AttentionKernelConfig &config) {
  return config.warpgroupMma && config.headDim > 128 ? 2 : 1;
}
int64_t dkdvConsumers(const AttentionKernelConfig &config) {
  return config.blockK / 64 * dkdvColumnGroups(config);
}
int64_t dqInnerRows(const AttentionKernelConfig &config) {
  // The Hopper dQ holds S and dP (64 x inner each) beside dQ; with dropout
  // 64 keys a step (ptxas spilled 76 / 280 bytes at head_dim 64 / 128 and
  // block_k 128).
  if (config.warpgroupMma && config.headDim > 128 && config.dropoutP > 0.0)
    return 32; // (64 spilled 24-28 bytes at head_dim 256 with dropout)
  if (config.warpgroupMma)
    return config.dropoutP > 0.0 ? 64 : config.blockK;
  return config.headDim > 64 ? std::min<int64_t>(config.blockK, 32) : config.blockK;
}

/// Keys of a block one decode warp scores at most (their scores stay in
/// registers).
static constexpr int64_t kDecodeWarpKeys = 128;

int64_t defaultDecodeBlockK(const AttentionKernelConfig &config) {
  AttentionKernelConfig larger = config;
  larger.blockK = decodeBlockK(config.headDim);
  return larger.blockK / decodeKeyColumns(larger) > kDecodeWarpKeys ? larger.blockK / 2
                                                                     : larger.blockK;
}

int64_t defaultDecodeStages(const AttentionKernelConfig &config) {
  AttentionKernelConfig three = config;
  three.stages = 3;
  return decodeSplitSmemBytes(three) <= 227 * 1024 ? 3 : 2;
}

/// The decode kernels' own rules (decodeRows > 0).
static LogicalResult verifyDecodeConfig(const AttentionKernelConfig &config, bool backward,
                                        std::string &message) {
  if (backward) {
    message = "the decode attention kernels are forward only (inference)";
    return failure();
  }
  if (config.headDim != 64 && config.headDim != 128 && config.headDim != 256) {
    message = llvm::formatv("the decode attention kernels support head_dim 64, 128 "
                            "and 256, got {0}", config.headDim);
    return failure();
  }
  if (config.decodeRows != 16 && config.decodeRows != 32 && config.decodeRows != 64 &&
      config.decodeRows != 128) {
    message = llvm::formatv("the decode attention kernels hold 16, 32, 64 or 128 query "
                            "rows (group * q_len, padded) per CTA, got {0}",
                            config.decodeRows);
    return failure();
  }
  if (config.blockK != decodeBlockK(config.headDim) &&
      config.blockK != decodeBlockK(config.headDim) / 2) {
    message = llvm::formatv("the decode attention kernels at head_dim {0} stream "
                            "blocks of {1} or {2} keys, got block_k {3}",
                            config.headDim, decodeBlockK(config.headDim),
                            decodeBlockK(config.headDim) / 2, config.blockK);
    return failure();
  }
  if (config.layout != AttentionKernelConfig::Layout::HeadMajor || config.warpgroupMma) {
    message = "the decode attention kernels take head_major tensors and mma.sync";
    return failure();
  }
  if (config.blockK / decodeKeyColumns(config) > kDecodeWarpKeys) {
    message = llvm::formatv("the decode split kernel's warps would score {0} keys of "
                            "each {1}-key block at head_dim {2} with {3} query rows, "
                            "more than the {4} their registers hold",
                            config.blockK / decodeKeyColumns(config), config.blockK,
                            config.headDim, config.decodeRows, kDecodeWarpKeys);
    return failure();
  }
  // Every thread copies the same number of a block's 16-byte chunks.
  if (config.blockK * config.headDim / 8 % decodeSplitThreads(config) != 0) {
    message = llvm::formatv("the decode split kernel's {0} threads do not divide the "
                            "{1} 16-byte chunks of a {2}-key block at head_dim {3}",
                            decodeSplitThreads(config), config.blockK * config.headDim / 8,
                            config.blockK, config.headDim);
    return failure();
  }
  // 227 KiB is what an sm_90 CTA may opt in to.
  if (config.stages < 2 || config.stages > 4 || decodeSplitSmemBytes(config) > 227 * 1024 ||
      decodeMergeBytes(config) > decodeSplitSmemBytes(config)) {
    message = llvm::formatv("the decode attention kernels keep 2..4 key blocks in "
                            "shared memory within 227 KiB, got {0} stages ({1} bytes "
                            "at head_dim {2} with {3} query rows)",
                            config.stages, decodeSplitSmemBytes(config), config.headDim,
                            config.decodeRows);
    return failure();
  }
  return success();
}

void fitDropoutTiles(AttentionKernelConfig &config, bool backward) {
  if (config.dropoutP <= 0.0)
    return;
  // The overlap schedule draws a block's mask under the previous block's
  // P V at head_dim 64 (at 128 ptxas spilled 100-144 bytes: O takes twice
  // the registers); pingpong's turns are not built for it.
  if (config.schedule == AttentionKernelConfig::ForwardSchedule::PingPong ||
      !config.warpgroupMma || config.headDim > 64)
    config.schedule = AttentionKernelConfig::ForwardSchedule::Serial;
  if (!config.warpgroupMma) {
    config.blockQ = config.blockK = 64;
    config.stages = 2;
  } else if (backward && config.headDim <= 128) {
    // (At head_dim 256 three slots of Q and dO would pass 227 KiB.)
    config.stages = std::max<int64_t>(config.stages, 3);
  }
}

LogicalResult verifyAttentionKernelConfig(const AttentionKernelConfig &config,
                                          bool backward, std::string &message) {
  if (config.dropoutP < 0.0 || config.dropoutP >= 1.0) {
    message = llvm::formatv("attention dropout needs 0 <= p < 1, got {0}", config.dropoutP);
    return failure();
  }
  if (config.dropoutP > 0.0 && config.decodeRows) {
    message = llvm::formatv("attention dropout (p = {0}) is implemented by the training "
                            "kernels, not the decode kernels",
                            config.dropoutP);
    return failure();
  }
  if (config.schedule != AttentionKernelConfig::ForwardSchedule::Serial) {
    llvm::StringRef name = scheduleName(config.schedule);
    if (backward || config.decodeRows || !config.warpgroupMma) {
      message = llvm::formatv("the '{0}' schedule is the warpgroup-MMA training "
                              "forward's; the other kernels are serial",
                              name);
      return failure();
    }
    if (config.dropoutP > 0.0 &&
        config.schedule == AttentionKernelConfig::ForwardSchedule::PingPong) {
      message = llvm::formatv("the warpgroup-MMA forward with dropout (p = {0}) "
                              "runs the serial or overlap schedule, not '{1}'",
                              config.dropoutP, name);
      return failure();
    }
    if (config.schedule == AttentionKernelConfig::ForwardSchedule::PingPong &&
        config.blockQ != 128) {
      message = llvm::formatv("the 'pingpong' schedule alternates two consumer "
                              "warpgroups: it needs block_q = 128, got {0}",
                              config.blockQ);
      return failure();
    }
  }
  if (config.atomicDq && (!backward || !config.warpgroupMma || config.decodeRows ||
                          config.headDim > 128)) {
    message = llvm::formatv("the atomic dQ (atomic_dq) is the warpgroup-MMA backward's, at "
                            "head_dim 64 or 128; got {0}{1}, head_dim {2}",
                            backward ? "a backward" : "a forward",
                            config.warpgroupMma ? " with warpgroup MMA" : " with mma.sync",
                            config.headDim);
    return failure();
  }
  if (config.atomicDq && config.dropoutP > 0.0) {
    message = llvm::formatv("the atomic dQ (atomic_dq) is not built with dropout (p = {0}): "
                            "the mask's bits beside dS, dK, dV and dQ spilled; the "
                            "deterministic backward takes dropout",
                            config.dropoutP);
    return failure();
  }
  if (config.decodeRows)
    return verifyDecodeConfig(config, backward, message);
  if (config.headDim != 64 && config.headDim != 128 && config.headDim != 256) {
    message = llvm::formatv("the GPU attention kernels support head_dim 64, 128 "
                            "and 256, got {0}", config.headDim);
    return failure();
  }
  if (config.headDim == 256 && !config.warpgroupMma) {
    message = "head_dim 256 needs the warpgroup-MMA attention kernels (--attention-mma="
              "warpgroup): a mma.sync warp's f32 accumulators of 16 rows x 256 columns "
              "(O, or dK and dV) would not fit a thread's registers";
    return failure();
  }
  // Two consumer warpgroups share 64 keys and take half of dK's and dV's
  // columns each.
  if (config.headDim == 256 && backward && config.blockK != 64) {
    message = llvm::formatv("the warpgroup-MMA attention backward at head_dim 256 needs "
                            "block_k = 64 (two consumer warpgroups split the columns of "
                            "64 keys' dK and dV), got {0}",
                            config.blockK);
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
  // Each consumer warpgroup (4 warps) owns 64 query rows of the CTA.
  if (config.warpgroupMma && config.blockQ != 64 && config.blockQ != 128) {
    message = llvm::formatv("the warpgroup-MMA attention kernels need block_q "
                            "= 64 or 128 (one or two consumer warpgroups of 4 "
                            "warps), got {0}",
                            config.blockQ);
    return failure();
  }
  // The Hopper dK/dV kernel's consumer warpgroups own 64 keys each.
  if (config.warpgroupMma && backward && config.blockK != 64 && config.blockK != 128) {
    message = llvm::formatv("the warpgroup-MMA attention backward needs block_k "
                            "= 64 or 128 (one or two dK/dV consumer warpgroups of "
                            "4 warps), got {0}",
                            config.blockK);
    return failure();
  }
  if (config.warpgroupMma && (config.stages < 2 || config.stages > 4)) {
    message = llvm::formatv("the warpgroup-MMA attention kernels need 2..4 "
                            "pipeline stages, got {0}", config.stages);
    return failure();
  }
  if (config.layout != AttentionKernelConfig::Layout::SeqMajor &&
      (config.packedQkv || config.packedGrads)) {
    message = llvm::formatv("packed attention tensors (packedQkv = {0}, "
                            "packedGrads = {1}) need the seq_major layout, got "
                            "head_major",
                            config.packedQkv, config.packedGrads);
    return failure();
  }
  if (config.groupedQkv && !config.packedQkv && !config.packedGrads) {
    message = "grouped packing (groupedQkv) orders the heads of a packed tensor; "
              "it needs packedQkv or packedGrads";
    return failure();
  }
  // 227 KiB is what an sm_90 CTA may opt in to.
  constexpr int64_t kMaxSmem = 227 * 1024;
  if (!config.warpgroupMma)
    return success();
  for (auto [kernel, bytes, isBackward] :
       {std::tuple<const char *, int64_t, bool>{"forward", tmaForwardLayout(config).total, false},
        {"backward dK/dV", dkdvPipelineLayout(config).total(), true},
        {"backward dQ", config.atomicDq ? 0 : dqPipelineLayout(config).total(), true}}) {
    if (isBackward != backward || bytes <= kMaxSmem)
      continue;
    message = llvm::formatv("the warpgroup-MMA attention {0} with block_q {1}, "
                            "block_k {2}, head_dim {3} and {4} stages needs {5} "
                            "bytes of shared memory, more than the {6} a CTA "
                            "can have",
                            kernel, config.blockQ, config.blockK, config.headDim,
                            config.stages, bytes, kMaxSmem);
    return failure();
  }
  return success();
}

llvm::SmallVector<KernelSpec> decodeKernelSpecs(const AttentionKernelConfig &config) {
  auto splitScalars = [](KernelSpec &kernel) {
    for (const char *name : {"num_splits", "keys_per_split"})
      kernel.params.push_back({name, KernelParam::Kind::I32});
  };
  KernelSpec split = spec(config, "decode_split", {"q", "k", "v", "o_partial", "lse_partial"});
  splitScalars(split);
  split.threads = decodeSplitThreads(config);
  split.rowsPerBlock = config.decodeRows;
  split.overKeys = true;
  split.dynamicSmemBytes = decodeSplitSmemBytes(config);
  KernelSpec combine = spec(config, "decode_combine", {"o_partial", "lse_partial", "out", "lse"});
  splitScalars(combine);
  combine.threads = decodeCombineThreads(config);
  combine.dynamicSmemBytes = decodeCombineSmemBytes(config);
  combine.rowsPerBlock = 1;
  // Its launch overlaps the split kernel's tail (DecodeCombine.cpp waits).
  combine.programmatic = true;
  return {split, combine};
}

DecodeSplits chooseDecodeSplits(const AttentionKernelConfig &config, int64_t ctas,
                                int64_t kLen, int64_t smCount, int64_t ctasPerSm) {
  // As many splits as fill the resident slots once: equal CTAs in one wave
  // finish together (a second, partial wave would leave SMs idle); a split
  // of at least two key blocks keeps the partial O traffic (group * q_len *
  // d f32 per split) small beside its K and V.
  const int64_t blockK = config.blockK;
  int64_t blocks = std::max<int64_t>(1, llvm::divideCeil(kLen, blockK));
  int64_t splits = smCount * std::max<int64_t>(1, ctasPerSm) / std::max<int64_t>(1, ctas);
  splits = std::clamp<int64_t>(splits, 1, std::max<int64_t>(1, blocks / 2));
  DecodeSplits result;
  result.keysPerSplit = llvm::divideCeil(blocks, splits) * blockK;
  result.numSplits = std::max<int64_t>(1, llvm::divideCeil(kLen, result.keysPerSplit));
  return result;
}

llvm::SmallVector<KernelSpec> attentionKernelSpecs(const AttentionKernelConfig &config,
                                                   bool backward) {
  if (config.decodeRows)
    return decodeKernelSpecs(config);
  auto smem = [&](int64_t tileRows) { return tileRows * tilePitch(config.headDim); };
  if (!backward) {
    KernelSpec forward = spec(config, "forward", {"q", "k", "v", "out", "lse"});
    forward.rowsPerBlock = config.blockQ;
    if (!config.warpgroupMma) {
      forward.threads = config.blockQ / 16 * 32;
      forward.dynamicSmemBytes = smem(config.blockQ) + 2 * smem(config.blockK);
      return {forward};
    }
    // A producer warpgroup and blockQ / 64 consumers; q, k, v by TMA.
    forward.threads = 128 + config.blockQ / 64 * 128;
    forward.dynamicSmemBytes = tmaForwardLayout(config).total;
    for (KernelParam &param : llvm::MutableArrayRef(forward.params).take_front(3)) {
      bool isQ = param.name == "q";
      param.kind = KernelParam::Kind::TensorMap;
      param.lenName = isQ ? "q_len" : "k_len";
      param.headsName = isQ ? "q_heads" : "kv_heads";
      param.boxRows = isQ ? config.blockQ : config.blockK;
    }
    if (config.dropoutP <= 0.0)
      return {forward};
    // With dropout the keep mask is drawn first, into the op's workspace,
    // and the forward reads it (its last parameter, after the seed).
    forward.params.push_back(pointer("mask"));
    return {keepMaskSpec(config, "mask"), forward};
  }
  KernelSpec preprocess = spec(config, "backward_preprocess", {"out", "dout", "delta"});
  preprocess.threads = kPreprocessRows;
  preprocess.rowsPerBlock = kPreprocessRows;

  KernelSpec dkdv = spec(config, "backward_dkdv",
                         {"q", "k", "v", "dout", "lse", "delta", "dk", "dv"});
  int64_t inner = dkdvInnerRows(config);
  dkdv.rowsPerBlock = config.blockK;
  dkdv.overKeys = true;
  KernelSpec dq = spec(config, "backward_dq",
                       {"q", "k", "v", "dout", "lse", "delta", "dq"});
  dq.rowsPerBlock = config.blockQ;
  if (config.warpgroupMma) {
    // A producer warpgroup and a consumer per 64 rows of the CTA's block;
    // q, k, v, dout by TMA, boxes as tall as what each kernel keeps or
    // streams.
    dkdv.threads = 128 + dkdvConsumers(config) * 128;
    dkdv.dynamicSmemBytes = dkdvPipelineLayout(config).total();
    dq.threads = 128 + config.blockQ / 64 * 128;
    dq.dynamicSmemBytes = dqPipelineLayout(config).total();
    if (config.atomicDq) {
      // dQ comes from the dK/dV kernel's atomics; this kernel scales the f32
      // accumulator into dq.
      dq = spec(config, "backward_dq_convert", {"delta", "dq"});
      dq.threads = kDqConvertThreads;
      dq.rowsPerBlock = kDqConvertRows;
    }
    for (auto [kernel, queryRows, keyRows] :
         {std::tuple{&dkdv, inner, config.blockK},
          std::tuple{&dq, config.blockQ, dqInnerRows(config)}})
      for (KernelParam &param : kernel->role == "backward_dq_convert"
                                    ? llvm::MutableArrayRef<KernelParam>()
                                    : llvm::MutableArrayRef(kernel->params).take_front(4)) {
        bool query = param.name == "q" || param.name == "dout";
        param.kind = KernelParam::Kind::TensorMap;
        param.lenName = query ? "q_len" : "k_len";
        param.headsName = query ? "q_heads" : "kv_heads";
        param.boxRows = query ? queryRows : keyRows;
      }
    if (config.dropoutP <= 0.0)
      return {preprocess, dkdv, dq};
    // The keep mask, drawn once into the workspace after delta.
    return {preprocess, keepMaskSpec(config, "delta"), dkdv, dq};
  }
  dkdv.threads = config.blockK / 16 * 32;
  dkdv.dynamicSmemBytes = 2 * smem(config.blockK) + 2 * smem(inner) + 2 * inner * 4;
  dq.threads = config.blockQ / 16 * 32;
  dq.dynamicSmemBytes = 2 * smem(config.blockQ) + 2 * smem(dqInnerRows(config));
  return {preprocess, dkdv, dq};
}

LogicalResult buildAttentionKernels(ModuleOp module, llvm::StringRef moduleName,
                                    const AttentionKernelConfig &config,
                                    bool backward) {
  std::string message;
  if (failed(verifyAttentionKernelConfig(config, backward, message)))
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
  // 1024-byte aligned: the 128-byte swizzle atoms of the TMA tiles.
  LLVM::GlobalOp::create(b, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                         /*isConstant=*/false, LLVM::Linkage::External,
                         "weft_smem", Attribute(), /*alignment=*/1024,
                         /*addrSpace=*/3);

  Type globalPtr = LLVM::LLVMPointerType::get(context, 1);
  Type genericPtr = LLVM::LLVMPointerType::get(context);
  for (const KernelSpec &kernel : attentionKernelSpecs(config, backward)) {
    SmallVector<Type> argTypes;
    SmallVector<int32_t> tensorMaps;
    for (const KernelParam &param : kernel.params) {
      switch (param.kind) {
      case KernelParam::Kind::Pointer:
        argTypes.push_back(globalPtr);
        break;
      case KernelParam::Kind::I32:
        argTypes.push_back(b.getI32Type());
        break;
      case KernelParam::Kind::F32:
        argTypes.push_back(b.getF32Type());
        break;
      case KernelParam::Kind::TensorMap:
        tensorMaps.push_back(static_cast<int32_t>(argTypes.size()));
        argTypes.push_back(genericPtr);
        break;
      }
    }
    auto func = mlir::gpu::GPUFuncOp::create(b, kernel.name,
                                             b.getFunctionType(argTypes, {}));
    func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    // Tensor maps are by-value grid constants; convert-gpu-to-nvvm drops
    // byval, so lowerToPtx re-adds it from this list.
    if (!tensorMaps.empty())
      func->setAttr(kGridConstantArgsAttrName, b.getDenseI32ArrayAttr(tensorMaps));
    if (config.warpgroupMma && kernel.role != "backward_preprocess" &&
        kernel.role != "keep_mask" && kernel.role != "backward_dq_convert")
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), b.getI32IntegerAttr(1));
    func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
        {static_cast<int32_t>(kernel.threads), 1, 1}));
    if (kernel.role == "forward")
      emitForwardBody(func, config);
    else if (kernel.role == "decode_split")
      emitDecodeSplitBody(func, config);
    else if (kernel.role == "decode_combine")
      emitDecodeCombineBody(func, config);
    else if (kernel.role == "backward_preprocess")
      emitPreprocessBody(func, config);
    else if (kernel.role == "keep_mask")
      emitKeepMaskBody(func, config, /*afterDelta=*/backward);
    else if (kernel.role == "backward_dq_convert")
      emitDqConvertBody(func, config);
    else if (kernel.role == "backward_dkdv")
      config.warpgroupMma ? emitWarpgroupDkDvBody(func, config) : emitDkDvBody(func, config);
    else
      config.warpgroupMma ? emitWarpgroupDqBody(func, config) : emitDqBody(func, config);
  }
  return success();
}

} // namespace weft::gpu
