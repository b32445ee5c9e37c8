#!/usr/bin/env python3
"""Repacks a flashinfer-python wheel without the C++/CUDA sources under
flashinfer/data/csrc/<subfolder>/ (MoE, KDA, GDN, sampling and other kernels
that the decode and prefill JIT of bench/flashinfer_decode.py never include),
so the wheel fits the device's transfer limit beside the decode units
(0.7.2.post1: 59 -> 31 MiB). Python files, JSON manifests, the top-level
csrc/ and data/include, cutlass, cccl and spdlog stay; RECORD is rewritten
and WHEEL gets a build tag (1slim).

  python3 bench/flashinfer_slim_wheel.py IN.whl OUT_DIR
"""
import base64
import hashlib
import os
import sys
import zipfile

SOURCES = {".cu", ".cuh", ".h", ".cc", ".hpp", ".cpp", ".inl", ".ptx", ".c", ".inc", ".cubin"}


def dropped(name):
    parts = name.split("/")
    return (parts[:3] == ["flashinfer", "data", "csrc"] and len(parts) > 4
            and os.path.splitext(parts[-1])[1] in SOURCES)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    source, out_dir = sys.argv[1], sys.argv[2]
    base = os.path.basename(source)
    name, version, rest = base.split("-", 2)
    target = os.path.join(out_dir, f"{name}-{version}-1slim-{rest}")
    zin = zipfile.ZipFile(source)
    dist = next(n.split("/")[0] for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
    removed, kept, records = 0, 0, []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zout:
        for info in zin.infolist():
            if dropped(info.filename):
                removed += info.file_size
                continue
            if info.filename == f"{dist}/RECORD":
                continue
            data = zin.read(info)
            if info.filename == f"{dist}/WHEEL":
                data = data.rstrip(b"\n") + b"\nBuild: 1slim\n"
            entry = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            entry.external_attr, entry.compress_type = info.external_attr, zipfile.ZIP_DEFLATED
            zout.writestr(entry, data)
            kept += 1
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{info.filename},sha256={digest},{len(data)}")
        records.append(f"{dist}/RECORD,,")
        zout.writestr(f"{dist}/RECORD", "\n".join(records) + "\n")
    print(f"{target}: kept {kept} files, dropped {removed / 2**20:.1f} MiB uncompressed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
