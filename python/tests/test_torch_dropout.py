"""Training-mode dropout through the PyTorch importer: nn.Dropout and SDPA's
dropout_p become weft.dropout and weft.attention's dropout with weft's
Philox masks (ARCHITECTURE.md, "Randomness"), the seed a trailing argument
drawn anew each call from torch's generator. The compiled step's loss and
gradients equal a float64 PyTorch computation that applies those same masks
(python/weft/philox.py), so a mask bit off anywhere fails."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import weft
import weft.torch_backend
from harness import require_weft_run
from weft import philox
from weft.torch_import import import_module

TOL = 1e-9
P_RESID, P_ATTN = 0.1, 0.25
B, S, HEADS, HEAD_DIM = 2, 12, 2, 8
D = HEADS * HEAD_DIM


@pytest.fixture(autouse=True)
def fresh_dynamo(monkeypatch):
    require_weft_run()
    monkeypatch.setenv("WEFT_STRICT", "1")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class DropoutAttention(nn.Module):
    """x -> qkv -> causal SDPA with dropout -> proj -> dropout, loss inside."""

    def __init__(self):
        super().__init__()
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.drop = nn.Dropout(P_RESID)

    def heads(self, t):
        return t.view(B, S, HEADS, HEAD_DIM).transpose(1, 2)

    def forward(self, x, target):
        q, k, v = (self.heads(t) for t in self.qkv(x).split(D, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=P_ATTN if self.training else 0.0)
        y = self.drop(self.proj(y.transpose(1, 2).reshape(B, S, D)))
        return (y - target).pow(2).mean()


def masked(shape, p, seed, rng_id):
    keep = torch.from_numpy(philox.keep_mask(shape, p, seed, rng_id))
    return keep.to(torch.float64) / (1.0 - p)


def reference_loss(model, x, target, seed):
    """The model's loss in float64 with weft's masks: the attention's is
    rng_id 0 (the SDPA comes first in graph order), the residual's 1."""
    q, k, v = (model.heads(t) for t in model.qkv(x).split(D, dim=2))
    scores = q @ k.transpose(-1, -2) / math.sqrt(HEAD_DIM)
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    probs = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    y = (probs * masked((B, HEADS, S, S), P_ATTN, seed, 0)) @ v
    y = model.proj(y.transpose(1, 2).reshape(B, S, D)) * masked((B, S, D), P_RESID, seed, 1)
    return (y - target).pow(2).mean()


def test_import_adds_one_seed_and_an_rng_id_per_site():
    torch.manual_seed(0)
    model = DropoutAttention().double().train()
    x, target = torch.randn(B, S, D, dtype=torch.float64), torch.randn(B, S, D, dtype=torch.float64)
    imported = import_module(model, (x, target))
    assert [a.kind for a in imported.arguments][-1] == "seed"
    assert imported.text.count("weft.dropout ") == 1
    assert "dropout_p = 2.500000e-01" in imported.text or "dropout_p = 0.25" in imported.text
    assert "weft.rng_id = 0" in imported.text and "weft.rng_id = 1" in imported.text
    first, second = imported.argument_values(x, target), imported.argument_values(x, target)
    assert first[-1].dtype == torch.int64 and first[-1].dim() == 0
    assert first[-1].item() != second[-1].item()  # drawn anew each call
    eval_import = import_module(model.eval(), (x, target))
    assert not eval_import.has_seed and "dropout" not in eval_import.text


def test_training_step_applies_weft_masks(monkeypatch):
    seed = 1234567
    monkeypatch.setattr(weft.torch_backend, "new_seed", lambda device=None: torch.tensor(seed))
    torch.manual_seed(1)
    model = DropoutAttention().double().train()
    compiled = weft.compile(model)
    x = torch.randn(B, S, D, dtype=torch.float64, requires_grad=True)
    target = torch.randn(B, S, D, dtype=torch.float64)
    loss = compiled(x, target)
    loss.backward()
    got = {name: p.grad.clone() for name, p in model.named_parameters()}
    got_x = x.grad.clone()
    model.zero_grad()
    x.grad = None
    want = reference_loss(model, x, target, seed)
    want.backward()
    assert abs(loss.item() - want.item()) <= TOL * abs(want.item())
    for name, p in model.named_parameters():
        assert (got[name] - p.grad).abs().max() <= TOL * p.grad.abs().max(), name
    assert (got_x - x.grad).abs().max() <= TOL * x.grad.abs().max()
    # Without the masks the loss is another number: the test sees dropout.
    model.eval()
    assert abs(model(x, target).item() - want.item()) > 1e-3 * abs(want.item())


def test_each_call_draws_new_masks_from_torchs_generator():
    torch.manual_seed(2)
    model = DropoutAttention().double().train()
    compiled = weft.compile(model)
    x, target = torch.randn(B, S, D, dtype=torch.float64), torch.randn(B, S, D, dtype=torch.float64)
    with torch.no_grad():
        compiled(x, target)  # compiles
        torch.manual_seed(7)
        first, second = compiled(x, target).item(), compiled(x, target).item()
        torch.manual_seed(7)
        again = compiled(x, target).item()
    assert first != second and first == again
