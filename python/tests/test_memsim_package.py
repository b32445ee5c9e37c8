"""weft.memsim on the plans packages carry: a bf16 GPT training step (AdamW)
built with --bind-arguments=params and the package defaults (cuBLASLt GEMM
workspaces, attention reading q, k, v packed from the qkv projection and
writing dq, dk, dv packed, GELU epilogues). memsim re-derives the plan from
weft-compile's step IR and must agree with the package built from the same
flags, buffer for buffer; plans altered by hand (an overlap, a lost
workspace, a bound argument put back in the arena, a moved view) must be
rejected, so the test can fail."""
import os
import re
import subprocess

import pytest

from harness import REPO, tool
from weft import memsim

MODEL = os.path.join(REPO, "test", "Tools", "weft-run", "Inputs", "gpt_bf16.mlir")
TRAIN = ["--entry", "forward", "--train", "--optimizer=adamw", "--bind-arguments=params"]
# What --emit=package turns on (PackageCompiler.cpp's setPackageDefaults),
# given explicitly so the step IR is the package's planned step.
PACKAGE_DEFAULTS = ["--fold-attention-layout", "--fuse-gemm-epilogue", "--gemm-workspace=32MiB"]
STEP = "forward_step"


def compile_step(tmp_path):
    out = tmp_path / "step.mlir"
    subprocess.run([tool("weft-compile"), MODEL, *TRAIN, *PACKAGE_DEFAULTS, "-o", str(out)],
                   check=True, capture_output=True, text=True, timeout=600)
    return out.read_text()


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    return compile_step(tmp_path_factory.mktemp("memsim-package"))


def step_part(text):
    """(text before @forward_step, @forward_step onwards): SSA names restart
    in every function, so edits must land in the step."""
    cut = text.index(f"func.func @{STEP}")
    return text[:cut], text[cut:]


def simulated(text):
    return memsim.check_text(text)[STEP]


def test_plan_has_what_packages_have(planned):
    _, step = step_part(planned)
    assert "weft.bound" in step
    assert re.search(r"= weft\.linear .*weft\.workspace_offset = ", step)
    assert "weft.attention_grad" in step and "seq_major" in step
    assert re.search(r"= weft\.split .*weft\.offsets = array<i64: (\d+), \1, \1>", step)
    assert re.search(r"= weft\.attention_grad .*weft\.offsets = array<i64: (\d+), \1, \1>", step)


def test_simulation_agrees_with_the_plan(planned):
    # Before GEMM workspaces, bound arguments and packed attention views were
    # simulated, this raised (weft.linear's workspace unknown; a bound
    # argument past the arena; the packed split's pieces overlapping the qkv
    # projection).
    result = simulated(planned)
    assert result["peak_bytes"] >= result["lower_bound_bytes"] > 0
    bound = [b for b in result["buffers"] if b.bound]
    workspaces = [b for b in result["buffers"] if memsim.is_workspace(b)]
    assert bound and result["bound_bytes"] == sum(b.size for b in bound)
    # The GEMM workspaces: at least 1 MiB each (the tiny model's outputs need
    # less), at most the 32 MiB cap, one step each.
    assert sum(b.size == 1 << 20 for b in workspaces) >= 8
    assert all(b.start == b.end for b in workspaces)


def test_simulation_agrees_with_the_package(planned, tmp_path):
    from weft import runtime as rt
    if not os.path.exists(rt.library_path()):
        pytest.skip(f"the runtime library is not built ({rt.library_path()} missing)")
    package = tmp_path / "step.weftpkg"
    subprocess.run([tool("weft-compile"), MODEL, *TRAIN, "--target=sm_90a", "--emit=package",
                    "--tuning-table=none", "-o", str(package)],
                   check=True, capture_output=True, text=True, timeout=600)
    step = rt.prepare_step(package.read_bytes(), 90)
    result = simulated(planned)
    memsim.compare_package(result, step.memory_info()["planned_bytes"], step.buffers())
    assert sum(b.bound for b in step.buffers()) == sum(b.bound for b in result["buffers"]) > 0
    # A package of another plan (no bound arguments: a larger arena) differs.
    other = tmp_path / "unbound.weftpkg"
    subprocess.run([tool("weft-compile"), MODEL, *TRAIN[:-1], "--target=sm_90a",
                    "--emit=package", "--tuning-table=none", "-o", str(other)],
                   check=True, capture_output=True, text=True, timeout=600)
    unbound = rt.prepare_step(other.read_bytes(), 90)
    with pytest.raises(memsim.PlanError, match="arena"):
        memsim.compare_package(result, unbound.memory_info()["planned_bytes"],
                               unbound.buffers())


def test_rejects_a_workspace_on_a_live_buffer(planned):
    head, step = step_part(planned)
    result = simulated(planned)
    buffers = result["buffers"]
    for ws in (b for b in buffers if memsim.is_workspace(b)):
        # Moved onto `other`, the workspace stays inside the arena.
        other = next((b for b in buffers if not b.bound and not memsim.is_workspace(b)
                      and b.size and b.start <= ws.start <= b.end and b.offset != ws.offset
                      and b.offset + ws.size <= result["peak_bytes"]), None)
        if other is not None:
            break
    else:
        pytest.fail("no workspace shares a step with an arena buffer")
    function = next(f for f in memsim.parse_functions(step) if f.name == STEP)
    line = function.ops[ws.start].line
    edited = re.sub(r"weft\.workspace_offset = \d+", f"weft.workspace_offset = {other.offset}",
                    line, count=1)
    assert edited != line and step.count(line) == 1, line
    with pytest.raises(memsim.PlanError, match="overlap"):
        simulated(head + step.replace(line, edited))


def test_rejects_a_gemm_without_its_workspace(planned):
    head, step = step_part(planned)
    broken, count = re.subn(r"(= weft\.linear [^\n]*?), weft\.workspace_offset = \d+ : i64",
                            r"\1", step, count=1)
    assert count == 1
    with pytest.raises(memsim.PlanError, match="needs a workspace of 1048576 bytes"):
        simulated(head + broken)


def test_rejects_a_bound_argument_in_the_arena(planned):
    # Without weft.bound, %arg0 is an arena buffer at its planned offset,
    # which is the arena's end.
    head, step = step_part(planned)
    broken, count = re.subn(r"(%arg0: [^{]*\{)weft\.bound, ", r"\1", step, count=1)
    assert count == 1
    with pytest.raises(memsim.PlanError, match="not inside the arena"):
        simulated(head + broken)


def test_rejects_wrong_bound_bytes(planned):
    head, step = step_part(planned)
    bound = simulated(planned)["bound_bytes"]
    broken = step.replace(f"bound_bytes = {bound} : i64", f"bound_bytes = {bound + 256} : i64")
    assert broken != step
    with pytest.raises(memsim.PlanError, match="bound_bytes"):
        simulated(head + broken)


def test_rejects_a_packed_piece_elsewhere(planned):
    # A piece of the packed qkv split is a view: it must sit at the whole's
    # offset.
    head, step = step_part(planned)
    pattern = re.compile(r"(= weft\.split [^\n]*weft\.offsets = array<i64: )(\d+), (\d+)")
    match = pattern.search(step)
    assert match
    moved = str(int(match.group(3)) + 256)
    broken = step[:match.start(3)] + moved + step[match.end(3):]
    with pytest.raises(memsim.PlanError, match="shares the buffer"):
        simulated(head + broken)
