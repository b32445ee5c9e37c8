"""weft-fuse-gemm-epilogue: each MLP's fc1 linear and its tanh gelu become one
weft.fused GEMM group (cuBLASLt's GELU_AUX_BIAS on the GPU), and the fc2
data-gradient matmul with the gelu_grad reading it another (DGELU), which
changes which op computes the GELU and its gradient, never their values.

A generated bf16 GPT training step (AdamW) is run by weft-run (the reference
interpreter) before and after the pass on the same inputs: every result must
agree bit for bit (the interpreter runs the groups' bodies), so the fused
step is within any bf16 tolerance of the unfused one. Then the training
pipeline with fuse-gemm-epilogue=true (and the elementwise fusion after it)
under remat none and full: the same results, every MLP's pair in a group,
no gelu or gelu_grad left outside one, and the memory plan replayed by the
independent simulator weft.memsim (dg is no buffer; u is written by the
forward GEMM and read by the backward one)."""
import json
import os
import re

import pytest

from test_fuse_elementwise import (assert_bitwise_equal, kinds, run, tmpdir,
                                   weft_opt)
# The model and its seeded reference step are test_fuse_bias_grad's.
from test_fuse_bias_grad import LAYERS, MODEL, reference
from weft import memsim
from weft.models.emitter import emit_module


def top_level(op, text):
    """`op` ops of the step outside any weft.fused body (4-space indented)."""
    return re.findall(rf"^    %\S+ = weft\.{op} ", step_of(text), re.M)


def step_of(text):
    """The training step's function (the module also holds the forward)."""
    return text.split("func.func @forward_step")[1]


def test_model_uses_tanh_gelu():
    assert MODEL.mlp == "gelu"
    step, _, _ = reference()
    assert len(top_level("gelu", step)) == LAYERS
    assert len(top_level("gelu_grad", step)) == LAYERS
    assert 'approximate = "tanh"' in step


def test_step_gelu_gemms_fused_bit_exact():
    step, ref, inputs = reference()
    fused = weft_opt(step, "--weft-fuse-gemm-epilogue").stdout
    assert kinds(step_of(fused)).count("linear+gelu") == LAYERS, kinds(fused)
    assert kinds(step_of(fused)).count("matmul+gelu_grad") == LAYERS, kinds(fused)
    # u is read by the backward: every forward group yields (gelu(u), u).
    assert len(re.findall(r"^    %\S+:2 = weft\.fused .*kind = \"linear\+gelu\"",
                          step_of(fused), re.M)) == LAYERS
    assert not top_level("gelu", fused) and not top_level("gelu_grad", fused)
    got, _ = run(fused, "forward_step", inputs)
    assert_bitwise_equal(got, ref, "gpt bf16 step")


def test_exact_gelu_is_left_alone():
    # The erf GELU has no cuBLASLt epilogue: the same step with it forms no group.
    step, _, _ = reference()
    exact = step.replace('approximate = "tanh"', 'approximate = "none"')
    fused = weft_opt(exact, "--weft-fuse-gemm-epilogue").stdout
    assert "linear+gelu" not in kinds(fused) and "matmul+gelu_grad" not in kinds(fused)


@pytest.mark.parametrize("policy", ["none", "full"])
def test_pipeline_bit_exact_and_planned(policy):
    _, ref, inputs = reference()
    tmp = tmpdir()
    report = os.path.join(tmp, "report.json")
    proc = weft_opt(emit_module(MODEL),
                    "--weft-train-pipeline=entry=forward optimizer=adamw fuse-gemm-epilogue=true "
                    f"fuse-elementwise=true remat={policy} memory-report={report}")
    step = step_of(proc.stdout)
    assert kinds(step).count("matmul+gelu_grad") == LAYERS, kinds(step)
    # remat=full recomputes the forward groups in the backward: at least one each.
    assert kinds(step).count("linear+gelu") >= LAYERS, kinds(step)
    assert not top_level("gelu", proc.stdout) and not top_level("gelu_grad", proc.stdout)
    path = os.path.join(tmp, "plan.json")
    planned = weft_opt(proc.stdout, f"--weft-plan-memory=report={path}").stdout
    with open(path) as f:
        plan = json.load(f)
    with open(report) as f:
        assert plan["functions"]["forward_step"]["peak_bytes"] == json.load(f)["peak_bytes"]
    memsim.check_text(planned, plan)
    got, _ = run(proc.stdout, "forward_step", inputs)
    assert_bitwise_equal(got, ref, f"pipeline remat={policy}")
