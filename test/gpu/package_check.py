"""End-to-end GPU check of the package runtime (weft-run STEP.weftpkg).

Two phases, so the GPU machine builds nothing (from the checkout's root, with
PYTHONPATH=python; weft.gpu.phases reads the command line):

  prepare (here, with the build):  package_check.py prepare DIR
      generates two GPT blocks with python -m weft.models (bf16, dropout 0),
      compiles each with weft-compile --train --optimizer=adamw --emit=package
      and copies build/bin/weft-run next to them.
  check (on the H100):             package_check.py check DIR
      runs the small block's package for several steps with per-step data and
      compares with PyTorch (python/weft/models/torch_model.py, the same
      parameters and loss):
        - step 1's loss: |weft - f64| <= 2 |torch bf16 - f64| + one bf16 ulp
          of the loss (the step returns it as bf16);
        - every step's loss against a torch emulation of the mixed-precision
          AdamW step (bf16 compute from f32 masters, f32 AdamW) within 5 %,
          the loss falling, and the f32 master weights' updates after the
          steps within 10 % (relative L2) of torch's;
        - --graph (CUDA graph capture once, replay) and --debug-buffers (one
          allocation per buffer, 0xFF when dead) give bit-identical losses;
        - --save-state after 2 steps and --load-state for 2 more give the
          losses of 4 steps in one run (bit-identical);
      the small block again with --fuse-elementwise (fused kernels, and each
      linear's bias gradient from its weight-gradient GEMM's bgrad_a
      epilogue: prepare checks the package has one per biased linear) against
      the same torch checks of step 1, every step and the parameter updates;
      and loads the large block's package once: the arena's cuMemGetInfo delta
      must be within 1 % of the planned arena.
Exits 1 on any failure; prints one line per check and writes DIR/results.json.
"""
import math
import os
import subprocess
import sys

from weft.gpu.device import Checker, ship_weft_run
from weft.gpu.phases import REPO, run_phases

# The small block: test/Tools/weft-run/Inputs/gpt_bf16.mlir's configuration.
SMALL = dict(layers=1, hidden=128, heads=2, kv_heads=2, seq=16, batch=2, vocab=64,
             ffn_hidden=256, dtype="bf16", dropout=0.0)
# The large block, for the memory check: an arena of several hundred MiB, so
# cuMemAlloc's 2 MiB granularity is far below 1 %.
LARGE = dict(layers=2, hidden=1024, heads=8, kv_heads=8, seq=1024, batch=4, vocab=4096,
             ffn_hidden=4096, dtype="bf16", dropout=0.0)
LR, WEIGHT_DECAY, BETAS, EPS = 1e-2, 0.01, (0.9, 0.999), 1e-8
STEPS = 8


def config_args(config):
    args = []
    for key, value in config.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


def prepare(directory, build):
    os.makedirs(directory, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), WEFT_TUNING_TABLE="none")
    for name, config, extra in (("small", SMALL, []), ("large", LARGE, []),
                                ("small_fused", SMALL, ["--fuse-elementwise"])):
        ir = subprocess.run([sys.executable, "-m", "weft.models", "--preset", "gpt_block",
                             "--emit-only"] + config_args(config),
                            check=True, capture_output=True, text=True, env=env).stdout
        path = os.path.join(directory, name.split("_")[0] + ".mlir")
        with open(path, "w") as f:
            f.write(ir)
        subprocess.run([os.path.join(build, "bin", "weft-compile"), path, "--entry", "forward",
                        "--train", "--optimizer=adamw", f"--lr={LR}",
                        f"--weight-decay={WEIGHT_DECAY}", "--target=sm_90a", "--emit=package",
                        "--attention-mma=warpgroup", "--block-q=128", "--block-k=128",
                        "-o", os.path.join(directory, name + ".weftpkg")] + extra, check=True,
                       env=env)
    # The fused package runs each linear's bias gradient in its weight-gradient
    # GEMM (epilogue bgrad_a): one per linear with a bias, 4 per GPT layer.
    gemms = subprocess.run([os.path.join(build, "bin", "weft-package-gemms"),
                            os.path.join(directory, "small_fused.weftpkg")],
                           check=True, capture_output=True, text=True).stdout
    bgrads = gemms.count("epilogue=bgrad_a")
    if bgrads != 4 * SMALL["layers"]:
        raise SystemExit(f"small_fused.weftpkg has {bgrads} bgrad_a GEMMs, expected "
                         f"{4 * SMALL['layers']}:\n{gemms}")
    # A TP+SP package (tp = 2): refused when started without ranks.
    subprocess.run([os.path.join(build, "bin", "weft-compile"),
                    os.path.join(REPO, "test", "Tools", "weft-run", "Inputs",
                                 "gpt_mean_square_bf16.mlir"),
                    "--entry", "forward", "--train", "--optimizer=adamw", "--grid=tp=2",
                    "--sequence-parallel", "--target=sm_90a", "--emit=package",
                    "-o", os.path.join(directory, "tp_sp.weftpkg")], check=True, env=env)
    ship_weft_run(directory, build)


def torch_reference(config, params, batches, compute=None):
    """Step 1's loss in f64 and bf16, and the losses of a mixed-precision
    AdamW run: bf16 forward/backward from f32 masters, f32 AdamW."""
    import torch
    from weft.models.config import ModelConfig
    from weft.models.torch_model import Transformer

    compute = compute or torch.bfloat16
    cfg = ModelConfig(**config)
    torch.manual_seed(0)
    model = Transformer(cfg).cuda()

    def loss_with(dtype, masters, ids, labels):
        model.to(dtype)
        with torch.no_grad():
            for p, m in zip(model.parameters(), masters):
                p.copy_(m.to(dtype))
        return model(ids, labels)

    ids0, labels0 = batches[0]
    with torch.no_grad():
        f64 = loss_with(torch.float64, params, ids0, labels0).item()
        bf16 = loss_with(torch.bfloat16, params, ids0, labels0).item()
    masters = [p.clone().float().requires_grad_(False) for p in params]
    state = [(torch.zeros_like(m), torch.zeros_like(m)) for m in masters]
    losses = []
    for step, (ids, labels) in enumerate(batches, start=1):
        model.zero_grad(set_to_none=True)
        loss = loss_with(compute, masters, ids, labels)
        loss.backward()
        losses.append(loss.item())
        with torch.no_grad():
            for m, p, (exp_avg, exp_avg_sq) in zip(masters, model.parameters(), state):
                g = p.grad.float()
                # torch.optim.AdamW's single-tensor step.
                m.mul_(1 - LR * WEIGHT_DECAY)
                exp_avg.lerp_(g, 1 - BETAS[0])
                exp_avg_sq.mul_(BETAS[1]).addcmul_(g, g, value=1 - BETAS[1])
                bias1 = 1 - BETAS[0] ** step
                bias2 = 1 - BETAS[1] ** step
                denom = (exp_avg_sq.sqrt() / math.sqrt(bias2)).add_(EPS)
                m.addcdiv_(exp_avg, denom, value=-LR / bias1)
    return f64, bf16, losses, masters


def check(directory):
    import torch
    from weft import npz
    from weft.models.arguments import argument_specs
    from weft.models.config import ModelConfig

    c = Checker(directory)
    cfg = ModelConfig(**SMALL)
    specs = argument_specs(cfg)
    n_params = sum(1 for s in specs if s.is_param)
    gen = torch.Generator().manual_seed(0)
    params = [torch.randn(s.shape, generator=gen, dtype=torch.float64).mul_(0.05).float()
              for s in specs if s.is_param]
    # Step arguments: params, two moments each, ids, labels, step, seed.
    state = {f"arg{i}": p for i, p in enumerate(params)}
    for i in range(2 * n_params):
        state[f"arg{n_params + i}"] = torch.zeros_like(params[i % n_params])
    npz.save(os.path.join(directory, "state0.npz"), state)
    ids = torch.randint(0, cfg.vocab, (STEPS, cfg.batch, cfg.seq), generator=gen)
    # Learnable (the next id), so the loss falls within a few steps.
    labels = (ids + 1) % cfg.vocab
    first = 3 * n_params
    data = {f"arg{first}": ids, f"arg{first + 1}": labels,
            f"arg{first + 2}": torch.arange(1, STEPS + 1, dtype=torch.int64),
            f"arg{first + 3}": torch.tensor(1234, dtype=torch.int64)}
    npz.save(os.path.join(directory, "data.npz"), data)

    common = ["--data", os.path.join(directory, "data.npz"), "--load-state",
              os.path.join(directory, "state0.npz")]
    final = os.path.join(directory, "state_final.npz")
    eager, memory = c.run("small.weftpkg", "--steps", str(STEPS), "--print-memory",
                          "--save-state", final, *common)
    c.check("small: a loss per step", len(eager) == STEPS and all(map(math.isfinite, eager)),
            f"{eager}")

    c.check("small: the loss falls", eager[-1] < eager[0], f"{eager[0]} -> {eager[-1]}")
    batches = [(ids[s].cuda(), labels[s].cuda()) for s in range(STEPS)]
    f64, bf16, reference, masters = torch_reference(SMALL, [p.cuda() for p in params], batches)
    _, _, _, masters32 = torch_reference(SMALL, [p.cuda() for p in params], batches,
                                         compute=torch.float32)

    def versus_torch(name, losses, final_state):
        ulp = 2.0 ** (math.floor(math.log2(abs(f64))) - 7)
        bound = 2 * abs(bf16 - f64) + ulp
        c.check(f"{name}: step 1 loss vs torch", abs(losses[0] - f64) <= bound,
                f"weft {losses[0]:.6f} torch f64 {f64:.6f} torch bf16 {bf16:.6f}; "
                f"|weft - f64| {abs(losses[0] - f64):.2e} <= {bound:.2e}")
        worst = max(abs(a - b) / abs(b) for a, b in zip(losses, reference))
        c.check(f"{name}: losses of every step vs torch AdamW", worst <= 0.05,
                f"weft {[round(x, 4) for x in losses]} torch "
                f"{[round(x, 4) for x in reference]}, worst rel diff {worst:.3f}")
        # The loss is a bf16 scalar; the f32 master weights after the steps
        # show the whole step (forward, backward, AdamW). Adam turns tiny
        # gradients into full-size steps, so bf16 noise moves updates a lot:
        # weft's update (p_final - p_0) must be as close to an f32-compute
        # torch run's as torch's own bf16 run is, within 2x (plus 1 % of the
        # update).
        saved = npz.load(final_state)
        worst, lines = 0.0, []
        for i, (p0, bf, f32) in enumerate(zip(params, masters, masters32)):
            exact = f32.cpu().double() - p0.double()
            weft_err = (saved[f"arg{i}"].double() - p0.double() - exact).norm().item()
            torch_err = (bf.cpu().double() - p0.double() - exact).norm().item()
            ratio = weft_err / (2 * torch_err + 0.01 * exact.norm().item() + 1e-30)
            worst = max(worst, ratio)
            lines.append(f"arg{i} {weft_err / exact.norm().item():.3f}/"
                         f"{torch_err / exact.norm().item():.3f}")
        c.check(f"{name}: parameter updates vs torch (err weft <= 2 err torch bf16 + 1 %)",
                worst <= 1.0, f"worst ratio {worst:.3f}; relative error weft/torch-bf16 per "
                f"parameter: {' '.join(lines)}")

    versus_torch("small", eager, final)
    # --fuse-elementwise: fused kernels and the bias gradients from the
    # weight-gradient GEMMs' bgrad_a epilogue (prepare counted them).
    fused_final = os.path.join(directory, "state_fused.npz")
    try:
        fused, _ = c.run("small_fused.weftpkg", "--steps", str(STEPS), "--save-state",
                         fused_final, *common)
    except RuntimeError as error:
        fused = []
        print(error)
    c.check("small_fused: a loss per step", len(fused) == STEPS and
            all(map(math.isfinite, fused)), f"{fused}")
    if len(fused) == STEPS:
        versus_torch("small_fused", fused, fused_final)

    graph, _ = c.run("small.weftpkg", "--steps", str(STEPS), "--graph", *common)
    c.check("small: --graph replays bit-identically", graph == eager, f"{graph}")
    debug, _ = c.run("small.weftpkg", "--steps", str(STEPS), "--debug-buffers", *common)
    c.check("small: --debug-buffers (dead buffers poisoned) gives the same losses",
            debug == eager, f"{debug}")

    half = os.path.join(directory, "state2.npz")
    first_two, _ = c.run("small.weftpkg", "--steps", "2", "--save-state", half, *common)
    # Steps 3 and 4 read data slices 2 and 3: a data file starting there.
    later = {k: (v[2:] if v.dim() and k != f"arg{first + 3}" else v) for k, v in data.items()}
    npz.save(os.path.join(directory, "data_from3.npz"), later)
    resumed, _ = c.run("small.weftpkg", "--steps", "2", "--data",
                       os.path.join(directory, "data_from3.npz"), "--load-state", half)
    c.check("small: --save-state / --load-state resume", first_two + resumed == eager[:4],
            f"{first_two} + {resumed} vs {eager[:4]}")

    _, large = c.run("large.weftpkg", "--steps", "1", "--print-memory",
                     "--load-state", os.path.join(directory, "large_state.npz"),
                     "--data", os.path.join(directory, "large_data.npz")) \
        if make_large_inputs(directory) else (None, None)
    if large:
        delta = large["after_arena"] - large["before"]
        rel = abs(delta - large["planned"]) / large["planned"]
        c.check("large: arena's cuMemGetInfo delta within 1 % of the plan", rel <= 0.01,
                f"planned {large['planned']} bytes, cuMemGetInfo delta {delta} "
                f"({100 * rel:.3f} %); after load +{large['after_load'] - large['before']}, "
                f"peak +{large['peak'] - large['before']}")
    c.results["memory_small"] = memory
    c.results["memory_large"] = large

    # The partitioned package started without ranks is refused, naming its
    # grid and how to run it (weft-run --nproc-per-node, or torchrun).
    refused = subprocess.run([os.path.join(directory, "weft-run"),
                              os.path.join(directory, "tp_sp.weftpkg")],
                             capture_output=True, text=True, env=c.env)
    c.check("tp_sp: a partitioned package without ranks is refused",
            refused.returncode != 0 and "partitioned step for grid 2" in refused.stderr
            and "--nproc-per-node 2" in refused.stderr,
            f"exit {refused.returncode}: {refused.stderr.strip()[-300:]}")
    return c.finish()


def make_large_inputs(directory):
    """Random parameters, zero moments and one batch for the large block."""
    import torch
    from weft import npz
    from weft.models.arguments import argument_specs
    from weft.models.config import ModelConfig

    cfg = ModelConfig(**LARGE)
    specs = argument_specs(cfg)
    params = [torch.randn(s.shape, dtype=torch.float32).mul_(0.02) for s in specs if s.is_param]
    n = len(params)
    state = {f"arg{i}": p for i, p in enumerate(params)}
    for i in range(2 * n):
        state[f"arg{n + i}"] = torch.zeros_like(params[i % n])
    npz.save(os.path.join(directory, "large_state.npz"), state)
    npz.save(os.path.join(directory, "large_data.npz"), {
        f"arg{3 * n}": torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq)),
        f"arg{3 * n + 1}": torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq)),
        f"arg{3 * n + 2}": torch.tensor(1, dtype=torch.int64),
        f"arg{3 * n + 3}": torch.tensor(1234, dtype=torch.int64)})
    return True


if __name__ == "__main__":
    sys.exit(run_phases(__doc__, {"prepare": lambda args: prepare(args.dir, args.build),
                                  "check": lambda args: check(args.dir)}))
