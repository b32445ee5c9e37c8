"""Split f32 masters (weft-compile --weight-copies=split): each f32 master is
kept as its bf16 high half (the weight the GEMMs read) and an i16 low half.
The host side must keep the user's state f32: weft.npz's split_master /
join_master follow the rule bit for bit; i16 tensors cross .npz files both
ways; a split step on the halves of the converting step's masters computes
the same loss, moments and (joined) masters bit for bit; a split package
passes weft-run --check and takes the converted package's state file under
the masters' names. With a GPU: split and converted packages train to the
same losses and save the same f32 state."""
import os
import re
import subprocess

import numpy as np
import pytest
import torch

from harness import REPO, tool
from weft import npz

MODEL = os.path.join(REPO, "test", "Tools", "weft-run", "Inputs", "gpt_bf16.mlir")
STEP_DATA = os.path.join(REPO, "test", "Tools", "weft-run", "Inputs", "step_data.py")
TRAIN = ["--entry", "forward", "--train", "--optimizer=adamw"]
SEED = 7


def run(cmd, check=True):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} failed (rc {proc.returncode}):\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc


def compile_step(tmp_path, copies, *extra):
    out = tmp_path / f"{copies}{'.weftpkg' if '--emit=package' in extra else '.mlir'}"
    run([tool("weft-compile"), MODEL, *TRAIN, f"--weight-copies={copies}", *extra, "-o", out])
    return out


def signature(step_path):
    """(argument types, weft.copy_of of each argument or None) of @forward_step."""
    text = step_path.read_text()
    header = text[text.index("func.func @forward_step"):].split("\n", 1)[0]
    args = re.findall(r"%arg\d+: (tensor<[^>]*>)( \{[^}]*\})?", header)
    types = [t for t, _ in args]
    copies = [int(m.group(1)) if (m := re.search(r"weft\.copy_of = (\d+)", a)) else None
              for _, a in args]
    return types, copies


# --- the rule -----------------------------------------------------------------

def rule(bits):
    """The split rule written out per element, in Python integers."""
    value = np.array([bits], dtype=np.uint32).view(np.float32)[0]
    if np.isnan(value):
        return ((bits >> 16) | 0x0040) & 0xFFFF, 0
    low = bits & 0xFFFF
    return ((bits + 0x8000) >> 16) & 0xFFFF, low - 0x10000 if low >= 0x8000 else low


EDGES = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
         0x7F800000, 0xFF800000, 0x3F808000, 0xBF808000, 0x00008000, 0x3F807FFF, 0x3F80FFFF,
         0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF]


def test_split_and_join_follow_the_rule():
    bits = np.array(EDGES, dtype=np.uint32)
    # Every high half with the low halves around the tie and the extremes.
    highs = np.arange(0x10000, dtype=np.uint32) << np.uint32(16)
    for low in (0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF):
        bits = np.concatenate([bits, highs | np.uint32(low)])
    values = bits.view(np.float32)
    high, low = npz.split_master(values)
    assert high.dtype == np.uint16 and low.dtype == np.int16
    for i in list(range(len(EDGES))) + list(range(len(EDGES), len(bits), 977)):
        assert (int(high[i]), int(low[i])) == rule(int(bits[i])), hex(int(bits[i]))
    joined = npz.join_master(high, low)
    finite = ~np.isnan(values)
    assert np.array_equal(joined.view(np.uint32)[finite], bits[finite])
    assert np.isnan(joined[~finite]).all()
    # The NaN high half is itself a NaN bf16, so the forward sees NaN.
    assert np.isnan(npz.bf16_bits_to_f32(high[~finite])).all()
    # Away from ties the high half is the usual nearest-even bf16.
    no_tie = finite & ((bits & np.uint32(0xFFFF)) != 0x8000)
    assert np.array_equal(high[no_tie], npz.f32_to_bf16_bits(values[no_tie]))


def test_i16_crosses_npz_files_both_ways(tmp_path):
    """numpy int16 in (with and without weft's dtype table), weft-run's i16
    out, as numpy int16 under the dtype name i16."""
    (tmp_path / "id.mlir").write_text(
        "func.func @main(%a: tensor<2x3xi16>, %b: tensor<4xi16>) -> (tensor<2x3xi16>, tensor<4xi16>) {\n"
        "  return %a, %b : tensor<2x3xi16>, tensor<4xi16>\n}\n")
    a = np.array([[0, -1, 32767], [-32768, 1234, -7]], dtype=np.int16)
    b = np.array([5, -32768, 32767, 0], dtype=np.int16)
    npz.save(tmp_path / "in.npz", {"arg0": torch.from_numpy(a), "arg1": b})
    np.savez(tmp_path / "plain.npz", arg0=a, arg1=b)  # no dtype table: '<i2' is i16
    for name in ("in.npz", "plain.npz"):
        out = tmp_path / f"out_{name}"
        run([tool("weft-run"), tmp_path / "id.mlir", "--entry", "main", "--inputs", tmp_path / name,
             "--outputs", out])
        with np.load(out) as raw:
            assert raw["res0"].dtype == np.int16 and np.array_equal(raw["res0"], a)
            assert list(raw["__weft_dtypes__"]) == ["res0:i16", "res1:i16"]
        got = npz.load(out)
        assert got["res1"].dtype == torch.int16 and np.array_equal(got["res1"].numpy(), b)
    # An f32 array the dtype table calls i16 is refused, naming both.
    np.savez(tmp_path / "bad.npz", arg0=a.astype(np.float32), arg1=b,
             __weft_dtypes__=np.array(["arg0:i16", "arg1:i16"]))
    proc = run([tool("weft-run"), tmp_path / "id.mlir", "--entry", "main", "--inputs",
                tmp_path / "bad.npz"],
               check=False)
    assert proc.returncode != 0
    assert "'arg0': __weft_dtypes__ names it i16 but the array is '<f4'" in proc.stderr


# --- the step on the interpreter ---------------------------------------------

def untie(masters):
    """The masters nudged one ulp off the bf16 ties (low half 0x8000), where
    the split step's high half (ties away) and the converting step's convert
    (ties to even) may differ; elsewhere both read the same bf16 weight."""
    bits = masters.contiguous().view(torch.int32).numpy().view(np.uint32).copy()
    tie = (bits & np.uint32(0xFFFF)) == 0x8000
    bits[tie] += np.uint32(1)
    return torch.from_numpy(bits.view(np.float32)), int(tie.sum())


# The split step on the interpreter against the converting step (plain,
# under weft-remat and fused): test_split_step.py.


# --- the package ---------------------------------------------------------------

def ptxas_or_skip():
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if not (os.access(os.path.join(cuda, "bin", "ptxas"), os.X_OK)
            or any(os.access(os.path.join(p, "ptxas"), os.X_OK)
                   for p in os.environ.get("PATH", "").split(os.pathsep))):
        pytest.skip("ptxas is not installed: no package can be built")


PACKAGE = ["--memory-budget=64MiB", "--target=sm_90a", "--emit=package", "--tuning-table=none"]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    ptxas_or_skip()
    tmp = tmp_path_factory.mktemp("split-packages")
    built = {c: compile_step(tmp, c, *PACKAGE) for c in ("converted", "split")}
    run(["python3", STEP_DATA, tmp / "data.npz", 3])
    # One state file for both: f32 masters and zero moments under the
    # converting step's argument names.
    rng = np.random.default_rng(5)
    types, _ = signature(compile_step(tmp, "converted"))
    state = {}
    for i, t in enumerate(types):
        m = re.fullmatch(r"tensor<((?:\d+x)*)f32>", t)
        if m:
            shape = [int(d) for d in m.group(1).split("x") if d]
            state[f"arg{i}"] = rng.standard_normal(shape).astype(np.float32) * 0.05 \
                if i < 17 else np.zeros(shape, np.float32)
    npz.save(tmp / "state.npz", state)
    return tmp, built


def test_split_package_checks_and_binds_f32_masters(packages):
    tmp, built = packages
    out = run([tool("weft-run"), "--check", built["split"]]).stdout
    assert out.strip().endswith("ok"), out
    dry = run([tool("weft-run"), built["split"], "--dry-run", "--data", tmp / "data.npz",
               "--load-state", tmp / "state.npz"]).stdout
    halves = re.findall(r"state: (arg\d+) <- low half \(i16\), (arg\d+) <- high half \(bf16\) "
                        r"of the f32 master '(arg\d+)'", dry)
    assert len(halves) == 17, dry[-3000:]
    assert all(low == master for low, _, master in halves)
    # The master slots are bound from the f32 state file; the high halves
    # from nothing but their masters.
    step1 = next(line for line in dry.splitlines() if line.startswith("step 1:"))
    for low, high, _ in halves:
        assert f" {low} <- {tmp / 'state.npz'}:{low}" in step1
        assert f" {high} <- " not in step1
    # The converted package takes the same file.
    run([tool("weft-run"), built["converted"], "--dry-run", "--data", tmp / "data.npz",
         "--load-state", tmp / "state.npz"])


def test_split_package_refuses_halves_in_state_files(packages):
    tmp, built = packages
    state = npz.load(tmp / "state.npz")
    # The low half in place of the f32 master.
    bad = dict(state)
    bad["arg0"] = torch.zeros(tuple(state["arg0"].shape), dtype=torch.int16)
    npz.save(tmp / "halves.npz", bad)
    proc = run([tool("weft-run"), built["split"], "--dry-run", "--data", tmp / "data.npz",
                "--load-state", tmp / "halves.npz"], check=False)
    assert proc.returncode == 2
    assert "'arg0' is tensor<64x128xi16>, but the step keeps it as a split f32 master" \
        in proc.stderr, proc.stderr
    assert "high half 'arg55' tensor<64x128xbf16>" in proc.stderr, proc.stderr
    # A high half is never read from a file.
    data = npz.load(tmp / "data.npz")
    data["arg55"] = torch.zeros(64, 128, dtype=torch.bfloat16)
    npz.save(tmp / "data_high.npz", data)
    proc = run([tool("weft-run"), built["split"], "--dry-run", "--data", tmp / "data_high.npz",
                "--load-state", tmp / "state.npz"], check=False)
    assert proc.returncode == 2 and "'arg55' names no input or state buffer" in proc.stderr, \
        proc.stderr


def gpu_or_skip():
    from weft import runtime
    try:
        runtime.init()
        runtime.context_ensure(0)
    except Exception as e:  # no driver, no device
        pytest.skip(f"no GPU: {e}")


def losses(stdout):
    return [float(m) for m in re.findall(r"^step \d+/\d+ loss (\S+)", stdout, re.M)]


def test_split_package_trains_like_converted_on_gpu(packages):
    """Same state in, the same loss and the same f32 state out after one
    step (the state file moves the masters off the bf16 ties, where the
    rounding rules differ; the updated masters may land on ties again, so
    later steps agree to rounding, not bit for bit); --init-state draws the
    same masters for both."""
    gpu_or_skip()
    tmp, built = packages
    state = npz.load(tmp / "state.npz")
    for k in range(17):
        state[f"arg{k}"], _ = untie(state[f"arg{k}"])
    npz.save(tmp / "untied.npz", state)
    saved, runs = {}, {}
    for copies, package in built.items():
        saved[copies] = tmp / f"saved_{copies}.npz"
        runs[copies] = losses(run([tool("weft-run"), package, "--steps", 1, "--data",
                                   tmp / "data.npz", "--load-state", tmp / "untied.npz",
                                   "--save-state", saved[copies]]).stdout)
    assert len(runs["split"]) == 1 and runs["split"] == runs["converted"], runs
    a, b = npz.load(saved["split"]), npz.load(saved["converted"])
    assert sorted(a) == sorted(b)
    for key in b:
        assert a[key].dtype == torch.float32, (key, a[key].dtype)
        assert torch.equal(a[key].view(torch.int32), b[key].view(torch.int32)), key
    # The split package's saved state loads back into it: one more step from
    # it matches one more step of the converted package from its own.
    again = {c: losses(run([tool("weft-run"), p, "--steps", 2, "--data", tmp / "data.npz",
                            "--load-state", saved[c]]).stdout) for c, p in built.items()}
    assert len(again["split"]) == 2, again
    np.testing.assert_allclose(again["split"], again["converted"], rtol=1e-3)
    drawn = {c: losses(run([tool("weft-run"), p, "--steps", 2, "--data", tmp / "data.npz",
                            "--init-state", 1]).stdout) for c, p in built.items()}
    np.testing.assert_allclose(drawn["split"], drawn["converted"], rtol=1e-3)
