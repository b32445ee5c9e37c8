"""Host-side test of test/gpu/attention_dropout_check.py: its GPU point run
against kernels simulated on the CPU by the same math in the dtype (so it
must pass), and against a simulation with another rng_id's mask (so the
bit-exact mask check must fail)."""
import types

import torch

from script_modules import load_script

check = load_script("test/gpu/attention_dropout_check.py")


def simulated(rng_offset):
    """A run_unit that computes what the kernels should, with the mask of
    rng_id + rng_offset."""
    def run_unit(rt, loaded, values, shapes, stream):
        unit = loaded.unit
        b, hq, s = shapes["batch"], shapes["q_heads"], shapes["q_len"]
        keep = check.keep_mask(b, hq, s, s, unit.dropout_p, int(values["seed"][0]),
                               unit.rng_id + rng_offset)
        dout = values.get("dout", torch.zeros_like(values["q"]))
        got = check.attention_with_mask(values["q"], values["k"], values["v"], dout,
                                        unit.causal, values["scale"], keep, unit.dropout_p,
                                        values["q"].dtype)
        # The kernels' lse comes from f32 scores, not the dtype's rounded ones.
        got["lse"] = check.attention_with_mask(values["q"], values["k"], values["v"], dout,
                                               unit.causal, values["scale"], keep,
                                               unit.dropout_p, torch.float64)["lse"]
        names = ("out", "lse") if unit.direction == "forward" else ("dq", "dk", "dv")
        for name in names:
            values[name].copy_(got[name].to(values[name].dtype))
        if unit.direction == "backward":
            for name, _ in unit.workspaces:
                values[name].zero_()
    return run_unit


def point(monkeypatch, rng_offset, causal):
    monkeypatch.setattr(check, "run_unit", simulated(rng_offset))
    # Hopper units: the forward's workspace is its keep mask, the backward's
    # delta and then its keep mask.
    unit = dict(dropout_p=0.1, rng_id=7, causal=causal, mma="warpgroup")
    fwd = types.SimpleNamespace(unit=types.SimpleNamespace(
        direction="forward", workspaces=[("mask", "bits")], **unit))
    bwd = types.SimpleNamespace(unit=types.SimpleNamespace(
        direction="backward", workspaces=[("delta", "f32")], **unit))
    opts = types.SimpleNamespace(seed=check.SEED, ratio_bound=2.0)
    return check.gpu_point(None, fwd, bwd, "bf16", 16, causal, 37, "cpu", 0, opts)


def test_simulated_kernels_pass(monkeypatch):
    for causal in (False, True):
        record = point(monkeypatch, 0, causal)
        assert record["passed"], record["reasons"]
        assert record["mask_mismatches"] == 0


def test_another_mask_fails(monkeypatch):
    record = point(monkeypatch, 1, True)
    assert not record["passed"]
    assert record["mask_mismatches"] > 0
