// Reproducible random arguments (weft-run --random-inputs, weft-opt and
// weft-compile --weft-diff-each-pass): floats drawn standard normal and rounded
// to the element type, integers uniform over the range the IR states (a
// `weft.range` argument attribute, or what the consuming ops accept).
#ifndef WEFT_REFERENCE_RANDOMINPUTS_H
#define WEFT_REFERENCE_RANDOMINPUTS_H

#include "weft/Support/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace weft::reference {

/// A half-open range [lo, hi) of integer values.
struct IntRange {
  int64_t lo;
  int64_t hi;
};

/// The values integer argument `index` of `func` may take: its
/// `weft.range = array<i64: lo, hi>` attribute, else the intersection of what
/// its consumers accept (ids of weft.embedding -> [0, rows), labels of
/// weft.cross_entropy(_grad) -> [0, vocab), seeds of dropout/attention(_grad)
/// -> [0, 2^31), the step of weft.adamw -> [1, 1000]), following the value
/// through ops that pass i64 tensors on (reshape, transpose, collectives...).
/// An argument nothing reads may hold anything: [0, 2^31). Fails naming the
/// argument when its uses say nothing.
llvm::Expected<IntRange> integerArgRange(mlir::func::FuncOp func,
                                         unsigned index);

/// One tensor per argument of `func` (floats that feed weft.adamw's second
/// moment drawn as |normal|), the same for every seed on every
/// platform with the same libm: argument i draws from an std::mt19937_64 of
/// its own, seeded from (seed, i), so adding an argument leaves the others'
/// values unchanged. Fails for an argument type that cannot be filled.
llvm::Expected<std::vector<Tensor>> drawRandomArgs(mlir::func::FuncOp func,
                                                   uint64_t seed);

} // namespace weft::reference

#endif // WEFT_REFERENCE_RANDOMINPUTS_H
