"""The CPU side of the GPU check of rope (test/gpu/fused_check.py): on the
rope units of fused_cases (forward and inverse, the odd-shaped ones, fused
after RMSNorm and after a multiply), the reference interpreter's outputs
(weft-run) pass fused_check's float64 reference within its tolerance, and
the check fails an output with one element left unwritten (NaN poison), the
forward rotation where the inverse belongs, and the inverse's sin read at
the element instead of at its partner."""
import pytest
import torch

from fused_case_units import case_unit
from harness import run_ir
from script_modules import load_script

fused_check = load_script("test/gpu/fused_check.py")

UNITS = ["rope_bf16", "rope_inverse_f16", "rope_inverse_f32", "rope_odd_bf16",
         "rope_inverse_odd_f32", "rms_norm_rope_bf16", "mul_rope_inverse_f32"]


@pytest.fixture
def on_cpu(monkeypatch):
    monkeypatch.setattr(fused_check, "_DEVICE", "cpu")


def outputs_and_reference(tmp_path, name, seed):
    unit, ir = case_unit(tmp_path, name)
    inputs = fused_check.make_inputs(unit, torch.Generator().manual_seed(seed))
    weft = run_ir(ir, inputs, entry=name)
    reference = fused_check.unit_outputs(unit, inputs, reference=True)
    params = [p for p in unit["params"] if p["role"] == "output"]
    return unit, inputs, weft, reference, params


@pytest.mark.parametrize("name", UNITS)
def test_interpreter_passes_the_reference(tmp_path, on_cpu, name):
    _, _, weft, reference, params = outputs_and_reference(tmp_path, name, 3)
    assert len(weft) == len(reference) == len(params)
    for p, got, ref in zip(params, weft, reference):
        assert fused_check.rel_error(got, ref) <= fused_check.TOLERANCE[p["dtype"]], p


@pytest.mark.parametrize("name", ["rope_bf16", "rope_inverse_odd_f32"])
def test_an_unwritten_element_fails(tmp_path, on_cpu, name):
    _, _, weft, reference, _ = outputs_and_reference(tmp_path, name, 4)
    poisoned = weft[-1].clone()
    poisoned.view(-1)[poisoned.numel() // 2 + 1] = float("nan")
    assert fused_check.rel_error(poisoned, reference[-1]) == float("inf")


def test_the_wrong_rotation_fails(tmp_path, on_cpu):
    """With random tables (not cos/sin of angles, whose halves repeat) the
    forward, and the inverse with sin at the element, both miss the
    inverse's reference by far more than the tolerance."""
    _, inputs, weft, reference, _ = outputs_and_reference(tmp_path, "rope_inverse_f32", 5)
    x, cos, sin = (t.to(torch.float64) for t in inputs)
    forward = fused_check._rope(x, cos, sin, inverse=False)
    half = x.shape[-1] // 2
    swapped = torch.cat((sin[..., half:], sin[..., :half]), -1)
    sin_here = fused_check._rope(x, cos, swapped, inverse=True)
    tolerance = fused_check.TOLERANCE["f32"]
    assert fused_check.rel_error(weft[0], reference[0]) <= tolerance
    assert fused_check.rel_error(forward, reference[0]) > 100 * tolerance
    assert fused_check.rel_error(sin_here, reference[0]) > 100 * tolerance
