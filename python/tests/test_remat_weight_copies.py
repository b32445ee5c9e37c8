"""Mixed-precision steps (bf16 models, f32 masters, AdamW): the bf16 weight
copies and the updates' schedule change memory, never results.

weft-autodiff converts each master right before its copy's first reader and
runs each AdamW update as soon as its gradient is final (reading the bf16
gradient); weft-remat's weight-copies converts the copies the backward reads
again in the backward instead of keeping them from the forward. weft-run
runs every variant on the same seeded inputs: loss, updated masters and
moments must agree bit for bit with the step that recomputes nothing, and
memsim must agree with each plan."""
import json
import os
import re
import tempfile

import pytest

from test_remat import SMALL, assert_bitwise_equal, count_recomputed, remat, run_step, weft_opt
from weft import memsim
from weft.models.config import PRESETS
from weft.models.emitter import emit_module

MODELS = {
    "gpt2_bf16": PRESETS["gpt_block"].replace(layers=2, dtype="bf16", attention="fused",
                                              dropout=0.0, **SMALL),
    "llama2_bf16": PRESETS["llama_block"].replace(layers=2, dtype="bf16", dropout=0.1,
                                                  **{**SMALL, "kv_heads": 2}),
}

_STEPS = {}


def reference(model):
    if model not in _STEPS:
        step = weft_opt(emit_module(MODELS[model]), "--weft-autodiff=optimizer=adamw").stdout
        results, inputs = run_step(step)
        _STEPS[model] = (step, results, inputs)
    return _STEPS[model]


def recomputed_copies(text):
    """Converts of a step argument (a master) carrying weft.recompute."""
    return len(re.findall(r"weft\.convert %arg\d+ \{[^}]*weft\.recompute", text))


def planned(text):
    """weft-plan-memory's IR and report, checked by memsim."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("WEFT_TEST_TMP")) as tmp:
        path = os.path.join(tmp, "plan.json")
        out = weft_opt(text, f"--weft-plan-memory=report={path}").stdout
        with open(path) as f:
            plan = json.load(f)
    memsim.check_text(out, plan)
    return out, plan["functions"]["forward_step"]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_updates_follow_their_gradients(model):
    step, _, _ = reference(model)
    body = step[step.index("func.func @forward_step"):].splitlines()
    updates = [i for i, line in enumerate(body) if "weft.adamw" in line]
    assert len(updates) == len(re.findall(r"\{weft\.param\}", body[0]))
    # Updates sit between backward ops, not in one tail after the backward,
    # and read the bf16 gradient (no f32 copy of it).
    last_op = max(i for i, line in enumerate(body) if re.search(r"= weft\.\w+_grad ", line))
    assert updates[0] < last_op, "every update waits for the end of the backward"
    for i in updates:
        grad_type = re.search(r": \(tensor<[^>]*>, (tensor<[^>]*>)", body[i]).group(1)
        assert grad_type.endswith("bf16>"), body[i]
    # Masters are converted where first read, not all at the step's start.
    converts = [i for i, line in enumerate(body) if re.search(r"weft\.convert %arg\d+ ", line)]
    assert converts and converts[-1] > converts[0] + len(converts), "converts stay bunched at the start"


@pytest.mark.parametrize("copies", ["keep", "recompute", "auto"])
@pytest.mark.parametrize("policy", ["none", "full", "uniform num-layers=1", "selective"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_weight_copies_bit_exact(model, policy, copies):
    step, ref, inputs = reference(model)
    out, report = remat(step, f"policy={policy} weight-copies={copies}")
    got, _ = run_step(out, inputs)
    assert_bitwise_equal(got, ref, f"{model}/{policy}/{copies}")
    recomputing = copies == "recompute" or (copies == "auto" and policy == "full")
    assert recomputed_copies(out) == report["recomputed_weight_copies"]
    assert (report["recomputed_weight_copies"] > 0) == recomputing
    assert count_recomputed(out) == report["cloned_ops"]
    _, plan = planned(out)
    assert plan["peak_bytes"] == report["planned_peak_bytes"]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_recomputed_copies_lower_the_peak(model):
    step, _, _ = reference(model)
    _, kept = remat(step, "policy=full weight-copies=keep")
    _, converted = remat(step, "policy=full weight-copies=recompute")
    assert converted["planned_peak_bytes"] < kept["planned_peak_bytes"], (kept, converted)
    # The budget at the peak of "no layer recompute, copies converted again"
    # is met by converting the copies alone: their roofline time is far below
    # any layer recompute's.
    _, copies_only = remat(step, "policy=none weight-copies=recompute")
    budget = copies_only["planned_peak_bytes"]
    assert budget < copies_only["peak_before_bytes"]
    step_ref, ref, inputs = reference(model)
    out, chosen = remat(step, f"policy=budget budget={budget}")
    assert chosen["planned_peak_bytes"] <= budget
    assert chosen["recomputed_weight_copies"] == copies_only["recomputed_weight_copies"]
    assert chosen["recompute_seconds"] <= copies_only["recompute_seconds"] * (1 + 1e-12)
    got, _ = run_step(out, inputs)
    assert_bitwise_equal(got, ref, f"{model}/budget={budget}")
    # Keeping the copies, the same budget costs layer recompute, or is infeasible.
    proc = weft_opt(step, f"--weft-remat=policy=budget budget={budget} weight-copies=keep",
                    check=False)
    if proc.returncode == 0:
        assert recomputed_copies(proc.stdout) == 0
        assert count_recomputed(proc.stdout) > 0
    else:
        assert "is infeasible" in proc.stderr, proc.stderr[-2000:]
