"""Exits 0 when two .npz files hold the same arrays byte for byte (standard
library only), else prints the first difference and exits 1.

  npz_equal.py A.npz B.npz
"""
import sys
import zipfile


def main():
    a, b = (zipfile.ZipFile(p) for p in sys.argv[1:3])
    names_a, names_b = sorted(a.namelist()), sorted(b.namelist())
    if names_a != names_b:
        print("different keys: %s vs %s" % (names_a, names_b))
        sys.exit(1)
    for name in names_a:
        if a.read(name) != b.read(name):
            print("'%s' differs" % name)
            sys.exit(1)
    print("equal: %d arrays" % len(names_a))


if __name__ == "__main__":
    main()
