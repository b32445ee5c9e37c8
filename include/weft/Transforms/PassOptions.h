// Typed values of pass options that a pass, weft-train-pipeline and
// weft-compile share: declared once here, spelled once in Passes.td's
// cl::values (the accepted words and the option's default).
#ifndef WEFT_TRANSFORMS_PASSOPTIONS_H
#define WEFT_TRANSFORMS_PASSOPTIONS_H

#include "llvm/ADT/StringRef.h"

namespace weft {

/// How a training step keeps the low-precision copies of its f32 masters
/// (weft-autodiff weight-copies).
enum class WeightCopies {
  /// Converted from the masters inside each step.
  Converted,
  /// Step arguments (weft.copy_of) written by each AdamW update.
  Carried,
  /// The masters' own bf16 high halves, the low halves in i16 master slots.
  Split,
};

/// The option's spelling of `copies` ("converted", "carried", "split").
inline llvm::StringRef stringifyWeightCopies(WeightCopies copies) {
  switch (copies) {
  case WeightCopies::Converted:
    return "converted";
  case WeightCopies::Carried:
    return "carried";
  case WeightCopies::Split:
    return "split";
  }
  return "converted";
}

} // namespace weft

#endif // WEFT_TRANSFORMS_PASSOPTIONS_H
