// Pointwise groups: a grid-stride loop over the domain's elements, V at a
// time with 16-byte vector loads and stores (8 x bf16/f16/i16, 4 x f32; an
// f32 tensor in a group with 16-bit ones moves 2 x 16 bytes), then a scalar
// tail.
#include "KernelEmitter.h"

using namespace mlir;

namespace weft::gpu {

namespace {
Type elementOf(Type type) { return cast<ShapedType>(type).getElementType(); }
int64_t bytesOf(Type element) {
  unsigned bits = element.getIntOrFloatBitWidth();
  return bits < 8 ? 1 : bits / 8;
}
} // namespace

int64_t pointwiseVectorWidth(const KernelGroup &group) {
  int64_t narrowest = 16;
  for (auto [leaf, param] : group.leafParam)
    if (group.place(leaf).extent == Extent::Full)
      narrowest = std::min(narrowest, bytesOf(elementOf(leaf.getType())));
  for (auto [value, param] : group.outputs)
    narrowest = std::min(narrowest, bytesOf(elementOf(value.getType())));
  int64_t width = 16 / narrowest;
  // A vector of the domain must map to a vector of each broadcast operand
  // (suffix, or a strided one whose innermost kept run holds whole vectors)
  // or to one value (per-row, or strided with whole vectors repeated).
  for (auto [leaf, param] : group.leafParam) {
    TensorPlace place = group.place(leaf);
    if ((place.extent == Extent::Suffix && place.elements % width != 0) ||
        (place.extent == Extent::Row && group.cols % width != 0) ||
        (place.extent == Extent::Strided &&
         (place.innerRepeat > 1 ? place.innerRepeat % width != 0
                                : place.runs.front().size % width != 0)))
      return 1;
  }
  return width;
}

Value stridedIndex(ElementMath &m, const KernelGroup &group, const TensorPlace &place,
                   Value linear) {
  Value index = m.i64c(0);
  for (const StrideRun &run : place.runs) {
    Value at = run.inner == 1 ? linear : m.i64Div(linear, m.i64c(run.inner));
    // The outermost dims need no wrap: linear / inner < size already.
    if (run.inner * run.size < group.rows * group.cols)
      at = m.i64Rem(at, m.i64c(run.size));
    index = m.i64Add(index, run.stride == 1 ? at : m.i64Mul(at, m.i64c(run.stride)));
  }
  return index;
}

int64_t rowVectorWidth(const KernelGroup &group) {
  int64_t width = pointwiseVectorWidth(group);
  // A vector must not straddle two rows.
  return group.cols % width == 0 ? width : 1;
}

VectorLanes loadLeafLanes(ElementMath &m, const KernelGroup &group, Value base,
                          Value row, int64_t width) {
  VectorLanes vector;
  vector.base = base;
  vector.row = row;
  vector.width = width;
  llvm::DenseMap<Value, SmallVector<Value>> &lanes = vector.leaves;
  for (auto [leaf, param] : group.leafParam) {
    if (leaf.use_empty())
      continue;
    TensorPlace place = group.place(leaf);
    Type element = elementOf(leaf.getType());
    Value at = m.param(param);
    switch (place.extent) {
    case Extent::Full:
      lanes[leaf] = m.loadVector(at, element, base, width);
      break;
    case Extent::Suffix:
      lanes[leaf] =
          m.loadVector(at, element, m.i64Rem(base, m.i64c(place.elements)), width);
      break;
    case Extent::Row:
      lanes[leaf] = SmallVector<Value>(
          width, m.loadElement(at, element,
                               row ? row : m.i64Div(base, m.i64c(group.cols))));
      break;
    case Extent::Scalar:
      lanes[leaf] = SmallVector<Value>(width, m.loadElement(at, element, m.i64c(0)));
      break;
    case Extent::Strided: {
      // pointwiseVectorWidth chose `width` so that the lanes share one value
      // or are consecutive elements.
      Value index = stridedIndex(m, group, place, base);
      if (place.innerRepeat > 1)
        lanes[leaf] = SmallVector<Value>(width, m.loadElement(at, element, index));
      else
        lanes[leaf] = m.loadVector(at, element, index, width);
      break;
    }
    }
  }
  return vector;
}

void emitPointwiseBody(ElementMath &m, const KernelGroup &group) {
  int64_t total = group.rows * group.cols;
  int64_t width = pointwiseVectorWidth(group);
  Value threadIndex = m.i64Add(m.i64Mul(m.blockId64(), m.i64c(m.threads)), m.tid64());
  Value stride = m.i64Mul(m.gridDim64(), m.i64c(m.threads));
  RowStats noStats;
  int64_t vectors = width > 1 ? total / width : 0;
  if (vectors > 0) {
    m.loop(threadIndex, m.i64c(vectors), stride, {},
           [&](Value i, ValueRange) -> SmallVector<Value> {
             Value base = m.i64Mul(i, m.i64c(width));
             // Each leaf once per vector: lanes of a vector load, or one
             // value shared by the lanes.
             VectorLanes lanes = loadLeafLanes(m, group, base, Value(), width);
             SmallVector<SmallVector<Value>> results(group.outputs.size());
             for (int64_t lane = 0; lane < width; ++lane) {
               Value linear = m.i64Add(base, m.i64c(lane));
               ElementEvaluator ev(m, group, noStats, m.i64c(0), linear);
               ev.atLane(lanes, lane);
               for (auto [k, output] : llvm::enumerate(group.outputs))
                 results[k].push_back(ev.value(output.first));
             }
             for (auto [k, output] : llvm::enumerate(group.outputs))
               m.storeVector(m.param(output.second), elementOf(output.first.getType()),
                             base, results[k], isSplitMasterHigh(output.first));
             return {};
           });
  }
  // The scalar tail (everything when width is 1). row = 0, col = linear:
  // ElementEvaluator's linear index row * cols + col is then the element.
  Value tailStart = m.i64Add(m.i64c(vectors * width), threadIndex);
  m.loop(tailStart, m.i64c(total), stride, {},
         [&](Value linear, ValueRange) -> SmallVector<Value> {
           Value row = m.i64Div(linear, m.i64c(group.cols));
           Value col = m.i64Rem(linear, m.i64c(group.cols));
           ElementEvaluator ev(m, group, noStats, row, col);
           for (auto [value, param] : group.outputs)
             m.storeElement(m.param(param), elementOf(value.getType()), ev.linear(),
                            ev.value(value), isSplitMasterHigh(value));
           return {};
         });
}

} // namespace weft::gpu
