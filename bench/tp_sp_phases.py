"""The run phase of tp_sp_bench.py, phase by phase: launching weft-run and
torchrun on the first T GPUs (a budget, logs, --dry-run), the gradient check
with its float64 reference computed once per model, the step timing with the
memory equation per rank, the AdamW losses, the collectives, PyTorch's and
Megatron-core's steps, the fault tests and the markdown rows."""
import ast
import glob
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

from weft.gpu.phases import REPO

WARMUP, STEPS = 5, 20
MIB, GIB = 2**20, 2**30
# NVLink multicast stays off on the lent multi-GPU hosts (a program using it
# can take the host's GPUs out of service), in every environment started here.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}


def gpu_env(env, gpus):
    """`env` on GPUs 0..gpus-1 in PCI order (nvidia-smi's numbers), multicast off."""
    return dict(env, CUDA_DEVICE_ORDER="PCI_BUS_ID",
                CUDA_VISIBLE_DEVICES=",".join(str(g) for g in range(gpus)), **NO_MULTICAST)


class Budget:
    """Seconds since the start against the budget; progress lines with the
    elapsed time."""

    def __init__(self, seconds):
        self.start, self.seconds = time.time(), seconds

    def elapsed(self):
        return time.time() - self.start

    def left(self):
        return self.seconds - self.elapsed()

    def log(self, *words):
        print(f"[{self.elapsed():6.1f} s]", *words, flush=True)


class Shell:
    """Runs the phases' commands on the first `gpus` GPUs (CUDA_VISIBLE_DEVICES
    0..gpus-1 in PCI order, as nvidia-smi numbers them: weft-run's rank r
    takes LOCAL_RANK r, so GPU r), the whole output in DIR/logs/NAME.log;
    with `dry` prints each command instead. A command gets at most the
    budget left plus 30 s."""

    def __init__(self, directory, weft_env, budget, dry=False):
        self.dir, self.weft_env, self.budget, self.dry = directory, weft_env, budget, dry
        if not dry:
            os.makedirs(os.path.join(directory, "logs"), exist_ok=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def run(self, command, gpus, log, env=None, timeout=600, check=True):
        env = gpu_env(env or os.environ, gpus)
        if self.dry:
            print(f"DRY [{log}] CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']}",
                  shlex.join(command), flush=True)
            return ""
        timeout = max(10, min(timeout, self.budget.left() + 30))
        # A session of its own: on the timeout the launcher goes with every
        # rank or worker it started (a killed launcher would leave them on
        # the GPUs).
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            code, err = 124, err + f"\ntimed out after {timeout:.0f} s"
        with open(self.path(os.path.join("logs", log + ".log")), "a") as f:
            f.write(f"$ {shlex.join(command)}\n{out}\n--- stderr\n{err}\n--- exit {code}\n")
        if code and check:
            raise RuntimeError(f"{os.path.basename(command[0])} {log} exited {code}: "
                               f"{(err or out)[-600:]}")
        return out

    def weft(self, package, *args, ranks=1, log=None, **kw):
        command = [self.path("weft-run"), self.path(package)]
        if ranks > 1:
            command += ["--nproc-per-node", str(ranks)]
        return self.run(command + [str(a) for a in args], ranks, log or package[:-8],
                        env=self.weft_env, **kw)

    def torchrun(self, script, ranks, *args, log, env=None, **kw):
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
                   self.path(script)] + [str(a) for a in args]
        return self.run(command, ranks, log, env=dict(env or os.environ, OMP_NUM_THREADS="4"),
                        **kw)


def variants(tp, phase=None):
    """The packages of tp: TP only and TP+SP (collective matmul as the cost
    model chooses: none at the anchor's size); the gradient checks add TP+SP
    with collective matmul forced to 2 chunks and with every all-gather
    before a GEMM local-first, the timing TP+SP without
    weft-fill-collective-waits (the same step with the weight gradients left
    where autodiff put them) and without local-first gathers (nolf; the
    default takes them where the cost model gains)."""
    out = [(f"tp{tp}", [f"--grid=tp={tp}"]),
           (f"tp{tp}sp", [f"--grid=tp={tp}", "--sequence-parallel"])]
    if phase == "grad":
        out.append((f"tp{tp}spc2", out[1][1] + ["--collective-chunks=2"]))
        out.append((f"tp{tp}splf", out[1][1] + ["--collective-local-first=on"]))
    if phase == "time":
        out.append((f"tp{tp}spnf", out[1][1] + ["--fill-collective-waits=false"]))
        out.append((f"tp{tp}spnolf", out[1][1] + ["--collective-local-first=off"]))
    return out


def rank_steps(stdout, rank=0):
    """(loss, ms) per step of rank `rank` (or of a one-GPU run)."""
    pattern = r"^(?:\[rank (\d+)\] )?step \d+/\d+(?: loss (\S+))? \((\S+) ms\)"
    return [(float(m.group(2)) if m.group(2) else None, float(m.group(3)))
            for m in re.finditer(pattern, stdout, re.M) if int(m.group(1) or 0) == rank]


def rank_startup(stdout):
    """{rank: (load s, state s)} from weft-run's "start-up:" lines (a one-GPU
    run's as rank 0)."""
    pattern = r"^(?:\[rank (\d+)\] )?start-up: load (\S+) s .*?, state (\S+) s$"
    return {int(m.group(1) or 0): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(pattern, stdout, re.M)}


def rank_memory(stdout):
    return {int(m.group(1) or 0): json.loads(m.group(2)) for m in
            re.finditer(r"^(?:\[rank (\d+)\] )?memory-json: (.*)$", stdout, re.M)}


# ------------------------------------------------------------ memory equation

def gpu_free(sh, gpus):
    """nvidia-smi's free bytes of GPUs 0..gpus-1 (PCI order), or None."""
    if sh.dry:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.free",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=30).stdout
        free = {int(i): int(f) * MIB for i, f in (l.split(",") for l in out.strip().splitlines())}
        return [free[g] for g in range(gpus)]
    except Exception:  # no nvidia-smi: the equation without a baseline
        return None


def memory_equation(memory, free_before):
    """Per rank: device memory in use at the peak against the plan plus the
    listed overheads. cuMemGetInfo counts every process on the GPU, so what
    this run uses is counted from `free_before` (nvidia-smi's free bytes of
    that GPU just before the launch; in use = cuMemGetInfo's total - free, the
    same count weft-run's readings use). Terms, from weft-run --print-memory
    (lib/Host/StepTiming.cpp printStepMemory, runtime/lib/Step.cpp):
      context     the rank's reading before its communicators (one GPU: before
                  the arena) less the baseline: CUDA context, runtime;
      nccl_init   NCCL's communicators at init (the reading after
                  weft_comm_init less the one before);
      planned     the package's arena as planned;
      load        after_load - after_arena: modules, tensor maps, cuBLASLt,
                  streams, the collectives' records;
      nccl_buffers  peak - after_load: NCCL allocates its buffers at the first
                  collectives, after load, so this is measured as all growth
                  after load (the one-GPU step, without NCCL, is the control:
                  its growth after load is reported beside it).
    The gap, (in use - (context + nccl_init + planned + load +
    nccl_buffers)) / in use, is then the arena allocation's excess over the
    plan plus anything between the communicators and the arena: the baseline
    cancels out of it and only sets the denominator."""
    rows = {}
    for rank, m in sorted(memory.items()):
        base = m["total"] - free_before[rank] if free_before else None
        before_comm = m.get("context", m["before"])
        nccl_init = m.get("nccl_init", 0)
        terms = {"context": before_comm - base if base is not None else before_comm,
                 "nccl_init": nccl_init, "planned": m["planned"],
                 "load": m["after_load"] - m["after_arena"],
                 "nccl_buffers": m["peak"] - m["after_load"]}
        in_use = m["peak"] - (base if base is not None else 0)
        expected = sum(terms.values())
        rows[rank] = dict(terms, in_use=in_use, expected=expected, baseline_used=base,
                          arena_allocated=m["after_arena"] - m["before"],
                          unlisted_before_arena=m["before"] - before_comm - nccl_init,
                          gap=(in_use - expected) / in_use)
    return rows


def equation_rows(name, rows):
    """Markdown rows of the memory equation, one per rank (MiB)."""
    out = []
    for rank, r in rows.items():
        cells = [r[k] / MIB for k in ("context", "nccl_init", "planned", "load", "nccl_buffers",
                                      "expected", "in_use")]
        out.append(f"| {name} | {rank} | " + " | ".join(f"{c:.1f}" for c in cells) +
                   f" | {100 * r['gap']:+.3f} % |")
    return out


# ------------------------------------------------------------------ phases

def data_file(directory, config, steps, name, dry=False):
    """x of the model's shape, [steps, batch, seq, hidden], standard normal
    rounded to bf16 (as f32), then the seed, for the gradient step; one file
    for every grid (split inputs are sliced by the ranks). The AdamW step's
    inputs: tp_sp_adam.step_inputs."""
    path = os.path.join(directory, name)
    if dry or os.path.exists(path):
        return path
    import numpy as np
    import torch
    from weft import npz
    from weft.models.arguments import argument_specs
    from weft.models.config import ModelConfig
    n = sum(s.is_param for s in argument_specs(ModelConfig(**config)))
    x = np.random.default_rng(7).standard_normal(
        (steps, config["batch"], config["seq"], config["hidden"]), dtype=np.float32)
    values = {f"arg{n}": torch.from_numpy(x).to(torch.bfloat16).float(),
              f"arg{n + 1}": torch.tensor(5, dtype=torch.int64)}
    npz.save(path, values)
    return path


def timing(sh, config, name, ranks, engine=None, sm_margin=None):
    """Median wall of STEPS graph replays after WARMUP (max over ranks) and
    the memory equation per rank of one gradient-step package; `engine`:
    weft-run --collectives (nccl, copy-engine, auto), else its default;
    `sm_margin`: weft-run --gemm-sm-margin (the SMs the GEMMs beside a
    collective leave to it), else its default."""
    data = data_file(sh.dir, config, 1, "anchor_x.npz", dry=sh.dry)
    free = gpu_free(sh, ranks)
    # A new engine's hang costs a minute, not the default 300 s.
    engine_args = ["--collectives", engine, "--collective-timeout", 60] if engine else []
    margin_args = ["--gemm-sm-margin", sm_margin] if sm_margin is not None else []
    out = sh.weft(f"anchor_{name}.weftpkg", "--steps", WARMUP + STEPS, "--graph", "--init-state",
                  0, "--data", data, "--print-memory", *engine_args, *margin_args, ranks=ranks,
                  log=f"time_{name}" + (f"_{engine}" if engine else "") +
                  (f"_m{sm_margin}" if sm_margin is not None else ""))
    if sh.dry:
        return None
    per_rank = [rank_steps(out, r) for r in range(ranks)]
    ms = [statistics.median(t for _, t in steps[WARMUP:] or steps) for steps in per_rank]
    memory = rank_memory(out)
    equation = memory_equation(memory, free)
    return {"ms": max(ms), "ms_per_rank": ms, "loss": per_rank[0][-1][0], "memory": memory,
            "startup_s": rank_startup(out),
            "free_before": free, "equation": equation,
            "max_abs_gap": max(abs(r["gap"]) for r in equation.values()),
            "in_use_gib": max(r["in_use"] for r in equation.values()) / GIB,
            "peak_gib": max((m["peak"] - m["before"]) / GIB for m in memory.values()),
            "planned_gib": memory[0]["planned"] / GIB, "collectives": collective_engine(out)}


def collective_engine(stdout):
    """What weft-run said its all-gathers ran on: "copy-engine", "nccl", or
    None (a one-GPU run)."""
    m = re.search(r"^\[rank 0\] collectives: (.*)$", stdout, re.M)
    return None if not m else ("copy-engine" if "copy engines" in m.group(1) else "nccl")


class GradientCheck:
    """Loss and every parameter gradient of a package, gathered from its
    ranks, against float64 within 2x torch bf16's error (gpt_step_bench.gradient_check's
    criterion); the inputs and torch's float64 and bf16 references are made
    once per model and serve its one-GPU and every partitioned package."""

    def __init__(self, sh):
        self.sh, self.refs = sh, {}

    def reference(self, model, config):
        if model in self.refs:
            return self.refs[model]
        import torch
        from weft import npz
        from weft.models.arguments import argument_specs, argument_values
        from weft.models.config import ModelConfig
        from weft.models.torch_model import Transformer
        cfg = ModelConfig(**config)
        specs = argument_specs(cfg)
        values = argument_values(cfg.replace(dtype="f64"),
                                 argument_specs(cfg.replace(dtype="f64")))
        n = sum(s.is_param for s in specs)
        bf = [v.to(torch.bfloat16) if v.is_floating_point() else v for v in values]
        del values
        data = self.sh.path(f"{model}_data.npz")
        npz.save(data, {f"arg{i}": v.float() if v.is_floating_point() else v
                        for i, v in enumerate(bf)})

        def grads(dtype):
            torch.manual_seed(0)
            net = Transformer(cfg).to("cuda", dtype)
            with torch.no_grad():
                for p, v in zip(net.parameters(), bf[:n]):
                    p.copy_(v.to(dtype))
            # The non-parameter arguments by kind: the hidden input (loss
            # mean_square) or ids and labels, the rope tables, the dropout
            # seed (weft's Philox masks: torch_model.weft_dropout).
            inputs = {s.kind: v.to("cuda", dtype) if v.is_floating_point() else v.to("cuda")
                      for s, v in zip(specs, bf) if not s.is_param}
            seed = int(inputs["seed"]) if "seed" in inputs else 0
            loss = net(inputs["hidden"] if cfg.loss != "cross_entropy" else inputs["ids"],
                       inputs.get("labels"), inputs.get("rope_cos"), inputs.get("rope_sin"),
                       seed)
            loss.backward()
            result = (loss.double().item(), [p.grad.double().cpu() for p in net.parameters()])
            del net, loss
            torch.cuda.empty_cache()
            return result

        f64_loss, f64 = grads(torch.float64)
        bf_loss, bfg = grads(torch.bfloat16)
        self.refs[model] = dict(data=data, f64_loss=f64_loss, f64=f64, bf_loss=bf_loss, bf=bfg,
                                names=[s.name for s in specs if s.is_param], config=config)
        return self.refs[model]

    def check(self, model, config, package, ranks, engine=None):
        """`engine`: weft-run --collectives; its outputs go to
        STEM_ENGINE_out.npz (compared bit for bit across engines)."""
        sh = self.sh
        stem = package[:-8] + (f"_{engine}" if engine else "")
        out = sh.path(stem + "_out.npz")
        data = sh.path(f"{model}_data.npz") if sh.dry else self.reference(model, config)["data"]
        sh.weft(package, "--data", data, "--outputs", out + (".json" if ranks > 1 else ""),
                *(["--collectives", engine, "--collective-timeout", 60] if engine else []),
                ranks=ranks, log=f"grad_{stem}")
        if ranks > 1:
            sh.run([sh.path("weft-run"), "--gather-state", out + ".json", "--to", out], 1,
                   f"grad_{stem}", env=sh.weft_env)
        if sh.dry:
            return None
        from weft import npz
        ref, got = self.refs[model], npz.load(out)
        weft_loss = got["res0"].double().reshape(()).item()
        f64_loss, bf_loss = ref["f64_loss"], ref["bf_loss"]
        loss_ok = abs(weft_loss - f64_loss) <= 2 * abs(bf_loss - f64_loss) + \
            abs(f64_loss) * 2.0 ** -8
        rows = []
        for i, name in enumerate(ref["names"]):
            exact = ref["f64"][i]
            g = got[f"res{i + 1}"].double().reshape(exact.shape)
            norm = exact.norm().item() or 1.0
            we, te = (g - exact).norm().item() / norm, (ref["bf"][i] - exact).norm().item() / norm
            rows.append({"param": name, "weft_rel_err": we, "torch_bf16_rel_err": te,
                         "ok": we <= 2 * te + 2.0 ** -9})
        worst = max(r["weft_rel_err"] / max(r["torch_bf16_rel_err"], 1e-30) for r in rows)
        return {"ok": bool(loss_ok and all(r["ok"] for r in rows)), "worst_ratio": worst,
                "loss": {"weft": weft_loss, "torch_f64": f64_loss, "torch_bf16": bf_loss,
                         "ok": bool(loss_ok)}, "gradients": rows, "config": config,
                "outputs": out}


def torch_anchor(sh, ranks, seq):
    """../shared/anchors/tp_sp_anchors.py under torchrun; the variants it
    printed when its JSON is missing (a run cut short)."""
    path = sh.path(f"torch_tp{ranks}.json")
    out = sh.torchrun("tp_sp_anchors.py", ranks, "--seq", seq, "--json", path,
                      log=f"torch_tp{ranks}", check=False, timeout=400)
    if sh.dry:
        return None
    if os.path.exists(path):
        return json.load(open(path))
    runs = {}
    for m in re.finditer(r"^(\w+) (\{.*\})$", out, re.M):
        try:
            runs[m.group(1)] = ast.literal_eval(m.group(2))
        except (ValueError, SyntaxError):
            pass
    return {"world": ranks, "runs": runs, "incomplete": True}


def collectives(sh, ranks):
    path = sh.path(f"collectives_tp{ranks}.json")
    sh.torchrun("collective_bench.py", ranks, sh.path("libweft_runtime.so"), "--json", path,
                log=f"collectives_tp{ranks}", check=False, timeout=240)
    return None if sh.dry else (json.load(open(path)) if os.path.exists(path)
                                else {"error": "no JSON: see logs/collectives_tp%d.log" % ranks})


def megatron(sh, ranks):
    """bench/megatron_tp_sp.py (copied by prepare where it existed) under
    torchrun, where megatron.core imports, or imports once the wheel
    megatron_core-*.whl that prepare shipped from the checkout's .whl/
    (bench/README.md), else the checkout's own, is installed into DIR/site;
    else why not."""
    script = sh.path("megatron_tp_sp.py")
    if not os.path.exists(script):
        return {"not_run": "bench/megatron_tp_sp.py did not exist at prepare time"}
    env, installed = dict(os.environ), None

    def probe():
        done = subprocess.run([sys.executable, "-c", "import megatron.core"], capture_output=True,
                              text=True, timeout=120, env=gpu_env(env, 1))
        return done.returncode == 0, (done.stderr.strip().splitlines() or ["?"])[-1][:300]
    if not sh.dry:
        ok, why = probe()
        wheels = sorted(glob.glob(sh.path("megatron_core-*.whl")) or
                        glob.glob(os.path.join(REPO, ".whl", "megatron_core-*.whl")))
        if not ok and wheels:
            site = sh.path("site")
            pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index",
                                  "--no-deps", "--no-compile", "--no-cache-dir", "--upgrade",
                                  "--target", site] + wheels, capture_output=True, text=True,
                                 timeout=180)
            env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
            installed = [os.path.basename(w) for w in wheels]
            ok, why = probe()
            why += "" if pip.returncode == 0 else "; pip: " + pip.stderr.strip()[-300:]
        if not ok:
            return {"not_run": "import megatron.core failed: " + why, "wheels": installed}
    path = sh.path(f"megatron_tp{ranks}.json")
    sh.torchrun("megatron_tp_sp.py", ranks, "--out", path, log=f"megatron_tp{ranks}", env=env,
                check=False, timeout=300)
    if sh.dry:
        return None
    result = json.load(open(path)) if os.path.exists(path) else \
        {"error": f"no JSON: see logs/megatron_tp{ranks}.log"}
    return dict(result, installed_wheels=installed)


def torchrun_launch(sh, small, tp):
    """torchrun --no-python starts weft-run itself: the TP+SP gradient step of
    the small instance gives the same gathered outputs, byte for byte, as
    under weft-run --nproc-per-node (the gradient check's run)."""
    stem = sh.path(f"{small}_tp{tp}sp")
    reference = stem + "_out.npz"
    if not sh.dry and not os.path.exists(reference):
        return {"ok": False, "detail": "no weft-run --nproc-per-node outputs: run grad first"}
    command = [sys.executable, "-m", "torch.distributed.run", "--no-python", "--nproc-per-node",
               str(tp), sh.path("weft-run"), stem + ".weftpkg", "--data",
               sh.path(f"{small}_data.npz"), "--outputs", stem + "_torchrun.npz.json"]
    sh.run(command, tp, "launch", env=sh.weft_env, timeout=300)
    sh.run([sh.path("weft-run"), "--gather-state", stem + "_torchrun.npz.json", "--to",
            stem + "_torchrun.npz"], 1, "launch", env=sh.weft_env)
    if sh.dry:
        return None
    return {"ok": open(stem + "_torchrun.npz", "rb").read() == open(reference, "rb").read()}


def fault_test(sh, tp, data, timeout_s=60, how=signal.SIGKILL, log_name="kill_test"):
    """Starts the TP+SP step for many steps, stops the last rank once every
    rank ran 3 steps (SIGKILL: its connection closes; SIGSTOP: it stays and
    never joins the next collective, so the others fail at the collective
    timeout and the launcher kills it), and times the others' failure."""
    package = f"anchor_tp{tp}sp.weftpkg"
    command = [sh.path("weft-run"), sh.path(package), "--nproc-per-node", str(tp), "--steps",
               "100000", "--init-state", "0", "--data", data,
               "--collective-timeout", str(timeout_s)]
    if sh.dry:
        print(f"DRY [{log_name}] CUDA_VISIBLE_DEVICES={','.join(map(str, range(tp)))}",
              shlex.join(command), f"# then signal {int(how)} to the last rank", flush=True)
        return None
    env = gpu_env(sh.weft_env, tp)
    log_path = sh.path(os.path.join("logs", log_name + ".log"))
    log = open(log_path, "w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    deadline, victim = time.time() + 120, None
    while time.time() < deadline and victim is None and proc.poll() is None:
        time.sleep(0.5)
        if open(log_path).read().count("step 3/") >= tp:
            # The launcher's children are the ranks, forked in rank order.
            out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                 text=True).stdout.split()
            pids = sorted(int(p) for p in out)
            victim = pids[-1] if len(pids) == tp else None
    if victim is None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return {"ok": False, "detail": "the run did not reach step 3"}
    killed_at = time.time()
    os.kill(victim, how)
    first_error, error_seconds = None, None
    while time.time() - killed_at < timeout_s + 90:
        errors = [l for l in open(log_path).read().splitlines() if "error:" in l]
        if errors and first_error is None:
            first_error, error_seconds = errors[0], time.time() - killed_at
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    code = proc.wait()
    elapsed = time.time() - killed_at
    log.close()
    tail = "\n".join(l for l in open(log_path).read().splitlines()
                     if "step" not in l or "error" in l)[-3000:]
    return {"ok": code != 0 and first_error is not None and error_seconds < timeout_s + 5,
            "exit": code, "error_seconds": error_seconds, "launcher_seconds": elapsed,
            "victim_pid": victim, "signal": int(how), "messages": tail}


# ------------------------------------------------------------------ tables

def markdown(results, torch_one=None, torch_one_source=""):
    """Rows for bench/RESULTS.md: the steps per tp, the memory equation per
    rank, the collectives at each world size. `torch_one`: PyTorch's variants
    at world size 1 (tp_sp_anchors.py's "runs"), each variant's scaling
    efficiency against its own one-GPU time."""
    torch_one = torch_one or {}
    torch_one_ms = torch_one.get("tp_compiled", {}).get("ms")
    weft, torch_runs = results.get("weft", {}), results.get("torch", {})
    one = (weft.get("one") or {}).get("ms")
    lines = ["| step (fwd+bwd) | GPUs | ms | per-GPU planned arena GiB | per-GPU in use at peak "
             "GiB | / PyTorch (TP: compiled, TP+SP: best) | scaling efficiency |",
             "|---|---|---|---|---|---|---|"]

    def eff(ms, t, base):
        return f"{100 * base / (t * ms):.1f} %" if base and ms and t > 1 else "–"
    if one:
        w = weft["one"]
        lines.append(f"| Weft, 1 GPU | 1 | {one:.2f} | {w['planned_gib']:.2f} | "
                     f"{w['in_use_gib']:.2f} | – | – |")
    if torch_one_ms:
        lines.append(f"| PyTorch compiled, 1 GPU ({torch_one_source}) | 1 | {torch_one_ms:.2f} "
                     "| – | – | – | – |")
    for tp in results.get("tps", []):
        runs = (torch_runs.get(str(tp)) or {}).get("runs", {})
        ok = {k: v for k, v in runs.items() if "ms" in v}
        best_sp = min((v["ms"] for k, v in ok.items() if k.startswith("tp_sp")), default=None)
        ref = {f"tp{tp}": ok.get("tp_compiled", {}).get("ms"), f"tp{tp}sp": best_sp,
               f"tp{tp}spc2": best_sp, f"tp{tp}spnf": best_sp}
        rows = [(f"tp{tp}", "TP"), (f"tp{tp}sp", "TP+SP"),
                (f"tp{tp}spnf", "TP+SP, --fill-collective-waits=false"),
                (f"tp{tp}spc2", "TP+SP, collective matmul 2 chunks")]
        # The runs with an SM margin for the collectives ("<variant>@mN").
        rows += [(key, f"{dict(rows).get(key.split('@')[0], key.split('@')[0])}, "
                  f"--gemm-sm-margin {key.split('@m')[1]}")
                 for key in sorted(weft) if "@m" in key and key.startswith(f"tp{tp}")
                 and key.split("@")[0] in dict(rows)]
        for key, label in rows:
            w = weft.get(key)
            if not w:
                continue
            base = ref.get(key.split("@")[0])
            ratio = f"{w['ms'] / base:.3f}" if base else "–"
            lines.append(f"| Weft {label}, tp = {tp} | {tp} | {w['ms']:.2f} | "
                         f"{w['planned_gib']:.2f} | {w['in_use_gib']:.2f} | {ratio} | "
                         f"{eff(w['ms'], tp, one)} |")
        for name, v in ok.items():
            label = name.replace("tp_sp", "TP+SP").replace("tp", "TP").replace("_", " ")
            lines.append(f"| PyTorch {label}, tp = {tp} | {tp} | {v['ms']:.2f} | – | "
                         f"{v['peak_gib']:.2f} (max allocated) | – | "
                         f"{eff(v['ms'], tp, torch_one.get(name, {}).get('ms'))} |")
        mega = (results.get("megatron") or {}).get(str(tp)) or {}
        for name, v in (mega.get("runs") or ({"step": mega} if "ms" in mega else {})).items():
            if isinstance(v, dict) and "ms" in v:
                lines.append(f"| Megatron-core {name}, tp = {tp} | {tp} | {v['ms']:.2f} | – | "
                             f"{v.get('peak_gib', float('nan')):.2f} | – | – |")
    lines += ["", "| package | rank | context MiB | NCCL init MiB | planned MiB | load MiB | "
              "NCCL buffers MiB | sum MiB | in use at peak MiB | gap |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for key, w in weft.items():
        lines += equation_rows(key, w["equation"])
    for tp, c in sorted((results.get("collectives") or {}).items()):
        if not c or "results" not in c:
            continue
        lines += ["", f"Collectives at world size {tp}:", "",
                  "| op | MB | torch GB/s | Weft GB/s | Weft / torch |", "|---|---|---|---|---|"]
        lines += [f"| {r['op']} | {r['MB']} | {r['torch_busbw']:.1f} | {r['weft_busbw']:.1f} | "
                  f"{r['ratio']:.3f} |" for r in c["results"]]
    return "\n".join(lines)
