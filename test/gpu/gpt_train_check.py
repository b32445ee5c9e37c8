"""GPU check of the small GPT that trains (scripts/train-gpt, the char_gpt
preset on examples/data/charlang.txt): Weft's package against PyTorch.

Two phases, so the GPU machine builds nothing (from the checkout's root, with
PYTHONPATH=python; weft.gpu.phases reads the command line):

  prepare (here, with the build):  gpt_train_check.py prepare DIR
      writes the char GPT's IR (python/weft/train_gpt.py), compiles its AdamW
      step to six sm_90a packages (plain, --fuse-elementwise, that with
      --weight-copies=carried, that with --fold-attention-layout, that
      with --weight-copies=split instead of carried, and --fuse-elementwise
      without the cuBLASLt GELU epilogues the others use) and
      ships weft-run with its libraries (weft.gpu.device.ship_weft_run).
  check (on the H100):             gpt_train_check.py check DIR
      makes the data and the initial parameters with train_gpt's functions
      (fixed seeds; the corpus is in the repo), runs each package for
      --steps steps with weft-run, and compares with PyTorch
      (python/weft/models/torch_model.py, the same parameters, dropout 0):
        - torch bf16: bf16 forward/backward from f32 master weights,
          torch.optim.AdamW on the masters (the same lr, betas, eps, decay);
        - torch f64: the model and AdamW in float64 from the same start;
        - each of the first 20 steps: |weft - f64| <= 2 |torch bf16 - f64|
          plus one bf16 ulp of the loss (the step returns the loss in bf16);
        - over all the steps the loss falls: the mean of the last 20 losses
          is below 75 % of the mean of the first 20.
Exits 1 on any failure; one PASS/FAIL line per check, DIR/results.json.
"""
import argparse
import math
import os
import subprocess
import sys

from weft import train_gpt
from weft.gpu.device import Checker, ship_weft_run
from weft.gpu.phases import run_phases

COMPARED = 20
PACKAGES = {"plain": [], "fused": ["--fuse-elementwise"],
            # bf16 weight copies carried between steps, written by AdamW
            # (weft-run derives them from the masters it loads)
            "carried": ["--fuse-elementwise", "--weight-copies=carried"],
            # attention reads the packed qkv and writes the packed dqkv in
            # place (seq-major kernels; no split, transposes or concat)
            "packed": ["--fuse-elementwise", "--weight-copies=carried",
                       "--fold-attention-layout"],
            # split f32 masters: the bf16 high half is the weight the GEMMs
            # read, an i16 low half beside it (weft-run splits the f32
            # masters it loads and joins them when it saves)
            "split": ["--fuse-elementwise", "--weight-copies=split",
                      "--fold-attention-layout"],
            # every package above runs the MLP's tanh GELU in fc1's cuBLASLt
            # epilogue (GELU_AUX_BIAS) and its gradient in the fc2 data-gradient
            # GEMM's (DGELU): weft-compile's default for packages. This one is
            # "fused" without them, to compare the two (EPILOGUE_PAIR).
            "fused_no_gelu_epilogue": ["--fuse-elementwise", "--fuse-gemm-epilogue=false"]}
# (with the GELU epilogues, without): each of the first COMPARED losses
# within the f64 rule's bound of the other.
EPILOGUE_PAIR = ("fused", "fused_no_gelu_epilogue")


def prepare(directory, build):
    os.makedirs(directory, exist_ok=True)
    ir = train_gpt.write_model(directory)
    for name, extra in PACKAGES.items():
        out = os.path.join(directory, f"{name}.weftpkg")
        command = [os.path.join(build, "bin", "weft-compile")] + train_gpt.compile_args(
            ir, "--target=sm_90a", "--emit=package", "-o", out) + extra
        subprocess.run(command, check=True)
        print(f"compiled {out}: {' '.join(command[1:])}", flush=True)
    ship_weft_run(directory, build)  # prints the files and their sizes


def make_inputs(directory, steps):
    """train_gpt's data and initialisation; writes DIR/state0.npz, DIR/data.npz."""
    from weft import npz
    text, alphabet = train_gpt.load_corpus()
    tokens = train_gpt.encode(text, alphabet, train_gpt.CONFIG.vocab)
    c = train_gpt.CONFIG
    ids, labels = train_gpt.make_batches(tokens, steps, c.batch, c.seq)
    params = train_gpt.init_params(c)
    npz.save(os.path.join(directory, "state0.npz"), train_gpt.step_state(params))
    npz.save(os.path.join(directory, "data.npz"), train_gpt.step_data(len(params), ids, labels))
    return params, ids, labels


def torch_losses(params, ids, labels, dtype, steps):
    """The losses of `steps` steps of PyTorch from `params`: for bfloat16, a
    bf16 model whose f32 master weights torch.optim.AdamW updates; for
    float64, the model and AdamW in float64. Also the median step time."""
    import torch
    from weft.models.torch_model import Transformer

    c = train_gpt.CONFIG
    torch.manual_seed(0)  # construction draws values that are overwritten
    model = Transformer(c).cuda().to(dtype)
    masters = [torch.from_numpy(p).cuda().to(torch.float64 if dtype == torch.float64
                                               else torch.float32) for p in params]
    optimizer = torch.optim.AdamW(masters, lr=train_gpt.LR, betas=train_gpt.BETAS,
                                  eps=train_gpt.EPS, weight_decay=train_gpt.WEIGHT_DECAY)
    losses, times = [], []
    for s in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.no_grad():
            for p, m in zip(model.parameters(), masters):
                p.copy_(m)
        model.zero_grad(set_to_none=True)
        loss = model(torch.from_numpy(ids[s]).cuda(), torch.from_numpy(labels[s]).cuda())
        loss.backward()
        for p, m in zip(model.parameters(), masters):
            m.grad = p.grad.to(m.dtype)
        optimizer.step()
        end.record()
        losses.append(loss.item())
        times.append(start.elapsed_time(end))
    return losses, sorted(times)[len(times) // 2]


def bf16_ulp(x):
    return 2.0 ** (math.floor(math.log2(abs(x))) - 7)


def check(directory, steps):
    import torch

    c = Checker(directory)
    params, ids, labels = make_inputs(directory, steps)
    f64, _ = torch_losses(params, ids, labels, torch.float64, COMPARED)
    bf16, torch_ms = torch_losses(params, ids, labels, torch.bfloat16, COMPARED)
    c.results["torch_f64"], c.results["torch_bf16"] = f64, bf16
    c.results["torch_bf16_median_ms"] = torch_ms
    common = ["--data", os.path.join(directory, "data.npz"), "--load-state",
              os.path.join(directory, "state0.npz")]
    for name in PACKAGES:
        package = f"{name}.weftpkg"
        if not os.path.exists(os.path.join(directory, package)):
            c.check(f"{name}: package present", False, f"{package} missing: run prepare")
            continue
        try:
            losses, memory = c.run(package, "--steps", str(steps), "--print-memory", *common)
        except RuntimeError as error:
            c.check(f"{name}: weft-run", False, str(error))
            continue
        c.results[f"{name}_losses"] = losses
        c.results[f"{name}_memory"] = memory
        ok = len(losses) == steps and all(map(math.isfinite, losses))
        c.check(f"{name}: {steps} finite losses", ok, f"{len(losses)} losses")
        if not ok:
            continue
        rows, worst = [], 0.0
        for s in range(COMPARED):
            bound = 2 * abs(bf16[s] - f64[s]) + bf16_ulp(f64[s])
            err = abs(losses[s] - f64[s])
            worst = max(worst, err / bound)
            rows.append(f"{s + 1}: weft {losses[s]:.5f} bf16 {bf16[s]:.5f} f64 {f64[s]:.5f} "
                        f"|weft-f64| {err:.2e} <= {bound:.2e}{'' if err <= bound else ' FAIL'}")
        print("\n".join("   " + r for r in rows))
        c.check(f"{name}: first {COMPARED} losses within 2x torch bf16's error vs f64 "
                "(+1 bf16 ulp)", worst <= 1.0, f"worst |weft - f64| / bound = {worst:.3f}")
        first = sum(losses[:COMPARED]) / COMPARED
        last = sum(losses[-COMPARED:]) / COMPARED
        c.check(f"{name}: the loss falls over {steps} steps", last < 0.75 * first,
                f"mean of the first {COMPARED} {first:.4f}, of the last {COMPARED} {last:.4f}")
    with_epilogue, without = (c.results.get(f"{name}_losses") for name in EPILOGUE_PAIR)
    if with_epilogue and without and len(with_epilogue) >= COMPARED and len(without) >= COMPARED:
        worst = max(abs(with_epilogue[s] - without[s]) /
                    (2 * abs(bf16[s] - f64[s]) + bf16_ulp(f64[s])) for s in range(COMPARED))
        c.check(f"{EPILOGUE_PAIR[0]} vs {EPILOGUE_PAIR[1]}: first {COMPARED} losses within "
                "the f64 rule's bound of each other", worst <= 1.0,
                f"worst |with - without| / bound = {worst:.3f}; last losses "
                f"{with_epilogue[-1]:.4f} / {without[-1]:.4f}")
    print(f"torch bf16 step (median of {COMPARED}): {torch_ms:.3f} ms")
    return c.finish()


def step_count(text):
    """--steps: enough for the first and the last COMPARED losses."""
    steps = int(text)
    if steps < COMPARED:
        raise argparse.ArgumentTypeError(f"must be at least {COMPARED}, got {steps}")
    return steps


def steps_option(parser):
    parser.add_argument("--steps", type=step_count, default=300)


if __name__ == "__main__":
    sys.exit(run_phases(__doc__, {"prepare": lambda args: prepare(args.dir, args.build),
                                  "check": lambda args: check(args.dir, args.steps)},
                        steps_option))
