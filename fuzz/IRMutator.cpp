// IR-aware mutations for weft-fuzz: edits MLIR text with knowledge of its
// grammar (tensor types, weft op lines in the uniform custom form, attribute
// dictionaries, SSA operands and their types) so that most mutants still parse
// and reach the verifiers and folders. Built without coverage instrumentation:
// the fuzzer's feedback is Weft's code, not the mutator's branches.
#include "IRMutator.h"
#include "IRText.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

const char *weft::fuzz::lastMutation = "none";

using namespace weft::fuzz;

namespace {

using Rng = std::mt19937_64;

template <typename T> const T &pick(const std::vector<T> &items, Rng &rng) {
  return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng)];
}

size_t below(Rng &rng, size_t n) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

bool chance(Rng &rng, unsigned percent) {
  return std::uniform_int_distribution<unsigned>(0, 99)(rng) < percent;
}

//===----------------------------------------------------------------------===//
// What the mutator knows of the weft dialect (its ops: kOps in IRText.h)
//===----------------------------------------------------------------------===//

const std::vector<std::string> kElementTypes = {"f32", "bf16", "f16", "f64",
                                                "i64", "i1",   "i32"};

const std::vector<std::string> kDims = {
    "0", "1", "2", "3", "4", "5", "7", "8", "16", "64", "?",
    "65536", "140737488355329", "281474976710656", "4294967296",
    "9223372036854775807"};

const std::vector<std::string> kInts = {
    "0", "1", "2", "3", "-1", "-2", "-3", "4", "7", "63",
    "281474976710656", "9223372036854775807", "-9223372036854775808"};

const std::vector<std::string> kF64 = {
    "0.0", "1.0", "-1.0", "0.5", "0.125", "0.999", "1.0e-05", "2.0", "1.0e+300",
    "0x7FF8000000000000", "0x7FF0000000000000", "0xFFF0000000000000",
    "0x8000000000000000", "1.0", "0.1"};

const std::vector<std::string> kF32 = {"0.0", "1.0", "-1.0", "0.125", "0.5",
                                       "0x7FC00000", "0x7F800000", "3.0e+38"};

/// The kind of value each attribute name of the weft ops (and the dialect's
/// op attributes) takes: a well-typed value parses, so it reaches the
/// verifier; an ill-typed one (now and then) tests the parser's checks.
enum class AttrKind { Unit, F32, F64, I64, I64Array, Approximate };

const std::map<std::string, AttrKind> kAttributes = {
    {"causal", AttrKind::Unit},      {"keepdim", AttrKind::Unit},
    {"transpose_a", AttrKind::Unit}, {"transpose_b", AttrKind::Unit},
    {"inverse", AttrKind::Unit},     {"scale", AttrKind::F32},
    {"p", AttrKind::F64},            {"dropout_p", AttrKind::F64},
    {"eps", AttrKind::F64},          {"value", AttrKind::F64},
    {"fill", AttrKind::F64},         {"lr", AttrKind::F64},
    {"beta1", AttrKind::F64},        {"beta2", AttrKind::F64},
    {"weight_decay", AttrKind::F64}, {"dim", AttrKind::I64},
    {"dims", AttrKind::I64Array},    {"perm", AttrKind::I64Array},
    {"sizes", AttrKind::I64Array},   {"approximate", AttrKind::Approximate},
    {"weft.rng_id", AttrKind::I64},  {"weft.layer", AttrKind::I64},
    {"weft.workspace_offset", AttrKind::I64},
    {"weft.offsets", AttrKind::I64Array}};

std::string smallInt(Rng &rng, int rank) {
  if (chance(rng, 85))
    return std::to_string(std::uniform_int_distribution<int>(-rank - 1, rank)(rng));
  return pick(kInts, rng);
}

/// An i64 array for `name`; for perm, dims and sizes often a valid one for an
/// operand of `shape` (a permutation, distinct dims, sizes that sum up).
std::string intArray(const std::string &name, const std::vector<int64_t> &shape,
                     Rng &rng) {
  int rank = int(shape.size());
  std::vector<std::string> items;
  if (name == "perm" && chance(rng, 70)) {
    std::vector<int> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int p : perm)
      items.push_back(std::to_string(p));
  } else if (name == "dims" && rank > 0 && chance(rng, 70)) {
    for (int d = 0; d < rank; ++d)
      if (chance(rng, 40))
        items.push_back(std::to_string(chance(rng, 30) ? d - rank : d));
  } else if (name == "sizes" && rank > 0 && chance(rng, 70)) {
    int64_t total = shape[below(rng, rank)];
    while (total > 0 && items.size() < 4) {
      int64_t size = chance(rng, 40) ? total : int64_t(below(rng, size_t(total) + 1));
      items.push_back(std::to_string(size));
      total -= size;
    }
  } else {
    size_t n = below(rng, 5);
    for (size_t i = 0; i < n; ++i)
      items.push_back(smallInt(rng, rank));
  }
  std::string text = "array<i64";
  for (size_t i = 0; i < items.size(); ++i)
    text += (i ? ", " : ": ") + items[i];
  return text + ">";
}

/// `name = value` (or `name` for a unit attribute) of the right kind, ill-typed
/// with a small probability.
std::string attributeFor(const std::string &name, const std::vector<int64_t> &shape,
                         Rng &rng) {
  auto found = kAttributes.find(name);
  if (found == kAttributes.end())
    return name;
  if (chance(rng, 4))
    return name + " = " +
           pick<std::string>({"1 : i32", "\"x\"", "1.0 : f32", "unit", "[0, 1]",
                              "array<i32: 0>", "dense<0> : tensor<1xi64>"},
                             rng);
  int rank = int(shape.size());
  switch (found->second) {
  case AttrKind::Unit:
    return name;
  case AttrKind::F32:
    return name + " = " + pick(kF32, rng) + " : f32";
  case AttrKind::F64:
    return name + " = " + pick(kF64, rng) + " : f64";
  case AttrKind::I64:
    if (name == "dim")
      return name + " = " + smallInt(rng, rank) + " : i64";
    return name + " = " + (chance(rng, 85) ? std::to_string(below(rng, 8)) : pick(kInts, rng)) +
           " : i64";
  case AttrKind::I64Array:
    return name + " = " + intArray(name, shape, rng);
  case AttrKind::Approximate:
    return name + " = " + pick<std::string>({"\"tanh\"", "\"none\"", "\"erf\""}, rng);
  }
  return name;
}

std::string randomAttribute(const std::vector<int64_t> &shape, Rng &rng) {
  if (chance(rng, 5))
    return pick<std::string>(
        {"weft.param", "weft.range = array<i64: 0, 10>", "weft.bogus",
         "weft.recompute", "weft.alias = 0 : i64",
         "weft.memory_plan = {alignment = 64 : i64, peak_bytes = 0 : i64}"},
        rng);
  auto it = kAttributes.begin();
  std::advance(it, below(rng, kAttributes.size()));
  return attributeFor(it->first, shape, rng);
}

//===----------------------------------------------------------------------===//
// Type mutations (whole text)
//===----------------------------------------------------------------------===//

/// Replaces the type at `site` by `to`, or every occurrence of the same type
/// (then a value keeps one type at its definition and all its uses, and the
/// mutant parses; the verifiers see shapes that may no longer agree).
void replaceType(std::string &text, const std::string &from, const std::string &to,
                 size_t site, bool everywhere) {
  if (!everywhere) {
    text.replace(site, from.size(), to);
    return;
  }
  std::string out;
  size_t last = 0;
  for (size_t pos : findAll(text, from)) {
    if (pos < last)
      continue;
    // Only whole types: `tensor<4x8xf32>` is not part of a longer type.
    out.append(text, last, pos - last);
    out += to;
    last = pos + from.size();
  }
  out.append(text, last, std::string::npos);
  text = std::move(out);
}

bool mutateDim(std::string &text, Rng &rng) {
  std::vector<TensorSite> sites = findTensors(text);
  if (sites.empty())
    return false;
  const TensorSite &site = pick(sites, rng);
  std::string type = text.substr(site.begin, site.end - site.begin);
  std::string mutated = type;
  auto local = [&](size_t pos) { return pos - site.begin; };
  size_t kind = below(rng, 10);
  if (!site.dims.empty() && kind < 6) {
    auto [b, e] = pick(site.dims, rng);
    std::string value = pick(kDims, rng);
    if (chance(rng, 60)) {
      // A neighbour of the current size: off-by-one shapes reach the checks.
      // strtoll saturates; keep the arithmetic clear of overflow.
      long long current = std::min(strtoll(text.substr(b, e - b).c_str(), nullptr, 10),
                                   LLONG_MAX / 2 - 1);
      value = std::to_string(std::max(0LL, current + (chance(rng, 50) ? 1 : -1)));
      if (chance(rng, 30))
        value = std::to_string(current * 2);
    }
    mutated.replace(local(b), e - b, value);
  } else if (!site.dims.empty() && kind < 8) {
    auto [b, e] = pick(site.dims, rng);
    mutated.erase(local(b), e - b + 1); // the dim and its 'x'
  } else {
    size_t at = site.dims.empty() ? local(site.elementBegin)
                                  : local(pick(site.dims, rng).first);
    mutated.insert(at, (chance(rng, 70) ? std::string("1") : pick(kDims, rng)) + "x");
  }
  replaceType(text, type, mutated, site.begin, chance(rng, 90));
  return true;
}

bool mutateElementType(std::string &text, Rng &rng) {
  std::vector<TensorSite> sites = findTensors(text);
  if (sites.empty())
    return false;
  const TensorSite &site = pick(sites, rng);
  std::string type = text.substr(site.begin, site.end - site.begin);
  std::string mutated = type;
  mutated.replace(site.elementBegin - site.begin, site.elementEnd - site.elementBegin,
                  pick(kElementTypes, rng));
  if (chance(rng, 5))
    mutated.insert(mutated.size() - 1, ", \"enc\"");
  replaceType(text, type, mutated, site.begin, chance(rng, 90));
  return true;
}

std::string freshName(Rng &rng) { return "%fz" + std::to_string(rng() % 1000000); }

/// Op mutations: each edits one op line and keeps it well-formed text.
bool mutateOp(std::vector<std::string> &lines, Rng &rng) {
  std::vector<size_t> candidates = opLines(lines);
  if (candidates.empty())
    return false;
  size_t l = pick(candidates, rng);
  OpLine op;
  OpLine::parse(lines[l], op);
  std::vector<int64_t> shape = op.firstOperandShape();
  switch (below(rng, 10)) {
  case 0: { // another op taking as many operands and results
    weft::fuzz::lastMutation = "op-name";
    std::vector<std::string> names;
    for (const OpArity &other : kOps)
      if (accepts(other, op.operands.size(), op.numResults()) || chance(rng, 3))
        names.push_back(other.name);
    if (names.empty())
      return false;
    op.name = pick(names, rng);
    break;
  }
  case 1:
  case 2:
  case 3: { // attributes: add, drop, or give one a new value
    weft::fuzz::lastMutation = "attribute";
    std::vector<std::string> entries = splitTopLevel(op.attributes);
    size_t kind = below(rng, 4);
    if (kind == 0 && !entries.empty()) {
      entries.erase(entries.begin() + below(rng, entries.size()));
    } else if (kind == 1 && !entries.empty()) {
      std::string &entry = entries[below(rng, entries.size())];
      entry = attributeFor(entry.substr(0, entry.find(" = ")), shape, rng);
    } else {
      entries.push_back(randomAttribute(shape, rng));
    }
    op.attributes = joinList(entries);
    op.hasAttributes = !entries.empty();
    break;
  }
  case 4: { // swap two operands together with their types
    weft::fuzz::lastMutation = "operand-swap";
    if (op.operands.size() < 2)
      return false;
    size_t i = below(rng, op.operands.size()), j = below(rng, op.operands.size());
    if (i == j)
      return false;
    std::swap(op.operands[i], op.operands[j]);
    std::swap(op.operandTypes[i], op.operandTypes[j]);
    break;
  }
  case 5:
  case 6: { // another value of the function as an operand (its own type)
    weft::fuzz::lastMutation = "operand-replace";
    if (op.operands.empty())
      return false;
    auto [begin, end] = functionAround(lines, l);
    auto typed = valuesWithTypes(lines, begin, l);
    if (typed.empty())
      return false;
    size_t i = below(rng, op.operands.size());
    std::vector<std::pair<std::string, std::string>> sameType;
    for (auto &value : typed)
      if (value.second == op.operandTypes[i])
        sameType.push_back(value);
    auto &chosen = sameType.empty() || chance(rng, 30) ? pick(typed, rng)
                                                       : pick(sameType, rng);
    op.operands[i] = chosen.first;
    op.operandTypes[i] = chosen.second;
    (void)end;
    break;
  }
  case 7: { // drop an operand, or repeat one (optional and variadic operands)
    weft::fuzz::lastMutation = "operand-count";
    const OpArity &arity = *findOp(op.name);
    bool canDrop = !op.operands.empty() &&
                   accepts(arity, op.operands.size() - 1, op.numResults());
    bool canAdd = accepts(arity, op.operands.size() + 1, op.numResults());
    if (!canDrop && !canAdd && !chance(rng, 10))
      return false;
    if (!op.operands.empty() && (canDrop || !canAdd) && (!canAdd || chance(rng, 50))) {
      size_t i = chance(rng, 70) ? op.operands.size() - 1 : below(rng, op.operands.size());
      op.operands.erase(op.operands.begin() + i);
      op.operandTypes.erase(op.operandTypes.begin() + i);
    } else {
      auto [begin, end] = functionAround(lines, l);
      auto typed = valuesWithTypes(lines, begin, l);
      if (typed.empty())
        return false;
      // Often a 0-d i64, the seed that attention and dropout take.
      std::vector<std::pair<std::string, std::string>> seeds;
      for (auto &value : typed)
        if (value.second == "tensor<i64>")
          seeds.push_back(value);
      auto &chosen = !seeds.empty() && chance(rng, 50) ? pick(seeds, rng) : pick(typed, rng);
      op.operands.push_back(chosen.first);
      op.operandTypes.push_back(chosen.second);
      (void)end;
    }
    break;
  }
  case 8: { // one more result (attention's lse, another split piece)
    weft::fuzz::lastMutation = "result-count";
    if (op.results.find(':') != std::string::npos || op.resultTypes.empty() ||
        (!accepts(*findOp(op.name), op.operands.size(), op.numResults() + 1) &&
         !chance(rng, 10)))
      return false;
    op.results += ", " + freshName(rng);
    std::vector<int64_t> rows = shapeOf(op.resultTypes[0]);
    std::string type = op.resultTypes[0];
    if (!rows.empty() && chance(rng, 50)) {
      rows.pop_back();
      type = "tensor<";
      for (int64_t d : rows)
        type += std::to_string(d) + "x";
      type += "f32>";
    }
    op.resultTypes.push_back(type);
    break;
  }
  default: { // change one operand's type at this use only (a parse error
             // unless the value's type is inferred elsewhere: exercises
             // the parser's diagnostics)
    weft::fuzz::lastMutation = "operand-type";
    if (op.operandTypes.empty())
      return false;
    std::string &type = op.operandTypes[below(rng, op.operandTypes.size())];
    std::vector<int64_t> dims = shapeOf(type);
    type = "tensor<";
    for (int64_t d : dims)
      type += std::to_string(chance(rng, 20) ? d + 1 : d) + "x";
    type += pick(kElementTypes, rng) + ">";
    break;
  }
  }
  lines[l] = op.print();
  return true;
}

/// Inserts op `line` (perhaps from another input) before line `at`, with
/// operands rewired to values of their types defined above `at` in the same
/// function and fresh result names; fails (inserting nothing) when some
/// operand type has no such value.
bool insertOp(std::vector<std::string> &lines, const std::string &line, size_t at,
              Rng &rng) {
  OpLine op;
  if (!OpLine::parse(line, op))
    return false;
  auto [begin, end] = functionAround(lines, at);
  auto typed = valuesWithTypes(lines, begin, at);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    std::vector<std::string> sameType;
    for (auto &[name, type] : typed)
      if (type == op.operandTypes[i])
        sameType.push_back(name);
    if (sameType.empty())
      return false;
    op.operands[i] = pick(sameType, rng);
  }
  size_t n = op.numResults();
  if (op.results.find(':') != std::string::npos)
    op.results = freshName(rng) + ":" + std::to_string(n);
  else {
    std::vector<std::string> names;
    for (size_t i = 0; i < n; ++i)
      names.push_back(freshName(rng));
    op.results = joinList(names);
  }
  (void)end;
  lines.insert(lines.begin() + at, op.print());
  return true;
}

/// A random position inside a function body: after a `func.func` line, at
/// or before its return.
bool bodyPosition(const std::vector<std::string> &lines, Rng &rng, size_t &at) {
  std::vector<size_t> returns;
  for (size_t l = 1; l < lines.size(); ++l)
    if (isCode(lines[l]) && lines[l].find("return") != std::string::npos)
      returns.push_back(l);
  if (returns.empty())
    return false;
  size_t ret = pick(returns, rng);
  auto [begin, end] = functionAround(lines, ret);
  if (begin >= ret)
    return false;
  at = begin + 1 + below(rng, ret - begin);
  (void)end;
  return true;
}

bool mutateLines(std::vector<std::string> &lines, Rng &rng) {
  if (lines.size() < 2)
    return false;
  if (chance(rng, 60)) {
    // Copy an op of this input to another place of a function, rewired.
    weft::fuzz::lastMutation = "op-copy";
    std::vector<size_t> ops = opLines(lines);
    if (ops.empty())
      return false;
    size_t from = pick(ops, rng), at;
    for (int attempt = 0; attempt < 4; ++attempt)
      if (bodyPosition(lines, rng, at) && insertOp(lines, lines[from], at, rng))
        return true;
    // Right after the original its operands are always at hand.
    return insertOp(lines, lines[from], from + 1, rng);
  }
  weft::fuzz::lastMutation = "line-delete";
  lines.erase(lines.begin() + below(rng, lines.size()));
  return true;
}

} // namespace

size_t weft::fuzz::mutateIR(uint8_t *data, size_t size, size_t maxSize,
                            unsigned seed) {
  Rng rng(seed);
  // Raw byte mutations now and then: they reach the lexer and parser.
  if (chance(rng, 8)) {
    lastMutation = "bytes";
    return LLVMFuzzerMutate(data, size, maxSize);
  }
  std::string original(reinterpret_cast<const char *>(data), size);
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string text = original;
    bool changed = false;
    size_t kind = below(rng, 10);
    if (kind < 2) {
      lastMutation = "dim";
      changed = mutateDim(text, rng);
    } else if (kind < 3) {
      lastMutation = "element-type";
      changed = mutateElementType(text, rng);
    } else {
      std::vector<std::string> lines = splitLines(text);
      changed = kind < 8 ? mutateOp(lines, rng) : mutateLines(lines, rng);
      if (changed)
        text = joinLines(lines);
    }
    if (changed && text != original && text.size() <= maxSize) {
      memcpy(data, text.data(), text.size());
      return text.size();
    }
  }
  lastMutation = "bytes";
  return LLVMFuzzerMutate(data, size, maxSize);
}

size_t weft::fuzz::crossOverIR(const uint8_t *data1, size_t size1,
                               const uint8_t *data2, size_t size2, uint8_t *out,
                               size_t maxOutSize, unsigned seed) {
  Rng rng(seed);
  std::vector<std::string> lines =
      splitLines(std::string(reinterpret_cast<const char *>(data1), size1));
  std::vector<std::string> donor =
      splitLines(std::string(reinterpret_cast<const char *>(data2), size2));
  std::vector<size_t> donorOps = opLines(donor);
  size_t at;
  if (chance(rng, 5) || donorOps.empty() || !bodyPosition(lines, rng, at)) {
    // Both inputs one after the other: more functions, the donor's renamed
    // (but now and then a symbol defined twice).
    lastMutation = "splice-append";
    std::string suffix = chance(rng, 90) ? "_" + std::to_string(below(rng, 1000)) : "";
    for (std::string line : donor) {
      size_t at = line.find("func.func @");
      size_t open = at == std::string::npos ? at : line.find('(', at);
      if (!suffix.empty() && isCode(line) && open != std::string::npos)
        line.insert(open, suffix);
      lines.push_back(line);
    }
  } else {
    // Ops of the donor spliced into a function here, operands rewired.
    lastMutation = "splice-ops";
    size_t count = 1 + below(rng, 3), inserted = 0;
    for (size_t k = 0; k < 4 * count && inserted < count; ++k)
      if (bodyPosition(lines, rng, at) &&
          insertOp(lines, donor[pick(donorOps, rng)], at, rng))
        ++inserted;
    if (!inserted)
      return 0;
  }
  std::string text = joinLines(lines);
  if (text.size() > maxOutSize)
    return 0;
  memcpy(out, text.data(), text.size());
  return text.size();
}
