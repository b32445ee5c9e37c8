// Row kernels: one CTA per row (grid-stride over rows; a single CTA over all
// rows for a loss), row statistics by deterministic block reductions, f32
// inside; the stats-only variant and the column-sum kernel of norm-weight
// gradients (dgamma, dbeta), which sums over rows in a fixed order.
#include "KernelEmitter.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace weft::gpu {

namespace {

Type elementOf(Value value) { return cast<ShapedType>(value.getType()).getElementType(); }

/// The row's columns strided over the CTA, rowVectorWidth at a time: the
/// leaves of each vector loaded once (loadLeafLanes), then `body` per lane
/// (column col of lane `lane`) with the carried values.
SmallVector<Value> forRowVectors(
    ElementMath &m, const KernelGroup &group, Value row, ValueRange init,
    llvm::function_ref<SmallVector<Value>(Value, VectorLanes &, int64_t, ValueRange)>
        body) {
  int64_t width = rowVectorWidth(group);
  Value first = m.i64Mul(m.tid64(), m.i64c(width));
  return m.loop(first, m.i64c(group.cols), m.i64c(m.threads * width), init,
                [&](Value col0, ValueRange acc) -> SmallVector<Value> {
                  Value base = m.i64Add(m.i64Mul(row, m.i64c(group.cols)), col0);
                  VectorLanes lanes;
                  if (width > 1)
                    lanes = loadLeafLanes(m, group, base, row, width);
                  SmallVector<Value> carried(acc.begin(), acc.end());
                  for (int64_t lane = 0; lane < width; ++lane) {
                    Value col = lane ? m.i64Add(col0, m.i64c(lane)) : col0;
                    carried = body(col, lanes, lane, carried);
                  }
                  return carried;
                });
}

/// sum (or max) over the row's columns of `term`, CTA-wide.
Value rowReduce(ElementMath &m, const KernelGroup &group, Value row,
                const RowStats &stats, bool max,
                llvm::function_ref<Value(ElementEvaluator &)> term) {
  Value init = m.f32c(max ? -std::numeric_limits<double>::infinity() : 0.0);
  SmallVector<Value> partial = forRowVectors(
      m, group, row, ValueRange{init},
      [&](Value col, VectorLanes &lanes, int64_t lane, ValueRange acc) -> SmallVector<Value> {
        ElementEvaluator ev(m, group, stats, row, col);
        ev.atLane(lanes, lane);
        Value t = term(ev);
        return {max ? m.fmax(acc[0], t) : m.fadd(acc[0], t)};
      });
  return m.blockReduce(partial[0], max);
}

/// Several sums over the row's columns in one pass and one block reduction.
SmallVector<Value> rowSums(ElementMath &m, const KernelGroup &group, Value row,
                           const RowStats &stats, int64_t count,
                           llvm::function_ref<SmallVector<Value>(ElementEvaluator &)> terms) {
  SmallVector<Value> init(count, m.f32c(0.0));
  SmallVector<Value> partial = forRowVectors(
      m, group, row, init,
      [&](Value col, VectorLanes &lanes, int64_t lane, ValueRange acc) -> SmallVector<Value> {
        ElementEvaluator ev(m, group, stats, row, col);
        ev.atLane(lanes, lane);
        SmallVector<Value> t = terms(ev);
        SmallVector<Value> next;
        for (int64_t k = 0; k < count; ++k)
          next.push_back(m.fadd(acc[k], t[k]));
        return next;
      });
  return m.blockSums(partial);
}

/// mean and 1/sqrt(var + eps) of `x` over the row (two passes, as the
/// reference's rowMoments).
std::pair<Value, Value> moments(ElementMath &m, const KernelGroup &group,
                                Value row, const RowStats &stats, Value x,
                                double eps) {
  Value n = m.f32c(double(group.cols));
  Value mean = m.fdiv(
      rowReduce(m, group, row, stats, false,
                [&](ElementEvaluator &ev) { return ev.value(x); }),
      n);
  Value var = m.fdiv(rowReduce(m, group, row, stats, false,
                               [&](ElementEvaluator &ev) {
                                 Value d = m.fsub(ev.value(x), mean);
                                 return m.fmul(d, d);
                               }),
                     n);
  return {mean, m.rsqrt(m.fadd(var, m.f32c(eps)))};
}

Value inverseRms(ElementMath &m, const KernelGroup &group, Value row,
                 const RowStats &stats, Value x, double eps) {
  Value sumSq = rowReduce(m, group, row, stats, false, [&](ElementEvaluator &ev) {
    Value v = ev.value(x);
    return m.fmul(v, v);
  });
  return m.rsqrt(m.fadd(m.fdiv(sumSq, m.f32c(double(group.cols))), m.f32c(eps)));
}

/// The row's max of `x` and sum of exp(x - max), in one pass over the
/// columns: each thread keeps a running max and a sum shifted by it; a
/// vector's lanes are read first, so the running sum is rescaled once a
/// vector (width + 1 exponentials for width elements). The CTA then takes
/// the max of the threads' maxima and adds their sums rescaled to it. A row
/// of -inf has max -inf and sum 0.
std::pair<Value, Value> maxAndExpSum(ElementMath &m, const KernelGroup &group, Value row,
                                     const RowStats &stats, Value x) {
  Value minusInf = m.f32c(-std::numeric_limits<double>::infinity());
  Value zero = m.f32c(0.0);
  // exp(a - shift) with shift = max unless the max is -inf (nothing seen).
  auto shifted = [&](Value a, Value max) {
    Value shift = m.select(arith::CmpFOp::create(m.b, arith::CmpFPredicate::OEQ, max, minusInf),
                           zero, max);
    return m.exp(m.fsub(a, shift));
  };
  int64_t width = rowVectorWidth(group);
  Value first = m.i64Mul(m.tid64(), m.i64c(width));
  SmallVector<Value> partial = m.loop(
      first, m.i64c(group.cols), m.i64c(m.threads * width), ValueRange{minusInf, zero},
      [&](Value col0, ValueRange acc) -> SmallVector<Value> {
        Value base = m.i64Add(m.i64Mul(row, m.i64c(group.cols)), col0);
        VectorLanes lanes;
        if (width > 1)
          lanes = loadLeafLanes(m, group, base, row, width);
        SmallVector<Value> values;
        Value max = acc[0];
        for (int64_t lane = 0; lane < width; ++lane) {
          ElementEvaluator ev(m, group, stats, row, lane ? m.i64Add(col0, m.i64c(lane)) : col0);
          ev.atLane(lanes, lane);
          values.push_back(ev.value(x));
          max = m.fmax(max, values.back());
        }
        Value sum = m.fmul(acc[1], shifted(acc[0], max));
        for (Value v : values)
          sum = m.fadd(sum, shifted(v, max));
        return {max, sum};
      });
  Value max = m.blockReduce(partial[0], /*max=*/true);
  Value sum = m.blockReduce(m.fmul(partial[1], shifted(partial[0], max)), /*max=*/false);
  return {max, sum};
}

/// log(sum(exp(x))) over the row, max-shifted: in one pass (the loss), or
/// in two, the max and then the sum (the loss gradient's kernel, which reads
/// the row a third time for dlogits: there the one-pass statistics measured
/// slower, 998 against 1397 GB/s at bf16 on an H100, 60 registers against 47).
Value logSumExp(ElementMath &m, const KernelGroup &group, Value row,
                const RowStats &stats, Value x, bool onePass) {
  if (onePass) {
    auto [mx, sum] = maxAndExpSum(m, group, row, stats, x);
    return m.fadd(mx, m.fmul(m.log2(sum), m.f32c(M_LN2)));
  }
  Value mx = rowReduce(m, group, row, stats, true,
                       [&](ElementEvaluator &ev) { return ev.value(x); });
  Value sum = rowReduce(m, group, row, stats, false, [&](ElementEvaluator &ev) {
    return m.exp(m.fsub(ev.value(x), mx));
  });
  return m.fadd(mx, m.fmul(m.log2(sum), m.f32c(M_LN2)));
}

} // namespace

void emitRowStats(ElementMath &m, const KernelGroup &group, Value row,
                  RowStats &stats) {
  Value n = m.f32c(double(group.cols));
  for (Operation *op : group.body) {
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](LayerNormOp o) {
          auto [mu, rstd] = moments(m, group, row, stats, o.getX(),
                                    o.getEps().convertToDouble());
          stats[op] = {mu, rstd};
        })
        .Case([&](RmsNormOp o) {
          stats[op] = {inverseRms(m, group, row, stats, o.getX(),
                                  o.getEps().convertToDouble())};
        })
        .Case([&](SoftmaxOp o) {
          auto [mx, sum] = maxAndExpSum(m, group, row, stats, o.getX());
          stats[op] = {mx, m.fdiv(m.f32c(1.0), sum)};
        })
        .Case([&](SoftmaxGradOp o) {
          stats[op] = {rowReduce(m, group, row, stats, false, [&](ElementEvaluator &ev) {
            return m.fmul(ev.value(o.getDy()), ev.value(o.getY()));
          })};
        })
        .Case([&](LayerNormGradOp o) {
          // Two passes: sum x and sum g (g = dy gamma); then the centred
          // sum (x - mean)^2 and sum g (x - mean), so mean(g xhat) =
          // rstd * sum g (x - mean) / n keeps the two-pass variance.
          SmallVector<Value> first =
              rowSums(m, group, row, stats, 2, [&](ElementEvaluator &ev) {
                return SmallVector<Value>{
                    ev.value(o.getX()),
                    m.fmul(ev.value(o.getDy()), ev.value(o.getGamma()))};
              });
          Value mu = m.fdiv(first[0], n), meanG = m.fdiv(first[1], n);
          SmallVector<Value> second =
              rowSums(m, group, row, stats, 2, [&](ElementEvaluator &ev) {
                Value d = m.fsub(ev.value(o.getX()), mu);
                Value g = m.fmul(ev.value(o.getDy()), ev.value(o.getGamma()));
                return SmallVector<Value>{m.fmul(d, d), m.fmul(g, d)};
              });
          Value rstd = m.rsqrt(m.fadd(m.fdiv(second[0], n),
                                      m.f32c(o.getEps().convertToDouble())));
          Value meanGX = m.fmul(rstd, m.fdiv(second[1], n));
          stats[op] = {mu, rstd, meanG, meanGX};
        })
        .Case([&](RmsNormGradOp o) {
          // One pass: sum x^2 and sum dy gamma x.
          SmallVector<Value> sums =
              rowSums(m, group, row, stats, 2, [&](ElementEvaluator &ev) {
                Value x = ev.value(o.getX());
                return SmallVector<Value>{
                    m.fmul(x, x),
                    m.fmul(m.fmul(ev.value(o.getDy()), ev.value(o.getGamma())), x)};
              });
          Value rstd = m.rsqrt(m.fadd(m.fdiv(sums[0], n),
                                      m.f32c(o.getEps().convertToDouble())));
          stats[op] = {rstd, m.fdiv(sums[1], n)};
        })
        .Case([&](CrossEntropyOp o) {
          stats[op] = {logSumExp(m, group, row, stats, o.getLogits(), /*onePass=*/true)};
        })
        .Case([&](CrossEntropyGradOp o) {
          stats[op] = {logSumExp(m, group, row, stats, o.getLogits(), /*onePass=*/false)};
        });
  }
}

namespace {

/// How many rows keep their label (not `op`'s ignore_index), over all rows,
/// CTA-wide (every CTA counts for itself: the labels are one i64 a row).
/// With all_labels (a chunk's share), over all of those instead.
Value keptRows(ElementMath &m, const KernelGroup &group, Operation *op) {
  if (Value all = allLabelsOf(op)) {
    int64_t count = cast<ShapedType>(all.getType()).getNumElements();
    std::optional<int64_t> ignored = ignoredLabel(op);
    if (!ignored)
      return m.f32c(double(count));
    // A leaf too when the op also reads it per row (all_labels = labels).
    Value labels = m.param(group.countedLabels.count(all) ? group.countedLabels.lookup(all)
                                                          : group.leafParam.lookup(all));
    Type element = cast<ShapedType>(all.getType()).getElementType();
    SmallVector<Value> partial = m.loop(
        m.tid64(), m.i64c(count), m.i64c(m.threads), ValueRange{m.f32c(0.0)},
        [&](Value i, ValueRange acc) -> SmallVector<Value> {
          Value label = m.loadElement(labels, element, i);
          Value kept = m.select(m.i64Eq(label, m.i64c(*ignored)), m.f32c(0.0), m.f32c(1.0));
          return {m.fadd(acc[0], kept)};
        });
    return m.blockReduce(partial[0], /*max=*/false);
  }
  const RowStats none;
  SmallVector<Value> partial = m.loop(
      m.tid64(), m.i64c(group.rows), m.i64c(m.threads), ValueRange{m.f32c(0.0)},
      [&](Value row, ValueRange acc) -> SmallVector<Value> {
        ElementEvaluator ev(m, group, none, row, m.i64c(0));
        return {m.fadd(acc[0], ev.keptTerm(op))};
      });
  return m.blockReduce(partial[0], /*max=*/false);
}

} // namespace

void emitRowsBody(ElementMath &m, const KernelGroup &group, RowsRole role) {
  // Losses with an ignore_index also sum their kept rows: the mean is over
  // those. Gradients with one count them before the rows (keptRows).
  // A chunk's loss or gradient (all_labels) counts all the labels first.
  SmallVector<Operation *> losses, counted;
  llvm::DenseMap<Operation *, Value> gradientRows, lossRows;
  for (Operation *op : group.body) {
    if (isa<CrossEntropyOp>(op)) {
      losses.push_back(op);
      if (allLabelsOf(op))
        lossRows[op] = keptRows(m, group, op);
      else if (ignoredLabel(op))
        counted.push_back(op);
    }
    if (isa<CrossEntropyGradOp>(op) && (ignoredLabel(op) || allLabelsOf(op)))
      gradientRows[op] = keptRows(m, group, op);
  }
  SmallVector<Value> init;
  for (size_t i = 0; i < losses.size() + counted.size(); ++i)
    init.push_back(m.f32c(0.0));
  Value first = m.blockId64();
  Value step = m.gridDim64();
  Value tid = m.tid64();
  SmallVector<Value> totals = m.loop(
      first, m.i64c(group.rows), step, init,
      [&](Value row, ValueRange acc) -> SmallVector<Value> {
        RowStats stats;
        emitRowStats(m, group, row, stats);
        if (role == RowsRole::StatsOnly || role == RowsRole::OutputsAndStats) {
          // Thread 0 parks the statistics as f32 [statCount][rows].
          m.ifThen(m.i64Eq(tid, m.i64c(0)), [&] {
            int64_t k = 0;
            for (Operation *op : group.body)
              for (Value s : stats.lookup(op)) {
                Value index = m.i64Add(m.i64c(k++ * group.rows), row);
                m.storeElement(m.param(group.scratchParam), m.f32, index, s);
              }
          });
          if (role == RowsRole::StatsOnly)
            return {};
        }
        // After the parked statistics: the kept-row counts are not per row.
        for (auto [op, rows] : gradientRows)
          stats[op].push_back(rows);
        // Full outputs, a vector of each per step when the leaves load as
        // vectors.
        int64_t width = rowVectorWidth(group);
        Value first = m.i64Mul(tid, m.i64c(width));
        m.loop(first, m.i64c(group.cols), m.i64c(m.threads * width), {},
               [&](Value col0, ValueRange) -> SmallVector<Value> {
                 Value base = m.i64Add(m.i64Mul(row, m.i64c(group.cols)), col0);
                 VectorLanes lanes;
                 if (width > 1)
                   lanes = loadLeafLanes(m, group, base, row, width);
                 SmallVector<SmallVector<Value>> results(group.outputs.size());
                 for (int64_t lane = 0; lane < width; ++lane) {
                   Value col = lane ? m.i64Add(col0, m.i64c(lane)) : col0;
                   ElementEvaluator ev(m, group, stats, row, col);
                   ev.atLane(lanes, lane);
                   for (auto [k, output] : llvm::enumerate(group.outputs))
                     if (group.place(output.first).extent == Extent::Full)
                       results[k].push_back(ev.value(output.first));
                 }
                 for (auto [k, output] : llvm::enumerate(group.outputs)) {
                   if (results[k].empty())
                     continue;
                   Type element = elementOf(output.first);
                   bool exactBits = isSplitMasterHigh(output.first);
                   if (width > 1)
                     m.storeVector(m.param(output.second), element, base, results[k],
                                   exactBits);
                   else
                     m.storeElement(m.param(output.second), element, base,
                                    results[k][0], exactBits);
                 }
                 return {};
               });
        SmallVector<Value> next;
        for (auto [i, op] : llvm::enumerate(losses)) {
          ElementEvaluator ev(m, group, stats, row, m.i64c(0));
          next.push_back(m.fadd(acc[i], ev.lossTerm(op)));
        }
        for (auto [i, op] : llvm::enumerate(counted)) {
          ElementEvaluator ev(m, group, stats, row, m.i64c(0));
          next.push_back(m.fadd(acc[losses.size() + i], ev.keptTerm(op)));
        }
        return next;
      });
  if (losses.empty())
    return;
  // Thread 0 parks this CTA's sums, fences, and counts itself in; the last
  // CTA to arrive adds the partials in CTA order, writes the mean over rows
  // and resets the counter for the next launch.
  Value partials = LLVM::AddressOfOp::create(m.b, LLVM::LLVMPointerType::get(m.b.getContext(), 1),
                                             kLossPartialsSymbol);
  Value counter = LLVM::AddressOfOp::create(m.b, LLVM::LLVMPointerType::get(m.b.getContext(), 1),
                                            kLossCounterSymbol);
  Value blocks = m.gridDim64();
  m.ifThen(m.i64Eq(tid, m.i64c(0)), [&] {
    for (auto [k, total] : llvm::enumerate(totals)) {
      Value index = m.i64Add(m.i64c(int64_t(k) * kMaxLossBlocks), m.blockId64());
      m.storeElement(partials, m.f32, index, total);
    }
    NVVM::MembarOp::create(m.b, NVVM::MemScopeKind::GPU);
    Value arrived = LLVM::AtomicRMWOp::create(m.b, LLVM::AtomicBinOp::add, counter,
                                              m.i32c(1), LLVM::AtomicOrdering::acq_rel);
    Value last = m.i64Eq(m.toI64(arrived), m.i64Sub(blocks, m.i64c(1)));
    m.ifThen(last, [&] {
      for (auto [value, param] : group.outputs) {
        auto it = llvm::find(losses, value.getDefiningOp());
        if (it == losses.end())
          continue;
        int64_t k = it - losses.begin();
        auto total = [&](int64_t slot) {
          return m.loop(
              m.i64c(0), blocks, m.i64c(1), ValueRange{m.f32c(0.0)},
              [&](Value block, ValueRange acc) -> SmallVector<Value> {
                Value index = m.i64Add(m.i64c(slot * kMaxLossBlocks), block);
                Value at = m.globalAt(partials, m.i64Mul(index, m.i64c(4)));
                // Volatile: another CTA wrote it during this launch.
                Value part = LLVM::LoadOp::create(m.b, m.f32, at, 4, /*isVolatile=*/true);
                return {m.fadd(acc[0], part)};
              })[0];
        };
        Value sum = total(k);
        auto c = llvm::find(counted, *it);
        Value rows = lossRows.count(*it) ? lossRows.lookup(*it)
                     : c == counted.end()
                         ? m.f32c(double(group.rows))
                         : total(int64_t(losses.size()) + (c - counted.begin()));
        m.storeElement(m.param(param), elementOf(value), m.i64c(0), m.fdiv(sum, rows));
      }
      m.store(m.i32c(0), counter, 4);
    });
  });
}

void emitColumnSums(ElementMath &m, int64_t rows, int64_t cols, int64_t count,
                    llvm::function_ref<SmallVector<Value>(Value, Value)> terms,
                    llvm::function_ref<void(Value, Value, ArrayRef<Value>)> store,
                    int64_t chunks) {
  // kColumnThreads = 32 columns (tx) x 32 row lanes (ty); lane ty sums rows
  // ty, ty + 32, ... in order, kColumnUnroll rows per iteration so their
  // loads are in flight together; lanes are added in lane order.
  constexpr int64_t kLanes = kColumnThreads / 32;
  Value tid = m.tid64();
  Value tx = m.i64Rem(tid, m.i64c(32)), ty = m.i64Div(tid, m.i64c(32));
  // CTA b: column block b mod colBlocks, row chunk b / colBlocks.
  int64_t colBlocks = (cols + 31) / 32;
  int64_t chunkRows = (rows + chunks - 1) / chunks;
  Value colBlock = m.i64Rem(m.blockId64(), m.i64c(colBlocks));
  Value rowBase = m.i64Mul(m.i64Div(m.blockId64(), m.i64c(colBlocks)), m.i64c(chunkRows));
  Value rowEnd = m.i64Add(rowBase, m.i64c(chunkRows));
  rowEnd = m.select(m.i64Lt(rowEnd, m.i64c(rows)), rowEnd, m.i64c(rows));
  Value col = m.i64Add(m.i64Mul(colBlock, m.i64c(32)), tx);
  Value valid = m.i64Lt(col, m.i64c(cols));
  // Out-of-range lanes read column 0 and store nothing: no divergent barrier.
  Value readCol = m.select(valid, col, m.i64c(0));
  int64_t perIteration = kLanes * kColumnUnroll;
  SmallVector<Value> init(count, m.f32c(0.0));
  SmallVector<Value> partial = m.loop(
      m.i64c(0), m.i64c((chunkRows + perIteration - 1) / perIteration), m.i64c(1), init,
      [&](Value i, ValueRange acc) -> SmallVector<Value> {
        SmallVector<SmallVector<Value>> unrolled;
        SmallVector<Value> inRange;
        for (int64_t u = 0; u < kColumnUnroll; ++u) {
          Value row = m.i64Add(
              rowBase, m.i64Add(m.i64Mul(m.i64Add(m.i64Mul(i, m.i64c(kColumnUnroll)),
                                                  m.i64c(u)),
                                         m.i64c(kLanes)),
                                ty));
          Value ok = m.i64Lt(row, rowEnd);
          inRange.push_back(ok);
          unrolled.push_back(terms(m.select(ok, row, m.i64c(0)), readCol));
        }
        SmallVector<Value> next(acc.begin(), acc.end());
        for (int64_t u = 0; u < kColumnUnroll; ++u)
          for (int64_t k = 0; k < count; ++k)
            next[k] = m.fadd(next[k], m.select(inRange[u], unrolled[u][k], m.f32c(0.0)));
        return next;
      });
  Value tx32 = arith::TruncIOp::create(m.b, m.i32, tx);
  Value ty32 = arith::TruncIOp::create(m.b, m.i32, ty);
  for (auto [k, value] : llvm::enumerate(partial)) {
    Value slot = m.add(m.mul(m.add(m.i32c(int64_t(k) * kLanes), ty32), m.i32c(32)), tx32);
    m.store(value, m.sharedAt(m.mul(slot, m.i32c(4))), 4);
  }
  m.barrier();
  m.ifThen(m.andi(m.i64Eq(ty, m.i64c(0)), valid), [&] {
    SmallVector<Value> totals;
    for (int64_t k = 0; k < count; ++k) {
      Value total = m.f32c(0.0);
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        Value slot = m.add(m.i32c((k * kLanes + lane) * 32), tx32);
        total = m.fadd(total, m.load(m.f32, m.sharedAt(m.mul(slot, m.i32c(4))), 4));
      }
      totals.push_back(total);
    }
    store(m.i64Div(m.blockId64(), m.i64c(colBlocks)), col, totals);
  });
}

void emitColumnSumsBody(ElementMath &m, const KernelGroup &group) {
  SmallVector<std::pair<Value, unsigned>> sums;
  for (auto [value, param] : group.outputs)
    if (KernelGroup::isColumnSum(value))
      sums.push_back({value, param});
  int64_t count = int64_t(sums.size());
  Value scratch = m.param(group.scratchParam);
  emitColumnSums(
      m, group.rows, group.cols, count,
      [&](Value row, Value col) {
        RowStats stats;
        int64_t k = 0;
        for (Operation *op : group.body)
          for (int64_t i = 0, e = rowStatCount(op); i < e; ++i) {
            Value index = m.i64Add(m.i64c(k++ * group.rows), row);
            stats[op].push_back(m.loadElement(scratch, m.f32, index));
          }
        ElementEvaluator ev(m, group, stats, row, col);
        SmallVector<Value> terms;
        for (auto &sum : sums)
          terms.push_back(ev.columnTerm(sum.first));
        return terms;
      },
      [&](Value chunk, Value col, ArrayRef<Value> totals) {
        for (auto [k, sum, total] : llvm::enumerate(sums, totals)) {
          if (group.columnChunks == 1) {
            m.storeElement(m.param(sum.second), elementOf(sum.first), col, total);
            continue;
          }
          // Chunk partials after the statistics: [chunk][sum][col] f32.
          Value index = m.i64Add(
              m.i64c(group.statCount * group.rows),
              m.i64Add(m.i64Mul(m.i64Add(m.i64Mul(chunk, m.i64c(count)),
                                         m.i64c(int64_t(k))),
                                m.i64c(group.cols)),
                       col));
          m.storeElement(scratch, m.f32, index, total);
        }
      },
      group.columnChunks);
}

void emitColumnFinalBody(ElementMath &m, const KernelGroup &group) {
  SmallVector<std::pair<Value, unsigned>> sums;
  for (auto [value, param] : group.outputs)
    if (KernelGroup::isColumnSum(value))
      sums.push_back({value, param});
  int64_t count = int64_t(sums.size());
  Value scratch = m.param(group.scratchParam);
  Value col = m.i64Add(m.i64Mul(m.blockId64(), m.i64c(m.threads)), m.tid64());
  m.ifThen(m.i64Lt(col, m.i64c(group.cols)), [&] {
    for (auto [k, sum] : llvm::enumerate(sums)) {
      // The chunks' partials in chunk order: the same sum every launch.
      Value total = m.f32c(0.0);
      for (int64_t chunk = 0; chunk < group.columnChunks; ++chunk) {
        Value index = m.i64Add(
            m.i64c(group.statCount * group.rows +
                   (chunk * count + int64_t(k)) * group.cols),
            col);
        total = m.fadd(total, m.loadElement(scratch, m.f32, index));
      }
      m.storeElement(m.param(sum.second), elementOf(sum.first), col, total);
    }
  });
}

} // namespace weft::gpu
