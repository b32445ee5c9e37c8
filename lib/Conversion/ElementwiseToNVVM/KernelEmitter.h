// The emitters of the elementwise kernels: ElementMath (typed global loads
// and stores, rounding, f32 math, block reductions, loops) on top of the
// attention kernels' WarpEmitter, and the evaluator of a group's body ops at
// one element of the domain.
#ifndef WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELEMITTER_H
#define WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELEMITTER_H

#include "KernelGroup.h"

#include "weft/Dialect/WeftDialect.h"

#include "../AttentionToNVVM/WarpEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <array>
#include <functional>
#include <memory>

namespace weft::gpu {

/// Static shared memory of every elementwise kernel (bytes): block-reduction
/// slots and the column-sum kernel's [8][32] partials per output.
constexpr int64_t kElementwiseSmemBytes = 8192;

/// The loss kernel (cross-entropy's mean over rows): at most this many CTAs,
/// each leaving its partial sum in a module global; the last CTA to arrive
/// adds them in CTA order (deterministic) and writes the loss.
constexpr int64_t kMaxLossBlocks = 264;
constexpr llvm::StringLiteral kLossPartialsSymbol = "weft_loss_partials";
constexpr llvm::StringLiteral kLossCounterSymbol = "weft_loss_counter";

class ElementMath : public WarpEmitter {
public:
  ElementMath(mlir::ImplicitLocOpBuilder &b, mlir::gpu::GPUFuncOp func,
              int64_t threads);

  mlir::gpu::GPUFuncOp func;
  int64_t threads;
  mlir::Value param(unsigned index) { return func.getArgument(index); }

  /// Element `index` (i64) of a tensor of `element` type at `base`, widened
  /// to f32 (floats), kept as i64 (ids) or as i1 (masks), sign-extended to
  /// i32 (i16: the low halves of split masters).
  mlir::Value loadElement(mlir::Value base, mlir::Type element, mlir::Value index);
  /// Stores an f32 rounded to `element` (bf16/f16/f32), or an i32 truncated
  /// to i16. `exactBits`: a bf16 whose f32 already holds its bits (hi << 16,
  /// a split master's high half) is stored by its bits, NaNs included.
  void storeElement(mlir::Value base, mlir::Type element, mlir::Value index,
                    mlir::Value value, bool exactBits = false);
  /// `width` consecutive elements from element `index` (16-byte aligned
  /// vectors when width * size allows), each widened as loadElement's.
  llvm::SmallVector<mlir::Value> loadVector(mlir::Value base, mlir::Type element,
                                            mlir::Value index, int64_t width);
  void storeVector(mlir::Value base, mlir::Type element, mlir::Value index,
                   llvm::ArrayRef<mlir::Value> values, bool exactBits = false);
  /// f32 rounded to `element` and widened back: the value an unfused op
  /// would have stored.
  mlir::Value round(mlir::Value value, mlir::Type element);
  /// A loaded element in the kernel's compute type (see loadElement) and a
  /// computed one in its storage type (see storeElement).
  mlir::Value widen(mlir::Value raw, mlir::Type element);
  mlir::Value narrow(mlir::Value value, mlir::Type element, bool exactBits);

  // f32 math.
  mlir::Value fdiv(mlir::Value x, mlir::Value y);
  mlir::Value exp(mlir::Value x);
  mlir::Value log(mlir::Value x);
  mlir::Value cos(mlir::Value x);
  mlir::Value sin(mlir::Value x);
  mlir::Value pow(mlir::Value x, mlir::Value y);
  mlir::Value tanh(mlir::Value x);
  mlir::Value erf(mlir::Value x);
  mlir::Value sqrt(mlir::Value x);
  mlir::Value rsqrt(mlir::Value x);
  mlir::Value sigmoid(mlir::Value x);
  mlir::Value i64ToF32(mlir::Value x);

  // i64 index arithmetic.
  mlir::Value i64Add(mlir::Value x, mlir::Value y);
  mlir::Value i64Sub(mlir::Value x, mlir::Value y);
  mlir::Value i64Mul(mlir::Value x, mlir::Value y);
  mlir::Value i64Div(mlir::Value x, mlir::Value y);
  mlir::Value i64Rem(mlir::Value x, mlir::Value y);
  mlir::Value i64Lt(mlir::Value x, mlir::Value y);
  mlir::Value i64Eq(mlir::Value x, mlir::Value y);
  mlir::Value tid64();
  mlir::Value blockId64();
  mlir::Value gridDim64();

  /// for (iv = lb; iv < ub; iv += step) with loop-carried `init`; `body`
  /// returns the next carried values.
  llvm::SmallVector<mlir::Value>
  loop(mlir::Value lb, mlir::Value ub, mlir::Value step, mlir::ValueRange init,
       llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value,
                                                         mlir::ValueRange)>
           body);
  /// x summed (or max'ed) over the CTA: warp shuffles, then the warps'
  /// values through shared memory, combined in warp order by every thread
  /// (deterministic); all threads get the result.
  mlir::Value blockReduce(mlir::Value x, bool max);
  /// Sums of several values over the CTA with one set of barriers.
  llvm::SmallVector<mlir::Value> blockSums(llvm::ArrayRef<mlir::Value> xs);
  /// weft.dropout of the f32 `x` whose Philox draw (i32) is `draw`: the
  /// kept value scaled by 1 / (1 - p), or 0.
  mlir::Value dropoutValue(mlir::Value x, mlir::Value draw, double p);
};

/// What the evaluators of one vector's lanes share: each leaf's lane values
/// (loadLeafLanes) and the Philox blocks its dropouts drew. With a width that
/// is a multiple of 4 (and `base` one of the width), lane k is element
/// base + k: word k % 4 of block base / 4 + k / 4, so four lanes share one
/// Philox call.
struct VectorLanes {
  llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::Value>> leaves;
  /// The domain element (i64) of lane 0; null for a single element.
  mlir::Value base;
  /// The row given to loadLeafLanes (null: base / cols).
  mlir::Value row;
  int64_t width = 1;
  /// (dropout op, block offset k / 4) -> the block's four draws.
  llvm::DenseMap<std::pair<mlir::Operation *, int64_t>, std::array<mlir::Value, 4>>
      blocks;
  /// Paired ops (PairedFormulaOpInterface): when half a row is a multiple of
  /// the width, a vector lies in one half of its row and its partners are
  /// the vector `partnerShift` (+-cols/2) elements away, loaded by the first
  /// lane that needs them; `firstHalf` (i1) says which half.
  std::unique_ptr<VectorLanes> partner;
  mlir::Value partnerShift, firstHalf;
};

/// A group's body evaluated at one element (row, col) of the domain, in f32,
/// each op's value rounded to its declared type as the unfused op stores it.
/// The ignore_index of a cross_entropy or cross_entropy_grad op, if any.
std::optional<int64_t> ignoredLabel(mlir::Operation *op);

class ElementEvaluator {
public:
  ElementEvaluator(ElementMath &m, const KernelGroup &group,
                   const llvm::DenseMap<mlir::Operation *,
                                        llvm::SmallVector<mlir::Value>> &stats,
                   mlir::Value row, mlir::Value col);

  /// The element of a body value or leaf.
  mlir::Value value(mlir::Value v);
  /// The i64 id of a per-row ids leaf (cross-entropy labels) at this row.
  mlir::Value id(mlir::Value v);
  /// Leaf values already loaded (vector lanes).
  llvm::DenseMap<mlir::Value, mlir::Value> preset;
  /// This evaluator is lane `lane` of `vector`: its leaves are preset from
  /// the vector's loads and its dropout draws shared with the other lanes.
  void atLane(VectorLanes &vector, int64_t lane);
  /// The contribution of this element to a column-sum result.
  mlir::Value columnTerm(mlir::Value result);
  /// This row's loss term of a cross_entropy op (lse - logit[label]; 0 for
  /// a row whose label is its ignore_index).
  mlir::Value lossTerm(mlir::Operation *crossEntropy);
  /// 1 (f32) when this row counts in a cross_entropy (or its gradient's)
  /// mean, 0 when its label is the op's ignore_index; 1 without one.
  mlir::Value keptTerm(mlir::Operation *crossEntropy);

  mlir::Value linear();

private:
  mlir::Value compute(mlir::OpResult result);
  void computeAdamW(AdamWOp op);
  /// A paired op's formula at this element: operands read here and at the
  /// partner (the evaluator of `partnerEvaluator`), with the half mask.
  mlir::Value computePaired(PairedFormulaOpInterface op);
  /// The evaluator at this element's rotate_half partner in its row (made
  /// once; lanes of a vector share the partner vector's loads) and the mask
  /// of this element lying in the row's first half.
  std::pair<ElementEvaluator *, mlir::Value> partnerEvaluator();
  /// weft.dropout at this element: the Philox draw of its index (the
  /// domain element: analyzeGroup checked that x covers the domain), then
  /// the kept value scaled by 1/(1-p) or 0.
  mlir::Value computeDropout(DropoutOp op);
  /// A split master's f32 from its high half (f32, bits hi << 16) and low
  /// half (i32, sign-extended).
  mlir::Value joinSplitMaster(mlir::Value high, mlir::Value low);
  /// An f32 master split: the high half as an f32 with bits hi << 16 (its
  /// bf16 store is exact) and the low half as an i32 in [-0x8000, 0x7FFF].
  std::pair<mlir::Value, mlir::Value> splitMaster(mlir::Value master);
  mlir::Value leaf(mlir::Value v);
  ElementMath &m;
  const KernelGroup &group;
  const llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Value>> &stats;
  mlir::Value row, col, linearIndex;
  llvm::DenseMap<mlir::Value, mlir::Value> cache;
  VectorLanes *vector = nullptr;
  int64_t lane = 0;
  std::unique_ptr<ElementEvaluator> partner;
  mlir::Value firstHalf;
};

/// A pointwise op's formula (ScalarFormula.h) as f32 code at one element,
/// `operands` being its operands' elements (an i1 for a mask).
mlir::Value lowerFormula(ElementMath &m, const ScalarFormula &formula,
                         llvm::ArrayRef<mlir::Value> operands);

/// Whether `value` is the new_param of a weft.adamw with param_low: a bf16
/// high half whose f32 value the evaluator computed bit-exact (stored with
/// exactBits).
bool isSplitMasterHigh(mlir::Value value);

using RowStats = llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Value>>;

/// Emits the reductions of every row op of the group for `row` (CTA-wide,
/// columns strided by the CTA's threads); fills `stats`.
void emitRowStats(ElementMath &m, const KernelGroup &group, mlir::Value row,
                  RowStats &stats);

// Kernel bodies (the gpu.func is created with its params and block size).
void emitPointwiseBody(ElementMath &m, const KernelGroup &group);
/// Outputs: the full outputs of each row; OutputsAndStats: those, and the
/// row statistics parked for the column-sum kernel that runs next;
/// StatsOnly: the statistics alone (a group without full outputs).
enum class RowsRole { Outputs, OutputsAndStats, StatsOnly, SingleBlock };
void emitRowsBody(ElementMath &m, const KernelGroup &group, RowsRole role);
void emitColumnSumsBody(ElementMath &m, const KernelGroup &group);

/// The column-sum CTA: 32 columns x 32 row lanes, 4 rows per lane per step.
constexpr int64_t kColumnThreads = 1024;
constexpr int64_t kColumnUnroll = 4;
/// For each column, the sums over rows (in a fixed order) of the `count`
/// values `terms(row, col)` returns; `store(col, totals)` writes them (one
/// thread per column). Grid: ceil(cols / 32) CTAs of kColumnThreads.
/// With `chunks` > 1 the rows are split in that many chunks, CTA b taking
/// column block b mod ceil(cols / 32) and chunk b / ceil(cols / 32);
/// `store(chunk, col, totals)` then gets the chunk's sums.
void emitColumnSums(ElementMath &m, int64_t rows, int64_t cols, int64_t count,
                    llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value,
                                                                      mlir::Value)>
                        terms,
                    llvm::function_ref<void(mlir::Value, mlir::Value,
                                            llvm::ArrayRef<mlir::Value>)>
                        store,
                    int64_t chunks);
/// The column sums of a group whose row chunks left partials in its scratch:
/// each output column adds the chunks' partials in chunk order.
void emitColumnFinalBody(ElementMath &m, const KernelGroup &group);

/// The vector width of a pointwise group: 16 bytes of its narrowest full
/// tensor, or 1 when a broadcast operand breaks vector alignment.
int64_t pointwiseVectorWidth(const KernelGroup &group);
/// The same for a row kernel: 1 unless a vector stays within a row.
int64_t rowVectorWidth(const KernelGroup &group);
/// The element of a Strided tensor at domain element `linear`.
mlir::Value stridedIndex(ElementMath &m, const KernelGroup &group,
                         const TensorPlace &place, mlir::Value linear);
/// Every used leaf's `width` lane values (f32, or ids / masks) at the domain
/// elements base..base+width-1 of row `row` (null: base / cols): one vector
/// load per full or suffix tensor, one scalar shared by the lanes otherwise.
VectorLanes loadLeafLanes(ElementMath &m, const KernelGroup &group,
                          mlir::Value base, mlir::Value row, int64_t width);

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ELEMENTWISETONVVM_KERNELEMITTER_H
