// The decode combine kernel: a CTA per query row merges the row's split
// partials (o_partial normalised by the split's own row sum, lse_partial its
// log-sum-exp) into O and lse. Its threads are kCombineLanes lanes of
// head_dim / 4 column chunks: lane p reads splits p, p + kCombineLanes, ...,
// kSplitsAtOnce of them per round trip, folding them into its own running
// (max, sum, O); the lanes then merge through shared memory. So a row of up
// to kCombineLanes * kSplitsAtOnce splits costs one round trip to L2.
#include "KernelBodies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;

namespace weft::gpu {

namespace {

constexpr int64_t kCombineLanes = 8, kSplitsAtOnce = 8;

/// A running log-sum-exp merge: `max` (natural log units, -inf before any
/// split), `sum` of exp(lse - max) and O = sum of exp(lse - max) * partial.
struct Merge {
  Value max, sum;
  std::array<Value, 4> o;

  /// Folds in parts weighted exp(lse_i - max'), max' the new maximum; a part
  /// with lse -inf (no key seen, or out of range) weighs 0. Each part adds its
  /// weight to `sum`, times sums[i] when given (another lane's merge, whose
  /// lse_i is its max).
  void fold(WarpEmitter &w, ArrayRef<Value> lses, ArrayRef<std::array<Value, 4>> parts,
            ArrayRef<Value> sums) {
    Value minusInf = w.f32c(-std::numeric_limits<double>::infinity());
    Value zeroF = w.f32c(0.0), log2e = w.f32c(llvm::numbers::log2e);
    Value newMax = max;
    for (Value lse : lses)
      newMax = w.fmax(newMax, lse);
    Value mUse = w.select(w.feq(newMax, minusInf), zeroF, newMax);
    auto weightOf = [&](Value lse) { return w.exp2(w.fmul(w.fsub(lse, mUse), log2e)); };
    Value scale = weightOf(max);
    sum = w.fmul(sum, scale);
    for (int j = 0; j < 4; ++j)
      o[j] = w.fmul(o[j], scale);
    for (size_t i = 0; i < lses.size(); ++i) {
      Value weight = weightOf(lses[i]);
      sum = w.fadd(sum, sums.empty() ? weight : w.fmul(weight, sums[i]));
      for (int j = 0; j < 4; ++j)
        o[j] = w.fadd(o[j], w.fmul(weight, parts[i][j]));
    }
    max = newMax;
  }
};

} // namespace

int64_t decodeCombineThreads(const AttentionKernelConfig &config) {
  return config.headDim / 4 * kCombineLanes;
}

int64_t decodeCombineSmemBytes(const AttentionKernelConfig &config) {
  return decodeCombineThreads(config) * 6 * 4;
}

void emitDecodeCombineBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  Value oPartial = func.getArgument(0), lsePartial = func.getArgument(1);
  Value out = func.getArgument(2), lse = func.getArgument(3);
  KernelScalars s = KernelScalars::of(func, 4);
  Value numSplits = func.getArgument(10);
  const int64_t d = config.headDim, chunks = d / 4;
  const int64_t threads = decodeCombineThreads(config);
  // grid x = query row (of batch * q_heads * q_len); thread = lane * chunks
  // + chunk, the chunk's 4 columns at 4 * chunk.
  Value row = e.blockId(0), tid = e.threadIdX();
  Value chunk = arith::RemUIOp::create(b, tid, e.i32c(chunks));
  Value lane = e.divu(tid, e.i32c(chunks));
  Value totalRows = e.toI64(e.mul(e.mul(s.batch, s.qHeads), s.qLen));
  Value minusInf = e.f32c(-std::numeric_limits<double>::infinity());
  Value zeroF = e.f32c(0.0);
  VectorType v4f32 = VectorType::get({4}, e.f32);
  const int64_t perRound = kCombineLanes * kSplitsAtOnce;
  Value rounds = e.ceilDiv(numSplits, perRound);
  Value lastSplit = e.sub(numSplits, e.i32c(1));
  // Launched as the split kernel's programmatic dependent (its launch then
  // overlaps the split kernel's tail), the partials are read only after
  // that grid completed and its writes are visible; launched plainly, the
  // stream already ordered them and this does nothing.
  NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);

  SmallVector<Value> init{minusInf, zeroF, zeroF, zeroF, zeroF, zeroF};
  auto loop = scf::ForOp::create(
      b, e.i32c(0), rounds, e.i32c(1), init,
      [&](OpBuilder &nested, Location loc, Value round, ValueRange state) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        // Every load of the round first; a split past the last re-reads the
        // last one and counts as lse -inf.
        SmallVector<Value> lses;
        SmallVector<std::array<Value, 4>> parts;
        for (int64_t u = 0; u < kSplitsAtOnce; ++u) {
          Value split = w.add(w.mul(round, w.i32c(perRound)),
                              w.add(w.i32c(u * kCombineLanes), lane));
          Value flat =
              w.add(w.mul(w.toI64(w.minsi(split, lastSplit)), totalRows), w.toI64(row));
          Value splitLse = w.load(w.f32, w.globalAt(lsePartial, w.mul(flat, w.i64c(4))), 4);
          lses.push_back(w.select(w.lt(split, numSplits), splitLse, minusInf));
          Value at = w.add(w.mul(flat, w.i64c(d * 4)), w.toI64(w.mul(chunk, w.i32c(16))));
          Value partial = w.load(v4f32, w.globalAt(oPartial, at), 16);
          std::array<Value, 4> part;
          for (int j = 0; j < 4; ++j)
            part[j] = LLVM::ExtractElementOp::create(lb, partial, w.i32c(j));
          parts.push_back(part);
        }
        Merge merge{state[0], state[1], {state[2], state[3], state[4], state[5]}};
        merge.fold(w, lses, parts, {});
        scf::YieldOp::create(lb, ValueRange{merge.max, merge.sum, merge.o[0], merge.o[1],
                                            merge.o[2], merge.o[3]});
      });

  // Lane merges: (max, sum, o[4]) per thread at [field][tid], f32; lane 0's
  // threads fold in the other lanes of their chunk.
  for (int field = 0; field < 6; ++field)
    e.store(loop.getResult(field),
            e.sharedAt(e.mul(e.add(e.i32c(field * threads), tid), e.i32c(4))), 4);
  e.barrier();
  e.ifThen(e.lt(tid, e.i32c(chunks)), [&] {
    Merge merge{minusInf, zeroF, {zeroF, zeroF, zeroF, zeroF}};
    SmallVector<Value> maxes, sums;
    SmallVector<std::array<Value, 4>> parts;
    for (int64_t p = 0; p < kCombineLanes; ++p) {
      Value at = e.add(e.i32c(p * chunks), tid);
      auto load = [&](int f) {
        return e.load(e.f32, e.sharedAt(e.mul(e.add(e.i32c(f * threads), at), e.i32c(4))), 4);
      };
      maxes.push_back(load(0));
      sums.push_back(load(1));
      parts.push_back({load(2), load(3), load(4), load(5)});
    }
    merge.fold(e, maxes, parts, sums);
    Value positive = e.fgt(merge.sum, zeroF);
    Value inverse =
        e.select(positive, arith::DivFOp::create(b, e.f32c(1.0), merge.sum), zeroF);
    Value outAt = e.globalAt(
        out, e.add(e.mul(e.toI64(row), e.i64c(d * 2)), e.toI64(e.mul(tid, e.i32c(8)))));
    for (int j = 0; j < 2; ++j) {
      Value packed = e.pack(e.fmul(merge.o[2 * j], inverse), e.fmul(merge.o[2 * j + 1], inverse));
      e.store(packed, e.globalAt(outAt, e.i64c(4 * j)), 4);
    }
    Value mUse = e.select(e.feq(merge.max, minusInf), zeroF, merge.max);
    Value rowLse = e.select(
        positive, e.fadd(mUse, e.fmul(e.log2(merge.sum), e.f32c(llvm::numbers::ln2))), minusInf);
    e.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, e.i32c(0)), [&] {
      e.store(rowLse, e.globalAt(lse, e.mul(e.toI64(row), e.i64c(4))), 4);
    });
  });
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
