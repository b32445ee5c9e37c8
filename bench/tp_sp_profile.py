"""Where a tensor-parallel step's time goes: the prepared anchor packages of
tp_sp_bench.py (one GPU, tp = T, tp = T + SP) timed entry by entry and as
whole steps under NCCL settings, in one call on max(T) GPUs.

  tp_sp_profile.py DIR --out OUT [--tp 2,4] [--ctas 0,8,16] [--runs 3] [--trace]
                   [--settings 'base;prio:WEFT_COMM_PRIORITY=high;...'] [--rounds 2]
                   [--steps-only] [--skip-one]

For each package, `weft-run --time-segments RUNS` times every schedule entry
with the streams joined after each one (so nothing overlaps there: the sum per
category is what each category costs alone), grouped as GEMMs, attention,
other kernels and collectives; then the whole step (median of 20 graph
replays after 5, max over ranks, overlap on) for each NCCL_MAX_CTAS of
--ctas (0: NCCL's default). The overlap a step gets is the entry sum minus
its step time. With --trace the same weft-run also writes `--trace-json`
(the streams overlapping, step_trace.py): compute busy and idle, the
collectives' exposed time, each category beside its time alone, and the
longest idle gaps, per rank. --settings times the whole steps again under
named environments (NAME:VAR=VALUE,VAR=VALUE; the runtime's
WEFT_COMM_PRIORITY and WEFT_GEMM_SM_MARGIN, NCCL's variables), --rounds times,
in alternating order, after the one-GPU step; --steps-only skips the
entry-by-entry profile. Writes OUT/tp_sp_profile.json and prints a table.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tarfile  # noqa: E402

import step_trace  # noqa: E402
import tp_sp_phases as ph  # noqa: E402
from tp_sp_bench import ANCHOR  # noqa: E402
from weft.gpu.device import unpack_weft_run  # noqa: E402

WARMUP, STEPS = 5, 20


def profile(sh, name, ranks, runs, out, trace=False):
    data = ph.data_file(sh.dir, ANCHOR, 1, "anchor_x.npz")
    json_path = sh.path(f"timing_{name}.json")
    trace_path = sh.path(f"trace_{name}.json")
    sh.weft(f"anchor_{name}.weftpkg", "--steps", 1, "--init-state", 0, "--data", data,
            "--time-segments", runs, "--timing-json", json_path,
            *(["--trace-json", trace_path] if trace else []), ranks=ranks,
            log=f"profile_{name}")

    def rank_files(path):
        return [path] if ranks == 1 else [f"{path}.rank{r}" for r in range(ranks)]
    per_rank, traces = [], []
    for rank, path in enumerate(rank_files(json_path)):
        shutil.copy(path, out)
        timing = json.load(open(path))
        sums = {}
        for entry in timing["entries"]:
            sums[step_trace.category(entry)] = sums.get(step_trace.category(entry), 0.0) + entry["ms"]
        sums["total"] = timing["total_ms"]
        per_rank.append(sums)
        if trace:
            traced = rank_files(trace_path)[rank]
            shutil.copy(traced, out)
            summary = step_trace.summarize(json.load(open(traced)), timing)
            step_trace.print_summary(f"{name} rank {rank}", summary)
            traces.append(summary)
    sums = {k: max(r.get(k, 0.0) for r in per_rank) for k in per_rank[0]}
    return (sums, traces) if trace else sums


def step_ms(sh, name, ranks, ctas, extra=None, tag=None):
    data = ph.data_file(sh.dir, ANCHOR, 1, "anchor_x.npz")
    env = dict(sh.weft_env)
    if ctas:
        env["NCCL_MAX_CTAS"] = str(ctas)
    env.update(extra or {})
    out = sh.run([sh.path("weft-run"), sh.path(f"anchor_{name}.weftpkg")] +
                 (["--nproc-per-node", str(ranks)] if ranks > 1 else []) +
                 [str(a) for a in ("--steps", WARMUP + STEPS, "--graph", "--init-state", 0,
                                   "--data", data)],
                 ranks, f"step_{name}_{tag or f'ctas{ctas}'}", env=env)
    per_rank = [ph.rank_steps(out, r) for r in range(ranks)]
    startup = ph.rank_startup(out)
    if startup:
        print(f"  start-up {name} {tag or ''}: load {max(l for l, _ in startup.values()):.2f} s, "
              f"state {max(s for _, s in startup.values()):.2f} s (max over ranks)", flush=True)
    return max(statistics.median(t for _, t in steps[WARMUP:]) for steps in per_rank)


def parse_settings(text):
    """'base;prio:WEFT_COMM_PRIORITY=high,X=1' -> [(label, {var: value})]."""
    settings = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        label, _, assignments = item.partition(":")
        env = dict(a.split("=", 1) for a in filter(None, assignments.split(",")))
        settings.append((label, env))
    return settings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--out", required=True)
    parser.add_argument("--tp", default="2")
    parser.add_argument("--ctas", default="0")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--budget", type=float, default=400)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--settings", default="")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--steps-only", action="store_true")
    parser.add_argument("--names", default="",
                        help="NAME:RANKS,...: profile anchor_NAME.weftpkg on RANKS GPUs "
                             "instead of tp{t} and tp{t}sp")
    parser.add_argument("--skip-one", action="store_true",
                        help="with --settings: no one-GPU step (the comparisons need none)")
    args = parser.parse_args()
    directory = os.path.abspath(args.dir)
    with tarfile.open(os.path.join(directory, "packages.tar.xz"), "r:xz") as tar:
        tar.extractall(directory, members=[m for m in tar.getmembers() if not os.path.exists(
            os.path.join(directory, m.name))], filter="data")
    sh = ph.Shell(directory, unpack_weft_run(directory), ph.Budget(args.budget))
    tps = [int(t) for t in args.tp.split(",")]
    ctas = [int(c) for c in args.ctas.split(",")]
    names = [("one", 1)] + [(n, t) for t in tps for n in (f"tp{t}", f"tp{t}sp")]
    if args.names:  # anchor_NAME.weftpkg on RANKS GPUs instead of tp{t} and tp{t}sp
        names = names[:1] + [(n, int(r)) for n, r in
                             (item.split(":") for item in args.names.split(",") if item)]
    results = {"profile": {}, "step_ms": {}, "trace": {}}
    os.makedirs(args.out, exist_ok=True)
    for name, ranks in names if not args.steps_only else []:
        got = profile(sh, name, ranks, args.runs, args.out, args.trace)
        if args.trace:
            got, results["trace"][name] = got
        results["profile"][name] = got
        print(name, json.dumps({k: round(v, 2) for k, v in results["profile"][name].items()}),
              flush=True)
    settings = parse_settings(args.settings)
    for name, ranks in names if not settings else names[:0 if args.skip_one else 1]:
        for c in ctas if ranks > 1 else [0]:
            results["step_ms"][f"{name}/ctas{c}"] = ms = step_ms(sh, name, ranks, c)
            print(f"step {name} NCCL_MAX_CTAS={c or 'default'}: {ms:.2f} ms", flush=True)
    for round_ in range(args.rounds if settings else 0):
        order = settings if round_ % 2 == 0 else settings[::-1]
        for name, ranks in names[1:]:
            for label, extra in order:
                ms = step_ms(sh, name, ranks, 0, extra, f"{label}_r{round_}")
                results["step_ms"].setdefault(f"{name}/{label}", []).append(ms)
                print(f"step {name} {label} round {round_}: {ms:.2f} ms", flush=True)
    with open(os.path.join(args.out, "tp_sp_profile.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
