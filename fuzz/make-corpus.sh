#!/usr/bin/env bash
# Writes the seed corpus of weft-fuzz into OUT_DIR: the weft dialect's lit
# tests split at `// -----`, one file per case. Generated at run time; no
# corpus is committed.
set -euo pipefail
out=${1:?usage: make-corpus.sh OUT_DIR}
tests=$(cd "$(dirname "$0")/../test/Dialect/Weft" && pwd)
mkdir -p "$out"
for test in "$tests"/*.mlir; do
  awk -v prefix="$out/$(basename "$test" .mlir)" '
    /^\/\/ -----/ { close(file); n++; next }
    { file = sprintf("%s-%03d.mlir", prefix, n); print > file }
  ' "$test"
done
echo "make-corpus: $(ls "$out" | wc -l) seeds in $out"
