"""The "weft" torch.compile backend on CPU tensors: graphs run on weft-run's
reference interpreter and are differentiated by weft-autodiff, compared with
eager float64 PyTorch (inference, a training step with torch.optim.AdamW),
recompiled per shape, with option errors and the unsupported-op fallback."""
import copy
import glob
import os

import pytest
import torch
import torch.nn as nn

import weft
from harness import require_weft_run
from test_torch_import import LlamaBlock, NanoGPTBlock, randomized, rotary_tables
from weft.torch_import import UnsupportedOp

TOL = 1e-9


@pytest.fixture(autouse=True)
def fresh_dynamo(monkeypatch):
    require_weft_run()
    monkeypatch.delenv("WEFT_STRICT", raising=False)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-300)).item()


def block(seed=0):
    torch.manual_seed(seed)
    return NanoGPTBlock().double()


def test_inference_matches_eager(tmp_path):
    model = block()
    compiled = torch.compile(model, backend="weft", options={"dump_dir": str(tmp_path)})
    x = torch.randn(2, 32, 64, dtype=torch.float64)
    with torch.no_grad():
        got, want = compiled(x), model(x)
    assert got.dtype == torch.float64 and got.shape == want.shape
    assert rel(got, want) <= TOL
    (forward,) = glob.glob(str(tmp_path / "*_forward.mlir"))  # it ran on weft, not eagerly
    text = open(forward).read()
    assert "weft.attention" in text and "weft.layer_norm" in text


def test_training_step_matches_eager():
    model = block(1)
    reference = copy.deepcopy(model)
    compiled = weft.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ref_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    torch.manual_seed(2)
    target = torch.randn(2, 32, 64, dtype=torch.float64)
    for step in range(2):
        x = torch.randn(2, 32, 64, dtype=torch.float64)
        x_got, x_want = x.clone().requires_grad_(), x.clone().requires_grad_()
        for opt in (optimizer, ref_optimizer):
            opt.zero_grad()
        loss = (compiled(x_got) - target).pow(2).mean()
        loss.backward()
        ref_loss = (reference(x_want) - target).pow(2).mean()
        ref_loss.backward()
        assert abs(loss.item() - ref_loss.item()) <= TOL * abs(ref_loss.item())
        assert rel(x_got.grad, x_want.grad) <= TOL
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert p.grad is not None, name
            assert rel(p.grad, q.grad) <= TOL, (step, name)
        optimizer.step()
        ref_optimizer.step()
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert rel(p.detach(), q.detach()) <= TOL, (step, name)


def test_parameters_only_and_two_outputs():
    """Gradients of parameters alone (the input needs none), through a graph
    with two outputs of which the loss uses both."""

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(16, 8), nn.Linear(16, 4)

        def forward(self, x):
            return torch.tanh(self.a(x)), self.b(x).softmax(-1)

    torch.manual_seed(3)
    model = TwoHeads().double()
    reference = copy.deepcopy(model)
    x = torch.randn(5, 16, dtype=torch.float64)
    y1, y2 = torch.compile(model, backend="weft")(x)
    r1, r2 = reference(x)
    (y1.sum() * 3 + (y2 * y2).sum()).backward()
    (r1.sum() * 3 + (r2 * r2).sum()).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert rel(p.grad, q.grad) <= TOL


def test_recompiles_per_shape(tmp_path):
    model = block()
    compiled = weft.compile(model, dump_dir=str(tmp_path))
    forwards = lambda: len(glob.glob(str(tmp_path / "*_forward.mlir")))
    with torch.no_grad():
        for seq, count in ((32, 1), (16, 2), (32, 2), (16, 2), (8, 3)):
            x = torch.randn(2, seq, 64, dtype=torch.float64)
            assert rel(compiled(x), model(x)) <= TOL
            assert forwards() == count, seq


@pytest.mark.parametrize("options, name, allowed", [
    ({"bogus": 1}, "bogus", "dump_dir"),
    ({"strict": "yes"}, "strict", "True, False or None"),
    ({"memory_budget": "lots"}, "memory_budget", "GiB"),
    ({"memory_budget": -5}, "memory_budget", "positive number of bytes"),
])
def test_bad_option(options, name, allowed):
    model = block()
    with pytest.raises(ValueError, match=name) as error:
        weft.compile(model, **options)
    assert allowed in str(error.value)
    compiled = torch.compile(model, backend="weft", options=options)
    with pytest.raises(ValueError, match=name):
        compiled(torch.randn(1, 4, 64, dtype=torch.float64))


def test_memory_budget_forms():
    from weft.torch_backend import parse_memory_budget
    assert parse_memory_budget("20GiB") == 20 * 2**30
    assert parse_memory_budget("1.5 GB") == 1_500_000_000
    assert parse_memory_budget(4096) == 4096
    assert parse_memory_budget(None) is None


class Sorting(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y, _ = torch.sort(self.proj(x), dim=-1)
        return y * 2


def test_unsupported_op_falls_back_with_a_warning():
    torch.manual_seed(4)
    model = Sorting().double()
    reference = copy.deepcopy(model)
    x = torch.randn(3, 8, dtype=torch.float64)
    with pytest.warns(UserWarning, match=r"aten\.sort\.default at .*test_torch_backend\.py:\d+ "
                                         r"in forward: y, _ = torch\.sort") as record:
        y = torch.compile(model, backend="weft")(x)
    assert len([w for w in record if "weft" in str(w.message)]) == 1
    assert "\n" not in str(record[0].message)
    assert torch.equal(y, reference(x))
    y.sum().backward()  # the eager graph trains as eager does
    reference(x).sum().backward()
    assert torch.equal(model.proj.weight.grad, reference.proj.weight.grad)


def test_unsupported_op_strict(monkeypatch):
    monkeypatch.setenv("WEFT_STRICT", "1")
    model = Sorting().double()
    with pytest.raises(UnsupportedOp, match=r"aten\.sort\.default at .*test_torch_backend\.py"):
        torch.compile(model, backend="weft")(torch.randn(3, 8, dtype=torch.float64))
    monkeypatch.delenv("WEFT_STRICT")
    torch._dynamo.reset()
    with pytest.raises(UnsupportedOp, match=r"aten\.sort"):
        weft.compile(model, strict=True)(torch.randn(3, 8, dtype=torch.float64))


def test_llama_block_gradients(tmp_path):
    """RMSNorm, rotary embeddings and GQA raised to fused ops and
    differentiated by weft-autodiff: gradients against eager float64."""
    model = randomized(LlamaBlock()).double().train()
    reference = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(2, 32, 64, generator=gen, dtype=torch.float64)
    cos, sin = rotary_tables(32, 64 // 4, torch.float64)
    dy = torch.randn(2, 32, 64, generator=gen, dtype=torch.float64)
    (weft.compile(model, dump_dir=str(tmp_path))(x, cos, sin) * dy).sum().backward()
    (reference(x, cos, sin) * dy).sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert rel(p.grad, q.grad) <= TOL, name
    (step,) = glob.glob(str(tmp_path / "*_vjp_step.mlir"))
    text = open(step).read()
    assert "weft.rope" in text and "weft.rms_norm" in text and "weft.attention" in text
