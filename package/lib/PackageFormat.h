// The byte layout of a package (format version 2), shared by the writer and
// the reader. Everything is little-endian; records have fixed sizes.
//
//   header (80 bytes)
//     0  char[8]  magic "WEFTPKG\0"
//     8  u32      format version
//    12  u32      header bytes (80)
//    16  u64      file bytes
//    24  u32      section count
//    28  u32      reserved (0)
//    32  u64      section table offset
//    40  char[16] arch, NUL-padded ("sm_90a")
//    56  char[16] weft version, NUL-padded
//    72  u64      FNV-1a 64 of header bytes [0, 72) followed by the table
//   section table: count x 32 bytes
//     u32 kind, u32 index (image or buffer for kinds 12-14), u64 offset,
//     u64 length, u64 FNV-1a 64 of the section's bytes
//   sections (8-byte aligned). Strings are (u32 offset, u32 length) into the
//   STRINGS section. Sections 1-11 appear exactly once, 15-17 at most once
//   (16 and 17, the grid and collectives of a partitioned step, only there).
#ifndef WEFT_PACKAGE_LIB_PACKAGEFORMAT_H
#define WEFT_PACKAGE_LIB_PACKAGEFORMAT_H

#include <cstddef>
#include <cstdint>

namespace weft::pkg::format {

inline constexpr char kMagic[8] = {'W', 'E', 'F', 'T', 'P', 'K', 'G', '\0'};
inline constexpr size_t kHeaderBytes = 80;
inline constexpr size_t kTableEntryBytes = 32;
inline constexpr size_t kNameBytes = 16; // arch, weft version
inline constexpr size_t kChecksumOffset = 72;

enum SectionKind : uint32_t {
  kStrings = 1,
  kStep = 2,       // 1 record, 32 bytes: str name, u64 arena, u64 alignment,
                   //   u32 steps, u32 streams
  kBuffers = 3,    // 56: str name, str type, u64 offset, u64 size, u32 first,
                   //   u32 last, u32 role, u32 copy_of + 1 (the master's
                   //   argument of a carried weight copy; 0: none), i32 arg,
                   //   i32 result
  kKernels = 4,    // 40: str name, str entry, str image, u32 image index,
                   //   u32 params first, u32 params count, u32 0
  kParamKinds = 5, // 1 byte per parameter
  kLaunches = 6,   // 48: u32 kernel, grid[3], block[3], smem, stream, index,
                   //   args first, args count
  kArgs = 7,       // 16: u32 kind, u32 0, u64 value
  kGemms = 8,      // 208: u32 a, b, c, d, bias, workspace, trans_a, trans_b,
                   //   dtype, epilogue (0-7: none, bias, gelu, bias_gelu,
                   //   bgrad_a, gelu_aux, gelu_aux_bias, dgelu); i64 m, n,
                   //   k, batch, strides[4]; f32 alpha, beta; u32 stream,
                   //   index, has_algo, 0; u8 algo[64]; u32 aux (buffer or
                   //   0xFFFFFFFF), u32 0, i64 aux_ld (version 2)
  kEvents = 9,     // 16: u32 record (1) / wait (0), stream, event, index
  kSchedule = 10,  // 8: u32 entry kind, u32 item
  kImages = 11,    // 8: str name
  kCubin = 12,     // index = image; raw bytes
  kPtx = 13,       // index = image; raw bytes
  kInitData = 14,  // index = buffer; exactly the buffer's size
  kTensorMaps = 15, // optional, at most once; 112: u32 buffer, dtype, rank,
                    //   swizzle bytes; u64 dims[5], strides[4]; u32 box[5], 0
  kGrid = 16,        // optional, at most once: the device grid of a
                     //   partitioned step, one i64 per axis (1 to 8 axes)
  kCollectives = 17, // optional, at most once, needs kGrid; 40: u32 kind
                     //   (0-4: all_reduce, all_gather, reduce_scatter,
                     //   all_to_all, send_recv), input, output, dtype,
                     //   reduction, axes (bit per grid axis), stream, index;
                     //   i64 count. reduction: all_reduce and reduce_scatter
                     //   0-3 (sum, max, min, avg); all_gather and all_to_all
                     //   0; send_recv the shift (encodeShift below)
  kSplits = 18,      // optional, at most once, needs kGrid; u32 split axis,
                     //   u32 0, then 8: u32 buffer, u32 dimension of the
                     //   whole tensor this rank holds a block of
  kOffsets = 19,     // optional, at most once; 48: u32 entry kind (1: gemm,
                     //   3: collective), u32 item; i64 element offsets[5]
                     //   (gemm: a, b, c, d, aux; collective: input, output,
                     //   0, 0, 0), one record per entry with one not 0
  kBound = 20,       // optional, at most once; 4: u32 buffer, ascending:
                     //   the argument buffers the caller binds (outside the
                     //   arena, offset 0). Absent when none is, so packages
                     //   without bound arguments keep their bytes; a reader
                     //   that predates it refuses the unknown kind.
  kRankOffsets = 21, // optional, at most once, needs kGrid; 56: u32 gemm,
                     //   u32 grid axes (bit per axis); i64 shift, i64
                     //   element strides[5] (a, b, c, d, aux): the GEMM's
                     //   offsets grow by ((position + shift) mod ranks) x
                     //   stride on the rank at `position` of its group
                     //   along the axes (a local-first collective matmul)
  kRankArgs = 22,    // optional, at most once, needs kGrid; 24: u32 launch,
                     //   u32 argument (its position in the launch), u32
                     //   grid axes (bit per axis), u32 0, i64 scale: the
                     //   launch's i64 (or i32) immediate is value + position x
                     //   scale on the rank at `position` of its group
                     //   along the axes (a shard's global offset)
};
inline constexpr uint32_t kFirstKind = kStrings, kLastKind = kRankArgs;
inline constexpr uint32_t kLastRequiredKind = kImages;

inline constexpr size_t kStepBytes = 32;
inline constexpr size_t kBufferBytes = 56;
inline constexpr size_t kKernelBytes = 40;
inline constexpr size_t kLaunchBytes = 48;
inline constexpr size_t kArgBytes = 16;
inline constexpr size_t kGemmBytes = 208;
inline constexpr size_t kEventBytes = 16;
inline constexpr size_t kEntryBytes = 8;
inline constexpr size_t kImageBytes = 8;
inline constexpr size_t kTensorMapBytes = 112;
inline constexpr size_t kCollectiveBytes = 40;
inline constexpr size_t kOffsetsBytes = 48;
inline constexpr size_t kBoundBytes = 4;
inline constexpr size_t kRankOffsetsBytes = 56;
inline constexpr size_t kRankArgsBytes = 24;

const char *sectionName(uint32_t kind);

// send_recv's shift in the collective record's reduction slot, which no
// reduction uses for it: bits 0-23 the shift in positions along the group
// (24-bit two's complement, not 0), bit 24 rotate, bits 25-31 0.
inline constexpr uint32_t kShiftBits = 0x00FFFFFFu, kRotateBit = 0x01000000u;
inline uint32_t encodeShift(int32_t shift, bool rotate) {
  return (uint32_t(shift) & kShiftBits) | (rotate ? kRotateBit : 0u);
}
// False when a reserved bit is set or the shift is 0.
inline bool decodeShift(uint32_t field, int32_t &shift, bool &rotate) {
  if (field & ~(kShiftBits | kRotateBit))
    return false;
  uint32_t bits = field & kShiftBits;
  shift = int32_t(bits) - ((bits & 0x00800000u) ? int32_t(1 << 24) : 0);
  rotate = field & kRotateBit;
  return shift != 0;
}

} // namespace weft::pkg::format

#endif // WEFT_PACKAGE_LIB_PACKAGEFORMAT_H
