#!/usr/bin/env bash
# ctest aot_example_without_gpu: on a machine without libcuda.so.1 the AOT
# example must exit 1 (not crash, not succeed) and name the missing driver.
# Skipped (77) where a driver is installed.
set -uo pipefail
example="$1"
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "skipped: libcuda.so.1 is installed here"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
input_bytes="$("$example" --print-sizes | awk '/^input_bytes/ {print $2}')"
if [ -z "$input_bytes" ]; then
  echo "FAIL: $example --print-sizes printed no input_bytes"
  exit 1
fi
head -c "$input_bytes" /dev/zero > "$work/input.bin"
"$example" "$work/input.bin" "$work/output.bin" > "$work/log" 2>&1
status=$?
cat "$work/log"
if [ "$status" -ne 1 ]; then
  echo "FAIL: expected exit status 1 without a GPU driver, got $status"
  exit 1
fi
if ! grep -q 'example_attention_0_load failed (CUresult 100): .*libcuda\.so\.1' "$work/log"; then
  echo "FAIL: the message does not name the missing driver (libcuda.so.1, CUDA_ERROR_NO_DEVICE)"
  exit 1
fi
if [ -e "$work/output.bin" ]; then
  echo "FAIL: an output file was written although nothing ran"
  exit 1
fi
echo "ok: the example fails cleanly without a driver"
