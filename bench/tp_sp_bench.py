"""Tensor and sequence parallelism on several GPUs: the anchor GPT blocks of
../shared/anchors (hidden 4096, 32 heads, bf16, causal, loss mean(x^2)) at
seq 8192 as Weft packages for one GPU, tp = T (TP only) and tp = T with
sequence parallelism, for each T of a list, run by the NCCL runtime
(weft-run --nproc-per-node T on GPUs 0..T-1), beside PyTorch's own TP /
TP+SP (tp_sp_anchors.py) and, where it runs, Megatron-core, in one call.
From the checkout's root, with PYTHONPATH=python:

  prepare (here, with the build):  tp_sp_bench.py prepare DIR [--tp 2,4] [--mid] [--simulate]
                                                              [--copy-engine]
      generates the models (python -m weft.models) and compiles, for one GPU
      and for tp = T and tp = T + SP of each T (default 2): the anchor's
      gradient step (no optimizer, as the anchor times it) and AdamW step,
      and the gradient-check instances: the anchor's architecture small
      (2 blocks, heads of 128, seq 256: 2 heads, or T heads where 2 does not
      divide T) and a LLaMA block (RMSNorm, SwiGLU, RoPE, GQA 16:4) at each
      T its heads allow; --mid adds the anchor at seq 2048 (float64 fits).
      weft-run --check reads every package; they are kept xz-compressed in
      DIR/packages.tar.xz (0.3 MB for --tp 2,4; DIR ~41 MiB, within the
      64 MiB a device call carries). --simulate also runs the small
      instances in float64 through the same partitioning and fusion passes
      on the reference interpreter's simulated ranks (weft-opt
      --weft-diff-each-pass, 1e-10; 10-65 s each). Ships weft-run,
      libweft_runtime.so, tp_sp_anchors.py and PyTorch's stored one-GPU
      anchor, collective_bench.py, and bench/megatron_tp_sp.py with the
      megatron-core wheel of .whl/ where they exist. ~4 min for --tp 2,4
      on 2 cores (+4 min with --simulate).
  run (on max(T) GPUs):  tp_sp_bench.py run DIR [--tp 4,2] [--only P,..] [--with P,..]
                                        [--budget 540] [--out OUT] [--dry-run]
                                        [--gemm-sm-margins 8,16]
      phase by phase, each at every T, largest first (tp = 2 has earlier
      results), each phase's one-GPU part once. The default phases, in
      order, with the seconds expected (one-GPU part + each T; estimates,
      from the 2-GPU calls of 2026-11-26, whose whole run took ~12 min
      with mid, launch and hang; results.json's "phases" has the measured
      ones):
        grad   gradient checks of the small and LLaMA instances: loss and
               every gradient, gathered from the ranks, vs float64 within
               2x torch bf16's error (the reference made once per model)
                                                                 25 + 25 / T
        time   step time (median wall of 20 graph replays after 5, max over
               ranks) and the memory equation per rank (below)  15 + 25 / T
        torch  PyTorch TP / TP+SP, eager and compiled, and async TP
               (torchrun tp_sp_anchors.py)                          120 / T
        adam   the AdamW step, 3 steps from one state (tp_sp_adam.py): the
               losses and updated parameters, gathered, of one GPU and
               tp = T (+SP) against PyTorch float64 and bf16 autocast, and
               of tp = T against one GPU; the anchor, and the LLaMA-style
               GQA model at tp = 2                            150 + 60 / T
        coll   Weft's collectives alone vs torch.distributed
               (collective_bench.py at world size T)                 25 / T
        kill   a rank killed mid-step at the largest T: the others' exit
                                                                         20
        megatron  torchrun megatron_tp_sp.py --out at world size T where
               prepare shipped it and megatron.core imports (from the shipped
               wheel, installed into DIR/site); else 'not run' and why
                                                                     45 / T
      Sum for --tp 2,4: ~535 s with setup and without Megatron, which
      runs last: unless the others take less than their estimates, it is
      skipped (run DIR --only megatron, ~100 s, in another call). --budget
      (540 s) guards the call: a phase at a T is skipped, and recorded so,
      when its estimate (its measured time at the larger T once there is
      one) exceeds the time left, and every command is cut at the budget
      + 30 s. Opt-in (--with, or --only): mid (the gradient check at seq
      2048, prepared with --mid: 90 + 60 / T), llama (alone), torch1
      (PyTorch on one GPU, else the stored anchor gives its one-GPU times:
      100), launch (torchrun --no-python starts weft-run: the same outputs
      byte for byte: 15), hang (a rank stopped: the collective timeout: 65),
      ce (copy-engine all-gathers, weft-run --collectives: five anchor
      timings and the small model's outputs bit for bit against NCCL's,
      tp_sp_copy_engine.py; needs prepare --copy-engine: 90), cefault
      (kill and hang at the largest T with copy-engine all-gathers: 90).
      Writes DIR/results.json after every phase (and copies it with the
      commands' logs, DIR/logs/, to --out) and prints a summary and the rows
      for bench/RESULTS.md; --dry-run prints each command and runs none.

The memory equation per rank (tp_sp_phases.memory_equation): device memory
in use at the peak (cuMemGetInfo, counted from nvidia-smi's free bytes of
that GPU just before the launch) against the CUDA context + NCCL's
communicators + the planned arena + what load added + NCCL's buffers, each
measured by weft-run --print-memory. NCCL allocates its buffers at the first
collectives, after load, so that term is all the growth after load (the
one-GPU step, without NCCL, is the control); the gap is then what the arena
allocation took over the plan plus anything unlisted before the arena.
"""
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_step_bench as gsb  # noqa: E402
import tp_sp_copy_engine as ce  # noqa: E402
import tp_sp_phases as ph  # noqa: E402
from tp_sp_adam import AdamCheck  # noqa: E402
from weft.gpu.device import ship_weft_run, unpack_weft_run  # noqa: E402
from weft.gpu.phases import REPO, run_phases  # noqa: E402

ANCHOR = dict(gsb.ANCHOR, seq=8192)
MID = dict(ANCHOR, seq=2048)  # the anchor's width, small enough for float64
SMALL = gsb.SMALL  # 2 heads of 128
# A LLaMA-style block (RMSNorm, SwiGLU, RoPE, GQA 4:1), for the gradient check.
LLAMA = dict(SMALL, layers=2, hidden=1024, heads=16, kv_heads=4, seq=1024, ffn_hidden=2816,
             norm="rmsnorm", mlp="swiglu", rope=True)
FLAGS = ["--fuse-elementwise", "--fold-attention-layout"]
ADAM_FLAGS = ["--optimizer=adamw", "--weight-copies=auto"]
ANCHORS = os.path.join(REPO, "..", "shared", "anchors")
TORCH_ONE = "h100x1_tp_sp_anchors_2026-11-26.json"  # PyTorch on one GPU, for efficiency
CARRY_LIMIT = 64 * 2**20
PACKAGES = "packages.tar.xz"
DEFAULT_PHASES = ["grad", "time", "torch", "adam", "coll", "kill", "megatron"]
OPTIONAL_PHASES = ["mid", "llama", "torch1", "launch", "hang", "ce", "cefault"]
# Expected seconds: (the one-GPU part, each T).
ESTIMATE = {"grad": (25, 25), "llama": (15, 15), "mid": (90, 60), "time": (15, 25),
            "adam": (150, 60), "torch": (0, 120), "torch1": (100, 0), "coll": (0, 25),
            "megatron": (0, 45), "kill": (0, 20), "hang": (0, 65), "launch": (0, 15),
            "ce": (0, 90), "cefault": (0, 90)}


def fits(config, tp):
    """tp divides the query heads and is a multiple of the kv heads or
    divides them (weft-expand-kv-heads replicates them)."""
    heads, kv = config["heads"], config["kv_heads"]
    return heads % tp == 0 and (kv % tp == 0 or tp % kv == 0)


def small_model(tp):
    """The anchor's architecture small: 2 heads of 128, or tp heads where 2
    does not divide tp."""
    if fits(SMALL, tp):
        return "small", SMALL
    return f"small_h{tp}", dict(SMALL, hidden=128 * tp, heads=tp, kv_heads=tp,
                                ffn_hidden=512 * tp)


def models_at(tp, mid):
    """The gradient-check instances a tp can split: (name, config)."""
    out = [small_model(tp)] + ([("llama", LLAMA)] if fits(LLAMA, tp) else [])
    return out + ([("mid", MID)] if mid and fits(MID, tp) else [])


def parse_tps(text):
    return sorted({int(t) for t in str(text).split(",") if t.strip()})


def simulate(build, directory, tps, env):
    """The small instances in float64 through the package's passes
    (expand-kv-heads, autodiff, place, partition, hoist-collectives, the
    attention layout, GELU epilogues, elementwise fusion) with the reference
    interpreter before and after each, on tp simulated ranks, at 1e-10."""
    jobs = []
    for tp in tps:
        for name, config in models_at(tp, False):
            sim = dict(config, dtype="f64", seq=64 if name == "llama" else config["seq"])
            ir = os.path.join(directory, f"sim_{name}.mlir")
            if not os.path.exists(ir):
                gsb.generate(sim, ir, env)
            for sp in ("false", "true"):
                jobs.append((f"{name}_tp{tp}{'sp' if sp == 'true' else ''}", [
                    os.path.join(build, "bin", "weft-opt"), ir, f"--weft-expand-kv-heads=tp={tp}",
                    "--weft-autodiff", f"--weft-place=grid=tp={tp} sequence-parallel={sp} "
                    "func=forward_step", f"--weft-partition=sequence-parallel={sp}",
                    "--weft-hoist-collectives", "--weft-fold-attention-layout",
                    "--weft-fuse-gemm-epilogue", "--weft-fuse-elementwise",
                    "--weft-diff-each-pass", "--weft-diff-entry=forward_step",
                    "--weft-diff-rtol=1e-10", "--weft-diff-seed=7", "-o", "/dev/null"]))

    def one(job):
        start = time.time()
        done = subprocess.run(job[1], capture_output=True, text=True, timeout=1800)
        result = {"ok": done.returncode == 0, "seconds": round(time.time() - start, 1),
                  "detail": done.stderr[-600:]}
        print("SIMULATE", job[0], "ok" if result["ok"] else "FAILED", result["seconds"], "s",
              flush=True)
        return job[0], result
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = dict(pool.map(one, jobs))
    for f in os.listdir(directory):
        if f.startswith("sim_") and f.endswith(".mlir"):
            os.remove(os.path.join(directory, f))
    return results


def prepare(args):
    directory, build, tps = args.dir, args.build, parse_tps(args.tp or "2")
    os.makedirs(directory, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    configs = {"anchor": ANCHOR}
    jobs = [("anchor", "anchor_one", []), ("anchor", "adam_one", ADAM_FLAGS)]
    models = {}
    for tp in tps:
        models[str(tp)] = [name for name, _ in models_at(tp, args.mid)]
        for name, config in models_at(tp, args.mid):
            if name not in configs:
                configs[name] = config
                jobs.append((name, f"{name}_one", []))
        for variant, grid in ph.variants(tp):
            jobs.append(("anchor", f"adam_{variant}", grid + ADAM_FLAGS))
            if tp == 2:  # the LLaMA-style GQA model's AdamW check
                jobs.append(("llama", f"adam_llama_{variant}", grid + ADAM_FLAGS))
        for variant, grid in ph.variants(tp, "time") + (ce.variants(tp) if args.copy_engine
                                                         else []):
            jobs.append(("anchor", f"anchor_{variant}", grid))
        for variant, grid in ph.variants(tp, "grad"):
            jobs += [(name, f"{name}_{variant}", grid) for name in models[str(tp)]]
    if 2 in tps:
        configs.setdefault("llama", LLAMA)
        jobs.append(("llama", "adam_llama_one", ADAM_FLAGS))
    for name, config in configs.items():
        gsb.generate(config, os.path.join(directory, name + ".mlir"), env)

    def compile_one(job):
        ir, out, extra = job
        out = os.path.join(directory, out + ".weftpkg")
        ok, _, message = gsb.compile_package(build, os.path.join(directory, ir + ".mlir"), out,
                                             FLAGS + extra, env, try_fused=False)
        if not ok:
            return out, None, message
        check = subprocess.run([os.path.join(build, "bin", "weft-run"), "--check", out],
                               capture_output=True, text=True)
        lines = [l.strip() for l in (check.stdout + check.stderr).splitlines()
                 if "grid" in l or "split" in l or "error" in l]
        return out, check.returncode == 0, " / ".join(lines)
    packages = {}
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for out, ok, detail in pool.map(compile_one, jobs):
            name = os.path.basename(out)
            print("COMPILE", name, {None: "FAILED", False: "check FAILED", True: "ok"}[ok],
                  detail, flush=True)
            packages[name] = {"ok": ok, "check": detail,
                              "bytes": os.path.getsize(out) if ok is not None else None}
    for name in configs:
        os.remove(os.path.join(directory, name + ".mlir"))
    failed = [n for n, p in packages.items() if not p["ok"]]
    if failed:
        raise SystemExit("packages that do not compile or check: " + ", ".join(failed))
    # The collectives of the TP+SP anchor as each cost model chunks them.
    chunking = {}
    for tp in tps if args.copy_engine else []:
        chunking[str(tp)] = {v: ce.collective_counts(packages[f"anchor_{v}.weftpkg"]["check"])
                             for v in (f"tp{tp}sp", f"tp{tp}spce")}
        print("COLLECTIVES", tp, json.dumps(chunking[str(tp)]), flush=True)
    # The packages xz-compress 15-30x (one archive: ~0.3 MB against ~28 MB),
    # which keeps DIR within a device call's carry; run unpacks them.
    with tarfile.open(os.path.join(directory, PACKAGES), "w:xz") as tar:
        for name in sorted(packages):
            tar.add(os.path.join(directory, name), arcname=name)
            os.remove(os.path.join(directory, name))
    ship_weft_run(directory, build)
    shutil.copy(os.path.join(build, "lib", "libweft_runtime.so"), directory)
    shutil.copy(os.path.join(ANCHORS, "tp_sp_anchors.py"), directory)
    shutil.copy(os.path.join(ANCHORS, TORCH_ONE), os.path.join(directory, "torch_one_anchor.json"))
    shutil.copy(os.path.join(REPO, "bench", "collective_bench.py"), directory)
    megatron = os.path.join(REPO, "bench", "megatron_tp_sp.py")
    if os.path.exists(megatron):
        shutil.copy(megatron, directory)
        for wheel in glob.glob(os.path.join(REPO, ".whl", "megatron_core-*.whl")):
            shutil.copy(wheel, directory)
    commit = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    config = {"tps": tps, "tp": max(tps), "models": models, "configs": configs, "mid": args.mid,
              "megatron_script": os.path.exists(megatron), "commit": commit,
              "packages": packages, "copy_engine_chunking": chunking,
              "simulate": simulate(build, directory, tps, env) if args.simulate else None}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    total = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory)
                if os.path.isfile(os.path.join(directory, f)))
    print(f"prepared {directory}: {len(packages)} packages, {total / 2**20:.1f} MiB, commit "
          f"{commit}", flush=True)
    if config["simulate"] and not all(r["ok"] for r in config["simulate"].values()):
        raise SystemExit("a simulated-rank check failed: see config.json's simulate")
    if total > CARRY_LIMIT:
        raise SystemExit(f"{directory} holds {total / 2**20:.1f} MiB, more than the 64 MiB a "
                         "device call carries")


def run(args):
    directory = args.dir
    config = json.load(open(os.path.join(directory, "config.json")))
    budget = ph.Budget(args.budget)
    os.environ.update(ph.NO_MULTICAST, CUDA_DEVICE_ORDER="PCI_BUS_ID")  # this process too
    phases = args.only.split(",") if args.only else \
        DEFAULT_PHASES + (args.with_phases.split(",") if args.with_phases else [])
    unknown = set(phases) - set(DEFAULT_PHASES + OPTIONAL_PHASES)
    if unknown:
        raise SystemExit(f"unknown phases {sorted(unknown)}: the phases are "
                         f"{DEFAULT_PHASES + OPTIONAL_PHASES}")
    tps = sorted(parse_tps(args.tp) if args.tp else config["tps"], reverse=True)
    margins = [int(m) for m in (getattr(args, "gemm_sm_margins", None) or "").split(",")
               if m.strip()]
    missing = [t for t in tps if t not in config["tps"]]
    if missing:
        raise SystemExit(f"tp {missing} not prepared (prepared: {config['tps']})")
    results = {"date": time.strftime("%Y-%m-%d"), "tp": max(tps), "tps": sorted(tps),
               "commit": config.get("commit"), "simulate": config.get("simulate"),
               "phases": [], "weft": {}}
    if args.dry_run:  # DIR stays as prepare left it
        weft_env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(directory, "lib"))
    else:
        with tarfile.open(os.path.join(directory, PACKAGES), "r:xz") as tar:
            tar.extractall(directory, members=[m for m in tar.getmembers() if not os.path.exists(
                os.path.join(directory, m.name))],
                **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        weft_env = unpack_weft_run(directory)
    sh = ph.Shell(directory, weft_env, budget, args.dry_run)
    if not args.dry_run:
        import torch
        results["device"], results["gpus"] = torch.cuda.get_device_name(), torch.cuda.device_count()
        if results["gpus"] < max(tps):
            budget.log(f"only {results['gpus']} GPUs: tp > {results['gpus']} dropped")
            tps = [t for t in tps if t <= results["gpus"]]
    budget.log("phases", phases, "at tp", tps, "budget", args.budget, "s")
    grad = ph.GradientCheck(sh)
    torch_one = json.load(open(sh.path("torch_one_anchor.json")))["runs"]

    def save():
        if args.dry_run:
            return
        with open(sh.path("results.json"), "w") as f:
            json.dump(results, f, indent=1)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            shutil.copy(sh.path("results.json"), args.out)
            shutil.copytree(sh.path("logs"), os.path.join(args.out, "logs"), dirs_exist_ok=True)

    measured = {}

    def unit(phase, tp, fn):
        """One phase at one tp (0: its one-GPU part), unless the budget left
        is below its estimate (its measured time at a larger tp, else
        ESTIMATE); recorded in results["phases"]."""
        estimate = measured.get(phase, ESTIMATE[phase][1]) if tp else ESTIMATE[phase][0]
        where = f"tp{tp}" if tp else "one GPU"
        entry = {"phase": phase, "tp": tp, "estimate_s": estimate}
        if not args.dry_run and budget.left() < estimate:
            entry["status"] = f"skipped: {budget.left():.0f} s left, ~{estimate} s needed"
            budget.log(phase, where, entry["status"])
        else:
            budget.log(phase, where, "...")
            start = time.time()
            try:
                fn()
                entry["status"] = "done"
            except Exception as e:  # a failed phase is a result; the others go on
                entry["status"] = f"failed: {str(e)[-800:]}"
            entry["seconds"] = round(time.time() - start, 1)
            if tp and not args.dry_run:
                measured[phase] = entry["seconds"]
            budget.log(phase, where, entry["status"][:300], f"({entry['seconds']} s)")
        results["phases"].append(entry)
        save()

    variants = getattr(args, "variants", None)
    wanted = set(variants.split(",")) if variants else None

    def chosen(tp, phase):
        return [(v, g) for v, g in ph.variants(tp, phase) if wanted is None or v in wanted]

    def gradient(names, tp):
        def fn():
            found = results.setdefault("gradient_checks", {})
            for name in names:
                model = config["configs"][name]
                for variant in (["one"] if tp == 0 else [v for v, _ in chosen(tp, "grad")]):
                    r = grad.check(name, model, f"{name}_{variant}.weftpkg", 1 if tp == 0 else tp)
                    if r:
                        found[f"{name}_{variant}"] = r
                        budget.log("GRADCHECK", name, variant, "ok" if r["ok"] else "FAILED",
                                   "loss", json.dumps(r["loss"]), "worst weft/torch-bf16 "
                                   "error ratio", round(r["worst_ratio"], 3))
        return fn

    def grad_names(tp, which):
        names = [n for n, _ in models_at(tp, True) if n in config["models"][str(tp)]]
        return [n for n in names if (n == "mid") == (which == "mid") and
                (which != "llama" or n == "llama")]

    def weft_unit(key, fn, name, ranks, label):
        def go():
            r = fn(sh, ANCHOR, name, ranks)
            if r is not None:
                results.setdefault(key, {})[name] = r
                budget.log(label, name, json.dumps(r if key != "weft" else {
                    k: r[k] for k in ("ms", "ms_per_rank", "loss", "in_use_gib", "planned_gib",
                                      "max_abs_gap", "startup_s") if k in r}))
        return go

    adam = AdamCheck(sh)

    def adam_unit(model, variant, ranks):
        def go():
            if args.dry_run:
                print(f"DRY adam3 {model} {variant} on {ranks} GPU(s)")
                return
            r = adam.run(model, config["configs"][model], variant, ranks)
            results.setdefault("adam_checks", {})[f"{model}_{variant}"] = r
            budget.log("ADAM", model, variant, "ok" if r["ok"] else "FAILED", "losses",
                       json.dumps([round(l["weft"], 5) for l in r["losses"]]),
                       "worst weft/torch-bf16 update error ratio", round(r["worst_ratio"], 3))
        return go

    def per_tp(key, fn):
        def go(tp):
            def inner():
                r = fn(sh, tp)
                if r is not None:
                    results.setdefault(key, {})[str(tp)] = r
                    budget.log(key, f"tp{tp}", json.dumps(r)[:1500])
            return inner
        return go

    for phase in phases:
        if phase in ("grad", "llama", "mid"):
            one = sorted({n for tp in tps for n in grad_names(tp, phase)})
            if one:
                unit(phase, 0, gradient(one, 0))
            for tp in tps:
                if grad_names(tp, phase):
                    unit(phase, tp, gradient(grad_names(tp, phase), tp))
        elif phase == "time":
            if wanted is None or "one" in wanted:
                unit(phase, 0, weft_unit("weft", ph.timing, "one", 1, "TIME"))
            for tp in tps:
                unit(phase, tp, lambda tp=tp: [weft_unit("weft", ph.timing, v, tp, "TIME")()
                                               for v, _ in chosen(tp, phase)])
                # The same packages with their GEMMs beside collectives
                # leaving SMs to them (weft-run --gemm-sm-margin), as
                # "<variant>@m<N>".
                for margin in margins:
                    unit(phase, tp, lambda tp=tp, m=margin: [weft_unit(
                        "weft", lambda s, c, n, r: ph.timing(s, c, n.split("@")[0], r,
                                                             sm_margin=m),
                        f"{v}@m{m}", tp, "TIME")() for v, _ in chosen(tp, phase)])
        elif phase == "adam":
            for model in ["anchor"] + (["llama"] if 2 in tps and not args.dry_run else []):
                unit(phase, 0, adam_unit(model, "one", 1))
                for tp in tps if model == "anchor" else [2]:
                    unit(phase, tp, lambda m=model, tp=tp: [
                        adam_unit(m, v, tp)() for v, _ in chosen(tp, phase)])
        elif phase == "torch1":
            unit(phase, 0, lambda: results.setdefault("torch", {}).update(
                {"1": ph.torch_anchor(sh, 1, ANCHOR["seq"])}))
        elif phase in ("torch", "coll", "megatron"):
            key, fn = {"torch": ("torch", lambda s, t: ph.torch_anchor(s, t, ANCHOR["seq"])),
                       "coll": ("collectives", ph.collectives),
                       "megatron": ("megatron", ph.megatron)}[phase]
            for tp in tps:
                unit(phase, tp, per_tp(key, fn)(tp))
        elif phase in ("kill", "hang"):
            unit(phase, max(tps), per_tp(phase, lambda s, t: ph.fault_test(
                s, t, ph.data_file(s.dir, ANCHOR, 1, "anchor_x.npz", dry=s.dry),
                *((60,) if phase == "kill" else (15, ph.signal.SIGSTOP, "hang_test"))))(
                max(tps)))
        elif phase == "ce":
            for tp in tps:
                unit(phase, tp, per_tp("copy_engine", lambda s, t: ce.phase(
                    s, grad, t, ANCHOR, small_model(t)))(tp))
        elif phase == "cefault":
            unit(phase, max(tps), per_tp("copy_engine_faults", lambda s, t: ce.faults(
                s, t, ph.data_file(s.dir, ANCHOR, 1, "anchor_x.npz", dry=s.dry)))(max(tps)))
        elif phase == "launch":
            unit(phase, max(tps), per_tp("torchrun", lambda s, t: ph.torchrun_launch(
                s, small_model(t)[0], t))(max(tps)))
    weft = results["weft"]
    results["memory_equation"] = {k: {"max_abs_gap": w["max_abs_gap"],
                                      "within_1_percent": w["max_abs_gap"] <= 0.01}
                                  for k, w in weft.items()}
    torch1 = (results.get("torch", {}).get("1") or {}).get("runs", {})
    results["torch_one"] = torch1 if "ms" in torch1.get("tp_compiled", {}) else torch_one
    results["torch_one_source"] = "measured (torch1)" if results["torch_one"] is torch1 else \
        f"../shared/anchors/{TORCH_ONE}"
    results["summary"] = {
        "gradient_checks_ok": {k: r["ok"] for k, r in results.get("gradient_checks", {}).items()},
        "adam_checks_ok": {k: (r["ok"], round(r["worst_ratio"], 3))
                           for k, r in results.get("adam_checks", {}).items()},
        "memory_max_abs_gap": {k: round(v["max_abs_gap"], 5)
                               for k, v in results["memory_equation"].items()},
        "faults_ok": {k: {t: r.get("ok") for t, r in results[k].items()}
                      for k in ("kill", "hang", "torchrun") if k in results}}
    save()
    budget.log("done;", sum(1 for p in results["phases"] if p["status"] == "done"), "of",
               len(results["phases"]), "units ran; their estimates add up to",
               round(sum(p["estimate_s"] for p in results["phases"])), "s")
    if not args.dry_run:
        print("\nPHASES", json.dumps([(p["phase"], p["tp"], p.get("seconds"), p["status"][:60])
                                      for p in results["phases"]]))
        print("\nSUMMARY", json.dumps(results["summary"]))
        print("\n" + ph.markdown(results, results["torch_one"], results["torch_one_source"]),
              flush=True)
    failed = [p for p in results["phases"] if p["status"].startswith("failed")]
    return 1 if failed else 0


def options(parser):
    parser.add_argument("--tp", help="prepare: the comma list of tp (default 2); run: the "
                        "prepared tps to run (default all)")
    parser.add_argument("--mid", action="store_true",
                        help="prepare: the gradient check at the anchor's width, seq 2048")
    parser.add_argument("--simulate", action="store_true",
                        help="prepare: check the small instances on simulated ranks")
    parser.add_argument("--copy-engine", action="store_true",
                        help="prepare: add the TP+SP anchor compiled for copy-engine "
                        "all-gathers (--collective-engine=copy-engine), for the ce phase")
    parser.add_argument("--only", help="run: these phases only, comma-separated, of " +
                        ",".join(DEFAULT_PHASES + OPTIONAL_PHASES))
    parser.add_argument("--with", dest="with_phases",
                        help="run: phases added to the default ones (" +
                        ",".join(OPTIONAL_PHASES) + ")")
    parser.add_argument("--budget", type=float, default=540,
                        help="run: seconds for everything (phases beyond it are skipped)")
    parser.add_argument("--out", help="run: copy results.json and logs/ here after each phase")
    parser.add_argument("--variants", help="run: only these packages' variants in the grad, "
                        "time and adam phases, comma-separated (e.g. tp2sp,tp2splf); the "
                        "one-GPU time only when 'one' is among them, the other phases' "
                        "one-GPU parts as always")
    parser.add_argument("--gemm-sm-margins",
                        help="run: the time phase also times each package with weft-run "
                        "--gemm-sm-margin N for each N of this comma list, as '<variant>@mN'")
    parser.add_argument("--dry-run", action="store_true",
                        help="run: print the commands, run nothing")


if __name__ == "__main__":
    sys.exit(run_phases(__doc__, {"prepare": prepare, "run": run}, options))
