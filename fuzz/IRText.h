// MLIR text as weft-fuzz's mutator sees it: lines, top-level comma lists,
// tensor types, and weft op lines in the uniform custom form with the op table
// (names and arities) that recognises them. No MLIR dependency.
#ifndef WEFT_FUZZ_IRTEXT_H
#define WEFT_FUZZ_IRTEXT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::fuzz {

/// Operand and result counts an op's custom form accepts (-1: any number).
struct OpArity {
  const char *name;
  int minOperands, maxOperands, minResults, maxResults;
};

/// Every weft op the mutator knows, with its arity.
extern const std::vector<OpArity> kOps;

/// The op of kOps named `name` (without "weft."), or null.
const OpArity *findOp(std::string_view name);
/// Whether `op`'s custom form takes that many operands and results.
bool accepts(const OpArity &op, size_t operands, size_t results);

std::vector<size_t> findAll(const std::string &text, std::string_view needle);
std::vector<std::string> splitLines(const std::string &text);
std::string joinLines(const std::vector<std::string> &lines);
/// Splits at commas outside <>, [], (), {} and strips leading spaces.
std::vector<std::string> splitTopLevel(const std::string &body);
/// Whether a line is IR rather than a comment (the lit tests' CHECK lines
/// quote IR, and mutating or splicing them does nothing useful).
bool isCode(const std::string &line);
std::string joinList(const std::vector<std::string> &items);
/// The dims of a `tensor<AxBxT>` type string (empty for anything else).
std::vector<int64_t> shapeOf(const std::string &type);

/// A tensor type in the text: [begin, end) covers `tensor<...>`, dims are the
/// `N` of each `Nx`, element the element type's span.
struct TensorSite {
  size_t begin, end;
  std::vector<std::pair<size_t, size_t>> dims;
  size_t elementBegin, elementEnd;
};

std::vector<TensorSite> findTensors(const std::string &text);

/// One weft op in the custom form, split into its parts; `print` puts it
/// back together after edits.
struct OpLine {
  std::string indent, results, name, attributes; // results: "%a, %b" or "%a:2"
  std::vector<std::string> operands, operandTypes, resultTypes;
  bool hasAttributes = false;

  /// Fills `op` from `line`; false when the line is not a weft op of kOps
  /// in the custom form.
  static bool parse(const std::string &line, OpLine &op);
  std::string print() const;
  size_t numResults() const;
  std::vector<int64_t> firstOperandShape() const;
};

/// Lines of `lines` that hold a weft op in the custom form.
std::vector<size_t> opLines(const std::vector<std::string> &lines);
/// The function around line `l`: [first line after `func.func`, its return].
std::pair<size_t, size_t> functionAround(const std::vector<std::string> &lines,
                                         size_t l);
/// Values with a known type in lines [begin, end): `%name: type` (function
/// arguments) and `%name = ... -> type` (single results).
std::vector<std::pair<std::string, std::string>>
valuesWithTypes(const std::vector<std::string> &lines, size_t begin, size_t end);

} // namespace weft::fuzz

#endif // WEFT_FUZZ_IRTEXT_H
