// The schedule half of weft-build-plan: turns each op of a planned step into
// weft_plan entries (GEMMs, attention launches, one kernel per other op).
#ifndef WEFT_LIB_CONVERSION_WEFTTOPLAN_SCHEDULEBUILDER_H
#define WEFT_LIB_CONVERSION_WEFTTOPLAN_SCHEDULEBUILDER_H

#include "weft/Analysis/Liveness.h"
#include "weft/Conversion/KernelGroupRules.h"
#include "weft/Conversion/WeftToPlan/BuildPlan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace weft {

class ScheduleBuilder {
public:
  ScheduleBuilder(const ScheduleLiveness &liveness, const BuildPlanOptions &options,
              plan::StepOp step,
              llvm::DenseMap<unsigned, mlir::FlatSymbolRefAttr> bufferSymbols)
      : liveness(liveness), options(options), step(step),
        bufferSymbols(std::move(bufferSymbols)),
        builder(mlir::OpBuilder::atBlockEnd(&step.getBodyBlock())) {}

  /// The entries of `op` at schedule index `index`; a diagnostic at the op
  /// when it cannot be planned.
  mlir::LogicalResult addOp(mlir::Operation *op, int64_t index);

  std::vector<AttentionImage> attentionImages;
  std::vector<ElementwiseImage> elementwiseImages;
  /// Whether a collective went to stream 1 (the step then has two streams).
  bool usesCommunicationStream() const { return nextEvent > 0; }

private:
  /// Stream 0 waits, before the entries of step `index`, for the collectives
  /// whose results are first read there.
  void waitForCollectives(int64_t index);
  mlir::FailureOr<mlir::FlatSymbolRefAttr> bufferOf(mlir::Operation *op,
                                                    mlir::Value value);
  void declareKernel(llvm::StringRef name, llvm::StringRef image,
                     llvm::ArrayRef<llvm::StringRef> params);
  void launch(mlir::Location loc, llvm::StringRef kernel,
              llvm::ArrayRef<mlir::Attribute> args,
              llvm::ArrayRef<int64_t> grid, int64_t threads, int64_t smem,
              int64_t index);
  /// "bf16" / "f16", or a diagnostic: cuBLASLt GEMMs take nothing else.
  mlir::FailureOr<std::string> gemmDtype(mlir::Operation *op, mlir::Type type);
  /// The op's planned cuBLASLt workspace; null when none was planned.
  mlir::FlatSymbolRefAttr workspaceOf(mlir::Operation *op);
  /// The operands and shape of one plan.gemm (D = op(A) op(B), alpha 1,
  /// beta 0, no C, on stream 0).
  struct GemmCall {
    mlir::FlatSymbolRefAttr d, a, b, bias;
    int64_t m, n, k, batch = 1;
    mlir::DenseI64ArrayAttr strides;
    bool transA = false, transB = false;
    llvm::StringRef dtype, epilogue = "none";
    /// The GELU epilogues' aux matrix and its row pitch (elements).
    mlir::FlatSymbolRefAttr aux = {};
    int64_t auxLd = 0;
  };
  /// Emits `call` at schedule `index` with the op's planned workspace: as
  /// partial GEMMs when it is one side of a collective matmul
  /// (CollectiveMatmulEntries.cpp). A failure has a diagnostic at `op`.
  mlir::LogicalResult addGemm(mlir::Operation *op, const GemmCall &call, int64_t index);
  /// One plan.gemm; `offsets` (elements of a, b, c, d, aux) may be empty,
  /// as may `rankBlocks` (shift, strides of a, b, c, d, aux) with `rankAxes`
  /// (plan.gemm's rank-relative row blocks).
  void emitGemm(mlir::Operation *op, const GemmCall &call, int64_t index,
                llvm::ArrayRef<int64_t> offsets = {}, llvm::ArrayRef<int64_t> rankBlocks = {},
                llvm::ArrayRef<int64_t> rankAxes = {});
  mlir::LogicalResult addLinear(mlir::Operation *op, int64_t index);
  mlir::LogicalResult addMatmul(mlir::Operation *op, int64_t index);
  /// A weft.fused bias-gradient group: one GEMM, epilogue bgrad_a.
  mlir::LogicalResult addBiasGradGemm(mlir::Operation *op, int64_t index);
  /// A weft.fused GELU GEMM group: one GEMM, epilogue gelu / bias_gelu /
  /// gelu_aux / gelu_aux_bias forward, dgelu backward (GeluGemmEntries.cpp).
  mlir::LogicalResult addGeluGemm(mlir::Operation *op, int64_t index);
  mlir::LogicalResult addAttention(mlir::Operation *op, int64_t index);
  /// An attention op's arena buffers by kernel parameter name, its sizes and
  /// its kernel configuration (PlanEntries.cpp).
  struct AttentionCall;
  /// The parameter kind ("ptr", "i32", "f32", "tensormap") and the argument
  /// of `param` of attention kernel `spec`, or a diagnostic at `op`.
  mlir::FailureOr<std::pair<llvm::StringRef, mlir::Attribute>>
  attentionArg(mlir::Operation *op, const gpu::KernelSpec &spec,
               const gpu::KernelParam &param, const AttentionCall &call);
  mlir::LogicalResult addConstant(mlir::Operation *op, int64_t index);
  /// A constant other than a float splat: its bytes in a kernel image that
  /// copies them to the buffer (BlockEntries.cpp).
  mlir::LogicalResult addDenseConstant(mlir::Operation *op, int64_t index);
  /// shard.all_slice: a copy kernel of the rank's block (BlockEntries.cpp).
  mlir::LogicalResult addAllSlice(mlir::Operation *op, int64_t index);
  /// A shard all-reduce, all-gather, reduce-scatter, all-to-all or shift:
  /// one plan.collective (the chunks of a collective matmul:
  /// CollectiveMatmulEntries.cpp).
  mlir::LogicalResult addCollective(mlir::Operation *op, int64_t index);
  struct CollectiveCall {
    std::string kind, dtype, reduction;
    mlir::FlatSymbolRefAttr input, output;
    /// Elements of the whole tensor (NCCL's layout: PackageFormat.h).
    int64_t count = 0;
    llvm::SmallVector<int64_t> axes;
    /// send_recv (shard.shift): positions ahead along the group (0: none)
    /// and whether the ends wrap.
    int64_t shift = 0;
    bool rotate = false;
  };
  mlir::FailureOr<CollectiveCall> collectiveCallOf(mlir::Operation *op);
  void emitCollective(mlir::Location loc, const CollectiveCall &call, int64_t stream,
                      int64_t index, llvm::ArrayRef<int64_t> offsets = {});
  /// An event recorded on `stream` (its id), and a wait for one.
  int64_t recordEvent(mlir::Location loc, int64_t stream, int64_t index);
  void waitEvent(mlir::Location loc, int64_t stream, int64_t event, int64_t index);
  /// A `weft.chunks` all-gather: its chunks on stream 1, each followed by an
  /// event its GEMM's partial GEMMs wait for. A reduce-scatter's chunks go
  /// out with its GEMM (addGemm), so here it only checks that they did.
  mlir::LogicalResult addChunkedCollective(mlir::Operation *op, const CollectiveCall &call,
                                           int64_t index);
  /// The partial GEMMs of `call` on row blocks, with the chunked all-gather
  /// they read or the reduce-scatter chunks that read them.
  mlir::LogicalResult addPartialGemms(mlir::Operation *op, const GemmCall &call,
                                      int64_t index);
  /// A `weft.local_first` all-gather: the whole gather on stream 1, its
  /// GEMM's rank blocks left to addLocalFirstGemms.
  mlir::LogicalResult addLocalFirstGather(mlir::Operation *op, const CollectiveCall &call,
                                          int64_t index);
  /// The GEMM of a local-first gather: its own rank block from the local
  /// shard at once, the others' blocks once the gather is done.
  mlir::LogicalResult addLocalFirstGemms(mlir::Operation *op, const GemmCall &call,
                                         int64_t index);
  mlir::LogicalResult addKernelPerOp(mlir::Operation *op, int64_t index);

  const ScheduleLiveness &liveness;
  const BuildPlanOptions &options;
  plan::StepOp step;
  llvm::DenseMap<unsigned, mlir::FlatSymbolRefAttr> bufferSymbols;
  mlir::OpBuilder builder;
  /// Kernels are declared before the first schedule entry.
  mlir::Operation *firstEntry = nullptr;
  llvm::StringSet<> kernels, images;
  /// Events recorded after collectives on stream 1, by the step that waits.
  llvm::DenseMap<int64_t, llvm::SmallVector<int64_t>> pendingWaits;
  /// Chunked all-gathers by the GEMM that reads them: the gathered buffer
  /// and the event after each chunk.
  struct ChunkedGather {
    mlir::FlatSymbolRefAttr gathered;
    llvm::SmallVector<int64_t> events;
    int64_t ranks = 1;
  };
  llvm::DenseMap<mlir::Operation *, ChunkedGather> chunkedGathers;
  /// Local-first all-gathers by the GEMM that reads them.
  struct LocalFirstGather {
    mlir::FlatSymbolRefAttr local, gathered;
    int64_t event = -1, ranks = 1;
    llvm::SmallVector<int64_t> axes;
  };
  llvm::DenseMap<mlir::Operation *, LocalFirstGather> localFirstGathers;
  /// Chunked reduce-scatters already issued with their GEMM.
  llvm::DenseSet<mlir::Operation *> issuedScatters;
  int64_t nextEvent = 0;
};

} // namespace weft

#endif // WEFT_LIB_CONVERSION_WEFTTOPLAN_SCHEDULEBUILDER_H
