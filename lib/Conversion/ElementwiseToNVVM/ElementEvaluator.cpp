// ElementEvaluator: a group's body ops as f32 scalar code at one element, with
// the row statistics of norms, softmax and cross-entropy given; pointwise ops
// by their formulas (ScalarFormulas.cpp, which the reference interpreter
// evaluates too), paired ops (rope) by theirs with a second evaluator at the
// partner element, each value rounded to its declared type as the unfused op
// would store it.
#include "KernelEmitter.h"

#include "weft/Codegen/PhiloxBuilder.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace weft::gpu {

namespace {
Type elementOf(Value value) { return cast<ShapedType>(value.getType()).getElementType(); }
} // namespace

ElementEvaluator::ElementEvaluator(ElementMath &m, const KernelGroup &group,
                                   const RowStats &stats, Value row, Value col)
    : m(m), group(group), stats(stats), row(row), col(col) {}

Value ElementEvaluator::linear() {
  if (!linearIndex)
    linearIndex = m.i64Add(m.i64Mul(row, m.i64c(group.cols)), col);
  return linearIndex;
}

Value ElementEvaluator::leaf(Value v) {
  if (Value preloaded = preset.lookup(v))
    return preloaded;
  unsigned param = group.leafParam.lookup(v);
  TensorPlace place = group.place(v);
  Value index;
  switch (place.extent) {
  case Extent::Full:
    index = linear();
    break;
  case Extent::Suffix:
    index = place.elements == group.cols ? col
                                         : m.i64Rem(linear(), m.i64c(place.elements));
    break;
  case Extent::Row:
    index = row;
    break;
  case Extent::Scalar:
    index = m.i64c(0);
    break;
  case Extent::Strided:
    index = stridedIndex(m, group, place, linear());
    break;
  }
  return m.loadElement(m.param(param), elementOf(v), index);
}

Value ElementEvaluator::id(Value v) { return leaf(v); }

void ElementEvaluator::atLane(VectorLanes &lanes, int64_t laneIndex) {
  for (auto &[leafValue, values] : lanes.leaves)
    preset[leafValue] = values[laneIndex];
  vector = &lanes;
  lane = laneIndex;
}

Value ElementEvaluator::computeDropout(DropoutOp o) {
  Value x = value(o.getX());
  double p = o.getP().convertToDouble();
  if (p == 0.0)
    return x;
  Value seed = id(o.getSeed());
  int64_t rngId = o->getAttrOfType<IntegerAttr>(WeftDialect::kRngIdAttr).getInt();
  Value draw;
  if (vector && vector->base && vector->width % 4 == 0) {
    // One Philox block per 4 lanes, drawn by the first lane that needs it.
    std::array<Value, 4> &words = vector->blocks[{o.getOperation(), lane / 4}];
    if (!words[0]) {
      Value block = m.b.createOrFold<arith::ShRUIOp>(vector->base, m.i64c(2));
      if (lane >= 4)
        block = m.i64Add(block, m.i64c(lane / 4));
      words = codegen::buildPhiloxBlock(m.b, seed, rngId, block,
                                         codegen::PhiloxMultiply::Nvptx);
    }
    draw = words[lane % 4];
  } else {
    draw = codegen::buildPhiloxDraw(m.b, seed, rngId, linear(), codegen::PhiloxMultiply::Nvptx);
  }
  return m.dropoutValue(x, draw, p);
}

Value ElementEvaluator::value(Value v) {
  if (Value cached = cache.lookup(v))
    return cached;
  Value result = group.leafParam.count(v) ? leaf(v) : compute(cast<OpResult>(v));
  cache[v] = result;
  return result;
}

// As lib/Reference/Training.cpp's runAdamW; the three results at once (four
// with a split master).
void ElementEvaluator::computeAdamW(AdamWOp o) {
  auto v = [&](Value x) { return value(x); };
  double lr = o.getLr().convertToDouble();
  double beta1 = o.getBeta1().convertToDouble();
  double beta2 = o.getBeta2().convertToDouble();
  Value step = m.i64ToF32(id(o.getStep()));
  // beta^step = 2^(step log2 beta), in f32 on the device.
  Value one = m.f32c(1.0);
  Value bc1 = m.fsub(one, m.exp2(m.fmul(step, m.f32c(std::log2(beta1)))));
  Value bc2Sqrt = m.sqrt(m.fsub(one, m.exp2(m.fmul(step, m.f32c(std::log2(beta2))))));
  Value stepSize = m.fdiv(m.f32c(lr), bc1);
  Value master = v(o.getParam());
  Value low = o.getParamLow();
  if (low)
    master = joinSplitMaster(master, v(low));
  Value p = m.fmul(master, m.f32c(1.0 - lr * o.getWeightDecay().convertToDouble()));
  Value g = v(o.getGrad()), mm = v(o.getM()), vv = v(o.getV());
  Value newM = m.fadd(mm, m.fmul(m.f32c(1.0 - beta1), m.fsub(g, mm)));
  Value newV = m.fadd(m.fmul(vv, m.f32c(beta2)), m.fmul(m.fmul(m.f32c(1.0 - beta2), g), g));
  Value denom =
      m.fadd(m.fdiv(m.sqrt(newV), bc2Sqrt), m.f32c(o.getEps().convertToDouble()));
  Value newP = m.fsub(p, m.fdiv(m.fmul(stepSize, newM), denom));
  cache[o.getNewM()] = m.round(newM, elementOf(o.getNewM()));
  cache[o.getNewV()] = m.round(newV, elementOf(o.getNewV()));
  if (!low) {
    cache[o.getNewParam()] = m.round(newP, elementOf(o.getNewParam()));
    return;
  }
  auto [high, lowBits] = splitMaster(newP);
  cache[o.getNewParam()] = high;
  cache[o.getNewParamLow()] = lowBits;
}

// bits(high) is hi << 16 already (the bf16's f32 widening); adding the
// sign-extended low half wraps as u32 arithmetic: the master, exactly.
Value ElementEvaluator::joinSplitMaster(Value high, Value low) {
  Value bits = m.add(arith::BitcastOp::create(m.b, m.i32, high), low);
  return arith::BitcastOp::create(m.b, m.f32, bits);
}

std::pair<Value, Value> ElementEvaluator::splitMaster(Value master) {
  Value bits = arith::BitcastOp::create(m.b, m.i32, master);
  Value highMask = m.i32c(-0x10000); // 0xFFFF0000
  // Round to nearest, ties away from zero, on the magnitude bits: the carry
  // of + 0x8000 moves the high half one bf16 ulp away from zero (to inf at
  // the top); low = B - (high << 16) then lies in [-0x8000, 0x7FFF].
  Value rounded = m.andi(m.add(bits, m.i32c(0x8000)), highMask);
  // A NaN keeps its sign and becomes quiet in bf16 (bit 6 of the high half),
  // low bits 0: the forward reads a NaN weight, never a finite one.
  Value quietNan = arith::OrIOp::create(m.b, m.andi(bits, highMask), m.i32c(0x00400000));
  Value isNan = arith::CmpFOp::create(m.b, arith::CmpFPredicate::UNO, master, master);
  Value highBits = m.select(isNan, quietNan, rounded);
  // B & 0xFFFF as a signed 16-bit value, i.e. B - (rounded high << 16).
  Value lowBits = m.select(isNan, m.i32c(0), m.sub(bits, rounded));
  return {arith::BitcastOp::create(m.b, m.f32, highBits), lowBits};
}

bool isSplitMasterHigh(Value value) {
  auto result = dyn_cast<OpResult>(value);
  auto adamw = result ? dyn_cast<AdamWOp>(result.getOwner()) : AdamWOp();
  return adamw && adamw.getParamLow() && result == adamw.getNewParam();
}

std::pair<ElementEvaluator *, Value> ElementEvaluator::partnerEvaluator() {
  if (partner)
    return {partner.get(), firstHalf};
  int64_t half = group.cols / 2;
  if (vector && vector->base && half % vector->width == 0) {
    // The whole vector lies in one half of its row (base and half are
    // multiples of the width): one shift, one partner vector, for all lanes.
    if (!vector->partner) {
      Value column = m.i64Rem(vector->base, m.i64c(group.cols));
      vector->firstHalf = m.i64Lt(column, m.i64c(half));
      vector->partnerShift =
          m.select(vector->firstHalf, m.i64c(half), m.i64c(-half));
      vector->partner = std::make_unique<VectorLanes>(
          loadLeafLanes(m, group, m.i64Add(vector->base, vector->partnerShift),
                        vector->row, vector->width));
    }
    // (row, col) gives linear(), so (row, col + shift) gives the partner's.
    partner = std::make_unique<ElementEvaluator>(m, group, stats, row,
                                                 m.i64Add(col, vector->partnerShift));
    partner->atLane(*vector->partner, lane);
    firstHalf = vector->firstHalf;
    return {partner.get(), firstHalf};
  }
  // One element: its row and column from the linear index (a pointwise
  // kernel's evaluators take (0, linear)), the partner half a row away.
  Value cols = m.i64c(group.cols);
  Value column = m.i64Rem(linear(), cols);
  firstHalf = m.i64Lt(column, m.i64c(half));
  Value partnerColumn =
      m.i64Add(column, m.select(firstHalf, m.i64c(half), m.i64c(-half)));
  partner = std::make_unique<ElementEvaluator>(m, group, stats, m.i64Div(linear(), cols),
                                               partnerColumn);
  return {partner.get(), firstHalf};
}

Value ElementEvaluator::computePaired(PairedFormulaOpInterface op) {
  ScalarFormula formula;
  formula.setResult(op.buildPairedFormula(formula));
  Operation *operation = op.getOperation();
  unsigned partnerSlots = op.getPartnerSlot(0);
  // Only the slots the formula reads: a partner is evaluated only if read.
  SmallVector<Value, 8> slots(op.getFirstHalfSlot() + 1);
  for (const ScalarInstruction &instruction : formula.getInstructions()) {
    unsigned slot = instruction.operand;
    if (instruction.primitive != ScalarPrimitive::Operand || slots[slot])
      continue;
    if (slot == op.getFirstHalfSlot())
      slots[slot] = partnerEvaluator().second;
    else if (slot >= partnerSlots)
      slots[slot] =
          partnerEvaluator().first->value(operation->getOperand(slot - partnerSlots));
    else
      slots[slot] = value(operation->getOperand(slot));
  }
  return lowerFormula(m, formula, slots);
}

Value ElementEvaluator::compute(OpResult result) {
  Operation *op = result.getOwner();
  if (auto paired = dyn_cast<PairedFormulaOpInterface>(op))
    return m.round(computePaired(paired), elementOf(result));
  if (auto pointwise = dyn_cast<ScalarFormulaOpInterface>(op)) {
    // The operands' elements in operand order, then the formula's code.
    SmallVector<Value, 4> operands;
    for (Value operand : op->getOperands())
      operands.push_back(value(operand));
    ScalarFormula formula;
    formula.setResult(pointwise.buildFormula(formula));
    return m.round(lowerFormula(m, formula, operands), elementOf(result));
  }
  if (auto adamw = dyn_cast<AdamWOp>(op)) {
    computeAdamW(adamw);
    return cache.lookup(result);
  }
  const SmallVector<Value> *s = nullptr;
  if (auto it = stats.find(op); it != stats.end())
    s = &it->second;
  auto v = [&](Value x) { return value(x); };
  Value r =
      llvm::TypeSwitch<Operation *, Value>(op)
          .Case([&](ConvertOp o) { return v(o.getX()); })
          .Case([&](DropoutOp o) { return computeDropout(o); })
          .Case([&](LayerNormOp o) {
            Value xhat = m.fmul(m.fsub(v(o.getX()), (*s)[0]), (*s)[1]);
            return m.fadd(m.fmul(xhat, v(o.getGamma())), v(o.getBeta()));
          })
          .Case([&](RmsNormOp o) {
            return m.fmul(m.fmul(v(o.getX()), (*s)[0]), v(o.getGamma()));
          })
          .Case([&](SoftmaxOp o) {
            return m.fmul(m.exp(m.fsub(v(o.getX()), (*s)[0])), (*s)[1]);
          })
          .Case([&](SoftmaxGradOp o) {
            return m.fmul(v(o.getY()), m.fsub(v(o.getDy()), (*s)[0]));
          })
          .Case([&](LayerNormGradOp o) {
            // dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma.
            Value xhat = m.fmul(m.fsub(v(o.getX()), (*s)[0]), (*s)[1]);
            Value g = m.fmul(v(o.getDy()), v(o.getGamma()));
            return m.fmul((*s)[1], m.fsub(m.fsub(g, (*s)[2]), m.fmul(xhat, (*s)[3])));
          })
          .Case([&](RmsNormGradOp o) {
            // dx = rstd (dy gamma - x rstd^2 mean(dy gamma x)).
            Value x = v(o.getX()), rstd = (*s)[0];
            Value g = m.fmul(v(o.getDy()), v(o.getGamma()));
            return m.fmul(rstd, m.fsub(g, m.fmul(m.fmul(x, m.fmul(rstd, rstd)), (*s)[1])));
          })
          .Case([&](CrossEntropyGradOp o) {
            // With ignore_index: the mean is over the kept rows ((*s)[1], the
            // count emitRowsBody adds), and an ignored row's gradient is 0.
            // With all_labels the count is over them (a chunk's share).
            std::optional<int64_t> ignored = ignoredLabel(o);
            Value rows = ignored || o.getAllLabels() ? (*s)[1] : m.f32c(double(group.rows));
            Value factor = m.fdiv(v(o.getDloss()), rows);
            Value p = m.exp(m.fsub(v(o.getLogits()), (*s)[0]));
            Value label = id(o.getLabels());
            Value hit = m.i64Eq(col, label);
            Value grad = m.fsub(m.fmul(p, factor), m.select(hit, factor, m.f32c(0.0)));
            if (!ignored)
              return grad;
            return m.select(m.i64Eq(label, m.i64c(*ignored)), m.f32c(0.0), grad);
          })
          .Default([&](Operation *) { return Value(); });
  assert(r && "analyzeGroup admits only ops the evaluator implements");
  return m.round(r, elementOf(result));
}

Value ElementEvaluator::columnTerm(Value result) {
  auto opResult = cast<OpResult>(result);
  Operation *op = opResult.getOwner();
  const SmallVector<Value> &s = stats.find(op)->second;
  if (auto grad = dyn_cast<LayerNormGradOp>(op)) {
    Value dy = value(grad.getDy());
    if (opResult.getResultNumber() == 2)
      return dy;
    Value xhat = m.fmul(m.fsub(value(grad.getX()), s[0]), s[1]);
    return m.fmul(dy, xhat);
  }
  auto grad = cast<RmsNormGradOp>(op);
  return m.fmul(m.fmul(value(grad.getDy()), value(grad.getX())), s[0]);
}

Value ElementEvaluator::lossTerm(Operation *op) {
  auto ce = cast<CrossEntropyOp>(op);
  Value label = id(ce.getLabels());
  std::optional<int64_t> ignored = ignoredLabel(ce);
  if (!ignored) {
    ElementEvaluator atLabel(m, group, stats, row, label);
    return m.fsub(stats.find(op)->second[0], atLabel.value(ce.getLogits()));
  }
  // An ignored row adds 0 and reads column 0, never its (out of range) label.
  Value kept = keptTerm(ce);
  Value at = m.select(m.i64Eq(label, m.i64c(*ignored)), m.i64c(0), label);
  ElementEvaluator atLabel(m, group, stats, row, at);
  Value term = m.fsub(stats.find(op)->second[0], atLabel.value(ce.getLogits()));
  return m.fmul(term, kept);
}

Value ElementEvaluator::keptTerm(Operation *op) {
  std::optional<int64_t> ignored = ignoredLabel(op);
  if (!ignored)
    return m.f32c(1.0);
  Value labels = isa<CrossEntropyOp>(op) ? cast<CrossEntropyOp>(op).getLabels()
                                         : cast<CrossEntropyGradOp>(op).getLabels();
  return m.select(m.i64Eq(id(labels), m.i64c(*ignored)), m.f32c(0.0), m.f32c(1.0));
}

Value allLabelsOf(Operation *op) {
  if (auto loss = dyn_cast<CrossEntropyOp>(op))
    return loss.getAllLabels();
  if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
    return grad.getAllLabels();
  return Value();
}

std::optional<int64_t> ignoredLabel(Operation *op) {
  auto attr = op->getAttrOfType<IntegerAttr>("ignore_index");
  if (!attr)
    return std::nullopt;
  return attr.getInt();
}

} // namespace weft::gpu
