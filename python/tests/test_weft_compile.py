"""weft-compile --train on generated models: every pass of the training
pipeline keeps the results (--weft-diff-each-pass, with the reference
interpreter after each pass), the memory report is consistent with itself and
with the cost model (weft-print-cost over the same step), and a budget is met.

Models: the shipped presets in f32 plus a bf16 and an f64 GPT block, so the
per-type tolerances of --weft-diff-each-pass are exercised."""
import json
import os
import re
import subprocess
import tempfile

import pytest

from harness import tool
from weft.models.config import PRESETS
from weft.models.emitter import emit_module

SMALL = dict(hidden=32, heads=4, kv_heads=4, seq=16, batch=2, ffn_hidden=128, vocab=64)
MODELS = {
    "tiny_gpt": PRESETS["tiny_gpt"].replace(dtype="f32"),
    "gpt3_bf16": PRESETS["gpt_block"].replace(layers=3, dtype="bf16", **SMALL),
    "gpt2_f64": PRESETS["gpt_block"].replace(layers=2, dtype="f64", **SMALL),
    "llama2": PRESETS["llama_block"].replace(layers=2, dtype="f32", **{**SMALL, "kv_heads": 2}),
}
POLICIES = ["none", "full", "selective", "block", "uniform"]
CATEGORIES = ["parameters", "optimizer_state", "inputs", "gradients",
              "saved_activations", "temporaries", "workspaces"]


def compile_step(model, *flags, check=True):
    """(completed process, step IR, report) of weft-compile on `model`."""
    tmp = tempfile.mkdtemp(prefix="weft-compile-", dir=os.environ.get("WEFT_TEST_TMP"))
    source, step, report = (os.path.join(tmp, name)
                            for name in ("model.mlir", "step.mlir", "report.json"))
    with open(source, "w") as f:
        f.write(emit_module(MODELS[model]))
    cmd = [tool("weft-compile"), source, "--entry", "forward", "--train",
           "--optimizer=adamw", f"--memory-report={report}", "-o", step, *flags]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    text = open(step).read() if os.path.exists(step) else None
    data = json.load(open(report)) if os.path.exists(report) else None
    return proc, text, data


def print_cost_flops(step_text):
    """Sum of CostOpInterface FLOPs over the step, from weft-print-cost."""
    proc = subprocess.run([tool("weft-opt"), "-", "--weft-print-cost", "-o", os.devnull],
                          input=step_text, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return sum(int(m.group(1)) for m in re.finditer(r"flops=(\d+)", proc.stdout))


_REPORTS = {}


def report_of(model, policy):
    key = (model, policy)
    if key not in _REPORTS:
        _REPORTS[key] = compile_step(model, f"--remat={policy}")[1:]
    return _REPORTS[key]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_pass_keeps_the_results(model, policy):
    proc, _, _ = compile_step(model, f"--remat={policy}", "--weft-diff-each-pass")
    assert proc.returncode == 0


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_report_is_consistent(model, policy):
    step, report = report_of(model, policy)
    assert report["function"] == "forward_step"
    assert report["remat_policy"] == policy
    # The categories at the max-live step make up the lower bound; the arena
    # is at least that and fragmentation measures the rest.
    assert sum(report["categories"][c] for c in CATEGORIES) == report["lower_bound_bytes"]
    assert report["peak_bytes"] >= report["lower_bound_bytes"] > 0
    expected = (report["peak_bytes"] - report["lower_bound_bytes"]) / report["peak_bytes"]
    assert report["fragmentation"] == pytest.approx(expected, abs=1e-15)
    for c in CATEGORIES:
        assert 0 <= report["categories"][c] <= report["category_totals"][c]
    # Saved bytes per layer are tensor sizes; the category total is aligned.
    saved = sum(l["saved_bytes"] for l in report["layers"]) + report["unlayered_saved_bytes"]
    assert 0 < saved <= report["category_totals"]["saved_activations"]
    # The step's module still holds @forward: weft-print-cost over it counts
    # the forward once more. The step's forward is the entry's, op for op
    # (plus, for 16-bit models, converting the f32 master weights), and the
    # four FLOP classes partition the step's ops.
    entry_flops = print_cost_flops(emit_module(MODELS[model]))
    if MODELS[model].dtype in ("f32", "f64"):
        assert report["forward_flops"] == entry_flops
    else:
        assert report["forward_flops"] > entry_flops
    total = (report["forward_flops"] + report["backward_flops"] +
             report["recompute_flops"] + report["optimizer_flops"])
    assert total == print_cost_flops(step) - entry_flops
    assert sum(l["recompute_flops"] for l in report["layers"]) <= report["recompute_flops"]
    assert (report["recomputed_ops"] == 0) == (report["recompute_flops"] == 0 and
                                                step.count("weft.recompute") == 0)
    assert report["recompute_time_estimate_s"] <= report["step_time_estimate_s"]
    assert report["roofline"] == {"flops_per_s": 989e12, "bytes_per_s": 3.35e12}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_remat_changes_only_recompute(model):
    """Recomputation adds FLOPs and removes saved bytes; the forward, the
    backward proper and the optimizer stay what they were."""
    _, none = report_of(model, "none")
    _, full = report_of(model, "full")
    for key in ("forward_flops", "backward_flops", "optimizer_flops"):
        assert full[key] == none[key], key
    assert none["recompute_flops"] == 0 and full["recompute_flops"] > 0
    assert full["category_totals"]["saved_activations"] < none["category_totals"]["saved_activations"]
    assert full["peak_bytes"] <= none["peak_bytes"]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_budget_is_met(model):
    _, none = report_of(model, "none")
    _, full = report_of(model, "full")
    budget = (none["peak_bytes"] + full["peak_bytes"]) // 2
    _, _, report = compile_step(model, "--remat=budget", f"--memory-budget={budget}",
                                "--weft-diff-each-pass")
    assert report["budget_bytes"] == budget
    assert report["peak_bytes"] <= budget
    # A budget below the no-recompute peak needs recomputation, and never
    # more than recomputing every layer.
    if budget < none["peak_bytes"]:
        assert 0 < report["recompute_flops"] <= full["recompute_flops"]


def test_fixed_policy_over_budget_names_the_peak():
    _, none = report_of("tiny_gpt", "none")
    budget = none["peak_bytes"] - 1
    proc, _, report = compile_step("tiny_gpt", "--remat=none", f"--memory-budget={budget}",
                                   check=False)
    assert proc.returncode == 1
    assert f"planned peak {none['peak_bytes']} bytes" in proc.stderr
    assert f"exceeds the memory budget of {budget} bytes" in proc.stderr
    assert report["peak_bytes"] == none["peak_bytes"]
