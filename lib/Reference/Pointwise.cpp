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

// The index is the row-major index into this op's own operand: the global
// index of ARCHITECTURE.md's rule for unsharded IR. A dropout that partitioning
// has sharded would need its shard's global offset, which the op does not
// carry yet, so per-rank masks of sharded dropout are not the global ones.
LogicalResult runDropout(DropoutOp op, Operands in, Results out) {
  const Tensor &x = *in[0];
  double p = op.getP().convertToDouble();
  auto seed = static_cast<int64_t>(in[1]->data[0]);
  int64_t rngId = rngIdOf(op);
  for (size_t i = 0; i < x.data.size(); ++i)
    out[0].data[i] =
        dropoutKeeps(seed, rngId, i, p) ? x.data[i] / (1.0 - p) : 0.0;
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
