// lowerFormula: a pointwise op's formula (ScalarFormula.h) as f32 code, one
// ElementMath call per primitive, in the formula's order.
#include "KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

namespace weft::gpu {

Value lowerFormula(ElementMath &m, const ScalarFormula &formula,
                   ArrayRef<Value> operands) {
  SmallVector<Value, 32> values;
  for (const ScalarInstruction &instruction : formula.getInstructions()) {
    auto arg = [&](unsigned i) { return values[instruction.args[i]]; };
    Value value;
    switch (instruction.primitive) {
    case ScalarPrimitive::Operand: value = operands[instruction.operand]; break;
    case ScalarPrimitive::Constant: value = m.f32c(instruction.constant); break;
    case ScalarPrimitive::Add: value = m.fadd(arg(0), arg(1)); break;
    case ScalarPrimitive::Sub: value = m.fsub(arg(0), arg(1)); break;
    case ScalarPrimitive::Mul: value = m.fmul(arg(0), arg(1)); break;
    case ScalarPrimitive::Div: value = m.fdiv(arg(0), arg(1)); break;
    case ScalarPrimitive::Neg: value = arith::NegFOp::create(m.b, arg(0)); break;
    case ScalarPrimitive::Exp: value = m.exp(arg(0)); break;
    case ScalarPrimitive::Log: value = m.log(arg(0)); break;
    case ScalarPrimitive::Cos: value = m.cos(arg(0)); break;
    case ScalarPrimitive::Sin: value = m.sin(arg(0)); break;
    case ScalarPrimitive::Tanh: value = m.tanh(arg(0)); break;
    case ScalarPrimitive::Erf: value = m.erf(arg(0)); break;
    case ScalarPrimitive::Sqrt: value = m.sqrt(arg(0)); break;
    case ScalarPrimitive::Rsqrt: value = m.rsqrt(arg(0)); break;
    case ScalarPrimitive::Sigmoid: value = m.sigmoid(arg(0)); break;
    case ScalarPrimitive::Pow: value = m.pow(arg(0), arg(1)); break;
    case ScalarPrimitive::Select: value = m.select(arg(0), arg(1), arg(2)); break;
    }
    values.push_back(value);
  }
  return values[formula.getResult()];
}

} // namespace weft::gpu
