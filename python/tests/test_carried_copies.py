"""Carried weight copies (weft-autodiff weight-copies=carried): the bf16
copies of the f32 masters are step arguments that each AdamW update writes,
instead of converts inside the step. The results must not change: on the
same seeded inputs (weft-run derives each copy from its master), loss,
masters and moments agree bit for bit with the converting step, and each
returned copy is its new master rounded to bf16. Under weft-remat and
weft-fuse-elementwise too, with memsim agreeing with each plan."""
import re

import pytest
import torch

from test_remat import assert_bitwise_equal, remat, run_step, weft_opt
from test_remat_weight_copies import MODELS, planned, reference
from weft.models.emitter import emit_module

_CARRIED = {}


def carried(model):
    if model not in _CARRIED:
        _CARRIED[model] = weft_opt(emit_module(MODELS[model]),
                                   "--weft-autodiff=optimizer=adamw weight-copies=carried").stdout
    return _CARRIED[model]


def check_results(got, ref, label):
    """got: the carried step's results; ref: the converting step's."""
    n = (len(ref) - 1) // 3
    copies = got[len(ref):]
    assert_bitwise_equal(got[:len(ref)], ref, label)
    assert copies, f"{label}: no carried copies returned"
    masters = [m for m in ref[1:1 + n] if m.dtype == torch.float32]
    assert len(copies) == len(masters), (len(copies), len(masters))
    for i, (copy, master) in enumerate(zip(copies, masters)):
        assert copy.dtype == torch.bfloat16, (label, i, copy.dtype)
        assert torch.equal(copy.view(torch.int16), master.to(torch.bfloat16).view(torch.int16)), \
            f"{label}: copy {i} is not its new master rounded"


@pytest.mark.parametrize("model", sorted(MODELS))
def test_signature_and_no_converts_of_masters(model):
    step = carried(model)
    body = step[step.index("func.func @forward_step"):]
    header = body.splitlines()[0]
    params = len(re.findall(r"\{weft\.param\}", header))
    copies = re.findall(r"weft\.copy_of = (\d+)", header)
    assert copies and len(copies) <= params
    assert [int(c) for c in copies] == sorted(int(c) for c in copies)
    # Nothing converts a master before its update: only updated masters.
    for line in body.splitlines():
        m = re.search(r"weft\.convert (%arg\d+)", line)
        assert not m, f"a master is converted in the step: {line.strip()}"


@pytest.mark.parametrize("policy", [None, "full", "selective"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_carried_bit_exact(model, policy):
    _, ref, _ = reference(model)
    step = carried(model)
    if policy:
        step, _ = remat(step, f"policy={policy}")
    got, _ = run_step(step)
    check_results(got, ref, f"{model}/{policy}")
    if policy:
        planned(step)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_carried_fused_bit_exact(model):
    _, ref, _ = reference(model)
    step = weft_opt(carried(model), "--pass-pipeline=builtin.module(func.func(weft-fuse-elementwise))").stdout
    assert 'kind = "adamw+convert"' in step, "the copy's convert is not fused into its update"
    got, _ = run_step(step)
    check_results(got, ref, f"{model}/fused")
