"""Split f32 masters (weft-autodiff weight-copies=split): each bf16
parameter's master is its bf16 high half (the weight the forward and
backward read; a step argument marked weft.copy_of) and an i16 low half in
the master slot. On the reference interpreter the step must compute what
the converting step computes from the joined masters: loss, moments and the
joined new masters bit for bit (the halves' high part rounds ties away,
so the inputs avoid exact ties, where round-to-nearest-even differs), and
the new high half is the new master rounded that way. Under weft-remat,
weft-fuse-elementwise and weft-plan-memory too."""
import re

import pytest
import torch

from test_remat import assert_bitwise_equal, remat, run_step, weft_opt
from test_remat_weight_copies import MODELS, planned
from weft import npz
from weft.models.emitter import emit_module

_STEPS = {}


def step(model, copies):
    key = (model, copies)
    if key not in _STEPS:
        _STEPS[key] = weft_opt(emit_module(MODELS[model]),
                               f"--weft-autodiff=optimizer=adamw weight-copies={copies}").stdout
    return _STEPS[key]


def join(high, low):
    """f32 masters from bf16 high halves and i16 low halves (wrapping)."""
    bits = (high.view(torch.int16).to(torch.int64) & 0xFFFF) * 65536 + low.to(torch.int64)
    bits = bits & 0xFFFFFFFF
    return torch.where(bits >= 2**31, bits - 2**32, bits).to(torch.int32).view(torch.float32)


def split_high(master):
    """The bf16 high half of f32 masters: round to nearest, ties away."""
    bits = master.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    high = ((bits + 0x8000) >> 16) & 0xFFFF
    return torch.where(high >= 2**15, high - 2**16, high).to(torch.int16).view(torch.bfloat16)


def header(text):
    body = text[text.index("func.func @forward_step"):]
    return body[:body.index("{\n")]


def split_inputs(model):
    """Seeded inputs of the split step with no exact tie (low half -32768),
    and the converting step's inputs: each master joined from its halves."""
    text = step(model, "split")
    _, path = run_step(text)
    inputs = npz.ordered(npz.load(path), "arg")
    copies = {int(j): int(k) for j, k in
              re.findall(r"%arg(\d+): tensor<[^>]*> \{weft\.copy_of = (\d+)", header(text))}
    assert copies, "no split masters in the step"
    for j, k in copies.items():
        low = inputs[k]
        assert low.dtype == torch.int16 and inputs[j].dtype == torch.bfloat16, (j, k)
        inputs[k] = torch.where(low == -32768, torch.full_like(low, -32767), low)
    converted = [t for i, t in enumerate(inputs) if i not in copies]
    for j, k in copies.items():
        converted[k] = join(inputs[j], inputs[k])
    return copies, inputs, converted


def save_inputs(tensors, tmp_path, name):
    path = str(tmp_path / name)
    npz.save(path, {f"arg{i}": t for i, t in enumerate(tensors)})
    return path


def check_split(got, ref, copies, label):
    """got: the split step's results; ref: the converting step's."""
    n = (len(ref) - 1) // 3
    assert len(got) == len(ref) + len(copies), (label, len(got), len(ref))
    # Loss, moments: bit for bit. Masters: joined from the halves.
    assert_bitwise_equal(got[:1] + got[1 + n:len(ref)], ref[:1] + ref[1 + n:], label)
    for offset, (j, k) in enumerate(sorted(copies.items())):
        high, low = got[len(ref) + offset], got[1 + k]
        assert high.dtype == torch.bfloat16 and low.dtype == torch.int16, (label, k)
        master = ref[1 + k]
        assert torch.equal(join(high, low).view(torch.int32), master.view(torch.int32)), \
            f"{label}: master {k} does not join back from its halves"
        assert torch.equal(high.view(torch.int16), split_high(master).view(torch.int16)), \
            f"{label}: high half {k} is not its master rounded to nearest"


@pytest.mark.parametrize("model", sorted(MODELS))
def test_signature(model):
    text = step(model, "split")
    head = header(text)
    lows = re.findall(r"tensor<[0-9x]*xi16> \{weft\.param\}", head)
    copies = re.findall(r"tensor<[0-9x]*xbf16> \{weft\.copy_of = \d+", head)
    assert lows and len(lows) == len(copies), (len(lows), len(copies))
    body = text[text.index("func.func @forward_step"):]
    assert not re.search(r"weft\.convert %arg\d+", body), "a master is converted in the split step"
    assert len(re.findall(r'"?weft\.adamw"?[^\n]*xi16>\) ->', body)) == len(lows)


@pytest.mark.parametrize("variant", ["plain", "full", "fused"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_split_matches_converted(model, variant, tmp_path):
    copies, inputs, converted = split_inputs(model)
    ref, _ = run_step(step(model, "converted"), save_inputs(converted, tmp_path, "conv.npz"))
    text = step(model, "split")
    if variant == "full":
        text, _ = remat(text, "policy=full")
        planned(text)
    elif variant == "fused":
        text = weft_opt(text, "--pass-pipeline=builtin.module(func.func(weft-fuse-elementwise))").stdout
        assert re.search(r'kind = "adamw', text), "no fused AdamW group"
    got, _ = run_step(text, save_inputs(inputs, tmp_path, "split.npz"))
    check_split(got, ref, copies, f"{model}/{variant}")


def test_f16_parameters_refused():
    text = emit_module(MODELS["gpt2_bf16"].replace(dtype="f16"))
    proc = weft_opt(text, "--weft-autodiff=optimizer=adamw weight-copies=split", check=False)
    assert proc.returncode != 0
    assert "weight-copies=split keeps a bf16 high half" in proc.stderr and "f16" in proc.stderr, \
        proc.stderr[-2000:]
