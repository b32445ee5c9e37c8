"""set_gemm_field.py IN OUT GEMM FIELD VALUE: rewrites one u32 field of a GEMM
record (field 8 = dtype, 9 = epilogue) and recomputes the GEMMS section's and
the header's FNV-1a 64 checksums, so the reader accepts the file and the
runtime's descriptor check has to catch the value (layout: PackageFormat.h)."""
import struct
import sys

GEMMS, GEMM_BYTES = 8, 208


def fnv1a64(data, h=0xCBF29CE484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


src, dst, gemm, field, value = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
data = bytearray(open(src, "rb").read())
count, = struct.unpack_from("<I", data, 24)
table, = struct.unpack_from("<Q", data, 32)
for i in range(count):
    entry = table + 32 * i
    kind, _, offset, length, _ = struct.unpack_from("<IIQQQ", data, entry)
    if kind == GEMMS:
        struct.pack_into("<I", data, offset + gemm * GEMM_BYTES + 4 * field, value)
        struct.pack_into("<Q", data, entry + 24, fnv1a64(data[offset:offset + length]))
header = fnv1a64(data[table:table + 32 * count], fnv1a64(data[:72]))
struct.pack_into("<Q", data, 72, header)
open(dst, "wb").write(bytes(data))
