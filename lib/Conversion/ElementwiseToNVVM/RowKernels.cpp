// Row kernels: one CTA per row (grid-stride over rows; a single CTA over all
// rows for a loss), row statistics by deterministic block reductions, f32
// inside; the stats-only variant and the column-sum kernel of norm-weight
// gradients (dgamma, dbeta), which sums over rows in a fixed order.
#include "KernelEmitter.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace weft::gpu {

namespace {

Type elementOf(Value value) { return cast<ShapedType>(value.getType()).getElementType(); }

/// sum (or max) over the row's columns of `term`, CTA-wide.
Value rowReduce(ElementMath &m, const KernelGroup &group, Value row,
                const RowStats &stats, bool max,
                llvm::function_ref<Value(ElementEvaluator &)> term) {
  Value init = m.f32c(max ? -std::numeric_limits<double>::infinity() : 0.0);
  SmallVector<Value> partial = m.loop(
      m.tid64(), m.i64c(group.cols), m.i64c(m.threads), ValueRange{init},
      [&](Value col, ValueRange acc) -> SmallVector<Value> {
        ElementEvaluator ev(m, group, stats, row, col);
        Value t = term(ev);
        return {max ? m.fmax(acc[0], t) : m.fadd(acc[0], t)};
      });
  return m.blockReduce(partial[0], max);
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

/// log(sum(exp(x))) over the row, max-shifted.
Value logSumExp(ElementMath &m, const KernelGroup &group, Value row,
                const RowStats &stats, Value x) {
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
    auto mean = [&](llvm::function_ref<Value(ElementEvaluator &)> term) {
      return m.fdiv(rowReduce(m, group, row, stats, false, term), n);
    };
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
          Value mx = rowReduce(m, group, row, stats, true,
                               [&](ElementEvaluator &ev) { return ev.value(o.getX()); });
          Value sum = rowReduce(m, group, row, stats, false, [&](ElementEvaluator &ev) {
            return m.exp(m.fsub(ev.value(o.getX()), mx));
          });
          stats[op] = {mx, m.fdiv(m.f32c(1.0), sum)};
        })
        .Case([&](SoftmaxGradOp o) {
          stats[op] = {rowReduce(m, group, row, stats, false, [&](ElementEvaluator &ev) {
            return m.fmul(ev.value(o.getDy()), ev.value(o.getY()));
          })};
        })
        .Case([&](LayerNormGradOp o) {
          Value mu, rstd;
          std::tie(mu, rstd) = moments(m, group, row, stats, o.getX(),
                                       o.getEps().convertToDouble());
          Value meanG = mean([&](ElementEvaluator &ev) {
            return m.fmul(ev.value(o.getDy()), ev.value(o.getGamma()));
          });
          Value meanGX = mean([&](ElementEvaluator &ev) {
            Value xhat = m.fmul(m.fsub(ev.value(o.getX()), mu), rstd);
            return m.fmul(m.fmul(ev.value(o.getDy()), ev.value(o.getGamma())), xhat);
          });
          stats[op] = {mu, rstd, meanG, meanGX};
        })
        .Case([&](RmsNormGradOp o) {
          Value rstd = inverseRms(m, group, row, stats, o.getX(),
                                  o.getEps().convertToDouble());
          Value meanGX = mean([&](ElementEvaluator &ev) {
            return m.fmul(m.fmul(ev.value(o.getDy()), ev.value(o.getGamma())),
                          ev.value(o.getX()));
          });
          stats[op] = {rstd, meanGX};
        })
        .Case([&](CrossEntropyOp o) {
          stats[op] = {logSumExp(m, group, row, stats, o.getLogits())};
        })
        .Case([&](CrossEntropyGradOp o) {
          stats[op] = {logSumExp(m, group, row, stats, o.getLogits())};
        });
  }
}

void emitRowsBody(ElementMath &m, const KernelGroup &group, RowsRole role) {
  bool single = role == RowsRole::SingleBlock;
  SmallVector<Operation *> losses;
  for (Operation *op : group.body)
    if (isa<CrossEntropyOp>(op))
      losses.push_back(op);
  SmallVector<Value> init;
  for (size_t i = 0; i < losses.size(); ++i)
    init.push_back(m.f32c(0.0));
  Value first = single ? m.i64c(0) : m.blockId64();
  Value step = single ? m.i64c(1) : m.gridDim64();
  Value tid = m.tid64();
  SmallVector<Value> totals = m.loop(
      first, m.i64c(group.rows), step, init,
      [&](Value row, ValueRange acc) -> SmallVector<Value> {
        RowStats stats;
        emitRowStats(m, group, row, stats);
        if (role == RowsRole::StatsOnly) {
          // Thread 0 parks the statistics as f32 [statCount][rows].
          m.ifThen(m.i64Eq(tid, m.i64c(0)), [&] {
            int64_t k = 0;
            for (Operation *op : group.body)
              for (Value s : stats.lookup(op)) {
                Value index = m.i64Add(m.i64c(k++ * group.rows), row);
                m.storeElement(m.param(group.scratchParam), m.f32, index, s);
              }
          });
          return {};
        }
        m.loop(tid, m.i64c(group.cols), m.i64c(m.threads), {},
               [&](Value col, ValueRange) -> SmallVector<Value> {
                 ElementEvaluator ev(m, group, stats, row, col);
                 for (auto [value, param] : group.outputs)
                   if (group.place(value).extent == Extent::Full)
                     m.storeElement(m.param(param), elementOf(value), ev.linear(),
                                    ev.value(value));
                 return {};
               });
        SmallVector<Value> next;
        for (auto [i, op] : llvm::enumerate(losses)) {
          ElementEvaluator ev(m, group, stats, row, m.i64c(0));
          next.push_back(m.fadd(acc[i], ev.lossTerm(op)));
        }
        return next;
      });
  if (losses.empty())
    return;
  // The mean over rows, written once by thread 0.
  m.ifThen(m.i64Eq(tid, m.i64c(0)), [&] {
    for (auto [value, param] : group.outputs) {
      auto it = llvm::find(losses, value.getDefiningOp());
      if (it == losses.end())
        continue;
      Value total = totals[it - losses.begin()];
      m.storeElement(m.param(param), elementOf(value), m.i64c(0),
                     m.fdiv(total, m.f32c(double(group.rows))));
    }
  });
}

void emitColumnSumsBody(ElementMath &m, const KernelGroup &group) {
  // 256 threads: 32 columns (tx) x 8 row lanes (ty).
  constexpr int64_t kLanes = 8;
  Value tid = m.tid64();
  Value tx = m.i64Rem(tid, m.i64c(32)), ty = m.i64Div(tid, m.i64c(32));
  Value col = m.i64Add(m.i64Mul(m.blockId64(), m.i64c(32)), tx);
  Value valid = m.i64Lt(col, m.i64c(group.cols));
  // Out-of-range lanes read column 0 and store nothing: no divergent barrier.
  Value readCol = m.select(valid, col, m.i64c(0));
  SmallVector<std::pair<Value, unsigned>> sums;
  for (auto [value, param] : group.outputs)
    if (KernelGroup::isColumnSum(value))
      sums.push_back({value, param});
  SmallVector<Value> init(sums.size(), m.f32c(0.0));
  SmallVector<Value> partial = m.loop(
      ty, m.i64c(group.rows), m.i64c(kLanes), init,
      [&](Value row, ValueRange acc) -> SmallVector<Value> {
        RowStats stats;
        int64_t k = 0;
        for (Operation *op : group.body)
          for (int64_t i = 0, e = rowStatCount(op); i < e; ++i) {
            Value index = m.i64Add(m.i64c(k++ * group.rows), row);
            stats[op].push_back(
                m.loadElement(m.param(group.scratchParam), m.f32, index));
          }
        ElementEvaluator ev(m, group, stats, row, readCol);
        SmallVector<Value> next;
        for (auto [i, sum] : llvm::enumerate(sums))
          next.push_back(m.fadd(acc[i], ev.columnTerm(sum.first)));
        return next;
      });
  Value tx32 = arith::TruncIOp::create(m.b, m.i32, tx);
  Value ty32 = arith::TruncIOp::create(m.b, m.i32, ty);
  for (auto [i, value] : llvm::enumerate(partial)) {
    Value slot = m.add(m.mul(m.add(m.i32c(int64_t(i) * kLanes), ty32), m.i32c(32)), tx32);
    m.store(value, m.sharedAt(m.mul(slot, m.i32c(4))), 4);
  }
  m.barrier();
  m.ifThen(m.andi(m.i64Eq(ty, m.i64c(0)), valid), [&] {
    for (auto [i, sum] : llvm::enumerate(sums)) {
      Value total = m.f32c(0.0);
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        Value slot = m.add(m.i32c((int64_t(i) * kLanes + lane) * 32), tx32);
        total = m.fadd(total, m.load(m.f32, m.sharedAt(m.mul(slot, m.i32c(4))), 4));
      }
      m.storeElement(m.param(sum.second), elementOf(sum.first), col, total);
    }
  });
}

} // namespace weft::gpu
