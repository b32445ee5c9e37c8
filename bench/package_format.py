"""Load cost of Weft's package container, host side: compiles real packages
(the GPT step bench's 4-block anchor and its small instance, with kernel
images when ptxas is found, and the lit tests' small GPT block) and times
reading them with the hand-written reader (package/lib/Reader.cpp), the
checksums alone, the plan checks and the writer (bench/package_load.cpp).
bench/package_format.md records the results and compares FlatBuffers.

  python bench/package_format.py [--build build] [--work DIR] [--repeats 20]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from gpt_step_bench import ANCHOR, SMALL, config_args  # noqa: E402

# The anchor's packages as gpt_step_bench compiles them (no recompute here).
ANCHOR_OPTIONS = ["--optimizer=adamw", "--remat=none", "--weight-copies=converted",
                  "--fold-attention-layout", "--fuse-elementwise"]
LIT_IR = os.path.join(ROOT, "test", "Tools", "weft-run", "Inputs", "gpt_bf16.mlir")


def generate(config, path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    ir = subprocess.run([sys.executable, "-m", "weft.models", "--preset", "gpt_block",
                         "--emit-only"] + config_args(config),
                        check=True, capture_output=True, text=True, env=env).stdout
    with open(path, "w") as f:
        f.write(ir)


def compile_package(build, ir, out, options):
    subprocess.run([os.path.join(build, "bin", "weft-compile"), ir, "--entry", "forward",
                    "--train", "--target=sm_90a", "--emit=package", "-o", out] + options,
                   check=True, capture_output=True, text=True)


def build_loader(work):
    """bench/package_load.cpp with the package sources, optimized as the
    runtime is (-O3)."""
    exe = os.path.join(work, "package_load")
    sources = [os.path.join(ROOT, "package", "lib", f)
               for f in sorted(os.listdir(os.path.join(ROOT, "package", "lib")))
               if f.endswith(".cpp")]
    subprocess.run([os.environ.get("CXX", "clang++-22"), "-O3", "-DNDEBUG", "-std=c++17",
                    "-I", os.path.join(ROOT, "package", "include"),
                    os.path.join(HERE, "package_load.cpp")] + sources + ["-o", exe],
                   check=True)
    return exe


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--work", default="/tmp/weft-package-format")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    packages = {}
    for name, config in (("anchor", ANCHOR), ("small", SMALL)):
        ir = os.path.join(args.work, name + ".mlir")
        generate(config, ir)
        packages[name] = os.path.join(args.work, name + ".weftpkg")
        compile_package(args.build, ir, packages[name], ANCHOR_OPTIONS)
    packages["lit_gpt_bf16"] = os.path.join(args.work, "lit_gpt_bf16.weftpkg")
    compile_package(args.build, LIT_IR, packages["lit_gpt_bf16"],
                    ["--optimizer=adamw", "--memory-budget=64MiB", "--tuning-table=none"])

    loader = build_loader(args.work)
    results = []
    for name, path in packages.items():
        out = subprocess.run([loader, path, str(args.repeats)], check=True,
                             capture_output=True, text=True).stdout
        result = dict(json.loads(out), name=name)
        results.append(result)
    print("| package | bytes | images | buffers | launches | gemms | file read ms "
          "| readPackage ms | checksums ms | checkPackage ms | writePackage ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['name']} | {r['file_bytes']} | {r['image_bytes']} | {r['buffers']} "
              f"| {r['launches']} | {r['gemms']} | {r['file_read_ms']:.3f} "
              f"| {r['read_package_ms']:.3f} | {r['checksums_ms']:.3f} "
              f"| {r['check_package_ms']:.3f} | {r['write_package_ms']:.3f} |")
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
