"""weft.explain: Dynamo's graphs and breaks, the weft ops and raised fused ops
of the capture, the training step's memory plan (JSON and the HTML page),
and the fallback named for an op Weft cannot import."""
import pytest
import torch
import torch.nn as nn

import weft
from harness import tool
from test_torch_backend import Sorting
from test_torch_import import NanoGPTBlock


@pytest.fixture(autouse=True)
def built():
    tool("weft-compile")


class Breaking(nn.Module):
    """A graph break on purpose: a print between two linears."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x):
        y = self.a(x)
        print("between the linears")
        return self.b(y)


def test_block_capture_raised_ops_and_memory_plan(tmp_path):
    torch.manual_seed(0)
    model = NanoGPTBlock()
    x = torch.randn(2, 32, 64)
    page = tmp_path / "plan.html"
    report = weft.explain(model, (x,), html=str(page))
    assert report.graph_count == 1 and report.graph_breaks == []
    assert report.unsupported is None
    assert report.ops.get("weft.attention") == 1 and report.ops.get("weft.layer_norm") == 2
    assert "gelu(tanh)" in report.raised and "attention" in report.raised
    memory = report.memory
    assert memory["peak_bytes"] > 0 and memory["budget_bytes"] is None
    # The block's parameters are planned as parameters (f32 here).
    params = sum(p.numel() * 4 for p in model.parameters())
    assert memory["categories"]["parameters"] >= params
    assert page.read_text().startswith("<!DOCTYPE html>")
    text = str(report)
    assert "1 graph(s), 0 graph break(s)" in text
    assert "weft.attention x1" in text and "planned peak" in text and str(page) in text


def test_blocks_become_layers_and_a_budget_recomputes():
    torch.manual_seed(1)
    model = nn.Sequential(*[NanoGPTBlock() for _ in range(3)])
    x = torch.randn(2, 32, 64)
    free = weft.explain(model, (x,), dynamo=False)
    # Each block's ops carry its index (the importer's weft.layer), which
    # weft-remat's budget solver groups its choices by.
    for layer in range(3):
        assert "weft.attention" in free.ir and f"weft.layer = {layer} : i64" in free.ir
    assert "weft.layer = 3 : i64" not in free.ir
    free = free.memory
    budget = int(free["peak_bytes"] * 0.9)
    tight = weft.explain(model, (x,), memory_budget=budget, dynamo=False)
    assert tight.memory is not None, tight.memory_error
    assert tight.memory["budget_bytes"] == budget
    assert tight.memory["peak_bytes"] <= budget < free["peak_bytes"]
    assert tight.memory["recomputed_ops"] > 0


def test_an_impossible_budget_is_reported():
    model = NanoGPTBlock()
    report = weft.explain(model, (torch.randn(2, 32, 64),), memory_budget=1024, dynamo=False)
    assert report.memory is None
    assert "exceeds the memory budget" in report.memory_error or "budget" in report.memory_error
    assert "none: weft-compile failed" in str(report)


def test_graph_breaks_are_listed():
    report = weft.explain(Breaking(), (torch.randn(4, 16),))
    assert report.graph_count == 2 and len(report.graph_breaks) == 1
    assert "test_explain.py" in report.graph_breaks[0]


def test_unsupported_op_names_the_fallback():
    report = weft.explain(Sorting(), (torch.randn(3, 8),), dynamo=False)
    assert report.unsupported and "aten.sort" in report.unsupported
    assert "test_torch_backend.py" in report.unsupported  # where Sorting sorts
    assert report.memory is None
    assert "falls back to eager PyTorch: " in str(report)


def test_bad_model():
    with pytest.raises(ValueError, match="must be a torch.nn.Module"):
        weft.explain(lambda x: x, (torch.randn(2),))
