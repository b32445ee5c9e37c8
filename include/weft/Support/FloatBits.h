// Bit-exact conversions between float64 and the narrow float formats Weft
// stores (f16, bf16), and rounding a float64 to a tensor element type. The
// .npz convention stores bf16 as its uint16 bit pattern, and random inputs are
// drawn in float64 and rounded to the argument's type.
#ifndef WEFT_SUPPORT_FLOATBITS_H
#define WEFT_SUPPORT_FLOATBITS_H

#include "weft/Support/Tensor.h"

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

/// A split f32 master (--weight-copies=split) keeps an f32 weight as two
/// 16-bit halves: the bf16 high half the GEMMs read, and an i16 low half, so
/// that join(hi, lo) = bitcast<f32>((uint32(hi) << 16) + int32(lo)) wrapping
/// is the master exactly. The high half rounds to nearest (ties away from
/// zero) so it is a good bf16 weight; the low half is the signed remainder.
/// A NaN master gives a quiet NaN high half (sign kept) and a zero low half,
/// so the forward sees NaN rather than a silently finite weight.
uint16_t splitMasterHigh(float master);
int16_t splitMasterLow(float master);
float joinMaster(uint16_t high, int16_t low);

/// `value` rounded to the nearest value of `dtype`: floats round to nearest
/// even, i64 rounds to the nearest integer (ties away from zero), i1 is
/// `value != 0`.
double roundToDType(double value, DType dtype);

} // namespace weft

#endif // WEFT_SUPPORT_FLOATBITS_H
