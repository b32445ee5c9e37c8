"""Regenerates the .npz fixtures of NpzTest.cpp with numpy (run from this
directory: python3 make_npz_fixtures.py). The files are committed so the unit
tests need no Python; rerun only to change a fixture, then update the test."""
import io
import zipfile

import numpy as np


def bf16_bits(values):
    # Round-to-nearest-even of float32 to bfloat16 (values here are exact).
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    return (bits >> 16).astype(np.uint16)


# np.savez writes STORED members with force_zip64, i.e. zip64 extra fields in
# the local headers.
np.savez(
    "savez_zip64.npz",
    arg0=(np.arange(6, dtype=np.float32) * 0.5 - 1).reshape(2, 3),
    arg1=bf16_bits([1.0, -2.5, 0.15625]),
    **{"rank1/res0": np.array(-7, dtype=np.int64),
       "__weft_dtypes__": np.array(["arg0:f32", "arg1:bf16", "rank1/res0:i64"])},
)

# Deflated members, and the dtypes inferred without __weft_dtypes__.
np.savez_compressed(
    "savez_compressed.npz",
    f64=np.linspace(-1, 1, 12).reshape(3, 4),
    b1=np.array([True, False, True]),
    i4=np.array([-2, 5], dtype=np.int32),
    f2=np.array([0.5, -65504.0], dtype=np.float16),
    u1=np.array([[0, 1]], dtype=np.uint8),
)

# .npy format versions 2.0 and 3.0 (4-byte header length).
with zipfile.ZipFile("npy_versions.npz", "w") as z:
    for version in [(2, 0), (3, 0)]:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.array([1.5, 2.5]), version=version)
        z.writestr("v%d.npy" % version[0], buf.getvalue())

# Encodings Weft must reject with a clear message.
np.savez("big_endian.npz", arg0=np.arange(3, dtype=">f8"))
np.savez("fortran_order.npz", arg0=np.asfortranarray(np.ones((2, 3))))
np.savez("unnamed_uint16.npz", arg0=np.array([1, 2], dtype=np.uint16))
