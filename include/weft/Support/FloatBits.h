// Bit-exact conversions between float64 and the narrow float formats Weft
// stores (f16, bf16), and rounding a float64 to a tensor element type. The
// .npz convention stores bf16 as its uint16 bit pattern, and random inputs are
// drawn in float64 and rounded to the argument's type.
#ifndef WEFT_SUPPORT_FLOATBITS_H
#define WEFT_SUPPORT_FLOATBITS_H

#include "weft/Reference/Tensor.h"

#include <cstdint>

namespace weft {

/// IEEE binary16 bits of `value`, rounded to nearest even; overflow gives
/// infinity, NaN stays NaN (quiet, sign kept).
uint16_t f16Bits(double value);
/// The value of binary16 bits (exact in float64).
double f16Value(uint16_t bits);

/// bfloat16 bits of `value` (8 exponent, 7 mantissa bits), rounded to nearest
/// even directly from float64 (no double rounding through f32).
uint16_t bf16Bits(double value);
double bf16Value(uint16_t bits);

/// `value` rounded to the nearest value of `dtype`: floats round to nearest
/// even, i64 rounds to the nearest integer (ties away from zero), i1 is
/// `value != 0`.
double roundToDType(double value, DType dtype);

} // namespace weft

#endif // WEFT_SUPPORT_FLOATBITS_H
