"""Acceptance, "Flash attention part 1": a generated GPT block with unfused
attention, through weft-fuse-attention and weft-tile-attention under
--weft-diff-each-pass, keeps its loss and gradients.

The reference interpreter runs the tiled nest (scf / tensor / linalg / arith /
math, lib/Reference/Structured.cpp), so --weft-diff-each-pass checks
weft-tile-attention itself, and weft-run can run the tiled training step.

Pass order: weft-fuse-attention runs before weft-autodiff so that the step
function forward_step holds weft.attention and weft.attention_grad (after
autodiff the forward softmax feeds softmax_grad and the chain is no longer
fusable, so --weft-autodiff --weft-fuse-attention tiles only @forward); the
brief's order is checked too.

Tolerances: f64 throughout; the tiled nest differs from the untiled step only
in summation order (measured ~1e-14 relative), bound 1e-10 relative to each
result's largest magnitude.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from harness import REPO, tool
from weft import npz

F64_TOL = 1e-10
PYTHON = sys.executable
SEED = "7"


def generate(tmp_path, dropout):
    """gpt_block, f64, unfused attention, via python -m weft.models."""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    proc = subprocess.run(
        [PYTHON, "-m", "weft.models", "--preset", "gpt_block", "--dtype", "f64",
         "--attention", "unfused", "--dropout", str(dropout), "--emit-only"],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "weft.softmax" in proc.stdout and "weft.attention" not in proc.stdout
    path = tmp_path / f"gpt_block_{dropout}.mlir"
    path.write_text(proc.stdout)
    return path


def weft_opt(args, path):
    return subprocess.run([tool("weft-opt"), str(path), *args],
                          capture_output=True, text=True, timeout=600)


TILE = ["--weft-fuse-attention", "--weft-autodiff", "--weft-tile-attention"]
DIFF = ["--weft-diff-each-pass", "--weft-diff-entry=forward_step",
        f"--weft-diff-seed={SEED}"]


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_tiling_keeps_loss_and_gradients_under_diff_each_pass(tmp_path, dropout):
    model = generate(tmp_path, dropout)
    proc = weft_opt(TILE + DIFF, model)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "error" not in proc.stderr, proc.stderr[-4000:]
    # The step really was tiled (and so really was compared after tiling).
    assert "scf.for" in proc.stdout
    step = proc.stdout[proc.stdout.index("@forward_step"):]
    assert "weft.attention" not in step and "weft.softmax" not in step


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_briefs_pass_order_also_clean(tmp_path, dropout):
    # --weft-autodiff first: @forward is fused and tiled, @forward_step keeps
    # its unfused chain; both are compared (default entries).
    model = generate(tmp_path, dropout)
    proc = weft_opt(["--weft-autodiff", "--weft-fuse-attention",
                     "--weft-tile-attention", "--weft-diff-each-pass",
                     f"--weft-diff-seed={SEED}"], model)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "scf.for" in proc.stdout


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_diff_each_pass_names_a_break_after_tiling(tmp_path, dropout):
    model = generate(tmp_path, dropout)
    proc = weft_opt(TILE + ["--weft-test-break-result=func=forward_step"] + DIFF,
                    model)
    assert proc.returncode != 0
    assert "pass 'weft-test-break-result' changed result" in proc.stderr, \
        proc.stderr[-4000:]
    assert "@forward_step" in proc.stderr
    # Tiling itself was clean: diff-each-pass names the break, not the tiling.
    assert "pass 'weft-tile-attention' changed" not in proc.stderr


def run_step(path, out):
    proc = subprocess.run(
        [tool("weft-run"), str(path), "--entry=forward_step", "--random-inputs",
         f"--seed={SEED}", f"--outputs={out}"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {k: np.asarray(v, dtype=np.float64) for k, v in npz.load(str(out)).items()}


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_tiled_step_equals_untiled_step(tmp_path, dropout):
    model = generate(tmp_path, dropout)
    untiled = tmp_path / "untiled.mlir"
    tiled = tmp_path / "tiled.mlir"
    for path, args in ((untiled, ["--weft-fuse-attention", "--weft-autodiff"]),
                       (tiled, TILE)):
        proc = weft_opt(args, model)
        assert proc.returncode == 0, proc.stderr[-4000:]
        path.write_text(proc.stdout)
    assert "scf.for" in tiled.read_text()
    ref = run_step(untiled, tmp_path / "untiled.npz")
    got = run_step(tiled, tmp_path / "tiled.npz")
    assert sorted(ref) == sorted(got)
    # res0 is the loss, the rest are the parameter gradients.
    assert len(ref) > 10 and ref["res0"].shape == ()
    for key in ref:
        scale = max(np.max(np.abs(ref[key])), 1e-300)
        err = np.max(np.abs(ref[key] - got[key])) / scale
        assert err <= F64_TOL, f"{key}: relative error {err:.3e}"
