#!/usr/bin/env python3
"""GPU check of a partitioned token model whose shards need their place in the
global tensors (rank-relative launch immediates): a GPT with a token and a
position embedding, a vocabulary-parallel head and loss, and dropout 0.1 on
the embedding, the attention probabilities and every residual branch.

At tp = 2 the vocabulary-parallel embedding and its gradient take the
rank's first row, the loss's partial statistics and gradient likewise, the
attention kernels draw the dropout mask at the rank's first head (the
Hopper keep-mask kernel with the default tuning table, the mma.sync kernels
without one), and with sequence parallelism the residual dropouts draw at the
rank's first sequence row and the position table is the rank's all_slice.
The masks are weft's Philox rule at global indices, so every rank's mask is
the global mask's slice and the gathered gradients must equal the one-GPU
step's. Beside it, a LLaMA-style block with one kv head (MQA) at tp = 2:
weft-expand-kv-heads gathers the kv rows each rank needs by a constant index
table (a kernel image holding its bytes) sliced per rank (all_slice of i64).

  prepare (here, with the build):  token_tp_check.py prepare DIR
      generates the models (python -m weft.models --preset gpt_block), compiles
      the one-GPU packages and tp = 2 packages (TP, TP+SP, and for the token
      model TP with the mma.sync attention kernels) and ships weft-run.
  check (on 2 GPUs):               token_tp_check.py check DIR
      runs each package (weft-run --nproc-per-node 2 for tp = 2), gathers the
      loss and every parameter gradient and compares them with float64
      PyTorch using the same Philox masks (weft/models/torch_model.py): the
      loss and each gradient within 2x the error of PyTorch in bf16
      (tp_sp_phases.GradientCheck, the criterion of issue 18's checks).
      A control package, token_tp2 with every rank-relative immediate's
      scale set to 0 (test/Tools/weft-run/Inputs/edit_package.py rank-scale
      0: both ranks take rank 0's vocabulary rows and attention heads), must
      fail the same check, or the check could not tell.
Exits 1 on any failure; writes DIR/results.json.
"""
import json
import os
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bench"))
import gpt_step_bench as gsb  # noqa: E402
import tp_sp_phases as ph  # noqa: E402
from weft.gpu.device import ship_weft_run, unpack_weft_run  # noqa: E402
from weft.gpu.phases import REPO, run_phases  # noqa: E402

# head_dim 64: the attention kernels' smallest; vocab 512 = 2 x 256 rows.
TOKEN = dict(layers=2, hidden=256, heads=4, kv_heads=4, seq=256, batch=1, vocab=512,
             ffn_hidden=1024, dtype="bf16", dropout=0.1)
# RMSNorm, SwiGLU, RoPE, 4 q heads over one kv head of 128; loss mean(x^2).
MQA = dict(gsb.SMALL, layers=1, heads=4, kv_heads=1, hidden=512, norm="rmsnorm", mlp="swiglu",
           rope=True)
MODELS = {"token": TOKEN, "mqa": MQA}
FLAGS = ["--fuse-elementwise", "--fold-attention-layout"]
ARCHIVE = "packages.tar.xz"
# (package, model, ranks, weft-compile flags)
PACKAGES = [("token_one", "token", 1, []),
            ("token_tp2", "token", 2, ["--grid=tp=2"]),
            ("token_tp2sp", "token", 2, ["--grid=tp=2", "--sequence-parallel"]),
            ("token_tp2mma", "token", 2, ["--grid=tp=2", "--tuning-table=none"]),
            ("mqa_one", "mqa", 1, []),
            ("mqa_tp2", "mqa", 2, ["--grid=tp=2"]),
            ("mqa_tp2sp", "mqa", 2, ["--grid=tp=2", "--sequence-parallel"])]
# token_tp2 with the rank offsets zeroed: must fail.
CONTROL = ("token_tp2_control", "token", 2, None)


def prepare(args):
    os.makedirs(args.dir, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    for model, config in MODELS.items():
        gsb.generate(config, os.path.join(args.dir, model + ".mlir"), env)
    for name, model, _, flags in PACKAGES:
        ok, _, message = gsb.compile_package(args.build, os.path.join(args.dir, model + ".mlir"),
                                             os.path.join(args.dir, name + ".weftpkg"),
                                             FLAGS + flags, env, try_fused=False)
        print("COMPILE", name, "ok" if ok else "FAILED " + message, flush=True)
        if not ok:
            return 1
    subprocess.run([sys.executable, os.path.join(REPO, "test", "Tools", "weft-run", "Inputs",
                                                 "edit_package.py"),
                    os.path.join(args.dir, "token_tp2.weftpkg"),
                    os.path.join(args.dir, CONTROL[0] + ".weftpkg"), "rank-scale", "0"], check=True)
    # xz keeps DIR within a device call's carry (64 MiB with weft-run's libraries).
    with tarfile.open(os.path.join(args.dir, ARCHIVE), "w:xz") as tar:
        for name, _, _, _ in PACKAGES + [CONTROL]:
            tar.add(os.path.join(args.dir, name + ".weftpkg"), arcname=name + ".weftpkg")
            os.remove(os.path.join(args.dir, name + ".weftpkg"))
    ship_weft_run(args.dir, args.build)
    return 0


def check(args):
    with tarfile.open(os.path.join(args.dir, ARCHIVE), "r:xz") as tar:
        tar.extractall(args.dir, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    weft_env = unpack_weft_run(args.dir)
    sh = ph.Shell(args.dir, weft_env, ph.Budget(args.budget))
    grad = ph.GradientCheck(sh)
    results, failed = {"configs": MODELS}, False
    for name, model, ranks, _ in PACKAGES:
        try:
            r = grad.check(model, MODELS[model], name + ".weftpkg", ranks)
        except RuntimeError as e:
            r = {"ok": False, "error": str(e)}
        results[name] = r
        failed |= not r["ok"]
        if "error" in r:
            print(f"FAIL {name}: {r['error']}", flush=True)
            continue
        worst = max(r["gradients"], key=lambda g: g["weft_rel_err"] / max(g["torch_bf16_rel_err"], 1e-30))
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {name} ({ranks} GPU): loss weft {r['loss']['weft']:.6f} "
              f"f64 {r['loss']['torch_f64']:.6f} bf16 {r['loss']['torch_bf16']:.6f}; worst gradient "
              f"{worst['param']} {worst['weft_rel_err']:.2e} vs torch bf16 "
              f"{worst['torch_bf16_rel_err']:.2e} (ratio {r['worst_ratio']:.2f})", flush=True)
        for g in r["gradients"]:
            if not g["ok"]:
                print(f"     {g['param']}: {g['weft_rel_err']:.2e} > 2 x {g['torch_bf16_rel_err']:.2e}")
    try:
        r = grad.check("token", TOKEN, CONTROL[0] + ".weftpkg", 2)
    except RuntimeError as e:
        r = {"ok": False, "error": str(e)}
    results[CONTROL[0]] = r
    print(f"{'ok  ' if not r['ok'] else 'FAIL'} {CONTROL[0]}: the check "
          f"{'rejects' if not r['ok'] else 'ACCEPTS'} every rank taking rank 0's offsets"
          + (f" (worst ratio {r['worst_ratio']:.1f})" if "worst_ratio" in r else ""), flush=True)
    failed |= r["ok"]
    with open(os.path.join(args.dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    print("token_tp_check:", "FAILED" if failed else "all packages within 2x torch bf16's error")
    return 1 if failed else 0


def options(parser):
    parser.add_argument("--budget", type=float, default=300,
                        help="check: seconds the weft-run calls may take in all")


if __name__ == "__main__":
    sys.exit(run_phases(__doc__, {"prepare": prepare, "check": check}, options))
