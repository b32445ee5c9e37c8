#!/usr/bin/env bash
# Writes the seed corpus of weft-fuzz-package into OUT_DIR: small packages
# compiled from the lit tests' GPT inputs by COMPILER_BUILD_DIR/bin/weft-compile
# (without kernel images, so seeds stay a few KB), and the broken packages the
# lit tests feed weft-run --check (test/Tools/weft-run/Inputs/edit_package.py).
# Generated at run time; no corpus is committed.
set -euo pipefail
out=${1:?usage: make-package-corpus.sh OUT_DIR COMPILER_BUILD_DIR}
build=${2:?usage: make-package-corpus.sh OUT_DIR COMPILER_BUILD_DIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
compile=$build/bin/weft-compile
if [ ! -x "$compile" ]; then
  echo "make-package-corpus: no $compile (build the compiler first)" >&2
  exit 2
fi
inputs=$repo/test/Tools/weft-run/Inputs
mkdir -p "$out"

# name | IR | options beyond the training step's (--entry forward --train
# --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none)
seeds="plain|$inputs/gpt_bf16.mlir|--memory-budget=64MiB
carried|$inputs/gpt_bf16.mlir|--memory-budget=64MiB --weight-copies=carried
tma|$inputs/gpt_bf16.mlir|--memory-budget=64MiB --attention-mma=warpgroup --block-q=128 --block-k=128 --fold-attention-layout --fuse-elementwise
mean-square|$inputs/gpt_mean_square_bf16.mlir|--fuse-elementwise
tp-sp|$inputs/gpt_mean_square_bf16.mlir|--grid=tp=2 --sequence-parallel
shard-offsets|$inputs/gpt_dropout_bf16.mlir|--grid=tp=2 --sequence-parallel
epilogues|$repo/test/Tools/weft-package-gemms/Inputs/gpt2_bf16.mlir|"
while IFS='|' read -r name ir options; do
  # shellcheck disable=SC2086 # options are words
  WEFT_PTXAS=/nonexistent "$compile" "$ir" --entry forward --train \
    --optimizer=adamw --target=sm_90a --emit=package --tuning-table=none \
    $options -o "$out/$name.weftpkg" 2>/dev/null
done <<<"$seeds"

edit=$inputs/edit_package.py
for edit_args in overlap past-arena undefined-arg "flip 3" "version 1" "copy-of 0"; do
  # shellcheck disable=SC2086
  python3 "$edit" "$out/carried.weftpkg" "$out/edit-${edit_args// /-}.weftpkg" $edit_args
done
head -c 1000 "$out/plain.weftpkg" >"$out/short.weftpkg"
head -c 40 "$out/plain.weftpkg" >"$out/tiny.weftpkg"
echo "make-package-corpus: $(ls "$out" | wc -l) seeds in $out" \
     "($(du -sk "$out" | cut -f1) KiB)"
