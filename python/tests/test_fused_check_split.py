"""The CPU side of the GPU check of split-master AdamW (test/gpu/fused_check.py):
its float64 reference and its f32 emulation of the kernel agree with the
reference interpreter's weft.adamw with param_low (weft-run), its split and
join are the interpreter's bit for bit, and its checker passes the
interpreter's update while failing broken ones (low half lost, NaN rule
broken, an element unwritten, the moments wrong)."""
import pytest
import torch

from fused_case_units import case_unit
from harness import run_ir
from script_modules import load_script

fused_check = load_script("test/gpu/fused_check.py")

# fused_cases' split units: a step's "adamw" group over 37 x 129 (a scalar
# tail on the GPU) and "add+adamw" (the gradient added from two f32 parts).
UNITS = ["adamw_split_tail_bf16", "add_adamw_split_bf16"]


def split_unit(tmp_path, name='adamw_split_tail_bf16'):
    return case_unit(tmp_path, name)


@pytest.fixture
def on_cpu(monkeypatch):
    monkeypatch.setattr(fused_check, "_DEVICE", "cpu")


def test_split_and_join_round_trip_and_edges():
    values = torch.tensor([1.0, -1.0, 0.0, -0.0, float("inf"), -float("inf"), 3.4028234e38,
                           -3.3895e38, 1e-40, float("nan"), -float("nan")])
    # Patterns at the rounding boundary: low 0x7fff stays, 0x8000 rounds away.
    boundary = torch.tensor([0x3F807FFF, 0x3F808000, 0xBF808000 - (1 << 32)],
                            dtype=torch.int32).view(torch.float32)
    values = torch.cat([values, boundary, torch.randn(1000)])
    high, low = fused_check.split_master(values)
    joined = fused_check.join_master(high, low)
    finite = ~torch.isnan(values)
    assert torch.equal(joined.view(torch.int32)[finite], values.view(torch.int32)[finite])
    high_bits = high.view(torch.int16).to(torch.int32) & 0xFFFF
    assert high_bits[-1002].item() == 0x3F81 and low[-1002].item() == -0x8000
    assert high_bits[-1003].item() == 0x3F80 and low[-1003].item() == 0x7FFF
    assert high_bits[-1001].item() == 0xBF81 and low[-1001].item() == -0x8000
    # The largest f32 rounds up to inf in bf16, its low half below it.
    assert torch.isinf(high[6].float()) and low[6].item() < 0
    nan = torch.isnan(values)
    assert torch.isnan(high.float()[nan]).all() and (low[nan] == 0).all()
    assert ((high_bits[nan] & 0x40) != 0).all()
    assert high_bits[10].item() & 0x8000  # -nan keeps its sign


@pytest.mark.parametrize("name", UNITS)
def test_reference_and_emulation_match_the_interpreter(tmp_path, on_cpu, name):
    unit, ir = split_unit(tmp_path, name)
    generator = torch.Generator().manual_seed(5)
    inputs = fused_check.make_inputs(unit, generator)
    assert inputs[-1].dtype == torch.int16 and int(inputs[-2]) >= 2
    assert torch.isnan(inputs[1]).sum() == 2
    weft = run_ir(ir, inputs, entry=name)
    reference = fused_check.unit_outputs(unit, inputs, reference=True)
    emulated = fused_check.unit_outputs(unit, inputs, reference=False)
    # The interpreter's split is fused_check's, bit for bit.
    high, low = weft[0], weft[3]
    joined = fused_check.join_master(high, low)
    want_high, want_low = fused_check.split_master(joined)
    assert torch.equal(high.view(torch.int16), want_high.view(torch.int16))
    assert torch.equal(low, want_low)
    # The interpreter rounds its float64 update to f32 once: within an f32
    # ulp of fused_check's float64 reference, plus what rounding the group's
    # f32 gradient sum to its type moves an update of ~lr (~2^-24 lr).
    nan = torch.isnan(reference[0])
    assert int(nan.sum()) == 2 and torch.equal(torch.isnan(joined), nan)
    ref = reference[0][~nan]
    ulp = torch.nextafter(ref.float().abs(), torch.tensor(float("inf"))).double() - \
        ref.float().abs().double()
    assert ((joined[~nan].double() - ref).abs() <= ulp + 1e-9).all()
    # fused_check's f32 emulation of the kernel is within a few f32 ulps.
    emulated_joined = fused_check.join_master(emulated[0], emulated[3])
    assert fused_check.rel_error(emulated_joined[~nan], ref) < 1e-6
    # The GPU checker passes the interpreter's update and the emulation's.
    failures, err = fused_check.split_adamw_failures(unit, weft, reference)
    assert failures == [] and err < 1e-7
    failures, err = fused_check.split_adamw_failures(unit, emulated, reference)
    assert failures == [], failures


def test_checker_fails_broken_updates(tmp_path, on_cpu):
    unit, _ = split_unit(tmp_path)
    inputs = fused_check.make_inputs(unit, torch.Generator().manual_seed(6))
    reference = fused_check.unit_outputs(unit, inputs, reference=True)
    good = fused_check.unit_outputs(unit, inputs, reference=False)
    nan_at = torch.isnan(reference[0]).view(-1).nonzero()[0].item()

    def failures_with(k, change):
        outputs = [x.clone() for x in good]
        change(outputs[k].view(-1))
        return fused_check.split_adamw_failures(unit, outputs, reference)[0]

    assert fused_check.split_adamw_failures(unit, good, reference)[0] == []
    # The low half lost: the master is its bf16 high half alone.
    assert any("joined master" in f for f in failures_with(3, lambda x: x.zero_()))
    # The low half left poisoned at one element.
    assert any("joined master" in f
               for f in failures_with(3, lambda x: x.__setitem__(7, -21846)))
    # The high half unwritten (NaN poison) at one element.
    assert any("NaN" in f for f in failures_with(0, lambda x: x.__setitem__(7, float("nan"))))
    # A NaN master stored as a finite weight, or with low bits.
    assert any("NaN" in f for f in failures_with(0, lambda x: x.__setitem__(nan_at, 1.0)))
    assert any("not 0" in f for f in failures_with(3, lambda x: x.__setitem__(nan_at, 5)))
    # A moment off by 1 %.
    assert any("new_m" in f for f in failures_with(1, lambda x: x.mul_(1.01)))
