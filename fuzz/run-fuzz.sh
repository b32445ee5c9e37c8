#!/usr/bin/env bash
# run-fuzz.sh BUILD_DIR [SECONDS]: builds weft-fuzz and weft-fuzz-package in
# BUILD_DIR (configured with -DWEFT_FUZZER=ON), builds their seed corpora and
# fuzzes for SECONDS in all (60 by default: two thirds on the IR front end, a
# third on the package reader), exiting non-zero on any crash, sanitizer
# report or timeout. The package seeds are compiled by the weft-compile of
# $WEFT_BUILD_DIR (default: build/ beside this script's repository).
# Crashing inputs are kept in BUILD_DIR/fuzz-artifacts/.
set -euo pipefail
build=$(cd "${1:?usage: run-fuzz.sh BUILD_DIR [SECONDS]}" && pwd)
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
compiler_build=${WEFT_BUILD_DIR:-$here/../build}

if [ -f "$build/build.ninja" ]; then
  # Quiet unless the build fails; then its log says why.
  if ! build_log=$(flock /tmp/weft-build.lock ninja -C "$build" weft-fuzz weft-fuzz-package 2>&1); then
    printf '%s\n' "$build_log" | tail -n 40
    echo "run-fuzz: building the fuzz targets in $build failed" >&2
    exit 1
  fi
fi
for fuzzer in weft-fuzz weft-fuzz-package; do
  if [ ! -x "$build/bin/$fuzzer" ]; then
    echo "run-fuzz: no $build/bin/$fuzzer (configure $build with -DWEFT_FUZZER=ON)" >&2
    exit 2
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$here/make-corpus.sh" "$work/ir-seeds"
"$here/make-package-corpus.sh" "$work/package-seeds" "$compiler_build"
mkdir -p "$build/fuzz-artifacts"

# Every UBSan report aborts (-fno-sanitize-recover); print where it came from.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# fuzz NAME SEEDS SECONDS MAX_LEN: one target on its own corpus.
fuzz() {
  local name=$1 seeds=$2 time=$3 max_len=$4 status execs
  mkdir -p "$work/$name-corpus"
  set +e
  "$build/bin/$name" "$work/$name-corpus" "$seeds" \
    -max_total_time="$time" -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$name-" \
    >"$work/$name.log" 2>&1
  status=$?
  set -e
  grep -E '^(INFO: seed corpus|Done [0-9]+ runs|stat::new_units_added)' "$work/$name.log" || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log")
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$work/$name.log"
    echo "run-fuzz: $name FAILED (exit $status) after ${execs:-?} executions;" \
         "inputs in $build/fuzz-artifacts/" >&2
    exit "$status"
  fi
  echo "run-fuzz: $name: ${execs:-?} executions in ${time}s, no crash"
}

# -max_len: the largest lit case (ops.mlir, unsplit) is about 20 KB; the
# package seeds (no images) are under 64 KB.
ir_seconds=$(( seconds * 2 / 3 ))
fuzz weft-fuzz "$work/ir-seeds" "$ir_seconds" 65536
fuzz weft-fuzz-package "$work/package-seeds" "$(( seconds - ir_seconds ))" 131072
