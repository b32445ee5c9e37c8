// Tests of the reference interpreter: Philox known answers, rounding from
// float64, kernels on hand-computed values, gradients against finite
// differences, diagnostics, and SPMD collectives over simulated ranks.
#include "weft/Reference/Interpreter.h"
#include "weft/Reference/Numerics.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace weft;
using namespace mlir;

namespace {

//===----------------------------------------------------------------------===//
// Numerics
//===----------------------------------------------------------------------===//

// Random123 tests/kat_vectors, the three "philox4x32 10" lines:
// counter[4] key[2] -> result[4].
TEST(Philox, KnownAnswerVectors) {
  struct Vector {
    PhiloxCounter counter;
    PhiloxKey key;
    PhiloxCounter expected;
  };
  const Vector vectors[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Vector &v : vectors)
    EXPECT_EQ(philox4x32_10(v.counter, v.key), v.expected);
}

TEST(Philox, DrawUsesCounterBlockAndLane) {
  // Element 4*2^32 + 6 is lane 2 of counter block 2^32 + 1.
  uint64_t index = (uint64_t(1) << 34) + 6;
  PhiloxCounter block = philox4x32_10({1, 1, 0, 0}, {7, 3});
  EXPECT_EQ(philoxDraw(7, 3, index), block[2]);
  // The key takes the low 32 bits of seed and rng_id.
  EXPECT_EQ(philoxDraw(int64_t(0x100000007), 3, index), block[2]);
  EXPECT_EQ(dropoutThreshold(0.5), uint64_t(1) << 31);
  EXPECT_EQ(dropoutThreshold(0.0), 0u);
  EXPECT_EQ(dropoutThreshold(0.1), uint64_t(429496729)); // truncated
}

TEST(Rounding, BF16TiesAndDoubleRounding) {
  EXPECT_EQ(roundToBF16(1.0 + std::ldexp(1, -8)), 1.0); // tie to even (down)
  EXPECT_EQ(roundToBF16(1.0 + 3 * std::ldexp(1, -8)),
            1.0 + std::ldexp(1, -6)); // tie to even (up)
  // Through f32 this would round twice: to 1 + 2^-8, then tie down to 1.
  EXPECT_EQ(roundToBF16(1.0 + std::ldexp(1, -8) + std::ldexp(1, -30)),
            1.0 + std::ldexp(1, -7));
  EXPECT_EQ(roundToBF16(-2.5 * std::ldexp(1, -8)), -2.5 * std::ldexp(1, -8));
}

TEST(Rounding, BF16AndF16Overflow) {
  double bf16Max = std::ldexp(2.0 - std::ldexp(1, -7), 127);
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(roundToBF16(bf16Max), bf16Max);
  EXPECT_EQ(roundToBF16(std::ldexp(2.0 - std::ldexp(1, -8), 127) * 0.9999999),
            bf16Max);
  EXPECT_EQ(roundToBF16(std::ldexp(2.0 - std::ldexp(1, -8), 127)), inf);
  EXPECT_EQ(roundToBF16(-1e39), -inf);
  EXPECT_EQ(roundToF16(65504.0), 65504.0);
  EXPECT_EQ(roundToF16(65519.99), 65504.0);
  EXPECT_EQ(roundToF16(65520.0), inf); // the tie rounds to even: 2^16
  EXPECT_EQ(roundToF16(-70000.0), -inf);
  EXPECT_EQ(roundToF32(1e39), inf);
  EXPECT_TRUE(std::isnan(roundToBF16(std::nan(""))));
}

TEST(Rounding, Subnormals) {
  EXPECT_EQ(roundToF16(std::ldexp(1, -25)), 0.0);                 // tie to 0
  EXPECT_EQ(roundToF16(3 * std::ldexp(1, -25)), std::ldexp(1, -23)); // to even
  EXPECT_EQ(roundToF16(std::ldexp(1, -24)), std::ldexp(1, -24));
  EXPECT_EQ(roundToBF16(std::ldexp(1, -133)), std::ldexp(1, -133));
  EXPECT_EQ(roundToBF16(std::ldexp(1, -134)), 0.0);
}

/// Rounding by APFloat, the independent oracle.
double roundWithAPFloat(double value, const llvm::fltSemantics &semantics) {
  llvm::APFloat number(value);
  bool losesInfo;
  number.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return number.convertToDouble();
}

TEST(Rounding, MatchesAPFloatOnRandomValues) {
  std::mt19937_64 generator(42);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-150, 130);
  for (int i = 0; i < 200000; ++i) {
    double value = std::ldexp(mantissa(generator), exponent(generator));
    // Exercise exact ties too: a value with few significant bits.
    if (i % 4 == 0)
      value = std::ldexp(std::round(mantissa(generator) * 1024.0),
                         exponent(generator) - 10);
    ASSERT_EQ(roundToBF16(value),
              roundWithAPFloat(value, llvm::APFloat::BFloat()))
        << "bf16 of " << value;
    ASSERT_EQ(roundToF16(value),
              roundWithAPFloat(value, llvm::APFloat::IEEEhalf()))
        << "f16 of " << value;
  }
}

TEST(TensorNames, RoundTrip) {
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16,
                      DType::I64, DType::I1})
    EXPECT_EQ(parseDType(dtypeName(dtype)), dtype);
  EXPECT_EQ(parseDType("f8"), std::nullopt);
}

//===----------------------------------------------------------------------===//
// Running IR
//===----------------------------------------------------------------------===//

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    // The dialects of registerWeftDialects() that reference IR uses, without
    // the pass registrations that header also carries.
    context.loadDialect<WeftDialect, func::FuncDialect, shard::ShardDialect,
                        arith::ArithDialect>();
  }

  /// Parses `source` (a module) and keeps it alive for the test.
  func::FuncOp parse(StringRef source, StringRef name = "main") {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << "failed to parse: " << diagnostics;
    if (!module)
      return {};
    return module->lookupSymbol<func::FuncOp>(name);
  }

  /// Runs `name` of the parsed module, collecting diagnostics.
  FailureOr<std::vector<Tensor>> runFunction(func::FuncOp func,
                                             const std::vector<Tensor> &args) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    return reference::run(func, args);
  }

  std::vector<Tensor> runOk(StringRef source, const std::vector<Tensor> &args,
                            StringRef name = "main") {
    func::FuncOp func = parse(source, name);
    if (!func)
      return {};
    auto results = runFunction(func, args);
    EXPECT_TRUE(succeeded(results)) << diagnostics;
    return succeeded(results) ? *results : std::vector<Tensor>{};
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::string diagnostics;
};

Tensor tensor(std::vector<int64_t> shape, std::vector<double> data,
              DType dtype = DType::F64) {
  return Tensor{std::move(shape), dtype, std::move(data)};
}

Tensor randomTensor(std::vector<int64_t> shape, unsigned seed,
                    DType dtype = DType::F64) {
  std::mt19937 generator(seed);
  std::normal_distribution<double> normal;
  Tensor result{std::move(shape), dtype, {}};
  result.data.resize(result.numElements());
  for (double &value : result.data)
    value = normal(generator);
  return result;
}

void expectNear(const Tensor &actual, const std::vector<double> &expected,
                double tolerance) {
  ASSERT_EQ(actual.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual.data[i], expected[i], tolerance) << "element " << i;
}

TEST_F(InterpreterTest, GemmsBroadcastAndShapes) {
  auto results = runOk(R"mlir(
    func.func @main(%x: tensor<2x3xf64>, %w: tensor<2x3xf64>, %b: tensor<2xf64>)
        -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x3xf64>, tensor<3xf64>, tensor<3x2xf64>) {
      %y = weft.linear %x, %w, %b : (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2xf64>) -> tensor<2x2xf64>
      %m = weft.matmul %x, %w {transpose_b} : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x2xf64>
      %bb = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64>
      %b2 = weft.reshape %bb : (tensor<3xf64>) -> tensor<1x3xf64>
      %s = weft.sub %x, %b2 : (tensor<2x3xf64>, tensor<1x3xf64>) -> tensor<2x3xf64>
      %r = weft.reduce_mean %x {dims = array<i64: -2>} : (tensor<2x3xf64>) -> tensor<3xf64>
      %t = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf64>) -> tensor<3x2xf64>
      return %y, %m, %s, %r, %t : tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x3xf64>, tensor<3xf64>, tensor<3x2xf64>
    })mlir",
                  {tensor({2, 3}, {1, 2, 3, 4, 5, 6}),
                   tensor({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5}),
                   tensor({2}, {10, 20})});
  ASSERT_EQ(results.size(), 5u);
  expectNear(results[0], {1 - 3 + 10, 3 + 20, 4 - 6 + 10, 7.5 + 20}, 0);
  expectNear(results[1], {-2, 3, -2, 7.5}, 0);
  expectNear(results[2], {0, 0, 0, 3, 3, 3}, 0);
  expectNear(results[3], {2.5, 3.5, 4.5}, 0);
  expectNear(results[4], {1, 4, 2, 5, 3, 6}, 0);
}

TEST_F(InterpreterTest, ActivationsNormsAndLoss) {
  auto results = runOk(R"mlir(
    func.func @main(%x: tensor<1x4xf64>, %ids: tensor<1xi64>)
        -> (tensor<1x4xf64>, tensor<1x4xf64>, tensor<1x4xf64>, tensor<1x4xf64>, tensor<f64>, tensor<1x4xf64>) {
      %g = weft.gelu %x : (tensor<1x4xf64>) -> tensor<1x4xf64>
      %s = weft.silu %x : (tensor<1x4xf64>) -> tensor<1x4xf64>
      %p = weft.softmax %x {dim = -1 : i64} : (tensor<1x4xf64>) -> tensor<1x4xf64>
      %ones = arith.constant dense<1.0> : tensor<4xf64>
      %zeros = arith.constant dense<0.0> : tensor<4xf64>
      %n = weft.layer_norm %x, %ones, %zeros {eps = 1.0e-30 : f64} : (tensor<1x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<1x4xf64>
      %l = weft.cross_entropy %x, %ids : (tensor<1x4xf64>, tensor<1xi64>) -> tensor<f64>
      %m = weft.reshape %x : (tensor<1x4xf64>) -> tensor<2x2xf64>
      %c = weft.causal_mask %m {fill = 7.0 : f64} : (tensor<2x2xf64>) -> tensor<2x2xf64>
      %cr = weft.reshape %c : (tensor<2x2xf64>) -> tensor<1x4xf64>
      return %g, %s, %p, %n, %l, %cr : tensor<1x4xf64>, tensor<1x4xf64>, tensor<1x4xf64>, tensor<1x4xf64>, tensor<f64>, tensor<1x4xf64>
    })mlir",
                  {tensor({1, 4}, {-1, 0, 1, 2}), tensor({1}, {2}, DType::I64)});
  ASSERT_EQ(results.size(), 6u);
  // gelu(1) = Phi(1) = 0.841344746068543, gelu(2) = 2 Phi(2).
  expectNear(results[0], {-0.15865525393145707, 0, 0.8413447460685429,
                          1.9544997361036416},
             1e-15);
  expectNear(results[1], {-0.2689414213699951, 0, 0.7310585786300049,
                          1.7615941559557649},
             1e-15);
  double z = std::exp(-1) + 1 + std::exp(1) + std::exp(2);
  expectNear(results[2], {std::exp(-1) / z, 1 / z, std::exp(1) / z,
                          std::exp(2) / z},
             1e-15);
  double sd = std::sqrt(1.25);
  expectNear(results[3], {-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd}, 1e-15);
  expectNear(results[4], {std::log(z) - 1}, 1e-15);
  expectNear(results[5], {-1, 7, 1, 2}, 0);
}

TEST_F(InterpreterTest, ResultsRoundOnceToDeclaredType) {
  auto results = runOk(R"mlir(
    func.func @main(%x: tensor<3xf64>) -> (tensor<3xbf16>, tensor<3xf16>, tensor<3xf32>) {
      %b = weft.convert %x : (tensor<3xf64>) -> tensor<3xbf16>
      %h = weft.convert %x : (tensor<3xf64>) -> tensor<3xf16>
      %f = weft.convert %x : (tensor<3xf64>) -> tensor<3xf32>
      return %b, %h, %f : tensor<3xbf16>, tensor<3xf16>, tensor<3xf32>
    })mlir",
                       {tensor({3}, {1.0 / 3.0,
                                     1.0 + std::ldexp(1, -8) + std::ldexp(1, -30),
                                     1e6})});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].dtype, DType::BF16);
  EXPECT_EQ(results[0].data[0], roundToBF16(1.0 / 3.0));
  EXPECT_EQ(results[0].data[1], 1.0 + std::ldexp(1, -7));
  EXPECT_EQ(results[1].data[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(results[2].data[0], double(float(1.0 / 3.0)));
}

TEST_F(InterpreterTest, DropoutFollowsPhiloxRule) {
  auto results = runOk(R"mlir(
    func.func @main(%x: tensor<64x64xf64>, %seed: tensor<i64>) -> tensor<64x64xf64> {
      %y = weft.dropout %x, %seed {p = 0.25 : f64, weft.rng_id = 5 : i64} : (tensor<64x64xf64>, tensor<i64>) -> tensor<64x64xf64>
      return %y : tensor<64x64xf64>
    })mlir",
                       {tensor({64, 64}, std::vector<double>(4096, 3.0)),
                        tensor({}, {1234}, DType::I64)});
  ASSERT_EQ(results.size(), 1u);
  int kept = 0;
  for (uint64_t i = 0; i < 4096; ++i) {
    bool keep = philoxDraw(1234, 5, i) >= (uint64_t(1) << 30);
    EXPECT_EQ(results[0].data[i], keep ? 4.0 : 0.0) << "element " << i;
    kept += keep;
  }
  EXPECT_NEAR(kept / 4096.0, 0.75, 0.03);
}

TEST_F(InterpreterTest, RopeInverseIsTranspose) {
  auto results = runOk(R"mlir(
    func.func @main(%x: tensor<2x3x4xf64>, %y: tensor<2x3x4xf64>, %c: tensor<3x4xf64>, %s: tensor<3x4xf64>)
        -> (tensor<2x3x4xf64>, tensor<2x3x4xf64>) {
      %f = weft.rope %x, %c, %s : (tensor<2x3x4xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<2x3x4xf64>
      %i = weft.rope %y, %c, %s {inverse} : (tensor<2x3x4xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<2x3x4xf64>
      return %f, %i : tensor<2x3x4xf64>, tensor<2x3x4xf64>
    })mlir",
                       {randomTensor({2, 3, 4}, 1), randomTensor({2, 3, 4}, 2),
                        randomTensor({3, 4}, 3), randomTensor({3, 4}, 4)});
  ASSERT_EQ(results.size(), 2u);
  Tensor x = randomTensor({2, 3, 4}, 1), y = randomTensor({2, 3, 4}, 2);
  double lhs = 0, rhs = 0; // <rope(x), y> == <x, rope^T(y)>
  for (size_t i = 0; i < x.data.size(); ++i) {
    lhs += results[0].data[i] * y.data[i];
    rhs += x.data[i] * results[1].data[i];
  }
  EXPECT_NEAR(lhs, rhs, 1e-12);
  // Element 0 of row 0: x0 cos0 - x2 sin0.
  Tensor c = randomTensor({3, 4}, 3), s = randomTensor({3, 4}, 4);
  EXPECT_NEAR(results[0].data[0], x.data[0] * c.data[0] - x.data[2] * s.data[0],
              1e-15);
}

// rope's paired formula (ScalarFormulas.cpp), which the GPU kernels lower,
// evaluated in float64 at every element from its slots (operands at the
// element, at its rotate_half partner, the first-half mask) equals the
// interpreter's rope, forward and inverse, on random tables.
TEST_F(InterpreterTest, RopePairedFormulaMatchesInterpreter) {
  for (StringRef attrs : {"", " {inverse}"}) {
    std::string source = (R"mlir(
      func.func @main(%x: tensor<2x3x8xf64>, %c: tensor<3x8xf64>, %s: tensor<3x8xf64>) -> tensor<2x3x8xf64> {
        %y = weft.rope %x, %c, %s)mlir" + attrs + R"mlir( : (tensor<2x3x8xf64>, tensor<3x8xf64>, tensor<3x8xf64>) -> tensor<2x3x8xf64>
        return %y : tensor<2x3x8xf64>
      })mlir").str();
    func::FuncOp func = parse(source);
    ASSERT_TRUE(func);
    std::vector<Tensor> args = {randomTensor({2, 3, 8}, 1), randomTensor({3, 8}, 2),
                                randomTensor({3, 8}, 3)};
    auto results = runFunction(func, args);
    ASSERT_TRUE(succeeded(results)) << diagnostics;
    RopeOp rope = *func.getOps<RopeOp>().begin();
    ScalarFormula formula;
    formula.setResult(rope.buildPairedFormula(formula));
    SmallVector<double> scratch;
    for (int64_t row = 0; row < 6; ++row)
      for (int64_t k = 0; k < 8; ++k) {
        int64_t partner = (k + 4) % 8;
        // x is indexed by (row, col), the [3, 8] tables by (row % 3, col).
        auto at = [&](unsigned operand, int64_t col) {
          int64_t r = operand == 0 ? row : row % 3;
          return args[operand].data[r * 8 + col];
        };
        std::vector<double> slots(rope.getFirstHalfSlot() + 1);
        for (unsigned i = 0; i < 3; ++i) {
          slots[i] = at(i, k);
          slots[rope.getPartnerSlot(i)] = at(i, partner);
        }
        slots[rope.getFirstHalfSlot()] = k < 4 ? 1.0 : 0.0;
        EXPECT_NEAR(formula.evaluate(slots, scratch), (*results)[0].data[row * 8 + k],
                    1e-14)
            << "rope" << attrs.str() << " at row " << row << ", column " << k;
      }
  }
}

TEST_F(InterpreterTest, AdamWMatchesTorchFormula) {
  auto results = runOk(R"mlir(
    func.func @main(%p: tensor<2xf64>, %g: tensor<2xf64>, %m: tensor<2xf64>, %v: tensor<2xf64>, %t: tensor<i64>)
        -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) {
      %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-02 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<i64>) -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>)
      return %p1, %m1, %v1 : tensor<2xf64>, tensor<2xf64>, tensor<2xf64>
    })mlir",
                       {tensor({2}, {1.0, -2.0}), tensor({2}, {0.5, 0.25}),
                        tensor({2}, {0.1, 0.0}), tensor({2}, {0.01, 0.0}),
                        tensor({}, {3}, DType::I64)});
  ASSERT_EQ(results.size(), 3u);
  double m0 = 0.9 * 0.1 + 0.1 * 0.5, v0 = 0.999 * 0.01 + 0.001 * 0.25;
  double p0 = 1.0 * (1 - 1e-3) - 1e-2 / (1 - std::pow(0.9, 3)) * m0 /
                                     (std::sqrt(v0) / std::sqrt(1 - std::pow(0.999, 3)) + 1e-8);
  EXPECT_NEAR(results[0].data[0], p0, 1e-15);
  EXPECT_NEAR(results[1].data[0], m0, 1e-16);
  EXPECT_NEAR(results[2].data[0], v0, 1e-16);
}

//===----------------------------------------------------------------------===//
// Attention against a direct implementation
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, AttentionGqaCausalMatchesDirectFormula) {
  Tensor q = randomTensor({1, 4, 3, 2}, 11), k = randomTensor({1, 2, 5, 2}, 12),
         v = randomTensor({1, 2, 5, 3}, 13);
  auto results = runOk(R"mlir(
    func.func @main(%q: tensor<1x4x3x2xf64>, %k: tensor<1x2x5x2xf64>, %v: tensor<1x2x5x3xf64>)
        -> (tensor<1x4x3x3xf64>, tensor<1x4x3xf32>) {
      %o, %lse = weft.attention %q, %k, %v {causal, scale = 0.5 : f32} : (tensor<1x4x3x2xf64>, tensor<1x2x5x2xf64>, tensor<1x2x5x3xf64>) -> (tensor<1x4x3x3xf64>, tensor<1x4x3xf32>)
      return %o, %lse : tensor<1x4x3x3xf64>, tensor<1x4x3xf32>
    })mlir",
                       {q, k, v});
  ASSERT_EQ(results.size(), 2u);
  for (int h = 0; h < 4; ++h)
    for (int i = 0; i < 3; ++i) {
      int g = h / 2;
      std::vector<double> weights;
      double total = 0;
      // Causal is bottom-right: query i of 3 sees keys j <= i + (5 - 3).
      for (int j = 0; j <= i + 2; ++j) {
        double score = 0.5 * (q.data[(h * 3 + i) * 2] * k.data[(g * 5 + j) * 2] +
                              q.data[(h * 3 + i) * 2 + 1] *
                                  k.data[(g * 5 + j) * 2 + 1]);
        weights.push_back(std::exp(score));
        total += weights.back();
      }
      EXPECT_NEAR(results[1].data[h * 3 + i], double(float(std::log(total))),
                  1e-6);
      for (int t = 0; t < 3; ++t) {
        double expected = 0;
        for (int j = 0; j <= i + 2; ++j)
          expected += weights[j] / total * v.data[(g * 5 + j) * 3 + t];
        EXPECT_NEAR(results[0].data[(h * 3 + i) * 3 + t], expected, 1e-14);
      }
    }
}

//===----------------------------------------------------------------------===//
// Gradients against central finite differences of the forward op
//===----------------------------------------------------------------------===//

class GradientTest : public InterpreterTest {
protected:
  /// d/d(args[wrt]) of sum(dout * forward(args)[0]), by central differences.
  std::vector<double> numericGradient(func::FuncOp forward,
                                      std::vector<Tensor> args, size_t wrt,
                                      const Tensor &dout) {
    std::vector<double> gradient(args[wrt].data.size());
    const double step = 1e-6;
    for (size_t i = 0; i < gradient.size(); ++i) {
      double saved = args[wrt].data[i];
      double sides[2];
      for (int side = 0; side < 2; ++side) {
        args[wrt].data[i] = saved + (side ? -step : step);
        auto results = runFunction(forward, args);
        EXPECT_TRUE(succeeded(results)) << diagnostics;
        if (failed(results))
          return {};
        double loss = 0;
        for (size_t e = 0; e < dout.data.size(); ++e)
          loss += dout.data[e] * (*results)[0].data[e];
        sides[side] = loss;
      }
      args[wrt].data[i] = saved;
      gradient[i] = (sides[0] - sides[1]) / (2 * step);
    }
    return gradient;
  }

  /// Checks result `resultIndex` of @grad against the numeric gradient of
  /// @forward with respect to its argument `wrt`.
  void check(func::FuncOp forward, func::FuncOp grad,
             const std::vector<Tensor> &forwardArgs,
             const std::vector<Tensor> &gradArgs, const Tensor &dout,
             size_t wrt, size_t resultIndex) {
    auto analytic = runFunction(grad, gradArgs);
    ASSERT_TRUE(succeeded(analytic)) << diagnostics;
    std::vector<double> numeric = numericGradient(forward, forwardArgs, wrt, dout);
    SCOPED_TRACE("argument " + std::to_string(wrt));
    expectNear((*analytic)[resultIndex], numeric, 1e-7);
  }
};

TEST_F(GradientTest, AttentionGradWithGqaCausalDropout) {
  parse(R"mlir(
    func.func @forward(%q: tensor<1x4x3x2xf64>, %k: tensor<1x2x4x2xf64>, %v: tensor<1x2x4x3xf64>, %seed: tensor<i64>) -> tensor<1x4x3x3xf64> {
      %o = weft.attention %q, %k, %v, %seed {causal, dropout_p = 0.3 : f64, weft.rng_id = 9 : i64} : (tensor<1x4x3x2xf64>, tensor<1x2x4x2xf64>, tensor<1x2x4x3xf64>, tensor<i64>) -> tensor<1x4x3x3xf64>
      return %o : tensor<1x4x3x3xf64>
    }
    func.func @grad(%do: tensor<1x4x3x3xf64>, %q: tensor<1x4x3x2xf64>, %k: tensor<1x2x4x2xf64>, %v: tensor<1x2x4x3xf64>, %seed: tensor<i64>)
        -> (tensor<1x4x3x2xf64>, tensor<1x2x4x2xf64>, tensor<1x2x4x3xf64>) {
      %o, %lse = weft.attention %q, %k, %v, %seed {causal, dropout_p = 0.3 : f64, weft.rng_id = 9 : i64} : (tensor<1x4x3x2xf64>, tensor<1x2x4x2xf64>, tensor<1x2x4x3xf64>, tensor<i64>) -> (tensor<1x4x3x3xf64>, tensor<1x4x3xf32>)
      %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse, %seed {causal, dropout_p = 0.3 : f64, weft.rng_id = 9 : i64} : (tensor<1x4x3x3xf64>, tensor<1x4x3x2xf64>, tensor<1x2x4x2xf64>, tensor<1x2x4x3xf64>, tensor<1x4x3x3xf64>, tensor<1x4x3xf32>, tensor<i64>) -> (tensor<1x4x3x2xf64>, tensor<1x2x4x2xf64>, tensor<1x2x4x3xf64>)
      return %dq, %dk, %dv : tensor<1x4x3x2xf64>, tensor<1x2x4x2xf64>, tensor<1x2x4x3xf64>
    })mlir");
  ASSERT_TRUE(module);
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto grad = module->lookupSymbol<func::FuncOp>("grad");
  Tensor q = randomTensor({1, 4, 3, 2}, 21), k = randomTensor({1, 2, 4, 2}, 22),
         v = randomTensor({1, 2, 4, 3}, 23), dout = randomTensor({1, 4, 3, 3}, 24),
         seed = tensor({}, {77}, DType::I64);
  for (size_t wrt = 0; wrt < 3; ++wrt)
    check(forward, grad, {q, k, v, seed}, {dout, q, k, v, seed}, dout, wrt, wrt);
}

TEST_F(GradientTest, NormAndActivationGrads) {
  parse(R"mlir(
    func.func @ln(%x: tensor<3x5xf64>, %g: tensor<5xf64>, %b: tensor<5xf64>) -> tensor<3x5xf64> {
      %y = weft.layer_norm %x, %g, %b : (tensor<3x5xf64>, tensor<5xf64>, tensor<5xf64>) -> tensor<3x5xf64>
      return %y : tensor<3x5xf64>
    }
    func.func @ln_grad(%dy: tensor<3x5xf64>, %x: tensor<3x5xf64>, %g: tensor<5xf64>) -> (tensor<3x5xf64>, tensor<5xf64>, tensor<5xf64>) {
      %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : (tensor<3x5xf64>, tensor<3x5xf64>, tensor<5xf64>) -> (tensor<3x5xf64>, tensor<5xf64>, tensor<5xf64>)
      return %dx, %dg, %db : tensor<3x5xf64>, tensor<5xf64>, tensor<5xf64>
    }
    func.func @rms(%x: tensor<3x5xf64>, %g: tensor<5xf64>) -> tensor<3x5xf64> {
      %y = weft.rms_norm %x, %g : (tensor<3x5xf64>, tensor<5xf64>) -> tensor<3x5xf64>
      return %y : tensor<3x5xf64>
    }
    func.func @rms_grad(%dy: tensor<3x5xf64>, %x: tensor<3x5xf64>, %g: tensor<5xf64>) -> (tensor<3x5xf64>, tensor<5xf64>) {
      %dx, %dg = weft.rms_norm_grad %dy, %x, %g : (tensor<3x5xf64>, tensor<3x5xf64>, tensor<5xf64>) -> (tensor<3x5xf64>, tensor<5xf64>)
      return %dx, %dg : tensor<3x5xf64>, tensor<5xf64>
    }
    func.func @act(%x: tensor<3x5xf64>) -> tensor<3x5xf64> {
      %y = weft.gelu %x {approximate = "tanh"} : (tensor<3x5xf64>) -> tensor<3x5xf64>
      %z = weft.silu %y : (tensor<3x5xf64>) -> tensor<3x5xf64>
      %s = weft.softmax %z {dim = 0 : i64} : (tensor<3x5xf64>) -> tensor<3x5xf64>
      return %s : tensor<3x5xf64>
    }
    func.func @act_grad(%ds: tensor<3x5xf64>, %x: tensor<3x5xf64>) -> tensor<3x5xf64> {
      %y = weft.gelu %x {approximate = "tanh"} : (tensor<3x5xf64>) -> tensor<3x5xf64>
      %z = weft.silu %y : (tensor<3x5xf64>) -> tensor<3x5xf64>
      %s = weft.softmax %z {dim = 0 : i64} : (tensor<3x5xf64>) -> tensor<3x5xf64>
      %dz = weft.softmax_grad %ds, %s {dim = 0 : i64} : (tensor<3x5xf64>, tensor<3x5xf64>) -> tensor<3x5xf64>
      %dy = weft.silu_grad %dz, %y : (tensor<3x5xf64>, tensor<3x5xf64>) -> tensor<3x5xf64>
      %dx = weft.gelu_grad %dy, %x {approximate = "tanh"} : (tensor<3x5xf64>, tensor<3x5xf64>) -> tensor<3x5xf64>
      return %dx : tensor<3x5xf64>
    }
    func.func @gelu(%x: tensor<3x5xf64>) -> tensor<3x5xf64> {
      %y = weft.gelu %x : (tensor<3x5xf64>) -> tensor<3x5xf64>
      return %y : tensor<3x5xf64>
    }
    func.func @gelu_grad(%dy: tensor<3x5xf64>, %x: tensor<3x5xf64>) -> tensor<3x5xf64> {
      %dx = weft.gelu_grad %dy, %x : (tensor<3x5xf64>, tensor<3x5xf64>) -> tensor<3x5xf64>
      return %dx : tensor<3x5xf64>
    }
    func.func @ce(%l: tensor<3x5xf64>, %y: tensor<3xi64>) -> tensor<f64> {
      %loss = weft.cross_entropy %l, %y : (tensor<3x5xf64>, tensor<3xi64>) -> tensor<f64>
      return %loss : tensor<f64>
    }
    func.func @ce_grad(%d: tensor<f64>, %l: tensor<3x5xf64>, %y: tensor<3xi64>) -> tensor<3x5xf64> {
      %dl = weft.cross_entropy_grad %d, %l, %y : (tensor<f64>, tensor<3x5xf64>, tensor<3xi64>) -> tensor<3x5xf64>
      return %dl : tensor<3x5xf64>
    }
    func.func @emb(%ids: tensor<4xi64>, %t: tensor<3x5xf64>) -> tensor<4x5xf64> {
      %e = weft.embedding %ids, %t : (tensor<4xi64>, tensor<3x5xf64>) -> tensor<4x5xf64>
      return %e : tensor<4x5xf64>
    }
    func.func @emb_grad(%dy: tensor<4x5xf64>, %ids: tensor<4xi64>) -> tensor<3x5xf64> {
      %dt = weft.embedding_grad %dy, %ids : (tensor<4x5xf64>, tensor<4xi64>) -> tensor<3x5xf64>
      return %dt : tensor<3x5xf64>
    })mlir");
  ASSERT_TRUE(module);
  auto fn = [&](StringRef name) { return module->lookupSymbol<func::FuncOp>(name); };
  Tensor x = randomTensor({3, 5}, 31), g = randomTensor({5}, 32),
         b = randomTensor({5}, 33), dy = randomTensor({3, 5}, 34);
  check(fn("ln"), fn("ln_grad"), {x, g, b}, {dy, x, g}, dy, 0, 0);
  check(fn("ln"), fn("ln_grad"), {x, g, b}, {dy, x, g}, dy, 1, 1);
  check(fn("ln"), fn("ln_grad"), {x, g, b}, {dy, x, g}, dy, 2, 2);
  check(fn("rms"), fn("rms_grad"), {x, g}, {dy, x, g}, dy, 0, 0);
  check(fn("rms"), fn("rms_grad"), {x, g}, {dy, x, g}, dy, 1, 1);
  check(fn("act"), fn("act_grad"), {x}, {dy, x}, dy, 0, 0);
  check(fn("gelu"), fn("gelu_grad"), {x}, {dy, x}, dy, 0, 0);
  Tensor labels = tensor({3}, {4, 0, 2}, DType::I64), dloss = tensor({}, {1.7});
  check(fn("ce"), fn("ce_grad"), {x, labels}, {dloss, x, labels}, dloss, 0, 0);
  Tensor ids = tensor({4}, {2, 0, 2, 1}, DType::I64), demb = randomTensor({4, 5}, 35);
  check(fn("emb"), fn("emb_grad"), {ids, x}, {demb, ids}, demb, 1, 0);
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, OutOfRangeIdIsADiagnostic) {
  func::FuncOp func = parse(R"mlir(
    func.func @main(%ids: tensor<2x2xi64>, %t: tensor<3x2xf32>) -> tensor<2x2x2xf32> {
      %e = weft.embedding %ids, %t : (tensor<2x2xi64>, tensor<3x2xf32>) -> tensor<2x2x2xf32>
      return %e : tensor<2x2x2xf32>
    })mlir");
  ASSERT_TRUE(func);
  auto results = runFunction(func, {tensor({2, 2}, {0, 1, 2, 7}, DType::I64),
                                    tensor({3, 2}, {1, 2, 3, 4, 5, 6}, DType::F32)});
  EXPECT_TRUE(failed(results));
  EXPECT_NE(diagnostics.find("id 7 at position [1, 1], outside [0, 3)"),
            std::string::npos)
      << diagnostics;
}

TEST_F(InterpreterTest, WrongArgumentShapeNamesTheArgument) {
  func::FuncOp func = parse(R"mlir(
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      return %x : tensor<2x3xf32>
    })mlir");
  ASSERT_TRUE(func);
  auto results = runFunction(func, {tensor({3, 2}, {1, 2, 3, 4, 5, 6}, DType::F32)});
  EXPECT_TRUE(failed(results));
  EXPECT_NE(diagnostics.find("argument #0 (rank 0) expects shape [2, 3] of f32, "
                             "got shape [3, 2] of f32"),
            std::string::npos)
      << diagnostics;
}

TEST_F(InterpreterTest, UnknownOpIsADiagnostic) {
  func::FuncOp func = parse(R"mlir(
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %e = arith.addf %x, %x : tensor<2xf32>
      return %e : tensor<2xf32>
    })mlir");
  ASSERT_TRUE(func);
  EXPECT_TRUE(failed(runFunction(func, {tensor({2}, {1, 2}, DType::F32)})));
  EXPECT_NE(diagnostics.find("reference interpreter cannot run 'arith.addf'"),
            std::string::npos)
      << diagnostics;
}

TEST_F(InterpreterTest, CallsAnotherFunction) {
  auto results = runOk(R"mlir(
    func.func private @double(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = weft.scale %x {value = 2.0 : f64} : (tensor<2xf32>) -> tensor<2xf32>
      return %y : tensor<2xf32>
    }
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = func.call @double(%x) : (tensor<2xf32>) -> tensor<2xf32>
      %z = func.call @double(%y) : (tensor<2xf32>) -> tensor<2xf32>
      return %z : tensor<2xf32>
    })mlir",
                       {tensor({2}, {1.5, -3}, DType::F32)});
  ASSERT_EQ(results.size(), 1u);
  expectNear(results[0], {6, -12}, 0);
}

//===----------------------------------------------------------------------===//
// SPMD
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, CollectivesOnTwoByTwoGrid) {
  func::FuncOp func = parse(R"mlir(
    shard.grid @grid(shape = 2x2)
    func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<4xf32>, tensor<1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
      %r = shard.all_reduce %x on @grid grid_axes = [1] : tensor<2xf32> -> tensor<2xf32>
      %g = shard.all_gather %x on @grid grid_axes = [1] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
      %s = shard.reduce_scatter %x on @grid grid_axes = [1] scatter_axis = 0 : tensor<2xf32> -> tensor<1xf32>
      %m = shard.all_reduce %x on @grid grid_axes = [0, 1] reduction = max : tensor<2xf32> -> tensor<2xf32>
      %a = shard.all_to_all %x on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<2xf32> -> tensor<2xf32>
      %h = shard.shift %x on @grid grid_axes = [1] shift_axis = 1 offset = 1 rotate : tensor<2xf32> -> tensor<2xf32>
      return %r, %g, %s, %m, %a, %h : tensor<2xf32>, tensor<4xf32>, tensor<1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
    })mlir");
  ASSERT_TRUE(func);
  auto ranks = reference::numRanks(func);
  ASSERT_TRUE(succeeded(ranks));
  EXPECT_EQ(*ranks, 4);
  // Rank r = (r / 2, r % 2) holds [r + 1, 10 (r + 1)].
  std::vector<std::vector<Tensor>> args;
  for (int r = 0; r < 4; ++r)
    args.push_back({tensor({2}, {r + 1.0, 10.0 * (r + 1)}, DType::F32)});
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  auto results = reference::runSpmd(func, args);
  ASSERT_TRUE(succeeded(results)) << diagnostics;
  ASSERT_EQ(results->size(), 4u);
  auto &out = *results;
  // grid_axes = [1] groups ranks {0, 1} and {2, 3}.
  expectNear(out[0][0], {3, 30}, 0);
  expectNear(out[1][0], {3, 30}, 0);
  expectNear(out[2][0], {7, 70}, 0);
  expectNear(out[3][0], {7, 70}, 0);
  expectNear(out[0][1], {1, 10, 2, 20}, 0);
  expectNear(out[3][1], {3, 30, 4, 40}, 0);
  expectNear(out[0][2], {3}, 0);
  expectNear(out[1][2], {30}, 0);
  expectNear(out[2][2], {7}, 0);
  expectNear(out[3][2], {70}, 0);
  for (int r = 0; r < 4; ++r)
    expectNear(out[r][3], {4, 40}, 0);
  // all_to_all over grid axis 0: groups {0, 2} and {1, 3}; in-group index k
  // receives element k of each member, in member order.
  expectNear(out[0][4], {1, 3}, 0);
  expectNear(out[2][4], {10, 30}, 0);
  expectNear(out[1][4], {2, 4}, 0);
  expectNear(out[3][4], {20, 40}, 0);
  // shift by +1 along grid axis 1 with rotation: (i, j) receives (i, j - 1).
  expectNear(out[0][5], {2, 20}, 0);
  expectNear(out[1][5], {1, 10}, 0);
  expectNear(out[3][5], {3, 30}, 0);
}

TEST_F(InterpreterTest, ProcessIndexAndShardAnnotations) {
  func::FuncOp func = parse(R"mlir(
    shard.grid @grid(shape = 2x3)
    func.func @main(%x: tensor<6xf64>) -> tensor<3xf64> {
      %s = shard.sharding @grid split_axes = [[1]] : !shard.sharding
      %y = shard.shard %x to %s : tensor<6xf64>
      %z = shard.all_slice %y on @grid grid_axes = [1, 0] slice_axis = 0 : tensor<6xf64> -> tensor<1xf64>
      %g = shard.all_gather %z on @grid grid_axes = [1] gather_axis = 0 : tensor<1xf64> -> tensor<3xf64>
      return %g : tensor<3xf64>
    })mlir");
  ASSERT_TRUE(func);
  std::vector<std::vector<Tensor>> args(
      6, {tensor({6}, {0, 1, 2, 3, 4, 5})});
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  auto results = reference::runSpmd(func, args);
  ASSERT_TRUE(succeeded(results)) << diagnostics;
  // grid_axes = [1, 0]: in-group index of (i, j) is j * 2 + i.
  expectNear((*results)[0][0], {0, 2, 4}, 0);
  expectNear((*results)[3][0], {1, 3, 5}, 0);
}

} // namespace
