// MLIR text as weft-fuzz's mutator sees it (IRText.h): lines, lists, tensor
// types and weft op lines, parsed and printed back without MLIR.
#include "IRText.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace weft::fuzz {

const std::vector<OpArity> kOps = {
    {"linear", 2, 3, 1, 1},          {"matmul", 2, 2, 1, 1},
    {"attention", 3, 4, 1, 2},       {"attention_grad", 6, 7, 3, 3},
    {"layer_norm", 3, 3, 1, 1},      {"layer_norm_grad", 3, 3, 3, 3},
    {"rms_norm", 2, 2, 1, 1},        {"rms_norm_grad", 3, 3, 2, 2},
    {"softmax", 1, 1, 1, 1},         {"softmax_grad", 2, 2, 1, 1},
    {"gelu", 1, 1, 1, 1},            {"gelu_grad", 2, 2, 1, 1},
    {"silu", 1, 1, 1, 1},            {"silu_grad", 2, 2, 1, 1},
    {"tanh", 1, 1, 1, 1},            {"exp", 1, 1, 1, 1},
    {"rsqrt", 1, 1, 1, 1},           {"neg", 1, 1, 1, 1},
    {"log", 1, 1, 1, 1},             {"sqrt", 1, 1, 1, 1},
    {"cos", 1, 1, 1, 1},             {"sin", 1, 1, 1, 1},
    {"sigmoid", 1, 1, 1, 1},         {"pow", 1, 1, 1, 1},
    {"add", 2, 2, 1, 1},             {"sub", 2, 2, 1, 1},
    {"mul", 2, 2, 1, 1},             {"div", 2, 2, 1, 1},
    {"scale", 1, 1, 1, 1},           {"dropout", 2, 2, 1, 1},
    {"causal_mask", 1, 1, 1, 1},     {"where", 3, 3, 1, 1},
    {"convert", 1, 1, 1, 1},         {"reduce_sum", 1, 1, 1, 1},
    {"reduce_mean", 1, 1, 1, 1},     {"reshape", 1, 1, 1, 1},
    {"transpose", 1, 1, 1, 1},       {"split", 1, 1, 0, -1},
    {"concat", 0, -1, 1, 1},         {"embedding", 2, 2, 1, 1},
    {"embedding_grad", 2, 2, 1, 1},  {"cross_entropy", 2, 2, 1, 1},
    {"cross_entropy_grad", 3, 3, 1, 1}, {"rope", 3, 3, 1, 1},
    {"adamw", 5, 5, 3, 3}};

const OpArity *findOp(std::string_view name) {
  for (const OpArity &op : kOps)
    if (name == op.name)
      return &op;
  return nullptr;
}

bool accepts(const OpArity &op, size_t operands, size_t results) {
  auto within = [](size_t n, int lo, int hi) {
    return int64_t(n) >= lo && (hi < 0 || int64_t(n) <= hi);
  };
  return within(operands, op.minOperands, op.maxOperands) &&
         within(results, op.minResults, op.maxResults);
}

std::vector<size_t> findAll(const std::string &text, std::string_view needle) {
  std::vector<size_t> sites;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + 1))
    sites.push_back(pos);
  return sites;
}

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      return lines;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string joinLines(const std::vector<std::string> &lines) {
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i)
    text += (i ? "\n" : "") + lines[i];
  return text;
}

std::vector<std::string> splitTopLevel(const std::string &body) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : body) {
    if (c == '<' || c == '[' || c == '(' || c == '{')
      ++depth;
    if (c == '>' || c == ']' || c == ')' || c == '}')
      --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  if (!current.empty())
    parts.push_back(current);
  for (std::string &part : parts) {
    size_t b = part.find_first_not_of(' ');
    part = b == std::string::npos ? "" : part.substr(b);
  }
  return parts;
}

bool isCode(const std::string &line) {
  size_t first = line.find_first_not_of(' ');
  return first != std::string::npos && line.compare(first, 2, "//") != 0;
}

std::string joinList(const std::vector<std::string> &items) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i)
    text += (i ? ", " : "") + items[i];
  return text;
}

std::vector<int64_t> shapeOf(const std::string &type) {
  std::vector<int64_t> shape;
  if (type.compare(0, 7, "tensor<") != 0)
    return shape;
  size_t i = 7;
  while (true) {
    size_t start = i;
    while (i < type.size() && isdigit(type[i]))
      ++i;
    if (i == start || i >= type.size() || type[i] != 'x')
      return shape;
    shape.push_back(std::min<int64_t>(strtoll(type.c_str() + start, nullptr, 10), 1 << 20));
    ++i;
  }
}

std::vector<TensorSite> findTensors(const std::string &text) {
  std::vector<TensorSite> sites;
  for (size_t pos : findAll(text, "tensor<")) {
    TensorSite site{pos, 0, {}, 0, 0};
    size_t i = pos + 7;
    while (true) {
      size_t start = i;
      while (i < text.size() && (isdigit(text[i]) || text[i] == '?'))
        ++i;
      if (i > start && i < text.size() && text[i] == 'x') {
        site.dims.push_back({start, i});
        ++i;
        continue;
      }
      i = start;
      break;
    }
    site.elementBegin = i;
    while (i < text.size() && (isalnum(text[i]) || text[i] == '_'))
      ++i;
    site.elementEnd = i;
    size_t close = text.find('>', i);
    if (close == std::string::npos || site.elementEnd == site.elementBegin)
      continue;
    site.end = close + 1;
    sites.push_back(site);
  }
  return sites;
}

bool OpLine::parse(const std::string &line, OpLine &op) {
  size_t at = line.find("weft.");
  size_t eq = line.find(" = ");
  if (at == std::string::npos || eq == std::string::npos || eq + 3 != at)
    return false;
  size_t nameEnd = at + 5;
  while (nameEnd < line.size() && (islower(line[nameEnd]) || line[nameEnd] == '_'))
    ++nameEnd;
  op.name = line.substr(at + 5, nameEnd - at - 5);
  if (!findOp(op.name))
    return false;
  size_t first = line.find_first_not_of(' ');
  if (line[first] != '%')
    return false;
  op.indent = line.substr(0, first);
  op.results = line.substr(first, eq - first);
  size_t colon = line.find(" : ", nameEnd);
  if (colon == std::string::npos)
    return false;
  std::string middle = line.substr(nameEnd, colon - nameEnd);
  size_t brace = middle.find(" {");
  op.hasAttributes = brace != std::string::npos;
  std::string operandText = middle.substr(0, brace);
  if (op.hasAttributes) {
    op.attributes = middle.substr(brace + 2);
    if (op.attributes.empty() || op.attributes.back() != '}')
      return false;
    op.attributes.pop_back();
  }
  op.operands = splitTopLevel(operandText);
  // Types: `(T, ...) -> T` or `(T, ...) -> (T, ...)`.
  std::string types = line.substr(colon + 3);
  size_t arrow = types.find(") -> ");
  if (types.empty() || types[0] != '(' || arrow == std::string::npos)
    return false;
  op.operandTypes = splitTopLevel(types.substr(1, arrow - 1));
  std::string resultText = types.substr(arrow + 5);
  if (!resultText.empty() && resultText[0] == '(' && resultText.back() == ')')
    resultText = resultText.substr(1, resultText.size() - 2);
  op.resultTypes = splitTopLevel(resultText);
  return op.operands.size() == op.operandTypes.size();
}

std::string OpLine::print() const {
  std::string line = indent + results + " = weft." + name;
  if (!operands.empty())
    line += " " + joinList(operands);
  if (hasAttributes)
    line += " {" + attributes + "}";
  line += " : (" + joinList(operandTypes) + ") -> ";
  if (resultTypes.size() == 1)
    line += resultTypes[0];
  else
    line += "(" + joinList(resultTypes) + ")";
  return line;
}

size_t OpLine::numResults() const {
  size_t colon = results.find(':');
  if (colon != std::string::npos)
    return strtoul(results.c_str() + colon + 1, nullptr, 10);
  return splitTopLevel(results).size();
}

std::vector<int64_t> OpLine::firstOperandShape() const {
  return operandTypes.empty() ? std::vector<int64_t>{} : shapeOf(operandTypes[0]);
}

std::vector<size_t> opLines(const std::vector<std::string> &lines) {
  std::vector<size_t> found;
  OpLine op;
  for (size_t l = 0; l < lines.size(); ++l)
    if (lines[l].find("weft.") != std::string::npos && isCode(lines[l]) &&
        OpLine::parse(lines[l], op))
      found.push_back(l);
  return found;
}

std::pair<size_t, size_t> functionAround(const std::vector<std::string> &lines,
                                         size_t l) {
  // `l` may be one past the last line (an insertion at the end).
  if (lines.empty())
    return {0, 0};
  l = std::min(l, lines.size() - 1);
  auto has = [&](size_t i, const char *word) {
    return isCode(lines[i]) && lines[i].find(word) != std::string::npos;
  };
  size_t begin = l;
  while (begin > 0 && !has(begin, "func.func"))
    --begin;
  size_t end = l;
  while (end + 1 < lines.size() && !has(end, "return"))
    ++end;
  return {begin, end};
}

std::vector<std::pair<std::string, std::string>>
valuesWithTypes(const std::vector<std::string> &lines, size_t begin, size_t end) {
  std::vector<std::pair<std::string, std::string>> typed;
  for (size_t l = begin; l < end && l < lines.size(); ++l) {
    const std::string &line = lines[l];
    if (!isCode(line))
      continue;
    if (line.find("func.func") != std::string::npos) {
      size_t open = line.find('('), close = line.find(") ");
      if (open == std::string::npos || close == std::string::npos || close < open)
        continue;
      for (const std::string &arg : splitTopLevel(line.substr(open + 1, close - open - 1))) {
        size_t colon = arg.find(": ");
        if (arg.empty() || arg[0] != '%' || colon == std::string::npos)
          continue;
        std::string type = arg.substr(colon + 2);
        type = type.substr(0, type.find(" {")); // argument attributes
        typed.push_back({arg.substr(0, colon), type});
      }
      continue;
    }
    OpLine op;
    if (OpLine::parse(line, op) && op.resultTypes.size() == 1 &&
        op.results.find_first_of(",:") == std::string::npos)
      typed.push_back({op.results, op.resultTypes[0]});
  }
  return typed;
}

} // namespace weft::fuzz
