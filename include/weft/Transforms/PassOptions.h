// Typed values of pass options that a pass, weft-train-pipeline and
// weft-compile share, declared once here: weight-copies as a typed option
// (Passes.td's cl::values spell its words), and the words of the options that
// stay strings so a bad one is a diagnostic at the module (remat's policy
// and weight-copies, autodiff's optimizer), with their one parser each.
#ifndef WEFT_TRANSFORMS_PASSOPTIONS_H
#define WEFT_TRANSFORMS_PASSOPTIONS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

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

/// weft-autodiff's optimizer: "none" or "adamw".
enum class Optimizer { None, AdamW };

inline std::optional<Optimizer> parseOptimizer(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Optimizer>>(name)
      .Case("none", Optimizer::None)
      .Case("adamw", Optimizer::AdamW)
      .Default(std::nullopt);
}

/// weft-remat's policy (NeMo's full, block, uniform, selective; or the
/// fastest recompute that fits the budget).
enum class RematPolicy { None, Full, Selective, Block, Uniform, Budget };

inline std::optional<RematPolicy> parseRematPolicy(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<RematPolicy>>(name)
      .Case("none", RematPolicy::None)
      .Case("full", RematPolicy::Full)
      .Case("selective", RematPolicy::Selective)
      .Case("block", RematPolicy::Block)
      .Case("uniform", RematPolicy::Uniform)
      .Case("budget", RematPolicy::Budget)
      .Default(std::nullopt);
}

/// weft-remat's weight-copies: what happens to the parameters' converted
/// copies the backward reads.
enum class RematWeightCopies { Keep, Recompute, Auto };

inline std::optional<RematWeightCopies> parseRematWeightCopies(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<RematWeightCopies>>(name)
      .Case("keep", RematWeightCopies::Keep)
      .Case("recompute", RematWeightCopies::Recompute)
      .Case("auto", RematWeightCopies::Auto)
      .Default(std::nullopt);
}

} // namespace weft

#endif // WEFT_TRANSFORMS_PASSOPTIONS_H
