#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck over one small forward + backward
# of every attention unit in KERNELS_DIR (attention_check.py --sanitize-config;
# dropout units: attention_dropout_check.py at length 77).
# Usage: test/gpu/sanitize.sh KERNELS_DIR [extra attention_check.py args]
# Env: WEFT_SANITIZE_TOOLS (default "memcheck racecheck"), WEFT_SANITIZE_TIMEOUT
# (seconds per tool, default 300; rc 124 = timed out), PYTHON, COMPUTE_SANITIZER.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

if [ $# -lt 1 ]; then
  echo "usage: $0 KERNELS_DIR [extra attention_check.py args]" >&2
  exit 2
fi
KERNELS="$1"
shift
if [ ! -d "$KERNELS" ]; then
  echo "error: $KERNELS is not a directory (make it with scripts/check-kernels $KERNELS)" >&2
  exit 2
fi
SANITIZER="${COMPUTE_SANITIZER:-}"
if [ -z "$SANITIZER" ]; then
  for candidate in "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
                   /usr/local/cuda/bin/compute-sanitizer "$(command -v compute-sanitizer || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then SANITIZER="$candidate"; break; fi
  done
fi
if [ -z "$SANITIZER" ]; then
  echo "error: compute-sanitizer not found (set COMPUTE_SANITIZER or CUDA_HOME)" >&2
  exit 2
fi
PY="${PYTHON:-python3}"
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
# Every tensor its own cudaMalloc, so memcheck sees where each buffer ends
# (the caching allocator packs small tensors into one 2 MiB segment).
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
LOGDIR="${WEFT_SANITIZE_LOGS:-$(mktemp -d /tmp/weft-sanitize.XXXXXX)}"
mkdir -p "$LOGDIR"

# Units with dropout (scripts/check-kernels' OUT_DIR/dropout) need their seed
# and mask: attention_dropout_check.py at one odd length runs them.
dropout=0
grep -qs '"dropout"' "$KERNELS"/*.json && dropout=1

status=0
summary=()
for tool in ${WEFT_SANITIZE_TOOLS:-memcheck racecheck}; do
  log="$LOGDIR/$tool.log"
  extra=()
  [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  start=$SECONDS
  echo "== compute-sanitizer --tool $tool (log: $log)"
  if [ $dropout = 1 ]; then
    check=("$HERE/attention_dropout_check.py" --kernels "$KERNELS" --seqs 77
           --json "$LOGDIR/$tool.json")
  else
    check=("$HERE/attention_check.py" --kernels "$KERNELS" --sanitize-config)
  fi
  timeout "${WEFT_SANITIZE_TIMEOUT:-300}" "$SANITIZER" --tool "$tool" --target-processes all --error-exitcode 1 "${extra[@]}" \
    "$PY" "${check[@]}" "$@" >"$log" 2>&1
  rc=$?
  # The script's own lines, then the sanitizer's findings and totals.
  grep -E '^(ok|FAIL|PASS|== sanitize|attention dropout|error)' "$log" | sed 's/^/   /'
  grep -E '(ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race reported|hazard|Error:|Program hit)' \
    "$log" | sort | uniq -c | sort -rn | head -20 | sed 's/^/   /'
  verdict=PASS
  [ $rc -ne 0 ] && { verdict="FAIL (rc $rc)"; status=1; }
  summary+=("$tool: $verdict in $((SECONDS - start))s")
  if [ $rc -ne 0 ]; then
    echo "   last lines of $log:"
    tail -n 25 "$log" | sed 's/^/   | /'
  fi
done

echo "== sanitize summary"
for line in "${summary[@]}"; do echo "   $line"; done
exit $status
