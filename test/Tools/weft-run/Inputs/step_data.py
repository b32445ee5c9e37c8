"""Writes the per-step inputs of the small GPT step (Inputs/gpt_bf16.mlir
compiled with --train --optimizer=adamw) as an .npz with a leading step
dimension, using only the standard library (numpy is not needed):
token ids (arg51) and labels (arg52) [steps, 2, 16] int64, the AdamW step
counter (arg53) [steps] = 1..steps, the seed (arg54) one int64 for every step.

  step_data.py OUT.npz STEPS [extra-key]   (extra-key: add a key no buffer has)
"""
import struct
import sys
import zipfile


def npy(shape, values):
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape) if len(shape) != 1 else "%d," % shape[0])
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
            + struct.pack("<%dq" % len(values), *values))


def main():
    out, steps = sys.argv[1], int(sys.argv[2])
    n = steps * 2 * 16
    ids = [(7 * i + 3) % 64 for i in range(n)]
    labels = [(5 * i + 1) % 64 for i in range(n)]
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("arg51.npy", npy((steps, 2, 16), ids))
        z.writestr("arg52.npy", npy((steps, 2, 16), labels))
        z.writestr("arg53.npy", npy((steps,), list(range(1, steps + 1))))
        z.writestr("arg54.npy", npy((), [1234]))
        if len(sys.argv) > 3:
            z.writestr(sys.argv[3] + ".npy", npy((), [0]))


main()
