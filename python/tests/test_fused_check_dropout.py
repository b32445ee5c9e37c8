"""The CPU side of the GPU check of dropout (test/gpu/fused_check.py): on the
p = 0.1 units of fused_cases (dropout + residual + LayerNorm, its backward
group, dropout alone with a scalar tail), the reference interpreter's
outputs (weft-run) pass fused_check's float64 reference and its element-wise
mask check, and the mask check fails outputs with one element's keep flipped
or with no dropout at all."""
import pytest
import torch

from fused_case_units import case_unit
from harness import run_ir
from script_modules import load_script

fused_check = load_script("test/gpu/fused_check.py")

UNITS = ["dropout_p01_add_layer_norm_bf16", "layer_norm_grad_add_dropout_p01_f32",
         "dropout_p01_tail_bf16"]


def dropout_unit(tmp_path, name):
    return case_unit(tmp_path, name)


@pytest.fixture
def on_cpu(monkeypatch):
    monkeypatch.setattr(fused_check, "_DEVICE", "cpu")


@pytest.mark.parametrize("name", UNITS)
def test_interpreter_passes_the_reference_and_the_mask_check(tmp_path, on_cpu, name):
    unit, ir = dropout_unit(tmp_path, name)
    inputs = fused_check.make_inputs(unit, torch.Generator().manual_seed(3))
    weft = run_ir(ir, inputs, entry=name)
    reference = fused_check.unit_outputs(unit, inputs, reference=True)
    failures, notes = fused_check.dropout_mask_failures(unit, inputs, weft)
    assert failures == [], failures
    # About 90 % kept, every element readable, none differing.
    (note,) = notes
    kept, readable = (int(v) for v in note.split("kept ")[1].split(" ")[0].split("/"))
    assert readable == weft[-1].numel() and 0.88 < kept / readable < 0.92, note
    assert note.endswith(" 0 differ"), note
    params = [p for p in unit["params"] if p["role"] == "output"]
    for p, got, ref in zip(params, weft, reference):
        assert fused_check.rel_error(got, ref) <= fused_check.TOLERANCE[p["dtype"]], p


@pytest.mark.parametrize("name", UNITS)
def test_mask_check_fails_a_flipped_element(tmp_path, on_cpu, name):
    unit, ir = dropout_unit(tmp_path, name)
    inputs = fused_check.make_inputs(unit, torch.Generator().manual_seed(4))
    weft = run_ir(ir, inputs, entry=name)
    (j,) = fused_check.dropout_ops(unit)
    keep = fused_check.dropout_keep(unit, j, inputs, weft[-1].shape).reshape(-1)
    kept_at = int(keep.nonzero()[0].item())
    dropped_at = int((~keep).nonzero()[0].item())
    yields = unit["body"]["yield"]
    body = unit["body"]["ops"]

    def flipped(at, keep_it):
        outputs = [x.clone() for x in weft]
        if ["op", j, 0] in yields:  # the dropout's own output
            k = yields.index(["op", j, 0])
            x_ref = body[j]["operands"][0]
            x = inputs[x_ref[1]] if x_ref[0] == "arg" else weft[yields.index(x_ref)]
            outputs[k].view(-1)[at] = x.reshape(-1)[at] / 0.9 if keep_it else 0.0
        else:  # the sum with the residual: dropped means s == res
            add = next(k for k, m in enumerate(body)
                       if m["op"] == "weft.add" and ["op", j, 0] in m["operands"])
            res = body[add]["operands"][1]
            s = outputs[yields.index(["op", add, 0])].view(-1)
            s[at] = inputs[res[1]].reshape(-1)[at] + (5.0 if keep_it else 0.0)
        return fused_check.dropout_mask_failures(unit, inputs, outputs)[0]

    assert fused_check.dropout_mask_failures(unit, inputs, weft)[0] == []
    assert any("1 elements kept/dropped unlike" in f for f in flipped(kept_at, False))
    assert any("1 elements kept/dropped unlike" in f for f in flipped(dropped_at, True))
    # No dropout at all (every element kept, unscaled): ~10 % differ.
    outputs = [x.clone() for x in weft]
    if ["op", j, 0] in yields:
        x_ref = body[j]["operands"][0]
        source = inputs[x_ref[1]] if x_ref[0] == "arg" else weft[yields.index(x_ref)]
        outputs[yields.index(["op", j, 0])].copy_(source)
    else:
        add = next(k for k, m in enumerate(body)
                   if m["op"] == "weft.add" and ["op", j, 0] in m["operands"])
        lhs, rhs = body[add]["operands"]
        x, res = inputs[body[j]["operands"][0][1]], inputs[rhs[1]]
        outputs[yields.index(["op", add, 0])].copy_((x.double() + res.double()).to(x.dtype))
    failures = fused_check.dropout_mask_failures(unit, inputs, outputs)[0]
    assert failures and "kept/dropped unlike" in failures[0], failures
