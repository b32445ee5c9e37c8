// Schedule and liveness of a function's straight-line body, the one analysis
// weft-remat and weft-plan-memory share: which tensors share a buffer (views,
// in-place updates), each buffer's lifetime in steps, size and category.
//
// The schedule is the op order of the body: op i is step i, the terminator is
// the last step. Lifetimes are closed intervals of steps:
//  - arguments start at step 0; parameters and arguments tied by `weft.alias`
//    (the persistent training state) live to the last step, other arguments
//    (the batch) to their last use;
//  - an op result lives from its op's step to its last use (uses inside a
//    nested region count at the step of the body op that holds them); a
//    result nobody uses still lives during its own step;
//  - the function's results live to the last step (the return uses them);
//  - an op's workspace (MemoryOpInterface::getWorkspaceBytes) lives during
//    its op's step only;
//  - a collective (a shard dialect op that communicates) runs on the
//    communication stream from its step until the first step that reads its
//    result or a view of it, where the compute stream waits for it
//    (getCollectiveWait): its operands live until that step.
// `weft.reshape` results are views: they share their operand's buffer; so do
// the pieces of a split and the result of a concat that seq-major attention
// reads and writes packed (AttentionPacking.h), in a buffer of the whole. A
// function result with `weft.alias = j` is written into argument j's buffer
// (an in-place update); the argument must not be read after that write.
//
// An argument marked `weft.bound` (weft-bind-arguments) is bound by the
// caller: its buffer keeps its size, lifetime and category but takes no arena
// bytes (arenaSize() 0: the intervals, live bytes and category bytes count
// what the arena holds). Its buffer may hold only the argument, views of it
// and its weft.alias update; anything else writing those bytes is an error.
//
// Categories, first match wins:
//  - workspaces: op workspaces;
//  - parameters: arguments marked `weft.param`, and arguments tied by
//    `weft.alias` that some op other than their updater reads (the forward
//    reads parameters; optimizer moments are read only by their update);
//  - optimizer_state: the other arguments tied by `weft.alias`;
//  - inputs: the other arguments (the batch, the step, the seed);
//  - gradients: buffers written at or after the backward start that are
//    returned without `weft.alias`, or read by the op that writes a
//    `weft.alias` result (the optimizer's gradient operand);
//  - saved_activations: buffers written before the backward start and read
//    by an op (not the return) at or after it;
//  - temporaries: the rest.
// The backward starts at the first op whose name ends in `_grad` (or a
// weft.fused group holding one), or at the
// op after the one defining the loss (the first 0-d floating-point function
// result without `weft.alias`), whichever is earlier; without either, there
// is no backward and no saved activation or gradient.
//
// compute() is one pass over the body and its uses (O(ops + uses)); re-run it
// after changing the IR. Buffers are ordered: arguments, then per step the
// op's results and then its workspace.
#ifndef WEFT_ANALYSIS_LIVENESS_H
#define WEFT_ANALYSIS_LIVENESS_H

#include "weft/Analysis/ArenaPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"

#include <array>

namespace weft {

/// The unit attribute on a step argument the caller binds outside the arena
/// (weft-bind-arguments sets it; the weft dialect verifies it).
inline constexpr llvm::StringLiteral kBoundAttrName = "weft.bound";

enum class BufferCategory : uint8_t {
  Parameter,
  OptimizerState,
  Input,
  Gradient,
  SavedActivation,
  Temporary,
  Workspace,
};
constexpr unsigned kNumBufferCategories = 7;
/// "parameters", "optimizer_state", "inputs", "gradients",
/// "saved_activations", "temporaries", "workspaces".
llvm::StringRef getBufferCategoryName(BufferCategory category);
using CategoryBytes = std::array<int64_t, kNumBufferCategories>;

/// One buffer of the arena.
struct LiveBuffer {
  int64_t size = 0;  // bytes of the tensor, unaligned
  int64_t start = 0; // first live step
  int64_t end = 0;   // last live step (inclusive)
  BufferCategory category = BufferCategory::Temporary;
  /// The tensors stored here: values[0] is the root (the argument, or the op
  /// result that writes the bytes), then views and the in-place update. Empty
  /// for a workspace.
  llvm::SmallVector<mlir::Value, 1> values;
  /// The op owning a workspace buffer; null otherwise.
  mlir::Operation *workspaceOf = nullptr;
  /// An argument bound by the caller (`weft.bound`): outside the arena.
  bool bound = false;

  /// Bytes the buffer takes in the arena: 0 when bound.
  int64_t arenaSize() const { return bound ? 0 : size; }
  BufferInterval interval() const { return {start, end, arenaSize()}; }
  bool isLiveAt(int64_t step) const { return start <= step && step <= end; }
};

/// Per tensor value, independent of buffer sharing.
struct ValueLifetime {
  int64_t size = 0;    // bytes
  int64_t defStep = 0; // 0 for arguments
  int64_t lastUse = 0; // last step reading it (defStep when unused)
  unsigned buffer = 0; // index into getBuffers()
};

class ScheduleLiveness {
public:
  /// Analyses `func`; emits a located diagnostic and fails on a body of
  /// several blocks, a dynamically shaped tensor, or an inconsistent
  /// `weft.alias` (out-of-range argument, size mismatch, an argument tied
  /// twice, or read after its in-place update).
  static mlir::FailureOr<ScheduleLiveness> compute(mlir::func::FuncOp func);

  mlir::func::FuncOp getFunction() const { return function; }
  /// Ops of the body in schedule order; the last is the terminator.
  llvm::ArrayRef<mlir::Operation *> getSchedule() const { return schedule; }
  int64_t getNumSteps() const { return int64_t(schedule.size()); }
  /// The step of `op` or of its ancestor in the body; -1 outside the body.
  int64_t getStep(mlir::Operation *op) const;
  /// The first backward step; getNumSteps() when there is no backward.
  int64_t getBackwardStart() const { return backwardStart; }

  llvm::ArrayRef<LiveBuffer> getBuffers() const { return buffers; }
  /// The buffer holding `value`; nullopt for values that are not tensors of
  /// the body (e.g. defined inside a nested region).
  std::optional<unsigned> lookupBuffer(mlir::Value value) const;
  /// The workspace buffer of `op`; nullopt when it has none.
  std::optional<unsigned> lookupWorkspace(mlir::Operation *op) const;
  /// Size and lifetime of one tensor value of the body.
  std::optional<ValueLifetime> getValueLifetime(mlir::Value value) const;

  /// The step where the compute stream waits for collective `op` (the first
  /// step reading its result; the last step when none does); -1 for other ops.
  int64_t getCollectiveWait(mlir::Operation *op) const {
    auto it = collectiveWaits.find(op);
    return it == collectiveWaits.end() ? -1 : it->second;
  }

  /// Buffers live at `step`, in buffer order.
  llvm::SmallVector<unsigned> getLiveBuffers(int64_t step) const;
  /// Bytes live at every step, each buffer rounded up to `alignment`.
  llvm::SmallVector<int64_t> getLiveBytesPerStep(int64_t alignment = 1) const;
  /// The max-live step and bytes: a lower bound on any arena.
  MaxLive getMaxLive(int64_t alignment = 1) const;
  /// Bytes by category live at `step`, and over all buffers.
  CategoryBytes getCategoryBytesAt(int64_t step, int64_t alignment = 1) const;
  CategoryBytes getCategoryBytesTotal(int64_t alignment = 1) const;
  /// Bytes of the buffers bound by the caller (outside the arena).
  int64_t getBoundBytes() const;
  /// The buffers' intervals, in buffer order (the arena planner's input).
  llvm::SmallVector<BufferInterval> getIntervals() const;

private:
  ScheduleLiveness() = default;

  mlir::func::FuncOp function;
  llvm::SmallVector<mlir::Operation *> schedule;
  llvm::DenseMap<mlir::Operation *, int64_t> stepOf;
  llvm::SmallVector<LiveBuffer> buffers;
  llvm::DenseMap<mlir::Value, ValueLifetime> values;
  llvm::DenseMap<mlir::Operation *, unsigned> workspaces;
  llvm::DenseMap<mlir::Operation *, int64_t> collectiveWaits;
  int64_t backwardStart = 0;

  friend class LivenessBuilder;
};

/// The backward-start rule above on the op order of `func`'s single-block
/// body (a weft.fused group holding a `*_grad` op counts as one); the number
/// of ops, terminator included, when there is no backward; 0 for a function
/// without a single-block body.
int64_t findBackwardStart(mlir::func::FuncOp func);
/// The op at findBackwardStart (null without a backward).
mlir::Operation *findBackwardStartOp(mlir::func::FuncOp func);

/// A function's arena plan: offsets indexed like getBuffers(), the peak, the
/// max-live lower bound and bytes by category (each buffer rounded up to the
/// alignment) at the max-live step and over all buffers.
struct MemoryPlan {
  ArenaPlan arena;
  int64_t alignment = 1;
  CategoryBytes bytesAtPeak{};
  CategoryBytes bytesTotal{};
};
MemoryPlan planMemory(const ScheduleLiveness &liveness,
                      const ArenaOptions &options);

/// The planner's view of a function: max-live and the arena peak.
struct PlannedPeak {
  int64_t maxLive = 0;
  int64_t peak = 0;
};
/// `func` planned (ScheduleLiveness, planMemory) at `alignment`; failure
/// where its liveness does not compute (diagnosed there).
mlir::FailureOr<PlannedPeak> planPeak(mlir::func::FuncOp func, int64_t alignment);

} // namespace weft

#endif // WEFT_ANALYSIS_LIVENESS_H
