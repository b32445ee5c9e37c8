#!/usr/bin/env python3
"""The GPT bench's packages, byte for byte: `record` compiles them with a
build's weft-compile and writes their SHA-256 (and the budgets used) to
bench/package_hashes.json; `check` compiles them again and compares. A change
that must not alter what Weft emits (a refactor) is checked this way without a
GPU: the packages are the ones bench/gpt_step_bench.py prepares and measures on
the H100 (bench/RESULTS.md), so equal hashes mean the measured programs. The
recorded hashes are those cc44d20 compiles; the six distinct packages of the
100 % call measured on 2026-11-23 (their SHA-256s in
bench/results/h100-2026-11-23-gpt-step-split-100.json) are among them, byte
for byte. Run by scripts/test.

    PYTHONPATH=python python3 bench/package_hashes.py check --build build [--only NAME,...]
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile
import time

from gpt_step_bench import ANCHOR, LAYOUT, SMALL, compile_package, generate
from gpt_step_table import FIXED_POLICIES, budgets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HASHES = os.path.join(ROOT, "bench", "package_hashes.json")
# The no-recompute package, whose memory report sets the budgets.
NONE_ARGS = ["--optimizer=adamw", "--remat=none", "--weight-copies=converted"] + LAYOUT


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def package_list(report):
    """(name, model, args) of every package gpt_step_bench prepares."""
    packages = [("none", "anchor", NONE_ARGS)]
    for fraction, budget in budgets(report).items():
        common = ["--optimizer=adamw", f"--memory-budget={budget}", "--weight-copies=auto"]
        for policy in ("budget",) + FIXED_POLICIES:
            packages.append((f"b{int(100 * fraction)}_{policy}", "anchor",
                             common + [f"--remat={policy}"] + LAYOUT))
        packages.append((f"b{int(100 * fraction)}_budget_no_gelu_epilogue", "anchor",
                         common + ["--remat=budget"] + LAYOUT + ["--fuse-gemm-epilogue=false"]))
    packages.append(("small", "small", list(LAYOUT)))
    return packages


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["record", "check"])
    parser.add_argument("--build", default=os.environ.get("WEFT_BUILD_DIR", os.path.join(ROOT, "build")))
    parser.add_argument("--hashes", default=HASHES)
    parser.add_argument("--python", default=os.path.join(ROOT, "python"),
                        help="the model generator's package directory")
    parser.add_argument("--only", default="", help="comma-separated package names")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    env = dict(os.environ, PYTHONPATH=args.python)
    with tempfile.TemporaryDirectory() as work:
        irs = {"anchor": os.path.join(work, "anchor.mlir"), "small": os.path.join(work, "small.mlir")}
        generate(ANCHOR, irs["anchor"], env)
        generate(SMALL, irs["small"], env)
        if args.mode == "record":
            report_path = os.path.join(work, "none_report.json")
            ok, _, err = compile_package(args.build, irs["anchor"], os.path.join(work, "r.weftpkg"),
                                         NONE_ARGS + [f"--memory-report={report_path}"], env)
            if not ok:
                sys.exit("the no-recompute package does not compile:\n" + err)
            packages = package_list(json.load(open(report_path)))
        else:
            packages = [(p["name"], p["model"], p["args"]) for p in json.load(open(args.hashes))["packages"]]
        results, failures = [], 0
        for name, model, pargs in packages:
            if only and name not in only:
                continue
            out = os.path.join(work, name + ".weftpkg")
            start = time.time()
            ok, fused, _ = compile_package(args.build, irs[model], out, pargs, env)
            digest = sha256(out) if ok else None
            results.append({"name": name, "model": model, "args": pargs, "fused": fused, "sha256": digest})
            line = f"{name}: {digest or 'does not compile'} ({time.time() - start:.1f} s)"
            if args.mode == "check":
                expected = next(p for p in json.load(open(args.hashes))["packages"] if p["name"] == name)
                same = digest == expected["sha256"]
                failures += not same
                line += " same" if same else f" DIFFERS from {expected['sha256']}"
            print(line, flush=True)
        if args.mode == "record":
            with open(args.hashes, "w") as f:
                json.dump({"packages": results}, f, indent=1)
                f.write("\n")
        elif failures:
            sys.exit(f"{failures} package(s) differ from {args.hashes}")
        else:
            print(f"all {len(results)} packages byte for byte as recorded")


if __name__ == "__main__":
    main()
