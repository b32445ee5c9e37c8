"""Copies the named arrays of one .npz into another (standard library only).

  npz_subset.py IN.npz OUT.npz KEY...
"""
import sys
import zipfile


def main():
    source, out, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
    with zipfile.ZipFile(source) as z, zipfile.ZipFile(out, "w") as o:
        for key in keys:
            o.writestr(key + ".npy", z.read(key + ".npy"))


if __name__ == "__main__":
    main()
