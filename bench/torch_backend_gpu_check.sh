#!/usr/bin/env bash
# The torch.compile backend on CUDA tensors (python/tests/test_torch_backend_gpu.py:
# training; python/tests/test_torch_infer_gpu.py: inference and a loss outside
# the graph), in two phases, because GPU machines lack the compiler's MLIR/LLVM
# libraries:
#
#   here (no GPU):  bench/torch_backend_gpu_check.sh prepare
#       builds the runtime (weft_runtime_shared) and compiles the tests' CUDA
#       training, inference and VJP packages through the C API into
#       build/pkgcache (the tests' --compile-only mode: CPU tensors, the
#       backend's compile_only option).
#       Needs libweft_c.so: $WEFT_CAPI_LIB, else build/lib/libweft_c.so.
#       With --with-compiler it also packs libweft_c.so and the shared
#       libraries GPU machines lack (libLLVM, libz3, libzip; ~45 MB xz) into
#       build/weftc (bench/torch_backend_gpu_ship.py), so that a cache miss
#       there (another PyTorch tracing another graph) compiles on the spot.
#   GPU machine:    bench/torch_backend_gpu_check.sh run
#       carry build/pkgcache and build/lib/libweft_runtime.so (and build/weftc
#       when prepared with --with-compiler); runs the tests
#       against them (pytest when it and numpy are there, else the file as a
#       script) and writes $OUT/torch_backend_gpu.json when $OUT is set; a
#       cache miss leaves its request (IR + options) in $OUT for
#       `python -m weft.torch_gpu compile DIR --into build/pkgcache` here.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
CACHE=${WEFT_PACKAGE_CACHE:-$REPO/build/pkgcache}
RUNTIME=${WEFT_RUNTIME_LIB:-$REPO/build/lib/libweft_runtime.so}
PYTHON=${PYTHON:-python3}
TEST=python/tests/test_torch_backend_gpu.py
INFER_TEST=python/tests/test_torch_infer_gpu.py
COMPILER_DIR=$REPO/build/weftc

gpu_env() {
  [ -f "$RUNTIME" ] || { echo "no runtime library at $RUNTIME (carry build/lib/libweft_runtime.so)" >&2; exit 1; }
  mkdir -p "$CACHE"
  compgen -G "$CACHE/*.weftpkg" >/dev/null || [ -f "$COMPILER_DIR/libweft_c.so.xz" ] ||
    { echo "no package in $CACHE and no compiler in $COMPILER_DIR (carry build/pkgcache or build/weftc)" >&2; exit 1; }
  # cuBLASLt: the one PyTorch ships (nvidia wheels) when the loader has none.
  if [ -z "${WEFT_CUBLASLT:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt.so.1[23] '; then
    WEFT_CUBLASLT=$("$PYTHON" - <<'EOF'
import glob, os, site, torch
roots = site.getsitepackages() + [os.path.dirname(os.path.dirname(torch.__file__))]
found = sorted(p for r in roots for p in glob.glob(os.path.join(r, "nvidia", "**", "libcublasLt.so.1[23]"), recursive=True))
print(found[-1] if found else "")
EOF
)
    [ -n "$WEFT_CUBLASLT" ] && export WEFT_CUBLASLT && echo "cuBLASLt: $WEFT_CUBLASLT"
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  export WEFT_RUNTIME_LIB=$RUNTIME WEFT_PACKAGE_CACHE=$CACHE PYTHONPATH=$REPO/python
  if [ -f "$COMPILER_DIR/libweft_c.so.xz" ]; then
    libs=$("$PYTHON" bench/torch_backend_gpu_ship.py unpack "$COMPILER_DIR" "${TMPDIR:-/tmp}/weftc-lib")
    export WEFT_CAPI_LIB=$libs/libweft_c.so
    export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "compiler: $WEFT_CAPI_LIB (cache misses compile here)"
  fi
}

case "${1:-}" in
prepare)
  if [ -f build/build.ninja ]; then
    ninja -C build -j2 weft_runtime_shared
  fi
  [ -f "$RUNTIME" ] || { echo "no runtime library at $RUNTIME (configure build/ first)" >&2; exit 1; }
  CAPI=${WEFT_CAPI_LIB:-$REPO/build/lib/libweft_c.so}
  [ -f "$CAPI" ] || { echo "no compiler library at $CAPI (set WEFT_CAPI_LIB)" >&2; exit 1; }
  mkdir -p "$CACHE"
  WEFT_CAPI_LIB=$CAPI WEFT_RUNTIME_LIB=$RUNTIME WEFT_PACKAGE_CACHE=$CACHE PYTHONPATH=python \
    "$PYTHON" "$TEST" --compile-only
  WEFT_CAPI_LIB=$CAPI WEFT_RUNTIME_LIB=$RUNTIME WEFT_PACKAGE_CACHE=$CACHE PYTHONPATH=python \
    "$PYTHON" "$INFER_TEST" --compile-only
  ls "$CACHE"/*.weftpkg >/dev/null 2>&1 || { echo "no package in $CACHE" >&2; exit 1; }
  carry="build/pkgcache build/lib/libweft_runtime.so"
  if [ "${2:-}" = "--with-compiler" ]; then
    rm -rf "$COMPILER_DIR"
    "$PYTHON" bench/torch_backend_gpu_ship.py pack "$CAPI" "$COMPILER_DIR"
    carry="$carry build/weftc ($(du -sh "$COMPILER_DIR" | cut -f1))"
  fi
  echo "prepared: carry $carry; package cache $(du -sh "$CACHE" | cut -f1)"
  ;;
run)
  gpu_env
  [ -n "${OUT:-}" ] && export WEFT_GPU_REPORT=$OUT/torch_backend_gpu.json
  set +e
  if "$PYTHON" -c "import pytest, numpy" 2>/dev/null; then
    "$PYTHON" -m pytest -q -s -rs -p no:cacheprovider -p no:logging "$TEST" "$INFER_TEST"
  else
    "$PYTHON" "$TEST" && "$PYTHON" "$INFER_TEST"
  fi
  status=$?
  set -e
  # A package the cache lacked (e.g. another PyTorch traced another graph):
  # its request comes back in $OUT; here, `python -m weft.torch_gpu compile
  # DIR --into build/pkgcache` compiles it, and the next run finds it.
  if ls "$CACHE"/*.request.json >/dev/null 2>&1; then
    echo "cache misses: $(ls "$CACHE"/*.request.json)"
    [ -n "${OUT:-}" ] && cp "$CACHE"/*.request.json "$OUT"/
  fi
  exit $status
  ;;
bench)
  # bench/torch_train_bench.py with the same runtime, package cache and
  # compiler: the models of issue 19 against eager and torch.compile.
  shift
  gpu_env
  exec "$PYTHON" bench/torch_train_bench.py "$@"
  ;;
*)
  echo "usage: $0 prepare [--with-compiler] | run | bench [ARGS]   (prepare here; run and bench on the GPU machine)" >&2
  exit 2
  ;;
esac
