// The dropout keep mask of the Hopper backward: drawn once by its own
// kernel, read by the dK/dV and dQ kernels.
#include "KeepMask.h"

#include "AttentionDropout.h"

#include "weft/Codegen/PhiloxBuilder.h"
#include "weft/Dialect/AttentionWorkspace.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace weft::gpu {

KeepMask::KeepMask(Value workspace, const KernelScalars &s, bool afterDelta)
    : workspace(workspace), s(s), afterDelta(afterDelta) {}

KeepMask::Shape KeepMask::shape(WarpEmitter &w) const {
  // Derived from an opaque zero at each use, so that nothing is hoisted out
  // of the kernels' loops: held across them the values would cost registers
  // the kernels do not have (the dK/dV kernels sit at ptxas's limit).
  Value zero = w.opaqueCopy(w.i32c(0));
  Shape shape;
  shape.qLen = w.add(s.qLen, zero);
  shape.kLen = w.add(s.kLen, zero);
  shape.base = workspace;
  if (afterDelta) {
    // The same offset as attentionKeepMaskOffset, from the run's shapes.
    Value rows = w.toI64(w.mul(w.mul(s.batch, s.qHeads), shape.qLen));
    Value deltaBytes = arith::MulIOp::create(w.b, rows, w.i64c(attentionDeltaBytes(1)));
    Value offset = arith::MulIOp::create(
        w.b, arith::DivUIOp::create(w.b, arith::AddIOp::create(w.b, deltaBytes, w.i64c(255)),
                                    w.i64c(256)),
        w.i64c(256));
    shape.base = w.globalAt(workspace, offset);
  }
  shape.rowGroups = w.ceilDiv(shape.qLen, 8);
  shape.chunks = w.ceilDiv(shape.kLen, 16);
  return shape;
}

Value KeepMask::tileOffset(WarpEmitter &w, const Shape &shape, Value plane, Value rowGroup,
                           Value chunk) const {
  ImplicitLocOpBuilder &b = w.b;
  Value row = w.toI64(w.add(w.mul(plane, shape.rowGroups), rowGroup));
  Value tile = arith::AddIOp::create(
      b, arith::MulIOp::create(b, row, w.toI64(shape.chunks)), w.toI64(chunk));
  return arith::MulIOp::create(b, tile, w.i64c(16));
}

SmallVector<Value> KeepMask::loadTransposed(WarpEmitter &w, int64_t tiles, Value plane,
                                            Value firstQuery, Value key0,
                                            const LaneIds &ids) const {
  ImplicitLocOpBuilder &b = w.b;
  Shape shape = this->shape(w);
  SmallVector<Value> packed((tiles + 7) / 8, w.i32c(0));
  Value chunk = w.divu(key0, w.i32c(16));
  Value keysValid = w.lt(key0, shape.kLen);
  // Lane L = 4 g + t holds element j = qj + 2 kb at bit 4 L + j of a tile:
  // the nibble at bit 4 (L % 8) of word L / 8 (= g / 2).
  Value wordOffset = w.toI64(w.mul(w.divu(ids.g, w.i32c(2)), w.i32c(4)));
  Value nibble = w.mul(w.andi(ids.lane, w.i32c(7)), w.i32c(4));
  for (int64_t nt = 0; nt < tiles; ++nt) {
    Value query = w.add(firstQuery, w.i32c(nt * 8));
    Value valid = w.andi(keysValid, w.lt(query, shape.qLen));
    Value at = arith::AddIOp::create(
        b, tileOffset(w, shape, plane, w.divu(query, w.i32c(8)), chunk), wordOffset);
    Value word = w.load(w.i32, w.globalAt(shape.base, w.select(valid, at, w.i64c(0))), 4);
    Value bits = w.andi(arith::ShRUIOp::create(b, word, nibble), w.i32c(15));
    packed[nt / 8] = arith::OrIOp::create(
        b, packed[nt / 8], arith::ShLIOp::create(b, bits, w.i32c(4 * (nt % 8))));
  }
  for (Value &word : packed)
    word = w.opaqueCopy(word);
  return packed;
}

SmallVector<Value> KeepMask::loadRows(WarpEmitter &w, int64_t tiles, Value plane, Value row0,
                                      Value key0, const LaneIds &ids) const {
  ImplicitLocOpBuilder &b = w.b;
  Shape shape = this->shape(w);
  SmallVector<Value> packed((tiles + 7) / 8, w.i32c(0));
  // Row q = row0 + g + 8 h (q % 8 = g), key 16 m + 8 kb + 2 t + c of a
  // chunk: the tile's lane 4 (2 t + c) + g / 2, element (g % 2) + 2 kb, at
  // bit 16 c + 2 kb + 4 (g / 2) + (g % 2) of word t.
  Value wordOffset = w.toI64(w.mul(ids.t, w.i32c(4)));
  Value shift = w.add(w.mul(w.divu(ids.g, w.i32c(2)), w.i32c(4)), w.andi(ids.g, w.i32c(1)));
  Value firstGroup = w.divu(row0, w.i32c(8)), firstChunk = w.divu(key0, w.i32c(16));
  for (int h = 0; h < 2; ++h) {
    Value rowValid = w.lt(w.add(row0, w.i32c(8 * h)), shape.qLen);
    for (int64_t m = 0; 2 * m < tiles; ++m) {
      Value valid = w.andi(rowValid, w.lt(w.add(key0, w.i32c(16 * m)), shape.kLen));
      Value at = arith::AddIOp::create(
          b,
          tileOffset(w, shape, plane, w.add(firstGroup, w.i32c(h)),
                     w.add(firstChunk, w.i32c(m))),
          wordOffset);
      Value word = w.load(w.i32, w.globalAt(shape.base, w.select(valid, at, w.i64c(0))), 4);
      Value x = arith::ShRUIOp::create(b, word, shift);
      for (int kb = 0; kb < 2 && 2 * m + kb < tiles; ++kb) {
        int64_t nt = 2 * m + kb;
        // Bits 2 kb and 16 + 2 kb of x are elements c = 0, 1: to bits
        // 2 h, 2 h + 1 of the tile's nibble.
        Value two = arith::OrIOp::create(
            b, w.andi(arith::ShRUIOp::create(b, x, w.i32c(2 * kb)), w.i32c(1)),
            w.andi(arith::ShRUIOp::create(b, x, w.i32c(15 + 2 * kb)), w.i32c(2)));
        packed[nt / 8] = arith::OrIOp::create(
            b, packed[nt / 8], arith::ShLIOp::create(b, two, w.i32c(4 * (nt % 8) + 2 * h)));
      }
    }
  }
  for (Value &word : packed)
    word = w.opaqueCopy(word);
  return packed;
}

void emitKeepMaskBody(mlir::gpu::GPUFuncOp func, const AttentionKernelConfig &config,
                      bool afterDelta) {
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToEnd(&func.getBody().front());
  WarpEmitter e(b, config.bf16);
  KernelScalars s = KernelScalars::of(func, 1);
  KeepMask mask(func.getArgument(0), s, afterDelta);
  Value seed = e.load(e.i64, func.getArguments().back(), 8);
  const int64_t groups = kKeepMaskRows / 8;
  Value plane = e.add(e.mul(e.blockId(2), s.qHeads), e.blockId(1));
  // The (batch, head) plane the draws index in the global probabilities: a
  // block of partitioned heads starts at head_offset of dropoutHeads.
  Value drawPlane = config.dropoutHeads
                        ? e.add(e.add(e.mul(e.blockId(2), e.i32c(config.dropoutHeads)),
                                      headOffsetBefore(func.getArguments().back())),
                                e.blockId(1))
                        : plane;
  Value group0 = e.mul(e.blockId(0), e.i32c(groups));
  KeepMask::Shape shape = mask.shape(e);
  Value aligned = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        e.andi(shape.kLen, e.i32c(3)), e.i32c(0));
  // Causal: a tile is drawn when a key of it can be seen by one of its rows
  // under either alignment (top-left and bottom-right agree at q_len == k_len).
  Value shift = e.select(e.lt(shape.qLen, shape.kLen), e.sub(shape.kLen, shape.qLen), e.i32c(0));
  // The chunks a row group of the CTA may need: causal, those up to the
  // last row's diagonal (only the 64 x 64 block on it draws tiles it skips).
  Value chunks = shape.chunks;
  if (config.causal) {
    Value lastRow = e.minsi(e.add(e.mul(group0, e.i32c(8)), e.i32c(kKeepMaskRows - 1)),
                            e.sub(shape.qLen, e.i32c(1)));
    chunks = e.minsi(chunks, e.ceilDiv(e.add(e.add(lastRow, e.i32c(1)), shift), 16));
  }
  Value total = e.mul(e.i32c(groups), chunks);
  // Thread i takes tiles i, i + threads, ...: neighbours write neighbouring
  // 16-byte tiles of one row group.
  scf::ForOp::create(
      b, e.threadIdX(), total, e.i32c(kKeepMaskThreads), ValueRange{},
      [&](OpBuilder &nested, Location loc, Value i, ValueRange) {
        ImplicitLocOpBuilder lb(loc, nested);
        WarpEmitter w(lb, config.bf16);
        Value group = w.add(group0, w.divu(i, chunks));
        Value chunk = arith::RemUIOp::create(lb, i, chunks);
        Value q0 = w.mul(group, w.i32c(8)), k0 = w.mul(chunk, w.i32c(16));
        Value wanted = w.lt(q0, shape.qLen);
        if (config.causal)
          wanted = w.andi(wanted, w.le(k0, w.add(w.add(q0, w.i32c(7)), shift)));
        w.ifThen(wanted, [&] {
          std::array<Value, 4> words = {w.i32c(0), w.i32c(0), w.i32c(0), w.i32c(0)};
          for (int qo = 0; qo < 8; ++qo) {
            Value q = w.add(q0, w.i32c(qo));
            Value rowValid = w.lt(q, shape.qLen);
            Value rowIndex = arith::MulIOp::create(
                lb, w.toI64(w.add(w.mul(drawPlane, shape.qLen), q)), w.toI64(shape.kLen));
            for (int quad = 0; quad < 4; ++quad) {
              Value first = arith::AddIOp::create(lb, rowIndex, w.toI64(w.add(k0, w.i32c(4 * quad))));
              // Keys 4m .. 4m + 3 of a row are one Philox block when k_len % 4 == 0.
              auto draws = scf::IfOp::create(lb, TypeRange(SmallVector<Type>(4, w.i32)), aligned,
                                             /*withElseRegion=*/true);
              {
                OpBuilder::InsertionGuard guard(lb);
                lb.setInsertionPointToStart(draws.thenBlock());
                Value block = arith::ShRUIOp::create(lb, first, w.i64c(2));
                std::array<Value, 4> four = codegen::buildPhiloxBlock(
                    lb, seed, config.rngId, block, codegen::PhiloxMultiply::Nvptx);
                scf::YieldOp::create(lb, ValueRange(four));
                lb.setInsertionPointToStart(draws.elseBlock());
                SmallVector<Value> single;
                for (int k = 0; k < 4; ++k)
                  single.push_back(codegen::buildPhiloxDraw(
                      lb, seed, config.rngId, arith::AddIOp::create(lb, first, w.i64c(k)),
                      codegen::PhiloxMultiply::Nvptx));
                scf::YieldOp::create(lb, single);
              }
              for (int k = 0; k < 4; ++k) {
                // Key offset 4 quad + k = 8 kb + g, row offset qo = 2 t + qj:
                // bit 4 (4 g + t) + qj + 2 kb of the tile.
                int key = 4 * quad + k, kb = key / 8, g = key % 8;
                int position = 4 * (4 * g + qo / 2) + qo % 2 + 2 * kb;
                Value kept = w.andi(rowValid, codegen::buildDrawKept(lb, draws.getResult(k),
                                                                     config.dropoutP));
                Value bit = arith::ShLIOp::create(lb, arith::ExtUIOp::create(lb, w.i32, kept),
                                                  w.i32c(position % 32));
                words[position / 32] = arith::OrIOp::create(lb, words[position / 32], bit);
              }
            }
          }
          Value tile = LLVM::UndefOp::create(lb, w.v4i32);
          for (int word = 0; word < 4; ++word)
            tile = LLVM::InsertElementOp::create(lb, tile, words[word], w.i32c(word));
          w.store(tile, w.globalAt(shape.base, mask.tileOffset(w, shape, plane, group, chunk)), 16);
        });
        scf::YieldOp::create(lb);
      });
  mlir::gpu::ReturnOp::create(b);
}

} // namespace weft::gpu
