// embedding_grad's GPU kernel: dtable[v] = sum of dy[t] over the tokens
// with ids[t] == v, in token order (deterministic, no atomics).
#include "ShapeKernels.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace weft::gpu {

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<ShapedType>(v.getType()).getShape(); }
Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }

} // namespace

/// Vocabulary rows one CTA of `threads` sums (embedding_grad): each row's
/// f32 accumulators (ceil(hidden / threads) a thread) stay within about 48
/// registers, and its token list (threads i32) within the kernels' shared
/// memory beside the warp counts.
int64_t embeddingGradRows(int64_t hidden, int64_t threads) {
  int64_t perThread = (hidden + threads - 1) / threads;
  int64_t bySmem = (kElementwiseSmemBytes - 1024) / (threads * 4);
  return std::clamp<int64_t>(48 / perThread, 1, std::min<int64_t>(6, bySmem));
}

/// dtable[v] = sum of dy[t] over the tokens t with ids[t] == v, in token
/// order: a CTA per `rows` consecutive vocabulary rows (grid-stride) scans
/// the ids a chunk of `threads` at a time, compacts each row's hits in the
/// chunk in token order into shared memory (warp ballots, per-warp counts),
/// and every thread adds those rows of dy into its columns' f32
/// accumulators of that row. A vocabulary shard (`vocab_offset`, an i64
/// parameter after the ids) holds global rows [offset, offset + vocab): ids
/// outside them are skipped. One scan of the ids serves `rows` rows (a CTA
/// per row read the ids vocab times: 3.3 GB of L2 for GPT-2's 50304 x 8192).
void emitEmbeddingGrad(ElementMath &m, EmbeddingGradOp grad) {
  ArrayRef<int64_t> table = shapeOf(grad.getDtable());
  int64_t vocab = table[0], hidden = table[1];
  int64_t tokens = cast<ShapedType>(grad.getIds().getType()).getNumElements();
  int64_t threads = m.threads, warps = threads / 32;
  int64_t perThread = (hidden + threads - 1) / threads;
  int64_t rows = embeddingGradRows(hidden, threads);
  int64_t groups = (vocab + rows - 1) / rows;
  Type dyElement = elementOf(grad.getDy()), outElement = elementOf(grad.getDtable());
  bool shard = bool(grad.getVocabOffset());
  Value firstRow = shard ? m.param(2) : m.i64c(0);
  Value out = m.param(shard ? 3 : 2);
  // Bytes: the warp counts of every row first, then each row's list.
  const int64_t listOffset = (rows * warps * 4 + 15) / 16 * 16;
  auto countAt = [&](int64_t r, Value w) {
    return m.sharedAt(m.mul(m.add(m.i32c(r * warps), w), m.i32c(4)));
  };
  auto listAt = [&](int64_t r, Value slot) {
    return m.sharedAt(m.add(m.i32c(listOffset + r * threads * 4), m.mul(slot, m.i32c(4))));
  };
  Value tid = m.threadIdX();
  Value tid64 = m.toI64(tid);
  Value lane = arith::RemUIOp::create(m.b, tid, m.i32c(32));
  Value warp = m.divu(tid, m.i32c(32));
  Value below = m.sub(arith::ShLIOp::create(m.b, m.i32c(1), lane), m.i32c(1));
  auto intrinsic = [&](StringRef name, ValueRange args) {
    return LLVM::CallIntrinsicOp::create(m.b, m.i32, m.b.getStringAttr(name), args)
        .getResult(0);
  };
  m.loop(m.blockId64(), m.i64c(groups), m.gridDim64(), {},
         [&](Value group, ValueRange) -> SmallVector<Value> {
           Value v0 = m.i64Mul(group, m.i64c(rows));
           Value global0 = m.i64Add(v0, firstRow);
           SmallVector<Value> init(rows * perThread, m.f32c(0.0));
           SmallVector<Value> sums = m.loop(
               m.i64c(0), m.i64c(tokens), m.i64c(threads), init,
               [&](Value chunk, ValueRange acc) -> SmallVector<Value> {
                 Value t = m.i64Add(chunk, tid64);
                 Value inRange = m.i64Lt(t, m.i64c(tokens));
                 Value id = m.loadElement(m.param(1), m.i64, m.select(inRange, t, m.i64c(0)));
                 SmallVector<Value> hits, masks;
                 for (int64_t r = 0; r < rows; ++r) {
                   hits.push_back(m.andi(inRange, m.i64Eq(id, m.i64Add(global0, m.i64c(r)))));
                   masks.push_back(
                       intrinsic("llvm.nvvm.vote.ballot.sync", {m.i32c(-1), hits.back()}));
                 }
                 m.ifThen(arith::CmpIOp::create(m.b, arith::CmpIPredicate::eq, lane, m.i32c(0)),
                          [&] {
                            for (int64_t r = 0; r < rows; ++r)
                              m.store(intrinsic("llvm.ctpop.i32", {masks[r]}), countAt(r, warp),
                                      4);
                          });
                 m.barrier();
                 SmallVector<Value> totals;
                 for (int64_t r = 0; r < rows; ++r) {
                   Value offset = m.i32c(0), total = m.i32c(0);
                   for (int64_t w = 0; w < warps; ++w) {
                     Value c = m.load(m.i32, countAt(r, m.i32c(w)), 4);
                     offset = m.add(offset, m.select(m.lt(m.i32c(w), warp), c, m.i32c(0)));
                     total = m.add(total, c);
                   }
                   totals.push_back(total);
                   Value rank = intrinsic("llvm.ctpop.i32", {m.andi(masks[r], below)});
                   m.ifThen(hits[r], [&] {
                     m.store(arith::TruncIOp::create(m.b, m.i32, t),
                             listAt(r, m.add(offset, rank)), 4);
                   });
                 }
                 m.barrier();
                 SmallVector<Value> next;
                 for (int64_t r = 0; r < rows; ++r) {
                   SmallVector<Value> rowAcc(acc.begin() + r * perThread,
                                             acc.begin() + (r + 1) * perThread);
                   SmallVector<Value> rowNext = m.loop(
                       m.i64c(0), m.toI64(totals[r]), m.i64c(1), rowAcc,
                       [&](Value j, ValueRange inner) -> SmallVector<Value> {
                         Value j32 = arith::TruncIOp::create(m.b, m.i32, j);
                         Value token = m.toI64(m.load(m.i32, listAt(r, j32), 4));
                         SmallVector<Value> out;
                         for (int64_t k = 0; k < perThread; ++k) {
                           Value col = m.i64Add(m.i64c(k * threads), tid64);
                           Value ok = m.i64Lt(col, m.i64c(hidden));
                           Value index = m.i64Add(m.i64Mul(token, m.i64c(hidden)),
                                                  m.select(ok, col, m.i64c(0)));
                           Value x = m.loadElement(m.param(0), dyElement, index);
                           out.push_back(m.fadd(inner[k], m.select(ok, x, m.f32c(0.0))));
                         }
                         return out;
                       });
                   next.append(rowNext.begin(), rowNext.end());
                 }
                 // The counts and lists are rewritten by the next chunk.
                 m.barrier();
                 return next;
               });
           for (int64_t r = 0; r < rows; ++r) {
             Value v = m.i64Add(v0, m.i64c(r));
             for (int64_t k = 0; k < perThread; ++k) {
               Value col = m.i64Add(m.i64c(k * threads), tid64);
               m.ifThen(m.andi(m.i64Lt(v, m.i64c(vocab)), m.i64Lt(col, m.i64c(hidden))), [&] {
                 m.storeElement(out, outElement,
                                m.i64Add(m.i64Mul(v, m.i64c(hidden)), col),
                                sums[r * perThread + k]);
               });
             }
           }
           return {};
         });
}

} // namespace weft::gpu
