"""weft-fuse-bias-grad: a linear's dW matmul and db reduce_sum become one
weft.fused GEMM group (cuBLASLt's bias-gradient epilogue on the GPU), which
changes which op computes db, never its value.

A generated bf16 GPT training step (AdamW) is run by weft-run (the reference
interpreter) before and after the pass on the same inputs: every result must
agree bit for bit (the interpreter runs the group's body). Then the training
pipeline with fuse-elementwise=true (which runs the rewrite) under remat none
and full: the same results, every bias gradient in a group, and the memory
plan replayed by the independent simulator weft.memsim (db is written with
dW, so its buffer must be live from the GEMM on)."""
import json
import os
import re

import pytest

from test_fuse_elementwise import (assert_bitwise_equal, kinds, run, tmpdir,
                                   weft_opt)
from weft import memsim
from weft.models.config import PRESETS
from weft.models.emitter import emit_module

SMALL = dict(hidden=32, heads=4, kv_heads=4, seq=16, batch=2, ffn_hidden=128, vocab=64)
LAYERS = 2
MODEL = PRESETS["gpt_block"].replace(layers=LAYERS, dtype="bf16", **SMALL)
# GPT linears with a bias, per layer: qkv, attention output, fc1, fc2.
BIASED_LINEARS = 4 * LAYERS

_STEP = {}


def reference():
    if not _STEP:
        step = weft_opt(emit_module(MODEL), "--weft-autodiff=optimizer=adamw").stdout
        results, inputs = run(step, "forward_step")
        _STEP.update(step=step, results=results, inputs=inputs)
    return _STEP["step"], _STEP["results"], _STEP["inputs"]


def top_level_reduce_sums(text):
    """reduce_sum ops outside any weft.fused body (4-space indented)."""
    return re.findall(r"^    %\S+ = weft\.reduce_sum ", text, re.M)


def test_step_bias_grads_fused_bit_exact():
    step, ref, inputs = reference()
    assert len(top_level_reduce_sums(step)) >= BIASED_LINEARS
    fused = weft_opt(step, "--weft-fuse-bias-grad").stdout
    assert kinds(fused).count("matmul+reduce_sum") == BIASED_LINEARS, kinds(fused)
    # Every bias gradient moved into a group: only the other sums remain.
    assert len(top_level_reduce_sums(fused)) == len(top_level_reduce_sums(step)) - BIASED_LINEARS
    got, _ = run(fused, "forward_step", inputs)
    assert_bitwise_equal(got, ref, "gpt bf16 step")


def test_pass_is_needed_for_the_groups():
    # Without the rewrite (bias-grad=false) no group forms: the test above
    # sees the pass's work, not the generator's.
    step, _, _ = reference()
    plain = weft_opt(step, "--weft-fuse-elementwise=bias-grad=false").stdout
    assert "matmul+reduce_sum" not in kinds(plain)
    assert len(top_level_reduce_sums(plain)) == len(top_level_reduce_sums(step))


@pytest.mark.parametrize("policy", ["none", "full"])
def test_pipeline_bit_exact_and_planned(policy):
    _, ref, inputs = reference()
    tmp = tmpdir()
    report = os.path.join(tmp, "report.json")
    proc = weft_opt(emit_module(MODEL),
                    f"--weft-train-pipeline=entry=forward optimizer=adamw fuse-elementwise=true "
                    f"remat={policy} memory-report={report}")
    assert kinds(proc.stdout).count("matmul+reduce_sum") == BIASED_LINEARS
    path = os.path.join(tmp, "plan.json")
    planned = weft_opt(proc.stdout, f"--weft-plan-memory=report={path}").stdout
    with open(path) as f:
        plan = json.load(f)
    with open(report) as f:
        assert plan["functions"]["forward_step"]["peak_bytes"] == json.load(f)["peak_bytes"]
    memsim.check_text(planned, plan)
    got, _ = run(proc.stdout, "forward_step", inputs)
    assert_bitwise_equal(got, ref, f"pipeline remat={policy}")
