"""weft-plan-memory checked by an independent simulator (weft.memsim).

The generated GPT and LLaMA-style blocks (several sizes, f32 and bf16) are
planned as forward functions, as training steps with gradients
(weft-autodiff optimizer=none) and with AdamW (optimizer=adamw). For each,
memsim re-derives every buffer and lifetime from the printed IR, replays the
schedule, and must agree exactly with the plan and its JSON report; the
fragmentation against the max-live lower bound must stay under 5 %. Plans
altered by hand must be rejected, so the simulator can fail."""
import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

from harness import REPO, weft_run_path
from weft import memsim
from weft.models.config import PRESETS
from weft.models.emitter import emit_module

SIZES = {
    "small": {},
    "medium": {"hidden": 256, "heads": 8, "seq": 128, "ffn_hidden": 1024, "batch": 4},
    "deep": {"layers": 4, "hidden": 512, "heads": 8, "seq": 256, "ffn_hidden": 2048,
             "vocab": 1000},
}
PIPELINES = {
    "forward": [],
    "gradients": ["--weft-autodiff=optimizer=none"],
    "adamw": ["--weft-autodiff=optimizer=adamw"],
}
MAX_FRAGMENTATION = 0.05


def weft_opt():
    binary = os.path.join(os.path.dirname(weft_run_path()), "weft-opt")
    if not os.access(binary, os.X_OK):
        pytest.skip(f"weft-opt is not built ({binary} missing)")
    return binary


def plan(text, pipeline=(), options=""):
    """(planned IR text, JSON report) of `text` after `pipeline` and
    weft-plan-memory."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("WEFT_TEST_TMP")) as tmp:
        report_path = os.path.join(tmp, "report.json")
        flag = f"--weft-plan-memory=report={report_path} {options}".strip()
        proc = subprocess.run([weft_opt(), "-", *pipeline, flag], input=text,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            pytest.fail(f"weft-opt failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
        with open(report_path) as f:
            return proc.stdout, json.load(f)


def model_config(preset, dtype, size):
    overrides = dict(SIZES[size])
    base = PRESETS[preset]
    if "heads" in overrides:
        # Keep the preset's grouping: LLaMA's 2 q heads per kv head.
        overrides["kv_heads"] = overrides["heads"] * base.kv_heads // base.heads
    return base.replace(dtype=dtype, **overrides)


@pytest.mark.parametrize("mode", sorted(PIPELINES))
@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("preset", ["gpt_block", "llama_block"])
def test_generated_blocks(preset, dtype, size, mode):
    text = emit_module(model_config(preset, dtype, size))
    planned, report = plan(text, PIPELINES[mode])
    results = memsim.check_text(planned, report)
    names = ["forward"] + (["forward_step"] if mode != "forward" else [])
    assert sorted(results) == sorted(names)
    for name in names:
        result, entry = results[name], report["functions"][name]
        assert result["peak_bytes"] >= result["lower_bound_bytes"] > 0
        assert result["fragmentation"] < MAX_FRAGMENTATION, (name, entry["strategy"])
        assert abs(entry["fragmentation"] - result["fragmentation"]) < 1e-12
        categories = {k: v["total"] for k, v in entry["categories"].items()}
        assert sum(categories.values()) == sum(
            memsim.align(b.size, entry["alignment"]) for b in result["buffers"])
        assert categories["parameters"] > 0
    step = report["functions"].get("forward_step")
    forward = report["functions"]["forward"]
    assert forward["categories"]["gradients"]["total"] == 0
    assert forward["categories"]["optimizer_state"]["total"] == 0
    if step is None:
        return
    totals = {k: v["total"] for k, v in step["categories"].items()}
    # Gradients exist, and the forward keeps activations for the backward.
    assert totals["gradients"] > 0
    assert totals["saved_activations"] > 0
    assert step["backward_start"] < step["num_steps"]
    if mode == "adamw":
        # m and v are shaped like the (f32 master) parameters.
        assert totals["optimizer_state"] == 2 * totals["parameters"]
        # Parameters, m and v persist: live at the max-live step too.
        at_peak = step["categories"]
        for category in ("parameters", "optimizer_state"):
            assert at_peak[category]["at_peak"] == totals[category]
    else:
        assert totals["optimizer_state"] == 0


def test_tiny_gpt_training_step():
    planned, report = plan(emit_module(PRESETS["tiny_gpt"]), PIPELINES["adamw"])
    results = memsim.check_text(planned, report)
    assert results["forward_step"]["fragmentation"] < MAX_FRAGMENTATION


@pytest.mark.parametrize("preset", ["gpt_block", "llama_block"])
def test_tiled_training_step(preset):
    # After weft-tile-attention the step holds scf.for nests and linalg ops:
    # uses inside a region count at the step of the op holding it, and
    # values defined inside are the kernel's, not the arena's.
    planned, report = plan(emit_module(PRESETS[preset]),
                           PIPELINES["adamw"] + ["--weft-tile-attention"])
    assert "scf.for" in planned
    results = memsim.check_text(planned, report)
    assert results["forward_step"]["fragmentation"] < MAX_FRAGMENTATION


def test_alignment_option():
    text = emit_module(PRESETS["gpt_block"])
    for alignment in (1, 64, 4096):
        planned, report = plan(text, PIPELINES["gradients"], f"alignment={alignment}")
        results = memsim.check_text(planned, report)
        step = report["functions"]["forward_step"]
        assert step["alignment"] == alignment
        assert all(b.offset % alignment == 0 for b in results["forward_step"]["buffers"])


def test_in_place_updates_share_argument_offsets():
    planned, _ = plan(emit_module(PRESETS["llama_block"]), PIPELINES["adamw"])
    step = [f for f in memsim.parse_functions(planned) if f.name == "forward_step"][0]
    offsets = {name: memsim.attr_int(attrs, "weft.offset") for name, _, attrs in step.args}
    returned = step.ops[-1].uses
    defining = {r: op for op in step.ops for r in op.results}
    tied = 0
    for k, attrs in enumerate(step.result_attrs):
        j = memsim.attr_int(attrs, "weft.alias")
        if j is None:
            continue
        op = defining[returned[k]]
        index = op.results.index(returned[k])
        assert memsim.attr_array(op.attrs, "weft.offsets")[index] == offsets[step.args[j][0]]
        tied += 1
    assert tied > 0


# -- the simulator rejects wrong plans ------------------------------------------

@pytest.fixture(scope="module")
def planned_step():
    return plan(emit_module(PRESETS["gpt_block"]), PIPELINES["gradients"])


def simulated(planned):
    return memsim.check_text(planned)["forward_step"]


def test_rejects_overlapping_buffers(planned_step):
    planned, _ = planned_step
    result = simulated(planned)
    buffers = result["buffers"]
    # A buffer of one op result, moved onto a buffer live at the same time.
    for victim in buffers:
        name = victim.members[0]
        if len(victim.members) != 1 or "#" in name or name.startswith("%arg") \
                or name.startswith("workspace") or not victim.size:
            continue
        other = next((b for b in buffers if b is not victim and b.size and
                      b.start <= victim.end and victim.start <= b.end), None)
        if other is not None:
            break
    else:
        pytest.fail("no two simultaneously live buffers to collide")
    pattern = re.compile(rf"^(\s*{re.escape(name)} = .*weft\.offsets = array<i64: )(\d+)>",
                         re.MULTILINE)
    # Only in @forward_step: SSA names restart in every function.
    cut = planned.index("func.func @forward_step")
    tail, count = pattern.subn(rf"\g<1>{other.offset}>", planned[cut:], count=1)
    assert count == 1
    broken = planned[:cut] + tail
    with pytest.raises(memsim.PlanError, match="overlap"):
        simulated(broken)


def test_rejects_a_wrong_peak(planned_step):
    planned, report = planned_step
    peak = report["functions"]["forward_step"]["peak_bytes"]
    broken = planned.replace(f"peak_bytes = {peak} : i64", f"peak_bytes = {peak + 256} : i64")
    assert broken != planned
    with pytest.raises(memsim.PlanError, match="peak_bytes"):
        simulated(broken)
    smaller = planned.replace(f"peak_bytes = {peak} : i64", f"peak_bytes = {peak - 256} : i64")
    with pytest.raises(memsim.PlanError, match="arena"):
        simulated(smaller)


def test_rejects_a_wrong_lower_bound(planned_step):
    planned, report = planned_step
    bound = report["functions"]["forward_step"]["lower_bound_bytes"]
    broken = planned.replace(f"lower_bound_bytes = {bound} : i64",
                             f"lower_bound_bytes = {bound - 256} : i64")
    with pytest.raises(memsim.PlanError, match="max-live"):
        simulated(broken)


def test_rejects_a_view_at_another_offset(planned_step):
    planned, _ = planned_step
    match = re.search(r"^(\s*%\S+ = weft\.reshape .*weft\.offsets = array<i64: )(\d+)>",
                      planned[planned.index("func.func @forward_step"):], re.MULTILINE)
    assert match
    cut = planned.index("func.func @forward_step")
    broken = (planned[:cut + match.start(2)] + str(int(match.group(2)) + 256)
              + planned[cut + match.end(2):])
    with pytest.raises(memsim.PlanError, match="shares the buffer"):
        simulated(broken)


def test_rejects_a_report_that_disagrees(planned_step):
    planned, report = planned_step
    altered = json.loads(json.dumps(report))
    altered["functions"]["forward_step"]["buffers"][0]["end"] += 1
    with pytest.raises(memsim.PlanError, match="report buffers differ"):
        memsim.check_text(planned, altered)


def test_command_line(planned_step, tmp_path):
    planned, report = planned_step
    (tmp_path / "p.mlir").write_text(planned)
    (tmp_path / "r.json").write_text(json.dumps(report))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    proc = subprocess.run([sys.executable, "-m", "weft.memsim", str(tmp_path / "p.mlir"),
                           "--report", str(tmp_path / "r.json")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "@forward_step: peak" in proc.stdout and ": ok" in proc.stdout
    (tmp_path / "bad.mlir").write_text(planned.replace("weft.offsets = array<i64: ", "weft.offsets = array<i64: 1", 1))
    proc = subprocess.run([sys.executable, "-m", "weft.memsim", str(tmp_path / "bad.mlir")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "plan rejected" in proc.stderr
