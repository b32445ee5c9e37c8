"""Tensor and sequence parallelism on several GPUs: the anchor GPT blocks of
../shared/anchors (hidden 4096, 32 heads, bf16, causal, loss mean(x^2)) at
seq 8192 as Weft packages for one GPU, tp = T (TP only) and tp = T with
sequence parallelism, run by the NCCL runtime (weft-run --nproc-per-node),
beside PyTorch's own TP / TP+SP (tp_sp_anchors.py) in the same call.
From the checkout's root, with PYTHONPATH=python:

  prepare (here, with the build):  tp_sp_bench.py prepare DIR [--tp T]
      generates the model (python -m weft.models), compiles the gradient
      step (no optimizer, as the anchor times it) and the AdamW step for one
      GPU, tp = T and tp = T + SP; the gradient-check instances (the anchor's
      architecture, small and at hidden 4096 / seq 2048); ships weft-run,
      libweft_runtime.so and the anchor scripts.
  run (on T GPUs):                 tp_sp_bench.py run DIR [--quick]
      1. gradient checks: loss and every parameter gradient, gathered from
         the ranks, vs float64 within 2x torch bf16's error, one GPU and
         tp = T with and without SP;
      2. the anchor's AdamW step, 3 steps from the same drawn state: the
         losses of tp = T (+SP) against one GPU;
      3. step time (median wall of 20 steps after 5, CUDA graphs) and
         per-GPU memory (cuMemGetInfo against the plan) of the gradient
         step on one GPU, tp = T and tp = T + SP;
      4. Weft's collectives alone vs torch.distributed (collective_bench.py);
      5. PyTorch TP / TP+SP (tp_sp_anchors.py, torchrun) and on one GPU;
      6. a rank killed mid-step: the others' exit time and message.
      Writes DIR/results.json and prints the table for bench/RESULTS.md.
"""
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_step_bench as gsb  # noqa: E402
from weft.gpu.device import ship_weft_run, unpack_weft_run  # noqa: E402
from weft.gpu.phases import REPO, run_phases  # noqa: E402

ANCHOR = dict(gsb.ANCHOR, seq=8192)
MID = dict(ANCHOR, seq=2048)  # the anchor's width, small enough for float64
SMALL = gsb.SMALL
# A LLaMA-style block (RMSNorm, SwiGLU, RoPE, GQA 4:1), for the gradient check.
LLAMA = dict(SMALL, layers=2, hidden=1024, heads=16, kv_heads=4, seq=1024, ffn_hidden=2816,
             norm="rmsnorm", mlp="swiglu", rope=True)
FLAGS = ["--fuse-elementwise", "--fold-attention-layout"]
WARMUP, STEPS = 5, 20
ANCHORS = os.path.join(REPO, "..", "shared", "anchors")


def variants(tp):
    return [("one", []), (f"tp{tp}", [f"--grid=tp={tp}"]),
            (f"tp{tp}sp", [f"--grid=tp={tp}", "--sequence-parallel"])]


def compile_or_fail(build, ir, out, extra, env):
    ok, _, message = gsb.compile_package(build, ir, out, extra, env, try_fused=False)
    if not ok:
        raise SystemExit(f"{out}: {message}")


def prepare(args):
    directory, build, tp = args.dir, args.build, args.tp
    os.makedirs(directory, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    for name, config in (("anchor", ANCHOR), ("mid", MID), ("small", SMALL), ("llama", LLAMA)):
        ir = os.path.join(directory, name + ".mlir")
        gsb.generate(config, ir, env)
        for variant, grid in variants(tp):
            compile_or_fail(build, ir, os.path.join(directory, f"{name}_{variant}.weftpkg"),
                            FLAGS + grid, env)
            if name == "anchor":
                compile_or_fail(build, ir, os.path.join(directory, f"adam_{variant}.weftpkg"),
                                FLAGS + grid + ["--optimizer=adamw", "--weight-copies=auto"], env)
        os.remove(ir)
    ship_weft_run(directory, build)
    shutil.copy(os.path.join(build, "lib", "libweft_runtime.so"), directory)
    for script in ("tp_sp_anchors.py",):
        shutil.copy(os.path.join(ANCHORS, script), directory)
    shutil.copy(os.path.join(REPO, "bench", "collective_bench.py"), directory)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"tp": tp}, f)


def weft_run(directory, env, package, *args, ranks=1, timeout=600):
    command = [os.path.join(directory, "weft-run"), os.path.join(directory, package)]
    if ranks > 1:
        command += ["--nproc-per-node", str(ranks)]
    done = subprocess.run(command + list(args), capture_output=True, text=True, env=env,
                          timeout=timeout)
    sys.stdout.write(done.stdout[-3000:])
    sys.stderr.write(done.stderr[-3000:])
    if done.returncode:
        raise RuntimeError(f"{' '.join(command + list(args))} exited {done.returncode}")
    return done.stdout


def rank_steps(stdout, rank=0):
    """(loss, ms) per step of rank `rank` (or of a one-GPU run)."""
    pattern = r"^(?:\[rank (\d+)\] )?step \d+/\d+(?: loss (\S+))? \((\S+) ms\)"
    return [(float(m.group(2)) if m.group(2) else None, float(m.group(3)))
            for m in re.finditer(pattern, stdout, re.M) if int(m.group(1) or 0) == rank]


def rank_memory(stdout):
    return {int(m.group(1) or 0): json.loads(m.group(2)) for m in
            re.finditer(r"^(?:\[rank (\d+)\] )?memory-json: (.*)$", stdout, re.M)}


def data_file(directory, config, steps, name, adam=False):
    """x of the model's shape, [steps, batch, seq, hidden], standard normal
    rounded to bf16 (as f32), then the seed (and AdamW's step counter, 1 to
    steps); one file for every grid (split inputs are sliced by the ranks)."""
    import numpy as np
    import torch
    from weft import npz
    from weft.models.arguments import argument_specs
    from weft.models.config import ModelConfig
    n = sum(s.is_param for s in argument_specs(ModelConfig(**config)))
    first = 3 * n if adam else n
    rng = np.random.default_rng(7)
    x = rng.standard_normal((steps, config["batch"], config["seq"], config["hidden"]),
                            dtype=np.float32)
    values = {f"arg{first}": torch.from_numpy(x).to(torch.bfloat16).float(),
              f"arg{first + 1}": torch.tensor(5, dtype=torch.int64)}
    if adam:
        values[f"arg{first + 2}"] = torch.arange(1, steps + 1, dtype=torch.int64)
    path = os.path.join(directory, name)
    npz.save(path, values)
    return path


def timing(directory, env, tp, quick):
    data = data_file(directory, ANCHOR, 1, "anchor_x.npz")
    rows = {}
    for variant, _ in variants(tp):
        ranks = 1 if variant == "one" else tp
        out = weft_run(directory, env, f"anchor_{variant}.weftpkg", "--steps",
                       str(WARMUP + (5 if quick else STEPS)), "--graph", "--init-state", "0",
                       "--data", data, "--print-memory", ranks=ranks)
        per_rank = [rank_steps(out, r) for r in range(ranks)]
        ms = [statistics.median(t for _, t in steps[WARMUP:]) for steps in per_rank]
        memory = rank_memory(out)
        rows[variant] = {"ms": max(ms), "ms_per_rank": ms, "loss": per_rank[0][-1][0],
                         "memory": memory,
                         "peak_gib": max((m["peak"] - m["before"]) / 2**30 for m in memory.values()),
                         "planned_gib": memory[0]["planned"] / 2**30}
        print("TIMING", variant, json.dumps(rows[variant]), flush=True)
    return rows


def adam_losses(directory, env, tp):
    data = data_file(directory, ANCHOR, 3, "anchor_x3.npz", adam=True)
    losses = {}
    for variant, _ in variants(tp):
        out = weft_run(directory, env, f"adam_{variant}.weftpkg", "--steps", "3", "--init-state",
                       "0", "--data", data, ranks=1 if variant == "one" else tp)
        losses[variant] = [loss for loss, _ in rank_steps(out)]
        print("ADAM", variant, losses[variant], flush=True)
    return losses


def gradient_checks(directory, env, tp, names):
    results = {}
    configs = {"small": SMALL, "llama": LLAMA, "mid": MID}
    for name in names:
        config = configs[name]
        for variant, _ in variants(tp):
            result = gsb.gradient_check(directory, env, config, f"{name}_{variant}.weftpkg",
                                        ranks=1 if variant == "one" else tp)
            worst = max(r["weft_rel_err"] / max(r["torch_bf16_rel_err"], 1e-30)
                        for r in result["gradients"])
            results[f"{name}_{variant}"] = result
            print("GRADCHECK", name, variant, "ok" if result["ok"] else "FAILED",
                  "loss", result["loss"], "worst weft/torch-bf16 error ratio", round(worst, 3),
                  flush=True)
    return results


def torchrun(directory, script, tp, *args, timeout=540):
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(tp),
               os.path.join(directory, script)] + list(args)
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, OMP_NUM_THREADS="4"))
    sys.stdout.write(done.stdout[-4000:])
    sys.stderr.write(done.stderr[-2000:])
    return done.returncode


def torchrun_launch(directory, env, tp):
    """torchrun itself starts weft-run (torchrun --no-python): the TP+SP
    gradient step of the small instance gives the same gathered outputs, byte
    for byte, as under weft-run --nproc-per-node."""
    stem = os.path.join(directory, f"small_tp{tp}sp")
    command = [sys.executable, "-m", "torch.distributed.run", "--no-python", "--nproc-per-node",
               str(tp), os.path.join(directory, "weft-run"), stem + ".weftpkg", "--data",
               stem + "_data.npz", "--outputs", stem + "_torchrun.npz.json"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    sys.stdout.write(done.stdout[-2000:] + done.stderr[-2000:])
    if done.returncode:
        return {"ok": False, "detail": f"torchrun exited {done.returncode}"}
    subprocess.run([os.path.join(directory, "weft-run"), "--gather-state",
                    stem + "_torchrun.npz.json", "--to", stem + "_torchrun.npz"], check=True,
                   env=env)
    same = open(stem + "_torchrun.npz", "rb").read() == open(stem + "_out.npz", "rb").read()
    print("TORCHRUN outputs identical to --nproc-per-node:", same, flush=True)
    return {"ok": same}


def hang_test(directory, env, tp, timeout_s=15):
    """A rank that stops (SIGSTOP: its process and connection stay, it never
    joins the next collective): the others fail when the collective timeout
    runs out, naming the collective; the launcher then kills the stopped one."""
    return kill_test(directory, env, tp, timeout_s, signal.SIGSTOP, "hang_test.log")


def kill_test(directory, env, tp, timeout_s=60, how=signal.SIGKILL, log_name="kill_test.log"):
    """Starts the TP+SP step for many steps, kills the last rank with SIGKILL
    once steps run, and times how long the others take to exit."""
    data = os.path.join(directory, "anchor_x.npz")
    command = [os.path.join(directory, "weft-run"), os.path.join(directory, f"anchor_tp{tp}sp.weftpkg"),
               "--nproc-per-node", str(tp), "--steps", "100000", "--init-state", "0", "--data",
               data, "--collective-timeout", str(timeout_s)]
    log = open(os.path.join(directory, log_name), "w+")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 120
    victim = None
    while time.time() < deadline and victim is None:
        time.sleep(0.5)
        log.flush()
        text = open(log.name).read()
        if text.count("step 3/") >= tp:
            out = subprocess.run(["pgrep", "-f", f"anchor_tp{tp}sp.weftpkg"], capture_output=True,
                                 text=True).stdout.split()
            pids = sorted(int(p) for p in out if int(p) != proc.pid)
            if pids:
                victim = pids[-1]
    if victim is None:
        proc.kill()
        return {"ok": False, "detail": "the run did not reach step 3"}
    killed_at = time.time()
    os.kill(victim, how)
    # When the surviving ranks report: the first "error:" line in the log.
    first_error, error_seconds = None, None
    while proc.poll() is None or first_error is None:
        errors = [l for l in open(log.name).read().splitlines() if "error:" in l]
        if errors and first_error is None:
            first_error, error_seconds = errors[0], time.time() - killed_at
        if proc.poll() is not None or time.time() - killed_at > timeout_s + 90:
            break
        time.sleep(0.1)
    code = proc.wait(timeout=timeout_s + 90)
    elapsed = time.time() - killed_at
    log.flush()
    text = open(log.name).read()
    tail = "\n".join(l for l in text.splitlines() if "step" not in l or "error" in l)[-3000:]
    print(log_name, "exit", code, "after", round(elapsed, 2), "s\n" + tail, flush=True)
    return {"ok": code != 0 and first_error is not None and error_seconds < timeout_s + 5,
            "exit": code, "error_seconds": error_seconds, "launcher_seconds": elapsed, "victim_pid": victim, "signal": int(how),
            "messages": tail}


def run(args):
    directory = args.dir
    tp = json.load(open(os.path.join(directory, "config.json")))["tp"]
    env = unpack_weft_run(directory)
    results = {"date": time.strftime("%Y-%m-%d"), "tp": tp}
    import torch
    results["device"] = torch.cuda.get_device_name()
    results["gpus"] = torch.cuda.device_count()
    steps = (args.only.split(",") if args.only else
             ["grad", "adam", "time", "coll", "torch", "launch", "kill", "hang"])
    if "grad" in steps or "llama" in steps:
        names = ["llama"] if "grad" not in steps else ["small", "llama"] + ([] if args.quick
                                                                           else ["mid"])
        results["gradient_checks"] = gradient_checks(directory, env, tp, names)
    if "adam" in steps:
        results["adam_losses"] = adam_losses(directory, env, tp)
    if "time" in steps:
        results["weft"] = timing(directory, env, tp, args.quick)
    if "coll" in steps:
        coll = os.path.join(directory, "collectives.json")
        torchrun(directory, "collective_bench.py", tp, os.path.join(directory, "libweft_runtime.so"),
                 "--json", coll)
        results["collectives"] = json.load(open(coll)) if os.path.exists(coll) else None
    if "torch" in steps:
        out = os.path.join(directory, "torch_tp.json")
        torchrun(directory, "tp_sp_anchors.py", tp, "--seq", "8192", "--json", out)
        results["torch"] = json.load(open(out)) if os.path.exists(out) else None
    if "launch" in steps:
        results["torchrun"] = torchrun_launch(directory, env, tp)
    if "kill" in steps:
        results["kill"] = kill_test(directory, env, tp)
    if "hang" in steps:
        results["hang"] = hang_test(directory, env, tp)
    with open(os.path.join(directory, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("RESULTS", json.dumps({k: v for k, v in results.items() if k != "gradient_checks"}))


def options(parser):
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only",
                        help="comma-separated: grad (or llama alone),adam,time,coll,torch,"
                             "launch,kill,hang")


if __name__ == "__main__":
    sys.exit(run_phases(__doc__, {"prepare": prepare, "run": run}, options))
