#!/usr/bin/env bash
# run-fuzz.sh BUILD_DIR [SECONDS]: builds weft-fuzz in BUILD_DIR (configured
# with -DWEFT_FUZZER=ON), builds the seed corpus, fuzzes for SECONDS (60 by
# default) and exits non-zero on any crash, sanitizer report or timeout.
# Crashing inputs are kept in BUILD_DIR/fuzz-artifacts/.
set -euo pipefail
build=$(cd "${1:?usage: run-fuzz.sh BUILD_DIR [SECONDS]}" && pwd)
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)

if [ -f "$build/build.ninja" ]; then
  # Quiet unless the build fails; then its log says why.
  if ! build_log=$(flock /tmp/weft-build.lock ninja -C "$build" weft-fuzz 2>&1); then
    printf '%s\n' "$build_log" | tail -n 40
    echo "run-fuzz: building weft-fuzz in $build failed" >&2
    exit 1
  fi
fi
fuzzer=$build/bin/weft-fuzz
if [ ! -x "$fuzzer" ]; then
  echo "run-fuzz: no $fuzzer (configure $build with -DWEFT_FUZZER=ON)" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$here/make-corpus.sh" "$work/seeds"
mkdir -p "$work/corpus" "$build/fuzz-artifacts"

# -max_len: the largest lit case (ops.mlir, unsplit) is about 20 KB.
# Every UBSan report aborts (-fno-sanitize-recover); print where it came from.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
set +e
"$fuzzer" "$work/corpus" "$work/seeds" \
  -max_total_time="$seconds" -max_len=65536 -timeout=20 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/" \
  >"$work/fuzz.log" 2>&1
status=$?
set -e

grep -E '^(INFO: seed corpus|Done [0-9]+ runs|stat::new_units_added)' "$work/fuzz.log" || true
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/fuzz.log"
  echo "run-fuzz: FAILED (exit $status) after ${execs:-?} executions;" \
       "inputs in $build/fuzz-artifacts/" >&2
  exit "$status"
fi
echo "run-fuzz: ${execs:-?} executions in ${seconds}s, no crash"
