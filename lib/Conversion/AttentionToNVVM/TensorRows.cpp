// TensorRows: the attention kernels' one mapping from (batch, head, row) of a
// tensor to its global address and TMA head coordinate, per layout.
#include "KernelBodies.h"

using namespace mlir;

namespace weft::gpu {

TensorRows::TensorRows(WarpEmitter &e, const AttentionKernelConfig &config,
                       const KernelScalars &s, AttentionOperand operand)
    : seqMajor(config.layout == AttentionKernelConfig::Layout::SeqMajor),
      headDim(config.headDim) {
  using Op = AttentionOperand;
  bool querySide = operand == Op::Q || operand == Op::Out || operand == Op::DOut ||
                   operand == Op::DQ;
  len = querySide ? s.qLen : s.kLen;
  heads = ownHeads = querySide ? s.qHeads : s.kvHeads;
  bool packed = seqMajor && ((config.packedQkv && (operand == Op::Q || operand == Op::K ||
                                                   operand == Op::V)) ||
                             (config.packedGrads && (operand == Op::DQ || operand == Op::DK ||
                                                     operand == Op::DV)));
  if (packed) {
    heads = e.add(s.qHeads, e.mul(s.kvHeads, e.i32c(2)));
    bool isK = operand == Op::K || operand == Op::DK;
    bool isV = operand == Op::V || operand == Op::DV;
    if (config.groupedQkv) {
      // Per kv head j: its g q heads, then k, then v (g + 2 heads).
      group = e.divu(s.qHeads, s.kvHeads);
      if (isK || isV) {
        headStride = e.add(group, e.i32c(2));
        headOffset = isK ? group : e.add(group, e.i32c(1));
      } else {
        groupGap = true;
      }
    } else if (isK) {
      headOffset = s.qHeads;
    } else if (isV) {
      headOffset = e.add(s.qHeads, s.kvHeads);
    }
  }
  pitchElements = seqMajor ? e.mul(heads, e.i32c(headDim)) : e.i32c(headDim);
  pitch = seqMajor ? e.mul(heads, e.i32c(headDim * 2)) : e.i32c(headDim * 2);
}

Value TensorRows::at(WarpEmitter &e, Value batch, Value head, Value row) const {
  if (!seqMajor) {
    // Today's arithmetic, kept as it was: the flat row in i32, bytes in i64.
    Value flatRow = e.add(e.mul(e.add(e.mul(batch, heads), head), len), row);
    return e.mul(e.toI64(flatRow), e.i64c(headDim * 2));
  }
  Value rowBytes = e.mul(e.toI64(e.add(e.mul(batch, len), row)), e.toI64(pitch));
  return e.add(rowBytes, e.toI64(e.mul(mapHead(e, head), e.i32c(headDim * 2))));
}

Value TensorRows::atPlane(WarpEmitter &e, Value plane, Value row) const {
  if (!seqMajor)
    return e.mul(e.toI64(e.add(e.mul(plane, len), row)), e.i64c(headDim * 2));
  Value batch = e.divu(plane, ownHeads);
  Value head = arith::RemUIOp::create(e.b, plane, ownHeads);
  return at(e, batch, head, row);
}

Value TensorRows::mapHead(WarpEmitter &e, Value head) const {
  // Grouped q head h sits after the k and v of the h / g groups before it.
  if (groupGap)
    return e.add(head, e.mul(e.divu(head, group), e.i32c(2)));
  Value column = headStride ? e.mul(head, headStride) : head;
  return headOffset ? e.add(headOffset, column) : column;
}

} // namespace weft::gpu
