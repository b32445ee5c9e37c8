"""weft-remat: recomputation changes memory, never results.

Generated multi-layer GPT and LLaMA-style models (f32, dropout 0.1) go through
`weft-opt --weft-autodiff` (optimizer none and adamw), then `--weft-remat`
with every policy and with budgets from the smallest feasible one to
no-recompute. weft-run runs the step before and after on the same seeded
inputs; loss, gradients and updated parameters/moments must agree bit for bit
(the clones keep weft.rng_id, so dropout masks are regenerated exactly).
Budgets: the planned peak stays within the budget (cross-checked with
weft-plan-memory and the independent simulator weft.memsim), recompute time
grows as the budget shrinks, and an infeasible budget names the smallest
reachable peak. Last, the Korthikanti et al. (arXiv 2205.05198) count of the
activations an unfused 16-bit GPT layer saves."""
import json
import os
import re
import subprocess
import tempfile

import numpy as np
import pytest
import torch

from harness import tool
from weft import memsim, npz
from weft.models.config import PRESETS
from weft.models.emitter import emit_module

SMALL = dict(hidden=32, heads=4, kv_heads=4, seq=16, batch=2, ffn_hidden=128, vocab=64)
MODELS = {
    # tiny_gpt as shipped (2 layers, seq 32, batch 4, hidden 64), unfused attention.
    "tiny_gpt": PRESETS["tiny_gpt"].replace(dtype="f32", attention="unfused"),
    "gpt3": PRESETS["gpt_block"].replace(layers=3, dtype="f32", attention="unfused", **SMALL),
    "gpt4_fused": PRESETS["gpt_block"].replace(layers=4, dtype="f32", attention="fused", **SMALL),
    "llama2": PRESETS["llama_block"].replace(layers=2, dtype="f32", dropout=0.1,
                                             **{**SMALL, "kv_heads": 2}),
}
POLICIES = ["none", "full", "selective", "block num-layers=1", "block num-layers=2",
            "uniform num-layers=1", "uniform num-layers=2"]
SEED = 7


def weft_opt(text, *flags, check=True):
    proc = subprocess.run([tool("weft-opt"), "-", *flags], input=text, capture_output=True,
                          text=True, timeout=600)
    if check and proc.returncode != 0:
        pytest.fail(f"weft-opt {' '.join(flags)} failed (rc {proc.returncode}):\n"
                    f"{proc.stderr[-4000:]}")
    return proc


def remat(text, options):
    """(IR after weft-remat, its JSON report for @forward_step)."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("WEFT_TEST_TMP")) as tmp:
        report = os.path.join(tmp, "remat.json")
        out = weft_opt(text, f"--weft-remat={options} report={report}").stdout
        with open(report) as f:
            return out, json.load(f)["functions"]["forward_step"]


def run_step(text, inputs=None):
    """Runs @forward_step with weft-run: on `inputs` (an .npz path), or on
    seeded random inputs, which are saved. Returns (results, inputs path)."""
    tmp = tempfile.mkdtemp(prefix="weft-remat-", dir=os.environ.get("WEFT_TEST_TMP"))
    ir, out = os.path.join(tmp, "step.mlir"), os.path.join(tmp, "out.npz")
    with open(ir, "w") as f:
        f.write(text)
    cmd = [tool("weft-run"), ir, "--entry", "forward_step", "--outputs", out]
    if inputs is None:
        inputs = os.path.join(tmp, "inputs.npz")
        cmd += ["--random-inputs", "--seed", str(SEED), "--save-inputs", inputs]
    else:
        cmd += ["--inputs", inputs]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"weft-run failed on {ir}:\n{proc.stderr[-4000:]}")
    return npz.ordered(npz.load(out), "res"), inputs


def assert_bitwise_equal(got, ref, label):
    assert len(got) == len(ref), f"{label}: {len(got)} results, expected {len(ref)}"
    for i, (a, b) in enumerate(zip(got, ref)):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{label} res{i}"
        bits = {torch.float32: torch.int32, torch.float64: torch.int64,
                torch.bfloat16: torch.int16, torch.float16: torch.int16}.get(a.dtype)
        same = torch.equal(a.view(bits), b.view(bits)) if bits else torch.equal(a, b)
        assert same, f"{label} res{i}: max |diff| {(a.double() - b.double()).abs().max()}"


_STEPS = {}


def reference(model, optimizer):
    """The step of `model` and its results on seeded inputs (cached)."""
    key = (model, optimizer)
    if key not in _STEPS:
        step = weft_opt(emit_module(MODELS[model]),
                        f"--weft-autodiff=optimizer={optimizer}").stdout
        results, inputs = run_step(step)
        _STEPS[key] = (step, results, inputs)
    return _STEPS[key]


def count_recomputed(text):
    return len(re.findall(r"weft\.recompute[,}]", text))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("optimizer", ["none", "adamw"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_policies_keep_results_bit_exact(model, optimizer, policy):
    step, ref, inputs = reference(model, optimizer)
    out, report = remat(step, f"policy={policy}")
    got, _ = run_step(out, inputs)
    assert_bitwise_equal(got, ref, f"{model}/{optimizer}/{policy}")
    layers = MODELS[model].layers
    assert report["layers"] == layers
    cloned = count_recomputed(out)
    assert cloned == report["cloned_ops"]
    fused = MODELS[model].attention == "fused"
    if policy == "none" or (policy == "selective" and fused):
        assert cloned == 0
    else:
        assert cloned > 0
    if policy == "selective" and not fused:
        # Per layer QK^T, scale, causal mask, softmax, dropout.
        assert cloned == 5 * layers, out
    assert report["planned_peak_bytes"] <= report["peak_before_bytes"]


@pytest.mark.parametrize("optimizer", ["none", "adamw"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_budget_sweep(model, optimizer):
    step, ref, inputs = reference(model, optimizer)
    _, none = remat(step, "policy=none")
    peak_before = none["peak_before_bytes"]

    # The smallest reachable peak, from the infeasible-budget diagnostic.
    proc = weft_opt(step, "--weft-remat=policy=budget budget=1", check=False)
    assert proc.returncode != 0
    found = re.search(r"the smallest peak Weft can reach is (\d+) bytes", proc.stderr)
    assert found, proc.stderr[-2000:]
    smallest = int(found.group(1))
    assert 0 < smallest <= peak_before

    budgets = sorted({smallest, peak_before, *np.linspace(smallest, peak_before, 6).astype(int)},
                     reverse=True)
    seconds, peaks = [], []
    for budget in budgets:
        out, report = remat(step, f"policy=budget budget={budget}")
        assert report["planned_peak_bytes"] <= budget, (budget, report)
        # Layers are isomorphic: one class, one decision for all of them; the
        # solver's recompute time is what the clones cost.
        assert report["classes"] == 1
        [decision] = report["decisions"]
        assert decision["layers"] == MODELS[model].layers
        modelled = decision["layers"] * decision["recompute_seconds_per_layer"]
        assert abs(modelled - report["recompute_seconds"]) <= 1e-9 * max(modelled, 1e-30)
        # weft-plan-memory plans the same peak, and memsim agrees with its plan.
        with tempfile.TemporaryDirectory(dir=os.environ.get("WEFT_TEST_TMP")) as tmp:
            path = os.path.join(tmp, "plan.json")
            planned = weft_opt(out, f"--weft-plan-memory=report={path}").stdout
            with open(path) as f:
                plan = json.load(f)
        assert plan["functions"]["forward_step"]["peak_bytes"] == report["planned_peak_bytes"]
        memsim.check_text(planned, plan)
        got, _ = run_step(out, inputs)
        assert_bitwise_equal(got, ref, f"{model}/{optimizer}/budget={budget}")
        seconds.append(report["recompute_seconds"])
        peaks.append(report["planned_peak_bytes"])
    # No recompute at the no-remat peak; the smallest budget is met exactly.
    assert seconds[0] == 0 and peaks[0] == peak_before
    assert peaks[-1] == smallest
    # Shrinking budgets: recompute time never falls (up to summation order).
    for looser, tighter in zip(seconds, seconds[1:]):
        assert tighter >= looser * (1 - 1e-12), seconds
    assert seconds[-1] > 0

    # One byte less than the smallest peak is infeasible, and says so.
    proc = weft_opt(step, f"--weft-remat=policy=budget budget={smallest - 1}", check=False)
    assert proc.returncode != 0
    assert (f"the budget of {smallest - 1} bytes" in proc.stderr and
            f"the smallest peak Weft can reach is {smallest} bytes" in proc.stderr), proc.stderr


def test_budget_suffixes():
    step, _, _ = reference("gpt3", "none")
    _, in_bytes = remat(step, "policy=budget budget=1048576")
    _, in_mib = remat(step, "policy=budget budget=1MiB")
    _, in_kib = remat(step, "policy=budget budget=1024KiB")
    assert in_bytes["budget_bytes"] == in_mib["budget_bytes"] == in_kib["budget_bytes"] == 2**20
    assert in_bytes["planned_peak_bytes"] == in_mib["planned_peak_bytes"]


def test_fixed_policy_over_budget_is_an_error():
    step, _, _ = reference("gpt3", "none")
    _, report = remat(step, "policy=selective")
    proc = weft_opt(step, f"--weft-remat=policy=selective budget={report['planned_peak_bytes'] - 1}",
                    check=False)
    assert proc.returncode != 0
    assert f"a planned peak of {report['planned_peak_bytes']} bytes" in proc.stderr


# -- Korthikanti et al.'s activation count ------------------------------------

def saved_by_layer(config):
    """weft-print-saved after weft-autodiff: {layer: [(op, bytes), ...]}."""
    step = weft_opt(emit_module(config), "--weft-autodiff").stdout
    printed = weft_opt(step, "--weft-print-saved", "-o", os.devnull).stdout
    layers = {}
    for line in printed.splitlines():
        m = re.match(r"saved @forward_step \S+ (\S+) \S+ bytes=(\d+) read_by_layer=(\S+)$", line)
        if m:
            layers.setdefault(m.group(3), []).append((m.group(1), int(m.group(2))))
    return layers


@pytest.mark.parametrize("s,b,h,a", [(16, 2, 32, 4), (32, 1, 64, 4), (8, 3, 48, 2)])
def test_korthikanti_count_unfused(s, b, h, a):
    # A bf16 GPT layer (LayerNorm, fused QKV, causal attention with dropout on
    # the probabilities, output projection, GELU MLP of 4h, dropout on both
    # residual branches). Korthikanti et al. count s*b*h*(34 + 5*a*s/h) bytes
    # with 1-byte dropout masks; Weft regenerates masks from weft.rng_id, so
    # it saves s*b*h*(32 + 4*a*s/h):
    #   LayerNorm 1 input                        2sbh
    #   QKV projection input (LayerNorm 1 out)   2sbh
    #   Q and K (for QK^T)                       4sbh
    #   V (for the product with the probs)       2sbh
    #   softmax output (for softmax_grad)        2as^2b
    #   dropped probabilities (for P^T dO)       2as^2b
    #   output projection input                  2sbh
    #   LayerNorm 2 input                        2sbh
    #   fc1 input (LayerNorm 2 out)              2sbh
    #   GELU input (fc1 out, 4h)                 8sbh
    #   fc2 input (GELU out, 4h)                 8sbh
    # and no dropout mask (Korthikanti's sbh + as^2b + sbh).
    config = PRESETS["gpt_block"].replace(layers=2, hidden=h, heads=a, kv_heads=a, seq=s,
                                          batch=b, ffn_hidden=4 * h, vocab=64, dtype="bf16",
                                          attention="unfused", dropout=0.1)
    layers = saved_by_layer(config)
    expected = s * b * h * 32 + 4 * a * s * s * b  # s*b*h*(32 + 4*a*s/h)
    sbh, ass = 2 * s * b * h, 2 * a * s * s * b  # bytes of one bf16 [s,b,h] / [b,a,s,s]
    for layer in ("0", "1"):
        tensors = layers[layer]
        assert sum(size for _, size in tensors) == expected, tensors
        assert sorted(size for _, size in tensors) == sorted(
            [sbh] * 8 + [4 * sbh] * 2 + [ass] * 2), tensors
        assert sorted(op for op, size in tensors if size == ass) == ["weft.dropout", "weft.softmax"]
    # Nothing the backward reads is shared between layers.
    assert "shared" not in layers


def test_korthikanti_count_fused():
    # With weft.attention the a*s/h term disappears: attention_grad rebuilds
    # the probabilities from Q, K, V, the output O and the f32 row
    # log-sum-exp (4*a*s*b bytes). O itself (2sbh) is kept in [b, a, s, d]
    # besides its transposed copy, the output projection's input: so
    # s*b*h*34 + 4*a*s*b bytes (the copy becomes a view once weft-layout
    # picks [s, b, h] layouts).
    s, b, h, a = 16, 2, 32, 4
    config = PRESETS["gpt_block"].replace(layers=2, hidden=h, heads=a, kv_heads=a, seq=s,
                                          batch=b, ffn_hidden=4 * h, vocab=64, dtype="bf16",
                                          attention="fused", dropout=0.1)
    layers = saved_by_layer(config)
    for layer in ("0", "1"):
        assert sum(size for _, size in layers[layer]) == 34 * s * b * h + 4 * a * s * b
        assert not any(size == 2 * a * s * s * b for _, size in layers[layer])
