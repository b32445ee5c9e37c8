"""The lm_head + cross-entropy over row chunks (weft-chunk-loss) through the
torch backend on CPU tensors: a small GPT head trained in float64 with
loss_chunks gives the loss and every gradient of the whole loss (and of
eager PyTorch), ignored labels included; bad values are ValueErrors; the
GPU path's compile options chunk from the memory budget."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import weft
from test_torch_backend import fresh_dynamo  # noqa: F401 (the autouse fixture)
from weft import torch_gpu

TOL = 1e-9




class Head(nn.Module):
    """ln_f, then the tied-style lm_head and nanoGPT's loss form."""

    def __init__(self, hidden=16, vocab=40):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x, targets):
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-300)).item()


def step(model, forward, x, targets):
    model.zero_grad(set_to_none=True)
    x = x.clone().requires_grad_(True)
    loss = forward(x, targets)
    loss.backward()
    return loss.detach(), x.grad, [p.grad for p in model.parameters()]


@pytest.mark.parametrize("chunks", [1, 3, 8])
def test_chunked_step_matches_whole(chunks, tmp_path):
    torch.manual_seed(0)
    model = Head().double()
    x = torch.randn(2, 12, 16, dtype=torch.float64)
    targets = torch.randint(0, 40, (2, 12))
    # Rows 0-2 ignored: with 8 chunks of 3 rows, the first chunk adds 0.
    targets.view(-1)[:3] = -1
    targets.view(-1)[10] = -1
    want = step(model, model, x, targets)
    compiled = weft.compile(copy.deepcopy(model), strict=True, loss_chunks=chunks,
                            dump_dir=str(tmp_path))
    got = step(compiled._orig_mod, compiled, x, targets)
    assert rel(got[0], want[0]) <= TOL
    assert rel(got[1], want[1]) <= TOL
    for g, w in zip(got[2], want[2]):
        assert rel(g, w) <= TOL
    (vjp,) = list(tmp_path.glob("*_vjp_step.mlir"))
    text = vjp.read_text()
    assert text.count("weft.cross_entropy_grad") == chunks
    if chunks > 1:
        assert f"weft.loss_chunks = {chunks}" in text


@pytest.mark.parametrize("value", [0, -2, 2.5, True, "4"])
def test_bad_loss_chunks(value):
    with pytest.raises(ValueError, match="loss_chunks") as error:
        weft.compile(Head().double(), loss_chunks=value)
    assert "int >= 1" in str(error.value)


def test_gpu_options_chunk_from_the_budget():
    # No budget: the loss stays whole (the C API's default, not sent).
    assert "loss_chunks" not in torch_gpu.compile_options(None)
    # A budget: weft-chunk-loss picks the count from it; forced otherwise.
    assert torch_gpu.compile_options(1 << 30)["loss_chunks"] == 0
    assert torch_gpu.compile_options(1 << 30, 4)["loss_chunks"] == 4
    assert torch_gpu.compile_options(None, 2)["loss_chunks"] == 2
