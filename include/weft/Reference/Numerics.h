// Bit-exact numerics shared by the reference interpreter, the CPU tiles and
// the tests: rounding from float64 to each element type, and the Philox4x32-10
// counter-based generator behind every random op.
//
// The dropout rule (ARCHITECTURE.md, "Randomness"): an op with seed `s` (its
// 0-d i64 operand) and attribute `weft.rng_id = r` keeps element `i` (the
// row-major index into the op's *global* logical tensor) iff
//
//   draw(i) = philox4x32_10(counter = {uint32(i/4), uint32((i/4) >> 32), 0, 0},
//                           key     = {uint32(s), uint32(r)})[i % 4]
//   draw(i) >= uint64(ldexp(p, 32))   (the product truncated to an integer)
//
// and a kept element is scaled by 1/(1-p). Because the draw depends only on
// (seed, rng_id, i), every implementation and every shard agrees bit for bit.
#ifndef WEFT_REFERENCE_NUMERICS_H
#define WEFT_REFERENCE_NUMERICS_H

#include "weft/Support/Tensor.h"

#include <array>
#include <cstdint>

namespace weft {

//===----------------------------------------------------------------------===//
// Rounding
//===----------------------------------------------------------------------===//

/// `value` rounded once, to nearest with ties to even, to bfloat16 (8-bit
/// significand, f32's exponent range). Overflow gives a signed infinity,
/// underflow rounds into the subnormals; NaN stays NaN. No intermediate
/// rounding through f32 (which would round twice).
double roundToBF16(double value);
/// The same for IEEE binary16 (11-bit significand, exponents -14..15).
double roundToF16(double value);
/// The same for binary32 (a float cast, which rounds once to nearest even).
double roundToF32(double value);
/// `value` as the element type `dtype` holds it: floats rounded as above, i64
/// truncated toward zero (saturated at the i64 range), i1 as 0 or 1.
/// (Bit patterns for .npz I/O live in weft/Support/FloatBits.h.)
double roundValue(double value, DType dtype);
/// Rounds every element of `tensor` to its own dtype.
void roundTensor(Tensor &tensor);

//===----------------------------------------------------------------------===//
// Philox4x32-10 (Salmon et al., SC'11; the Random123 reference constants)
//===----------------------------------------------------------------------===//

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// Ten rounds of Philox4x32 on `counter` under `key`, as Random123's
/// philox4x32_R(10, ...).
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

/// The 32-bit draw of element `index` for an op with `seed` and `rngId`.
uint32_t philoxDraw(int64_t seed, int64_t rngId, uint64_t index);

/// The integer threshold uint64(ldexp(p, 32)) a draw must reach to be kept.
uint64_t dropoutThreshold(double p);

/// Whether element `index` survives dropout with probability `p`.
inline bool dropoutKeeps(int64_t seed, int64_t rngId, uint64_t index,
                         double p) {
  return philoxDraw(seed, rngId, index) >= dropoutThreshold(p);
}

} // namespace weft

#endif // WEFT_REFERENCE_NUMERICS_H
