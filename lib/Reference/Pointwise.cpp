// Reference kernels for elementwise ops: every op with a formula
// (ScalarFormulas.cpp: arithmetic, activations, their gradients) evaluated in
// float64, and dropout, causal_mask and convert.
#include "Kernels.h"

#include "weft/Reference/Numerics.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace weft::reference::detail {

LogicalResult runFormula(ScalarFormulaOpInterface op, Operands in, Results out) {
  ScalarFormula formula;
  formula.setResult(op.buildFormula(formula));
  Tensor &result = out[0];
  // Each operand's element for every result element (NumPy broadcasting);
  // an operand of the result's shape is read at the same index.
  std::vector<std::vector<int64_t>> offsets(in.size());
  for (auto [i, operand] : llvm::enumerate(in))
    if (operand->shape != result.shape)
      offsets[i] = broadcastOffsets(operand->shape, result.shape);
  llvm::SmallVector<double, 4> elements(in.size());
  llvm::SmallVector<double, 32> scratch;
  for (size_t at = 0; at < result.data.size(); ++at) {
    for (auto [i, operand] : llvm::enumerate(in))
      elements[i] = operand->data[offsets[i].empty() ? at : offsets[i][at]];
    result.data[at] = formula.evaluate(elements, scratch);
  }
  return success();
}

// The index is ARCHITECTURE.md's global one: the row-major index into the
// op's own operand, or, for a partitioned dropout (offsets and global_shape),
// the index of the element's place in the global tensor, so each shard draws
// the global mask's bits.
LogicalResult runDropout(DropoutOp op, Operands in, Results out) {
  const Tensor &x = *in[0];
  double p = op.getP().convertToDouble();
  auto seed = static_cast<int64_t>(in[1]->data[0]);
  int64_t rngId = rngIdOf(op);
  std::optional<ArrayRef<int64_t>> global = op.getGlobalShape();
  size_t rank = x.shape.size();
  std::vector<int64_t> offsets(rank, 0);
  for (size_t d = 0; d < in.size() - 2; ++d)
    offsets[d] = static_cast<int64_t>(in[2 + d]->data[0]);
  if (global)
    for (size_t d = 0; d < rank; ++d)
      if (offsets[d] < 0 || offsets[d] + x.shape[d] > (*global)[d])
        return op.emitOpError("block offset ")
               << offsets[d] << " + " << x.shape[d] << " in dimension " << d
               << " is outside the global size " << (*global)[d];
  std::vector<int64_t> index(rank, 0);
  for (size_t i = 0; i < x.data.size(); ++i) {
    uint64_t globalIndex = i;
    if (global) {
      globalIndex = 0;
      for (size_t d = 0; d < rank; ++d)
        globalIndex = globalIndex * (*global)[d] + offsets[d] + index[d];
      for (size_t d = rank; d-- > 0;)
        if (++index[d] < x.shape[d])
          break;
        else
          index[d] = 0;
    }
    out[0].data[i] =
        dropoutKeeps(seed, rngId, globalIndex, p) ? x.data[i] / (1.0 - p) : 0.0;
  }
  return success();
}

LogicalResult runCausalMask(CausalMaskOp op, Operands in, Results out) {
  const Tensor &x = *in[0];
  double fill = op.getFillValue();
  size_t rank = x.shape.size();
  int64_t rows = x.shape[rank - 2], cols = x.shape[rank - 1];
  int64_t matrices = product(x.shape, 0, rank - 2);
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        int64_t at = (m * rows + i) * cols + j;
        out[0].data[at] = j > i ? fill : x.data[at];
      }
  return success();
}

LogicalResult runConvert(ConvertOp, Operands in, Results out) {
  // The driver rounds the copy once, from the exact input, to the result type.
  out[0].data = in[0]->data;
  return success();
}

} // namespace weft::reference::detail
