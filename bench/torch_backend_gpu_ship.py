"""Ships the compiler's C API (libweft_c.so) to a GPU machine for
bench/torch_backend_gpu_check.sh, as python/weft/gpu/device.py ships
weft-run: the library and the shared libraries GPU machines lack (libLLVM,
libz3, libzip), xz-compressed.

    python3 bench/torch_backend_gpu_ship.py pack build/lib/libweft_c.so build/weftc
    python3 bench/torch_backend_gpu_ship.py unpack build/weftc /tmp/weftc-lib
"""
import lzma
import os
import re
import shutil
import subprocess
import sys

SHIPPED = re.compile(r"\s*((?:libLLVM|libz3|libzip)[^ ]*) => (\S+)")


def pack(library, directory):
    os.makedirs(directory, exist_ok=True)
    shipped = [library]
    for line in subprocess.run(["ldd", library], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        match = SHIPPED.match(line)
        if match:
            shipped.append(match.group(2))
    for path in shipped:
        target = os.path.join(directory, os.path.basename(path) + ".xz")
        with open(path, "rb") as f, lzma.open(target, "wb", preset=6) as out:
            shutil.copyfileobj(f, out)
    print("packed", ", ".join(os.path.basename(p) for p in shipped), "into", directory)


def unpack(directory, libs):
    """Into `libs`, outside the carried directory, which stays small."""
    os.makedirs(libs, exist_ok=True)
    for name in sorted(os.listdir(directory)):
        target = os.path.join(libs, name[:-3])
        if name.endswith(".xz") and not os.path.exists(target):
            with lzma.open(os.path.join(directory, name)) as f, open(target, "wb") as out:
                shutil.copyfileobj(f, out)
            os.chmod(target, 0o755)
    return libs


def main(argv):
    if len(argv) == 3 and argv[0] == "pack":
        pack(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "unpack":
        print(unpack(argv[1], argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
