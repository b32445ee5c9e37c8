"""Makes bad packages on purpose for weft-run --check tests: edits one field
of a valid package and, unless told not to, re-signs it (section and header
FNV-1a checksums), following package/lib/PackageFormat.h.

  edit_package.py IN OUT overlap | past-arena | undefined-arg
  edit_package.py IN OUT flip SECTION_KIND   (no re-signing: checksum fails)
  edit_package.py IN OUT version N           (the header's format version)
  edit_package.py IN OUT copy-of N           (the first carried copy's master
                                              becomes argument N)
  edit_package.py IN OUT collective FROM TO FIELD
                                             (the first collective of kind
                                              FROM with an even count and two
                                              buffers becomes kind TO, its
                                              reduction slot FIELD, e.g. 0x1000001)
  edit_package.py IN OUT rank-scale S        (every rank-relative launch
                                              immediate's scale becomes S: 0
                                              gives every rank rank 0's offsets)
"""
import struct
import sys

HEADER, ENTRY = 80, 32
STEP, BUFFERS, LAUNCHES, ARGS, COLLECTIVES, RANK_ARGS = 2, 3, 6, 7, 17, 22
BUFFER_BYTES, LAUNCH_BYTES, ARG_BYTES, COLLECTIVE_BYTES = 56, 48, 16, 40


def fnv(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def table(pkg):
    count, = struct.unpack_from("<I", pkg, 24)
    off, = struct.unpack_from("<Q", pkg, 32)
    return [struct.unpack_from("<IIQQQ", pkg, off + i * ENTRY) + (off + i * ENTRY,)
            for i in range(count)]


def section(pkg, kind):
    for k, _, off, length, _, _ in table(pkg):
        if k == kind:
            return off, length
    raise SystemExit("no section %d" % kind)


def resign(pkg):
    for k, idx, off, length, _, at in table(pkg):
        struct.pack_into("<Q", pkg, at + 24, fnv(pkg[off:off + length]))
    count, = struct.unpack_from("<I", pkg, 24)
    toff, = struct.unpack_from("<Q", pkg, 32)
    h = fnv(pkg[toff:toff + count * ENTRY], fnv(pkg[:72]))
    struct.pack_into("<Q", pkg, 72, h)


def buffers(pkg):
    off, length = section(pkg, BUFFERS)
    out = []
    for i in range(length // BUFFER_BYTES):
        at = off + i * BUFFER_BYTES
        offset, size, first, last = struct.unpack_from("<QQII", pkg, at + 16)
        out.append((at, offset, size, first, last))
    return out


def main():
    src, dst, what = sys.argv[1:4]
    pkg = bytearray(open(src, "rb").read())
    if what == "overlap":
        # Move a buffer onto another one live at the same time.
        bs = [b for b in buffers(pkg) if b[2] > 0]
        for a in bs:
            for b in bs:
                if a is not b and a[3] <= b[4] and b[3] <= a[4] and a[1] != b[1]:
                    struct.pack_into("<Q", pkg, b[0] + 16, a[1])
                    resign(pkg)
                    open(dst, "wb").write(pkg)
                    return
        raise SystemExit("no two buffers live together")
    elif what == "past-arena":
        soff, _ = section(pkg, STEP)
        arena, = struct.unpack_from("<Q", pkg, soff + 8)
        struct.pack_into("<Q", pkg, buffers(pkg)[0][0] + 16, arena)
        resign(pkg)
    elif what == "undefined-arg":
        aoff, alen = section(pkg, ARGS)
        for i in range(alen // ARG_BYTES):
            kind, = struct.unpack_from("<I", pkg, aoff + i * ARG_BYTES)
            if kind == 0:
                struct.pack_into("<Q", pkg, aoff + i * ARG_BYTES + 8, 999999)
                break
        resign(pkg)
    elif what == "copy-of":
        # The u32 after the role: the master's argument + 1 (0: no copy).
        for b in buffers(pkg):
            if struct.unpack_from("<I", pkg, b[0] + 44)[0]:
                struct.pack_into("<I", pkg, b[0] + 44, int(sys.argv[4]) + 1)
                break
        else:
            raise SystemExit("no carried weight copy in the package")
        resign(pkg)
    elif what == "collective":
        # u32 kind, input, output, dtype, reduction, axes, stream, index; i64 count.
        src_kind, to_kind, field = (int(v, 0) for v in sys.argv[4:7])
        off, length = section(pkg, COLLECTIVES)
        for at in range(off, off + length, COLLECTIVE_BYTES):
            kind, inp, out = struct.unpack_from("<III", pkg, at)
            count, = struct.unpack_from("<Q", pkg, at + 32)
            if kind == src_kind and inp != out and count % 2 == 0:
                struct.pack_into("<I", pkg, at, to_kind)
                struct.pack_into("<I", pkg, at + 16, field)
                break
        else:
            raise SystemExit("no collective of kind %d to edit" % src_kind)
        resign(pkg)
    elif what == "rank-scale":
        # 24-byte records: u32 launch, argument, axes, 0; i64 scale.
        off, length = section(pkg, RANK_ARGS)
        for at in range(off, off + length, 24):
            struct.pack_into("<q", pkg, at + 16, int(sys.argv[4]))
        resign(pkg)
    elif what == "flip":
        off, length = section(pkg, int(sys.argv[4]))
        pkg[off + length // 2] ^= 0x40
    elif what == "version":
        struct.pack_into("<I", pkg, 8, int(sys.argv[4]))
    else:
        raise SystemExit("unknown edit " + what)
    open(dst, "wb").write(pkg)


main()
