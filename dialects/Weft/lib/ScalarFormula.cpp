// ScalarFormula: building, float64 evaluation and printing of the pointwise
// formulas (the formulas themselves are in ScalarFormulas.cpp).
#include "weft/Dialect/ScalarFormula.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cmath>

using namespace weft;

llvm::StringRef weft::getPrimitiveName(ScalarPrimitive primitive) {
  switch (primitive) {
  case ScalarPrimitive::Operand: return "operand";
  case ScalarPrimitive::Constant: return "constant";
  case ScalarPrimitive::Add: return "add";
  case ScalarPrimitive::Sub: return "sub";
  case ScalarPrimitive::Mul: return "mul";
  case ScalarPrimitive::Div: return "div";
  case ScalarPrimitive::Neg: return "neg";
  case ScalarPrimitive::Exp: return "exp";
  case ScalarPrimitive::Log: return "log";
  case ScalarPrimitive::Cos: return "cos";
  case ScalarPrimitive::Sin: return "sin";
  case ScalarPrimitive::Tanh: return "tanh";
  case ScalarPrimitive::Erf: return "erf";
  case ScalarPrimitive::Sqrt: return "sqrt";
  case ScalarPrimitive::Rsqrt: return "rsqrt";
  case ScalarPrimitive::Sigmoid: return "sigmoid";
  case ScalarPrimitive::Pow: return "pow";
  case ScalarPrimitive::Select: return "select";
  }
  llvm_unreachable("unknown scalar primitive");
}

unsigned weft::getPrimitiveArity(ScalarPrimitive primitive) {
  switch (primitive) {
  case ScalarPrimitive::Operand:
  case ScalarPrimitive::Constant:
    return 0;
  case ScalarPrimitive::Add:
  case ScalarPrimitive::Sub:
  case ScalarPrimitive::Mul:
  case ScalarPrimitive::Div:
  case ScalarPrimitive::Pow:
    return 2;
  case ScalarPrimitive::Select:
    return 3;
  default:
    return 1;
  }
}

Scalar ScalarFormula::operand(unsigned index) {
  Scalar value = emit(ScalarPrimitive::Operand, {});
  code.back().operand = index;
  return value;
}

Scalar ScalarFormula::constant(double value) {
  Scalar result = emit(ScalarPrimitive::Constant, {});
  code.back().constant = value;
  return result;
}

Scalar ScalarFormula::emit(ScalarPrimitive primitive,
                           std::initializer_list<Scalar> args) {
  assert(args.size() == getPrimitiveArity(primitive) && "wrong operand count");
  ScalarInstruction instruction;
  instruction.primitive = primitive;
  unsigned i = 0;
  for (Scalar arg : args) {
    assert(arg.index < code.size() && "a formula reads earlier values only");
    instruction.args[i++] = arg.index;
  }
  code.push_back(instruction);
  return {unsigned(code.size() - 1)};
}

int64_t ScalarFormula::getFlopsPerElement() const {
  int64_t flops = 0;
  for (const ScalarInstruction &instruction : code)
    flops += getPrimitiveArity(instruction.primitive) > 0;
  return flops;
}

double ScalarFormula::evaluate(llvm::ArrayRef<double> operands,
                               llvm::SmallVectorImpl<double> &scratch) const {
  scratch.resize(code.size());
  for (auto [at, instruction] : llvm::enumerate(code)) {
    auto arg = [&](unsigned i) { return scratch[instruction.args[i]]; };
    double value = 0.0;
    switch (instruction.primitive) {
    case ScalarPrimitive::Operand: value = operands[instruction.operand]; break;
    case ScalarPrimitive::Constant: value = instruction.constant; break;
    case ScalarPrimitive::Add: value = arg(0) + arg(1); break;
    case ScalarPrimitive::Sub: value = arg(0) - arg(1); break;
    case ScalarPrimitive::Mul: value = arg(0) * arg(1); break;
    case ScalarPrimitive::Div: value = arg(0) / arg(1); break;
    case ScalarPrimitive::Neg: value = -arg(0); break;
    case ScalarPrimitive::Exp: value = std::exp(arg(0)); break;
    case ScalarPrimitive::Log: value = std::log(arg(0)); break;
    case ScalarPrimitive::Cos: value = std::cos(arg(0)); break;
    case ScalarPrimitive::Sin: value = std::sin(arg(0)); break;
    case ScalarPrimitive::Tanh: value = std::tanh(arg(0)); break;
    case ScalarPrimitive::Erf: value = std::erf(arg(0)); break;
    case ScalarPrimitive::Sqrt: value = std::sqrt(arg(0)); break;
    case ScalarPrimitive::Rsqrt: value = 1.0 / std::sqrt(arg(0)); break;
    case ScalarPrimitive::Sigmoid: value = 1.0 / (1.0 + std::exp(-arg(0))); break;
    case ScalarPrimitive::Pow: value = std::pow(arg(0), arg(1)); break;
    case ScalarPrimitive::Select: value = arg(0) != 0.0 ? arg(1) : arg(2); break;
    }
    scratch[at] = value;
  }
  return scratch[result];
}

void ScalarFormula::print(llvm::raw_ostream &os) const {
  for (auto [at, instruction] : llvm::enumerate(code)) {
    os << "%" << at << " = " << getPrimitiveName(instruction.primitive);
    if (instruction.primitive == ScalarPrimitive::Operand)
      os << " " << instruction.operand;
    else if (instruction.primitive == ScalarPrimitive::Constant)
      os << " " << llvm::format("%.17g", instruction.constant);
    for (unsigned i = 0, e = getPrimitiveArity(instruction.primitive); i < e; ++i)
      os << (i ? ", %" : " %") << instruction.args[i];
    os << "\n";
  }
  os << "return %" << result << "\n";
}
