// IR-aware mutations of MLIR text for weft-fuzz (libFuzzer's custom mutator
// and cross-over hooks call these).
#ifndef WEFT_FUZZ_IRMUTATOR_H
#define WEFT_FUZZ_IRMUTATOR_H

#include <cstddef>
#include <cstdint>

namespace weft::fuzz {

/// The kind of the last mutation made (for WEFT_FUZZ_STATS).
extern const char *lastMutation;

/// Mutates the IR text in data[0, size) in place, within maxSize bytes: a
/// tensor dim or element type (mostly at every site of that type, so values
/// keep one type), or one weft op: its name (to one of the same arity), an
/// attribute (added, dropped, or a new value of its kind: permutations, dims,
/// sizes that fit the operand, NaN, inf, huge values), operands swapped with
/// their types, replaced by another value, added or dropped, a result added,
/// an operand type changed; an op copied elsewhere with rewired operands, a
/// line deleted; sometimes a raw LLVMFuzzerMutate.
/// Returns the new size.
size_t mutateIR(uint8_t *data, size_t size, size_t maxSize, unsigned seed);

/// Writes into `out` the first input with op lines of the second spliced into
/// one of its functions (operands rewired by type), or both inputs appended.
/// Returns the size written, 0 for none.
size_t crossOverIR(const uint8_t *data1, size_t size1, const uint8_t *data2,
                   size_t size2, uint8_t *out, size_t maxOutSize, unsigned seed);

} // namespace weft::fuzz

#endif // WEFT_FUZZ_IRMUTATOR_H
