"""Trains the small character-level GPT (the char_gpt preset) on
examples/data/charlang.txt: makes its data and initial parameters, compiles
its AdamW training step with weft-compile and runs it with weft-run.

    python -m weft.train_gpt [--steps 300] [--device auto|gpu|cpu] [--work DIR]

With a GPU: compiles the step to a package (sm_90a) and runs --steps steps
with `weft-run STEP.weftpkg --data D.npz --load-state S.npz`, printing a
progress line with the falling loss. Without one: compiles the step, prints
its memory plan (scripts/memory-report-table), checks the package when ptxas
is there (weft-run --check), and runs one step on the reference interpreter.
test/gpu/gpt_train_check.py uses the same data and initialisation.
"""
import argparse
import ctypes
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from weft import npz
from weft.models.arguments import parameter_specs
from weft.models.config import PRESETS
from weft.models.emitter import emit_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "examples", "data", "charlang.txt")
CONFIG = PRESETS["char_gpt"]
# AdamW as PyTorch's defaults except the learning rate (constant: the step
# takes lr as a compile-time constant).
LR, WEIGHT_DECAY, BETAS, EPS = 1e-3, 0.01, (0.9, 0.999), 1e-8
DATA_SEED, INIT_SEED, DROPOUT_SEED = 0, 0, 1234


class TrainError(Exception):
    """A user-facing failure: bad arguments, a missing tool, a failed run."""


def load_corpus(path=CORPUS):
    """(text, alphabet): the alphabet is the text's sorted distinct characters,
    a character's token id its index there."""
    try:
        with open(path, encoding="ascii") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as error:
        raise TrainError(f"cannot read the corpus {path}: {error}") from None
    if not text:
        raise TrainError(f"the corpus {path} is empty")
    return text, "".join(sorted(set(text)))


def encode(text, alphabet, vocab):
    if len(alphabet) > vocab:
        raise TrainError(f"the corpus has {len(alphabet)} distinct characters, more than the "
                         f"model's vocab {vocab}")
    table = np.full(128, -1, dtype=np.int64)
    for i, ch in enumerate(alphabet):
        table[ord(ch)] = i
    tokens = table[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    assert (tokens >= 0).all()
    return tokens


def make_batches(tokens, steps, batch, seq, seed=DATA_SEED):
    """ids, labels: int64 [steps, batch, seq], windows of seq + 1 tokens at
    offsets drawn from `seed`; labels are the ids shifted by one (next char)."""
    if steps <= 0 or batch <= 0 or seq <= 0:
        raise TrainError(f"steps, batch and seq must be positive, got {steps}, {batch}, {seq}")
    if len(tokens) < seq + 1:
        raise TrainError(f"the corpus has {len(tokens)} tokens, fewer than seq + 1 = {seq + 1}")
    offsets = np.random.default_rng(seed).integers(0, len(tokens) - seq, size=(steps, batch))
    windows = tokens[offsets[..., None] + np.arange(seq + 1)]
    return windows[..., :-1].copy(), windows[..., 1:].copy()


def init_params(config, seed=INIT_SEED):
    """float32 parameters in argument order, GPT-2's initialisation: N(0, 0.02)
    weights and embeddings, residual projections scaled by 1/sqrt(2 layers),
    zero biases, unit norm weights."""
    rng = np.random.default_rng(seed)
    params = []
    for spec in parameter_specs(config):
        if spec.init in ("embedding", "linear"):
            std = 0.02
            if spec.name.endswith(("attn.proj.weight", "mlp.fc2.weight", "mlp.down.weight")):
                std /= math.sqrt(2 * config.layers)
            value = std * rng.standard_normal(spec.shape)
        elif spec.init == "norm_weight":
            value = np.ones(spec.shape)
        elif spec.init == "bias":
            value = np.zeros(spec.shape)
        else:
            raise TrainError(f"no initialisation for {spec.name} (init {spec.init!r})")
        params.append(value.astype(np.float32))
    return params


def step_state(params):
    """The step's state arguments arg<i>: parameters, then AdamW's first and
    second moments (zero), in the order of weft-autodiff's step signature."""
    n = len(params)
    state = {f"arg{i}": p for i, p in enumerate(params)}
    for i in range(2 * n):
        state[f"arg{n + i}"] = np.zeros_like(params[i % n])
    return state


def step_data(n_params, ids, labels, first_step=1, seed=DROPOUT_SEED):
    """The per-step inputs (ids, labels, step number, dropout seed) with a
    leading step dimension where they change per step."""
    first = 3 * n_params
    return {f"arg{first}": ids, f"arg{first + 1}": labels,
            f"arg{first + 2}": np.arange(first_step, first_step + len(ids), dtype=np.int64),
            f"arg{first + 3}": np.array(seed, dtype=np.int64)}


def gpu_present():
    """Whether the CUDA driver loads and sees a device."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 \
        and count.value > 0


def ptxas_present():
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    return os.access(os.path.join(cuda, "bin", "ptxas"), os.X_OK) or bool(shutil.which("ptxas"))


def tool(build, name):
    path = os.path.join(build, "bin", name)
    if not os.access(path, os.X_OK):
        raise TrainError(f"{path} is not built (ninja -C {build} {name})")
    return path


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise TrainError(f"{' '.join(command)} exited {done.returncode}:\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def compile_args(ir, *extra, fuse=False, budget=None):
    args = [ir, "--entry", "forward", "--train", "--optimizer=adamw", f"--lr={LR}",
            f"--weight-decay={WEIGHT_DECAY}"] + list(extra)
    if fuse:
        args.append("--fuse-elementwise")
    if budget:
        args.append(f"--memory-budget={budget}")
    return args


def compile_package(build, ir, out, fuse=False, budget=None, report=None):
    extra = ["--memory-report=" + report] if report else []
    run([tool(build, "weft-compile")] + compile_args(
        ir, "--target=sm_90a", "--emit=package", "-o", out, *extra, fuse=fuse, budget=budget))
    return out


def print_memory_plans(columns):
    """scripts/memory-report-table over (label, report.json) pairs."""
    sys.stdout.write(run([os.path.join(ROOT, "scripts", "memory-report-table")] +
                         [f"{label}={path}" for label, path in columns]))
    sys.stdout.flush()


def describe(config=CONFIG):
    c = config
    return (f"the AdamW step of the char GPT ({c.layers} layers, hidden {c.hidden}, "
            f"{c.heads} heads, seq {c.seq}, batch {c.batch}, vocab {c.vocab}, {c.dtype})")


def write_model(work, config=CONFIG):
    os.makedirs(work, exist_ok=True)
    ir = os.path.join(work, "char_gpt.mlir")
    with open(ir, "w") as f:
        f.write(emit_module(config, "char_gpt" if config == CONFIG else None))
    return ir


def train_on_gpu(args, ir, tokens, params):
    if args.package:
        package = args.package
        print(f"== {describe(args.config)}: {package} (compiled elsewhere)")
    else:
        report = os.path.join(args.work, "package_report.json")
        package = compile_package(args.build, ir, os.path.join(args.work, "step.weftpkg"),
                                  args.fuse_elementwise, args.memory_budget, report)
        print(f"== compiled {describe(args.config)} to {package} "
              f"({os.path.getsize(package)} bytes): memory plan")
        print_memory_plans([("package", report)])
    c = args.config
    ids, labels = make_batches(tokens, args.steps, c.batch, c.seq)
    npz.save(os.path.join(args.work, "state0.npz"), step_state(params))
    npz.save(os.path.join(args.work, "data.npz"), step_data(len(params), ids, labels))
    weft_run = args.weft_run or tool(args.build, "weft-run")
    command = [weft_run, package, "--steps", str(args.steps),
               "--data", os.path.join(args.work, "data.npz"),
               "--load-state", os.path.join(args.work, "state0.npz"),
               "--save-state", os.path.join(args.work, "state_final.npz"), "--print-memory"]
    if args.graph:
        command.append("--graph")
    print(f"== training {args.steps} steps: {' '.join(command)}", flush=True)
    losses, times, other = [], [], []
    start = time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        for line in proc.stdout:
            parts = line.split()
            if len(parts) >= 5 and parts[0] == "step" and parts[2] == "loss":
                losses.append(float(parts[3]))
                times.append(float(parts[4].strip("(")))
                n = len(losses)
                if n == 1 or n % args.log_every == 0 or n == args.steps:
                    window = losses[-args.log_every:]
                    print(f"step {n:4d}/{args.steps}  loss {losses[-1]:.4f}  "
                          f"(mean of last {len(window)}: {sum(window) / len(window):.4f})  "
                          f"{times[-1]:.3f} ms/step  {time.monotonic() - start:.1f} s",
                          flush=True)
            else:
                other.append(line.rstrip())
    if proc.returncode != 0 or len(losses) != args.steps:
        raise TrainError(f"weft-run exited {proc.returncode} after {len(losses)} of "
                         f"{args.steps} steps:\n" + "\n".join(other[-20:]))
    for line in other:
        if line.startswith("memory:"):
            print("   " + line)
    head = losses[:min(10, len(losses))]
    tail = losses[-min(10, len(losses)):]
    first, last = sum(head) / len(head), sum(tail) / len(tail)
    median_ms = sorted(times)[len(times) // 2]
    print(f"loss {first:.4f} -> {last:.4f} (means of the first and last {len(head)} steps; "
          f"ln vocab = {math.log(c.vocab):.4f}); median step {median_ms:.3f} ms")
    if not last < first:
        raise TrainError(f"the loss did not fall: {first:.4f} -> {last:.4f}")
    return losses


def compile_on_cpu(args, ir, tokens, params):
    """Compile, print the memory plan, check the package, run one step."""
    step = os.path.join(args.work, "step.mlir")
    columns = [("step IR", os.path.join(args.work, "step_report.json"))]
    run([tool(args.build, "weft-compile")] + compile_args(
        ir, "--memory-report=" + columns[0][1], "-o", step, fuse=args.fuse_elementwise,
        budget=args.memory_budget))
    package = None
    if ptxas_present() and not args.no_package:
        # The package plans cuBLASLt workspaces too (weft-compile --gemm-workspace).
        columns.append(("sm_90a package", os.path.join(args.work, "package_report.json")))
        package = compile_package(args.build, ir, os.path.join(args.work, "step.weftpkg"),
                                  args.fuse_elementwise, args.memory_budget, columns[1][1])
    print(f"== compiled {describe(args.config)}: memory plan")
    print_memory_plans(columns)
    if package:
        out = run([tool(args.build, "weft-run"), "--check", package]).splitlines()
        print(f"== weft-run --check {package}: {out[-1].strip()}" +
              "".join("\n   " + l.strip() for l in out[1:-1]))
    c = args.config
    ids, labels = make_batches(tokens, 1, c.batch, c.seq)
    inputs = dict(step_state(params))
    data = step_data(len(params), ids, labels)
    first = 3 * len(params)
    inputs.update({k: (v[0] if k in (f"arg{first}", f"arg{first + 1}", f"arg{first + 2}")
                       else v) for k, v in data.items()})
    in_path, out_path = os.path.join(args.work, "step1_in.npz"), \
        os.path.join(args.work, "step1_out.npz")
    npz.save(in_path, inputs)
    print("== one step on the reference interpreter (float64 inside)", flush=True)
    started = time.monotonic()
    run([tool(args.build, "weft-run"), step, "--entry", "forward_step", "--inputs", in_path,
         "--outputs", out_path])
    loss = float(npz.load(out_path)["res0"].double())
    print(f"step 1 loss {loss:.4f} (ln vocab = {math.log(c.vocab):.4f}; "
          f"{time.monotonic() - started:.1f} s); PyTorch on the same batch: "
          f"{torch_loss(c, params, ids[0], labels[0]):.4f} in float64")
    print("   (with a GPU this trains for --steps steps: scripts/train-gpt --device gpu)")
    return [loss]


def torch_loss(config, params, ids, labels):
    """The model's loss in float64 by python/weft/models/torch_model.py."""
    import torch
    from weft.models.torch_model import Transformer

    torch.manual_seed(0)  # construction draws values that load_arguments overwrites
    model = Transformer(config).double().load_arguments(
        [torch.from_numpy(p).double() for p in params])
    with torch.no_grad():
        return model(torch.from_numpy(ids), torch.from_numpy(labels)).item()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m weft.train_gpt", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--device", choices=["auto", "gpu", "cpu"], default="auto")
    parser.add_argument("--work", help="working directory (default: a temporary one)")
    parser.add_argument("--build", default=os.environ.get("WEFT_BUILD_DIR",
                                                          os.path.join(ROOT, "build")))
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--graph", action="store_true", help="weft-run --graph")
    parser.add_argument("--fuse-elementwise", action="store_true")
    parser.add_argument("--memory-budget", help="weft-compile --memory-budget")
    for size in ("layers", "batch", "seq"):
        parser.add_argument(f"--{size}", type=int,
                            help=f"override the char_gpt preset's {size} ({getattr(CONFIG, size)})")
    parser.add_argument("--package", help="with a GPU: run this package of the same model "
                        "(e.g. test/gpu/gpt_train_check.py's plain.weftpkg) instead of compiling")
    parser.add_argument("--weft-run", help="the weft-run to use (default: BUILD/bin/weft-run)")
    parser.add_argument("--no-package", action="store_true",
                        help="without a GPU, skip the sm_90a package and its check")
    args = parser.parse_args(argv)
    if args.steps <= 0 or args.log_every <= 0:
        parser.error(f"--steps and --log-every must be positive, got {args.steps}, "
                     f"{args.log_every}")
    try:
        args.config = CONFIG.replace(**{k: getattr(args, k) for k in ("layers", "batch", "seq")
                                        if getattr(args, k) is not None})
    except ValueError as error:
        parser.error(str(error))
    device = args.device
    if device == "auto":
        device = "gpu" if gpu_present() else "cpu"
    temporary = args.work is None
    if temporary:
        import tempfile
        args.work = tempfile.mkdtemp(prefix="weft-train-gpt-")
    try:
        text, alphabet = load_corpus(args.corpus)
        tokens = encode(text, alphabet, args.config.vocab)
        print(f"== {args.corpus}: {len(text)} characters, {len(alphabet)} distinct "
              f"(vocab {args.config.vocab})")
        ir = write_model(args.work, args.config)
        params = init_params(args.config)
        if device == "gpu":
            train_on_gpu(args, ir, tokens, params)
        else:
            compile_on_cpu(args, ir, tokens, params)
    except TrainError as error:
        print(f"train-gpt: error: {error}", file=sys.stderr)
        return 1
    finally:
        if temporary:
            shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
