"""Graph splitting in the "weft" backend: an op Weft cannot import runs in
eager PyTorch, named by one warning with its source line, and the regions
around it still run on Weft (forward and gradients against eager float64)."""
import copy
import glob

import pytest
import torch
import torch.nn as nn

from test_torch_backend import fresh_dynamo  # noqa: F401 (autouse: weft-run, a fresh Dynamo)
from test_torch_import import NanoGPTBlock

TOL = 1e-9


class SortBetweenBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = NanoGPTBlock(), NanoGPTBlock()

    def forward(self, x):
        h = self.first(x)
        h, _ = torch.sort(h, dim=-1)  # no weft op: runs eagerly
        return self.second(h)


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-300)).item()


def test_regions_around_an_unsupported_op_run_on_weft(tmp_path):
    torch.manual_seed(3)
    model = SortBetweenBlocks().double()
    reference = copy.deepcopy(model)
    x = torch.randn(2, 32, 64, dtype=torch.float64)
    compiled = torch.compile(model, backend="weft", options={"dump_dir": str(tmp_path)})
    with pytest.warns(UserWarning) as record:
        y = compiled(x)
    messages = [str(w.message) for w in record if "weft" in str(w.message)]
    assert len(messages) == 1, messages
    assert messages[0].startswith("weft: running aten.sort.default at ")
    assert "test_torch_split.py" in messages[0] and "torch.sort(h, dim=-1)" in messages[0]
    assert messages[0].endswith("in eager PyTorch; the rest of the graph runs on weft")
    assert "\n" not in messages[0]
    # Both blocks became Weft graphs of their own.
    parts = sorted(glob.glob(str(tmp_path / "*_part*_forward.mlir")))
    assert len(parts) == 2, parts
    assert all("weft.attention" in open(p).read() for p in parts)
    want = reference(x)
    assert rel(y, want) <= TOL
    # Gradients through both Weft regions and the eager sort between them.
    y.square().sum().backward()
    want.square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert p.grad is not None, name
        assert rel(p.grad, q.grad) <= 1e-8, name


def test_strict_refuses_instead_of_splitting(monkeypatch):
    monkeypatch.setenv("WEFT_STRICT", "1")
    model = SortBetweenBlocks().double()
    with pytest.raises(Exception, match=r"aten\.sort\.default"):
        torch.compile(model, backend="weft")(torch.randn(2, 32, 64, dtype=torch.float64))
