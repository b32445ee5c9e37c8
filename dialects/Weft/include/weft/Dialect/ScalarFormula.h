// A pointwise op's value at one element, written once as a short program of
// scalar primitives: the reference interpreter evaluates it in float64, the
// GPU element evaluator lowers it to f32 code (lib/Conversion), and the
// tests check every op's formula against PyTorch in float64.
#ifndef WEFT_DIALECT_SCALARFORMULA_H
#define WEFT_DIALECT_SCALARFORMULA_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace weft {

/// The primitives formulas are written in. Each has one meaning; its two
/// implementations are ScalarFormula::evaluate (float64) and the GPU
/// element evaluator's lowering (f32). `Pow` is x^y (std::pow). `Select` picks its second operand
/// where the first (an i1 mask element) is true.
enum class ScalarPrimitive : uint8_t {
  Operand,
  Constant,
  Add,
  Sub,
  Mul,
  Div,
  Neg,
  Exp,
  Log,
  Cos,
  Sin,
  Tanh,
  Erf,
  Sqrt,
  Rsqrt,
  Sigmoid,
  Pow,
  Select,
};

/// The primitive's name as printed ("add", "tanh", ...).
llvm::StringRef getPrimitiveName(ScalarPrimitive primitive);
/// How many operands the primitive takes (0 for Operand and Constant).
unsigned getPrimitiveArity(ScalarPrimitive primitive);

/// A value of a formula under construction: the index of its instruction.
struct Scalar {
  unsigned index = 0;
};

/// One step of a formula: a primitive of earlier steps' values (`args`), an
/// op operand's element (Operand: `operand`) or a constant.
struct ScalarInstruction {
  ScalarPrimitive primitive = ScalarPrimitive::Constant;
  unsigned args[3] = {0, 0, 0};
  unsigned operand = 0;
  double constant = 0.0;
};

/// A formula: straight-line code, each instruction reading earlier ones; the
/// last one built by the op is its result. Ops build it through the builder
/// methods in the order their values are computed, which is also the order
/// the GPU code is emitted in.
class ScalarFormula {
public:
  Scalar operand(unsigned index);
  Scalar constant(double value);
  Scalar add(Scalar x, Scalar y) { return emit(ScalarPrimitive::Add, {x, y}); }
  Scalar sub(Scalar x, Scalar y) { return emit(ScalarPrimitive::Sub, {x, y}); }
  Scalar mul(Scalar x, Scalar y) { return emit(ScalarPrimitive::Mul, {x, y}); }
  Scalar div(Scalar x, Scalar y) { return emit(ScalarPrimitive::Div, {x, y}); }
  Scalar neg(Scalar x) { return emit(ScalarPrimitive::Neg, {x}); }
  Scalar exp(Scalar x) { return emit(ScalarPrimitive::Exp, {x}); }
  Scalar log(Scalar x) { return emit(ScalarPrimitive::Log, {x}); }
  Scalar cos(Scalar x) { return emit(ScalarPrimitive::Cos, {x}); }
  Scalar sin(Scalar x) { return emit(ScalarPrimitive::Sin, {x}); }
  Scalar tanh(Scalar x) { return emit(ScalarPrimitive::Tanh, {x}); }
  Scalar erf(Scalar x) { return emit(ScalarPrimitive::Erf, {x}); }
  Scalar sqrt(Scalar x) { return emit(ScalarPrimitive::Sqrt, {x}); }
  Scalar rsqrt(Scalar x) { return emit(ScalarPrimitive::Rsqrt, {x}); }
  Scalar sigmoid(Scalar x) { return emit(ScalarPrimitive::Sigmoid, {x}); }
  Scalar pow(Scalar x, Scalar y) { return emit(ScalarPrimitive::Pow, {x, y}); }
  Scalar select(Scalar mask, Scalar onTrue, Scalar onFalse) {
    return emit(ScalarPrimitive::Select, {mask, onTrue, onFalse});
  }

  llvm::ArrayRef<ScalarInstruction> getInstructions() const { return code; }
  /// The formula's result (the value the op's build method returned).
  unsigned getResult() const { return result; }
  void setResult(Scalar value) { result = value.index; }
  /// Arithmetic primitives per element (operands and constants are free; a
  /// transcendental counts 1, as the cost interface counts FLOPs).
  int64_t getFlopsPerElement() const;

  /// The value at one element in float64, `operands` being the op operands'
  /// elements (an i1 mask element as 0.0 or 1.0). `scratch` holds one value
  /// per instruction between calls (the interpreter reuses it per element).
  double evaluate(llvm::ArrayRef<double> operands,
                  llvm::SmallVectorImpl<double> &scratch) const;

  /// "%2 = mul %0, %1" lines, the result last: for tests and docs.
  void print(llvm::raw_ostream &os) const;

private:
  Scalar emit(ScalarPrimitive primitive, std::initializer_list<Scalar> args);
  llvm::SmallVector<ScalarInstruction, 16> code;
  unsigned result = 0;
};

} // namespace weft

#endif // WEFT_DIALECT_SCALARFORMULA_H
