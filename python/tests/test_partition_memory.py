"""Memory per rank of a partitioned step (issue 17): the anchor GPT block of
../shared/anchors (hidden 4096, 32 heads, seq 8192, batch 1, bf16, causal,
loss mean(x^2)), compiled by weft-opt's training pipeline with --grid and the
memory report.

- With sequence parallelism at tp = t every saved activation of a layer is
  divided by t: a layer saves 1/t of its single-GPU bytes, and an interior
  layer Megatron-LM's s*b*h*34/t bytes (with flash attention; the last
  layer's output goes to the loss, outside the layers) within 5 %.
- Without it, the replicated part stays whole on every rank and shows in the
  report: Megatron's 10*s*b*h less the two dropout masks' 2*s*b*h, which
  Weft never saves (its masks are recomputed from Philox): 8*s*b*h.
- weft-remat with a budget on the partitioned step keeps each rank's planned
  peak within it, and the report records its choice.
"""
import json
import subprocess

import pytest

from harness import tool
from weft.models.config import PRESETS
from weft.models.emitter import emit_module

ANCHOR = PRESETS["gpt_block"].replace(
    layers=2, hidden=4096, heads=32, kv_heads=32, ffn_hidden=16384, seq=8192,
    batch=1, dtype="bf16", dropout=0.0, loss="mean_square", pos_embedding=False)
SBH = ANCHOR.seq * ANCHOR.batch * ANCHOR.hidden


@pytest.fixture(scope="module")
def anchor_ir(tmp_path_factory):
    path = tmp_path_factory.mktemp("anchor") / "anchor.mlir"
    path.write_text(emit_module(ANCHOR))
    return path


def report(ir_path, tmp_path, options):
    out = tmp_path / "report.json"
    result = subprocess.run(
        [tool("weft-opt"), str(ir_path),
         f"--weft-train-pipeline=entry=forward optimizer=none {options} memory-report={out}",
         "-o", "/dev/null"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())


def layer_saved(rep):
    return [layer["saved_bytes"] for layer in rep["layers"]]


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_sequence_parallel_divides_every_layer_by_tp(anchor_ir, tmp_path, tp):
    single = layer_saved(report(anchor_ir, tmp_path, ""))
    rep = report(anchor_ir, tmp_path, f"grid=tp={tp} sequence-parallel")
    assert rep["partition"]["tp"] == tp and rep["partition"]["per_rank"]
    parts = layer_saved(rep)
    for whole, part in zip(single, parts):
        assert part == pytest.approx(whole / tp, rel=0.05)
    for part in parts[:-1]:
        assert part == pytest.approx(34 * SBH / tp, rel=0.05)
    for layer in rep["layers"]:
        assert layer["collectives"] > 0 and layer["communication_bytes"] > 0
        assert layer["communication_time_estimate_s"] > 0


def test_without_sequence_parallelism_the_replicated_part_shows(anchor_ir, tmp_path):
    single = layer_saved(report(anchor_ir, tmp_path, ""))[0]
    by_tp = {tp: layer_saved(report(anchor_ir, tmp_path, f"grid=tp={tp}"))[0]
             for tp in (2, 4, 8)}
    # saved(t) = R + (whole - R) / t: solve for R from tp = 2, predict 4 and 8.
    replicated = 2 * by_tp[2] - single
    assert replicated == pytest.approx(8 * SBH, rel=0.05)
    for tp in (4, 8):
        assert by_tp[tp] == pytest.approx(replicated + (single - replicated) / tp,
                                          rel=0.05)
        assert by_tp[tp] > single / tp


def test_remat_budget_holds_per_rank(anchor_ir, tmp_path):
    free = report(anchor_ir, tmp_path, "grid=tp=2 sequence-parallel")
    budget = int(free["peak_bytes"] * 0.85)
    rep = report(anchor_ir, tmp_path,
                 f"grid=tp=2 sequence-parallel remat=budget memory-budget={budget}")
    assert rep["peak_bytes"] <= budget == rep["budget_bytes"]
    assert rep["recomputed_ops"] > 0
    assert sum(layer["recomputed_ops"] for layer in rep["layers"]) > 0


def test_remat_budget_below_the_reachable_peak_is_refused(anchor_ir, tmp_path):
    """A per-rank budget no recomputation reaches fails, naming the smallest
    peak Weft can reach."""
    free = report(anchor_ir, tmp_path, "grid=tp=2 sequence-parallel")
    budget = int(free["peak_bytes"] * 0.3)
    out = tmp_path / "report.json"
    result = subprocess.run(
        [tool("weft-opt"), str(anchor_ir),
         f"--weft-train-pipeline=entry=forward optimizer=none grid=tp=2 sequence-parallel "
         f"remat=budget memory-budget={budget} memory-report={out}",
         "-o", "/dev/null"], capture_output=True, text=True, timeout=600)
    assert result.returncode != 0
    assert "is infeasible" in result.stderr and "the smallest peak Weft can reach" in result.stderr
