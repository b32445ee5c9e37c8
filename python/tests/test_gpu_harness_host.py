"""Host-side pieces of the GPU attention harness (test/gpu) on the CPU: the
float64 reference against SDPA in float64, GQA, unit JSON parsing, grids and
argument lists, and a whole sweep point run against a fake runtime whose
kernels really read and write through the pointers they are given."""
import ctypes
import json
import math
import os
import subprocess
import sys

import pytest
import torch

from script_modules import REPO, load_script
from weft.gpu import attention_reference as ar
from weft.gpu import kernel_units as ku
from weft.gpu.poison import SENTINEL, Poisoned

GPU_DIR = os.path.join(REPO, "test", "gpu")
ac = load_script("test/gpu/attention_check.py")
# The scripts import weft from python/ (PYTHONPATH=python on the device).
SCRIPT_ENV = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))

SCALARS = [("batch", "i32"), ("q_heads", "i32"), ("kv_heads", "i32"), ("q_len", "i32"),
           ("k_len", "i32"), ("scale", "f32")]


def ptrs(*names):
    return [(n, "pointer") for n in names]


KERNEL_PARAMS = {
    "forward": ptrs("q", "k", "v", "out", "lse") + SCALARS,
    "backward_preprocess": ptrs("out", "dout", "delta") + SCALARS,
    "backward_dkdv": ptrs("q", "k", "v", "dout", "lse", "delta", "dk", "dv") + SCALARS,
    "backward_dq": ptrs("q", "k", "v", "dout", "lse", "delta", "dq") + SCALARS,
}


def unit_json(name, direction, dtype="bf16", head_dim=16, causal=False, shapes=None):
    shapes = shapes or {"batch": 2, "q_heads": 4, "kv_heads": 2, "q_len": 40, "k_len": 40,
                        "head_dim": head_dim, "scale": 1 / math.sqrt(head_dim)}
    roles = ["forward"] if direction == "forward" else \
        ["backward_preprocess", "backward_dkdv", "backward_dq"]
    kernels = [{"name": f"{name}_{role}", "role": role,
                "params": [{"name": n, "kind": k} for n, k in KERNEL_PARAMS[role]],
                "threads": 128, "rows_per_block": 128 if role == "backward_dkdv" else 64,
                "over_keys": role == "backward_dkdv", "dynamic_smem_bytes": 0,
                "registers": 100, "spill_store_bytes": 0, "spill_load_bytes": 0}
               for role in roles]
    obj = {"weft_version": "0.5.0", "format_version": 1, "arch": "sm_90a", "name": name,
           "direction": direction,
           "config": {"dtype": dtype, "head_dim": head_dim, "causal": causal,
                      "block_q": 64, "block_k": 64},
           "shapes": shapes, "ptx": f"{name}.ptx", "cubin": f"{name}.cubin",
           "kernels": kernels, "workspaces": []}
    if direction == "backward":
        obj["workspaces"] = [{"name": "delta", "dtype": "f32",
                              "shape": [shapes["batch"], shapes["q_heads"], shapes["q_len"]]}]
    return obj


def write_kernels_dir(directory, configs):
    """One weft-compile output directory per config, as scripts/check-kernels
    might lay them out; unit names deliberately say nothing of the config."""
    for i, (dtype, head_dim, causal) in enumerate(configs):
        sub = directory / f"ir{i}"
        sub.mkdir(parents=True)
        names = [f"step_attention_{i}", f"step_attention_grad_{i}"]
        for name, direction in zip(names, ("forward", "backward")):
            (sub / f"{name}.json").write_text(json.dumps(
                unit_json(name, direction, dtype, head_dim, causal)))
            (sub / f"{name}.cubin").write_bytes(b"fake cubin " + name.encode())
        (sub / "kernels.json").write_text(json.dumps(
            {"weft_version": "0.5.0", "format_version": 1, "arch": "sm_90a", "units": names}))
    return str(directory)


# --- reference and SDPA ---------------------------------------------------

@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("causal", [False, True])
def test_reference_matches_sdpa_in_f64(kv_heads, causal):
    point = ar.SweepPoint(2, 4, kv_heads, 33, 16, causal, "bf16")
    q, k, v, dout = ar.make_inputs(point, "cpu")
    # A chunk of 2 heads' scores forces several chunks, split inside a kv group.
    ref = ar.reference_f64(q, k, v, dout, causal, point.scale, chunk_bytes=2 * 33 * 33 * 8)
    q64, k64, v64, do64 = (t.double() for t in (q, k, v, dout))
    sdpa, mode = ar.sdpa_in_dtype(q64, k64, v64, do64, causal, point.scale, gqa="repeat")
    assert mode == ("none" if kv_heads == 4 else "repeat")
    for name in ar.GRADED:
        assert ref[name].shape == sdpa[name].shape, name
        err = (ref[name] - sdpa[name]).abs().max().item()
        assert err <= 1e-12, f"{name}: {err}"
    scores = torch.matmul(q64, ar.expand_kv(k64, 4).transpose(-1, -2)) * point.scale
    if causal:
        scores = scores.masked_fill(ar.causal_mask(33, 33, "cpu"), float("-inf"))
    assert (ref["lse"] - torch.logsumexp(scores, -1)).abs().max().item() <= 1e-12


def test_reference_does_not_depend_on_chunking():
    point = ar.SweepPoint(2, 4, 2, 20, 8, True, "f16")
    inputs = ar.make_inputs(point, "cpu")
    one = ar.reference_f64(*inputs, True, point.scale, chunk_bytes=1)
    whole = ar.reference_f64(*inputs, True, point.scale, chunk_bytes=1 << 30)
    for name in one:
        assert torch.allclose(one[name], whole[name], rtol=0, atol=1e-13), name


def test_gqa_mapping():
    k = torch.arange(2 * 3 * 1 * 1, dtype=torch.float64).reshape(2, 3, 1, 1)
    expanded = ar.expand_kv(k, 12)
    for h in range(12):  # q head h reads kv head h // 4
        assert torch.equal(expanded[:, h], k[:, h // 4])
    grad = torch.ones(2, 12, 1, 1)
    assert torch.equal(ar.reduce_kv(grad, 3), torch.full((2, 3, 1, 1), 4.0))
    with pytest.raises(ValueError, match=r"kv heads \(5\) must divide q heads \(16\)"):
        ar.check_gqa(16, 5)


@pytest.mark.skipif(not ar.SDPA_HAS_GQA, reason="this PyTorch has no enable_gqa")
def test_sdpa_native_gqa_equals_repeat():
    point = ar.SweepPoint(2, 4, 2, 24, 16, True, "f16")
    q, k, v, dout = ar.make_inputs(point, "cpu")
    native, mode_n = ar.sdpa_in_dtype(*(t.double() for t in (q, k, v, dout)), True,
                                      point.scale, gqa="native")
    repeat, mode_r = ar.sdpa_in_dtype(*(t.double() for t in (q, k, v, dout)), True,
                                      point.scale, gqa="repeat")
    assert (mode_n, mode_r) == ("native", "repeat")
    assert native["dk"].shape == (2, 2, 24, 16)
    for name in ar.GRADED:
        assert (native[name] - repeat[name]).abs().max().item() <= 1e-12, name


def test_sdpa_low_precision_error_is_measurable():
    # The pass rule needs SDPA's own error to be > 0 and < the values' scale.
    point = ar.SweepPoint(1, 4, 4, 64, 32, False, "bf16")
    q, k, v, dout = ar.make_inputs(point, "cpu")
    ref = ar.reference_f64(q, k, v, dout, False, point.scale)
    sdpa, _ = ar.sdpa_in_dtype(q, k, v, dout, False, point.scale)
    for name in ar.GRADED:
        err, rel = ar.error_of(sdpa[name], ref[name])
        assert 0 < rel < 0.05, (name, err, rel)


def test_error_and_judge():
    ref = torch.tensor([1.0, -2.0], dtype=torch.float64)
    assert ar.error_of(torch.tensor([1.5, -2.0]), ref) == (0.5, 0.25)
    assert ar.error_of(torch.tensor([float("nan"), -2.0]), ref) == (math.inf, math.inf)
    sdpa = {n: 1e-3 for n in ar.GRADED}
    ok, reasons, ratios = ar.judge({n: 2e-3 for n in ar.GRADED}, sdpa, 1e-3, {"out": 0})
    assert ok and not reasons and ratios["dq"] == pytest.approx(2.0)
    bad = dict(sdpa, dk=2.001e-3)
    ok, reasons, _ = ar.judge(bad, sdpa, 1e-3, {"out": 0})
    assert not ok and reasons == ["dk: weft err 2.001e-03 > 2 x sdpa err 1.000e-03"]
    ok, reasons, _ = ar.judge(sdpa, sdpa, 3e-3, {"out": 0, "dq": 7})
    assert not ok and len(reasons) == 2 and "dq: 7 NaN/inf" in reasons[1]
    assert not ar.judge(dict(sdpa, out=math.inf), sdpa, 0.0, {})[0]


def test_sweep_points():
    full = ar.full_sweep()
    assert len(full) == 2 * 3 * 4 * 2 * 3 * 2 == len({p.name for p in full})
    assert {p.head_dim for p in full} == {64, 128, 256}
    assert [p.seq for p in full] == sorted(p.seq for p in full)
    quick = ar.quick_sweep()
    assert len(quick) == 48 and {p.seq for p in quick} == {128, 1000}
    assert {p.kv_heads for p in quick} == {16, 4} and {p.batch for p in quick} == {1}
    p = full[0]
    assert p.scale == 1 / math.sqrt(p.head_dim) and p.seed == ar.SweepPoint(*vars(p).values()).seed


def test_poisoned_buffers():
    buf = Poisoned((2, 3), torch.bfloat16, "cpu")
    assert buf.tensor.is_contiguous() and torch.isnan(buf.tensor).all()
    assert buf.tensor.data_ptr() % 256 == 0 or buf.buffer.data_ptr() % 256 != 0
    assert buf.guard_violations() == 0
    buf.tensor.fill_(1.0)
    assert buf.guard_violations() == 0
    buf.buffer[buf.front + 6] = 0.0  # one past the end
    buf.buffer[buf.front - 1] = SENTINEL * 2  # one before the start
    assert buf.guard_violations() == 2
    plain = Poisoned((5,), torch.float32, "cpu", guarded=False)
    assert plain.buffer.numel() == 5 and plain.guard_violations() == 0


# --- unit JSON, grid and arguments ---------------------------------------

def test_load_units_groups_by_config(tmp_path):
    configs = [("bf16", 64, True), ("f16", 128, False)]
    units = ku.load_units(write_kernels_dir(tmp_path, configs))
    groups, notes = ku.group_units(units)
    assert not notes and set(groups) == {("bf16", 64, True, 64, 64, "warp", 2),
                                         ("f16", 128, False, 64, 64, "warp", 2)}
    bwd = groups[("f16", 128, False, 64, 64, "warp", 2)]["backward"]
    assert [k.role for k in bwd.kernels] == ["backward_preprocess", "backward_dkdv", "backward_dq"]
    assert bwd.workspaces == [("delta", "f32")] and bwd.cubin_path.endswith(".cubin")
    dup = ku.group_units(units + units[:1])[1]
    assert len(dup) == 1 and "duplicates" in dup[0]
    assert ku.pair_name(ku.group_by_problem(units)[0][("bf16", 64, True)]) == \
        "bf16-d64-causal fwd q64k64 / bwd q64k64"


def test_units_with_tuned_tiles_pair_by_problem(tmp_path):
    # The tuning table gave the forward 128x128 tiles and the backward 64x64:
    # one problem, one pair (this run once failed with "no backward unit").
    directory = write_kernels_dir(tmp_path, [("bf16", 128, False)])
    fwd_json = tmp_path / "ir0" / "step_attention_0.json"
    obj = json.loads(fwd_json.read_text())
    obj["config"].update(block_q=128, block_k=128)
    fwd_json.write_text(json.dumps(obj))
    assert set(ku.group_units(ku.load_units(directory))[0]) == {
        ("bf16", 128, False, 128, 128, "warp", 2), ("bf16", 128, False, 64, 64, "warp", 2)}
    groups, notes = ku.group_by_problem(ku.load_units(directory))
    assert not notes and list(groups) == [("bf16", 128, False)]
    assert set(groups[("bf16", 128, False)]) == {"forward", "backward"}
    assert ku.pair_name(groups[("bf16", 128, False)]) == "bf16-d128-full fwd q128k128 / bwd q64k64"


def test_load_units_errors(tmp_path):
    with pytest.raises(ku.UnitError, match="does not exist"):
        ku.load_units(str(tmp_path / "missing"))
    with pytest.raises(ku.UnitError, match="no kernels.json"):
        ku.load_units(str(tmp_path))
    root = write_kernels_dir(tmp_path / "k", [("bf16", 64, False)])
    os.remove(os.path.join(root, "ir0", "step_attention_grad_0.cubin"))
    with pytest.raises(ku.UnitError, match=r"step_attention_grad_0.cubin does not exist"):
        ku.load_units(root)
    bad = unit_json("u", "sideways")
    with pytest.raises(ku.UnitError, match="direction 'sideways'"):
        ku.parse_unit(bad, str(tmp_path), "u.json")
    bad = unit_json("u", "backward")
    bad["kernels"] = bad["kernels"][:2]
    with pytest.raises(ku.UnitError, match="needs kernels with roles"):
        ku.parse_unit(bad, str(tmp_path), "u.json")
    bad = unit_json("u", "forward")
    bad["kernels"][0]["threads"] = True
    with pytest.raises(ku.UnitError, match="\"threads\" is True, expected int"):
        ku.parse_unit(bad, str(tmp_path), "u.json")


def test_grid_from_unit_json(tmp_path):
    (tmp_path / "u.cubin").write_bytes(b"x")
    bwd = ku.parse_unit(unit_json("u", "backward"), str(tmp_path), "u.json")
    shapes = {"batch": 2, "q_heads": 16, "kv_heads": 4, "q_len": 1000, "k_len": 1000}
    grids = [ku.grid_for(k, shapes) for k in bwd.kernels]
    # preprocess, dq: ceil(1000 / 64) = 16 query blocks x 16 q heads; dkdv:
    # ceil(1000 / 128) = 8 key blocks x 4 kv heads.
    assert grids == [(16, 16, 2), (8, 4, 2), (16, 16, 2)]
    assert ku.grid_for(bwd.kernels[0], dict(shapes, q_len=128)) == (2, 16, 2)
    assert ku.grid_for(bwd.kernels[1], dict(shapes, k_len=129)) == (2, 4, 2)


def test_args_from_params(tmp_path):
    (tmp_path / "u.cubin").write_bytes(b"x")
    obj = unit_json("u", "backward")
    # A reordered, aliased parameter list: the harness goes by name.
    obj["kernels"][1]["params"] = [{"name": n, "kind": k} for n, k in
                                   [("dv", "pointer"), ("delta_workspace", "pointer"),
                                    ("do", "pointer"), ("k", "pointer")] + SCALARS]
    dkdv = ku.parse_unit(obj, str(tmp_path), "u.json").kernels[1]
    tensors = {n: torch.zeros(4) for n in ("dv", "delta", "dout", "k")}
    values = dict(tensors, batch=2, q_heads=16, kv_heads=4, q_len=1000, k_len=999, scale=0.125)
    args = ku.build_args(dkdv, values)
    assert args == [("ptr", tensors["dv"].data_ptr()), ("ptr", tensors["delta"].data_ptr()),
                    ("ptr", tensors["dout"].data_ptr()), ("ptr", tensors["k"].data_ptr()),
                    ("i32", 2), ("i32", 16), ("i32", 4), ("i32", 1000), ("i32", 999),
                    ("f32", 0.125)]
    assert all(isinstance(v, int) for kind, v in args[:-1])
    with pytest.raises(ku.UnitError, match=r"param 'dv' \(pointer\) names nothing"):
        ku.build_args(dkdv, {n: v for n, v in values.items() if n != "dv"})
    dkdv.params[-1] = ("scale", "i32")
    with pytest.raises(ku.UnitError, match="param 'scale' is i32 but scale is 0.125"):
        ku.build_args(dkdv, values)
    dkdv.params[-1] = ("batch", "pointer")
    with pytest.raises(ku.UnitError, match="param 'batch' is a pointer"):
        ku.build_args(dkdv, values)


# --- a whole point against a fake runtime ---------------------------------

def view(pointer, shape, dtype):
    """A tensor aliasing `pointer` (host memory here): what a kernel sees."""
    count = math.prod(shape)
    raw = (ctypes.c_char * (count * torch.tensor([], dtype=dtype).element_size())).from_address(
        pointer)
    return torch.frombuffer(raw, dtype=dtype, count=count).view(shape)


class FakeRuntime:
    """weft.runtime's API; each 'kernel' computes its role's results in float64
    from the buffers its pointer arguments name and writes them back, with an
    optional fault to prove the harness notices."""

    WeftError = RuntimeError

    def __init__(self, units, dtype, fault=None, layout="head_major"):
        self.kernels = {k.name: k for u in units for k in u.kernels}
        self.dtype, self.fault, self.launches, self.images = dtype, fault, [], []
        self.layout = layout

    def module_load(self, image):
        self.images.append(image)
        return self

    def function(self, name):
        return self.kernels[name]

    def set_dynamic_smem(self, fn, n):
        raise AssertionError("no unit here asks for dynamic smem")

    def launch(self, fn, grid, block, smem, stream, args):
        self.launches.append((fn.name, fn.role, grid, block, smem, stream))
        a = {name: value for (name, _), (_, value) in zip(fn.params, args)}
        b, hq, hkv, s = a["batch"], a["q_heads"], a["kv_heads"], a["q_len"]
        d = 16

        def t(name, heads=hq, dtype=self.dtype):
            """[b, h, s, d] view of a tensor argument as the layout places it
            (the kernels' TensorRows, restated)."""
            if self.layout == "head_major":
                return view(a[name], (b, heads, s, d), dtype)
            if self.layout == "packed" and name in ("q", "k", "v", "dq", "dk", "dv"):
                whole = view(a[name], (b, s, hq + 2 * hkv, d), dtype)
                first = {"q": 0, "dq": 0, "k": hq, "dk": hq}.get(name, hq + hkv)
                return whole[:, :, first:first + heads].transpose(1, 2)
            return view(a[name], (b, s, heads, d), dtype).transpose(1, 2)
        row = lambda name: view(a[name], (b, hq, s), torch.float32)  # noqa
        scale = a["scale"] * (1.01 if self.fault == "scale" else 1.0)
        if fn.role == "backward_preprocess":
            row("delta").copy_((t("dout").double() * t("out").double()).sum(-1))
            return
        causal = fn.name.startswith("causal")
        dout = t("dout") if "dout" in a else torch.zeros(b, hq, s, d, dtype=self.dtype)
        ref = ar.reference_f64(t("q"), t("k", hkv), t("v", hkv), dout, causal, scale)
        if fn.role == "forward":
            out = t("out")
            rows = s - 1 if self.fault == "unwritten_row" else s
            out[:, :, :rows].copy_(ref["out"][:, :, :rows])
            row("lse").copy_(ref["lse"])
        elif fn.role == "backward_dkdv":
            t("dk", hkv).copy_(ref["dk"])
            keys = s - 1 if self.fault == "unwritten_dv_row" else s
            t("dv", hkv)[:, :, :keys].copy_(ref["dv"][:, :, :keys])
            if self.fault == "overrun":
                view(a["dv"], (b * hkv * s * d + 1,), self.dtype)[-1] = 0.0
        else:
            t("dq").copy_(ref["dq"])


def fake_setup(tmp_path, fault=None, causal=True, layout="head_major"):
    units = ku.load_units(write_kernels_dir(tmp_path, [("bf16", 16, causal)]))
    for u in units:  # the fake reads causality from the kernel's name
        u.layout = layout
        for k in u.kernels:
            k.name = ("causal_" if causal else "full_") + k.name
    groups, _ = ku.group_units(units)
    rt = FakeRuntime(units, torch.bfloat16, fault, layout)
    return rt, groups


def run_fake_point(tmp_path, fault=None, causal=True, layout="head_major"):
    rt, groups = fake_setup(tmp_path, fault, causal, layout)
    point = ar.SweepPoint(2, 4, 2, 40, 16, causal, "bf16")
    opts = ac.parse_args(["--kernels", str(tmp_path)])
    record = ac.run_point(rt, ac.Loader(rt), groups, point, "cpu", opts)
    return rt, record


@pytest.mark.parametrize("causal", [False, True])
def test_fake_point_passes_and_launches_in_order(tmp_path, causal):
    rt, record = run_fake_point(tmp_path, causal=causal)
    assert record["status"] == "PASS", record["reasons"]
    roles = [launch[1] for launch in rt.launches]
    assert roles == ["forward", "backward_preprocess", "backward_dkdv", "backward_dq"]
    grids = [launch[2] for launch in rt.launches]
    assert grids == [(1, 4, 2), (1, 4, 2), (1, 2, 2), (1, 4, 2)]
    assert all(launch[3] == (128, 1, 1) and launch[5] == 0 for launch in rt.launches)
    assert len(rt.images) == 2  # each unit loaded once
    variant = record["variants"][0]
    assert variant["delta_err"] <= 1e-6 and variant["lse_err"] <= 1e-6
    assert not any(variant["nonfinite"].values()) and not any(variant["guard_violations"].values())
    line = ac.point_line(record)
    assert line.startswith("PASS bf16-d16-") and " | dv " in line


@pytest.mark.parametrize("layout", ["seq_major", "packed"])
def test_fake_point_in_seq_major_layouts_passes(tmp_path, layout):
    # The harness lays q, k, v, dout out as [b, s, h, d] (packed: one qkv)
    # and grades [b, h, s, d] views of what the kernels wrote.
    _, record = run_fake_point(tmp_path, layout=layout)
    assert record["status"] == "PASS", record["reasons"]
    variant = record["variants"][0]
    assert ("dqkv" in variant["nonfinite"]) == (layout == "packed")


@pytest.mark.parametrize("layout", ["head_major", "packed"])
def test_fake_point_unwritten_gradient_row_fails(tmp_path, layout):
    # One key row of dv left unwritten: the poison shows in dv (in the
    # packed dqkv: 2 batches x 2 kv heads x 16 elements).
    _, record = run_fake_point(tmp_path, fault="unwritten_dv_row", layout=layout)
    assert record["status"] == "FAIL"
    name = "dqkv" if layout == "packed" else "dv"
    assert f"{name}: 64 NaN/inf elements (unwritten or overflowed)" in record["reasons"]


def test_loader_keeps_units_of_one_name_apart(tmp_path):
    # Layout and MMA sets live in directories of their own with the same unit
    # names: each unit loads its own cubin (a name-keyed cache once ran the
    # head_major kernels for every layout).
    first = ku.load_units(write_kernels_dir(tmp_path / "a", [("bf16", 16, True)]))
    second = ku.load_units(write_kernels_dir(tmp_path / "b", [("bf16", 16, True)]))
    assert first[0].name == second[0].name
    rt = FakeRuntime(first + second, torch.bfloat16)
    loader = ac.Loader(rt)
    assert loader.get(first[0]).unit is first[0] and loader.get(second[0]).unit is second[0]


def test_tensor_map_views_match_attention_tensor_map():
    # attentionTensorMap's rank-4 views (the lit test attention-layout.mlir
    # checks the same numbers in the C launcher).
    values = {"batch": 1, "q_heads": 4, "kv_heads": 2, "q_len": 200, "k_len": 200}
    assert ku.tensor_map_view("q", values, 64, "q_len", "q_heads", 128, "seq_major") == \
        ((64, 200, 4, 1), (512, 128, 102400), (64, 128, 1, 1))
    assert ku.tensor_map_view("k", values, 64, "k_len", "kv_heads", 64, "packed") == \
        ((64, 200, 8, 1), (1024, 128, 204800), (64, 64, 1, 1))
    assert ku.tensor_map_view("dout", values, 64, "q_len", "q_heads", 64, "packed")[0] == \
        (64, 200, 4, 1)
    assert ku.tensor_map_view("q", values, 64, "q_len", "q_heads", 128) == \
        ((64, 200, 4, 1), (128, 25600, 102400), (64, 128, 1, 1))


def test_fake_point_unwritten_row_fails(tmp_path):
    _, record = run_fake_point(tmp_path, fault="unwritten_row")
    assert record["status"] == "FAIL"
    # 2 batches x 4 heads x one row of 16: NaN left by the poison.
    assert "out: 128 NaN/inf elements (unwritten or overflowed)" in record["reasons"]
    assert "FAIL" in ac.point_line(record) and "NaN/inf" in ac.point_line(record)


def test_fake_point_write_past_end_fails(tmp_path):
    _, record = run_fake_point(tmp_path, fault="overrun")
    assert record["status"] == "FAIL"
    assert record["reasons"] == ["dv: 1 guard elements overwritten (a write out of bounds)"]


def test_fake_point_wrong_math_fails(tmp_path):
    _, record = run_fake_point(tmp_path, fault="scale")
    assert record["status"] == "FAIL"
    assert any(r.startswith("out: weft err") for r in record["reasons"])
    assert any(r.startswith("lse: err") for r in record["reasons"])


def test_missing_configuration_fails(tmp_path):
    rt, groups = fake_setup(tmp_path)
    point = ar.SweepPoint(1, 4, 2, 40, 64, True, "bf16")
    record = ac.run_point(rt, ac.Loader(rt), groups, point, "cpu",
                          ac.parse_args(["--kernels", str(tmp_path)]))
    assert record["status"] == "FAIL" and "no units for bf16 d64 causal" in record["reasons"][0]


def test_sanitize_points_and_summary(tmp_path):
    _, groups = fake_setup(tmp_path)
    names = [p.name for p in ac.sanitize_points(groups, None)]
    assert names == ["bf16-d16-causal-b1-h4-kv2-s77", "bf16-d16-causal-b1-h4-kv2-s128"]
    assert len(ac.sanitize_points(groups, "s77$")) == 1
    records = [{"name": "a", "status": "PASS", "times": {"sdpa": 1.0},
                "variants": [{"ratios": {"out": 1.5, "dq": 0.5}, "lse_err": 1e-5}]},
               {"name": "b", "status": "FAIL", "times": {"sdpa": 2.0},
                "variants": [{"ratios": {"out": math.inf, "dq": 0.7}, "lse_err": 2e-5}]},
               {"name": "c", "status": "NOT RUN"}]
    summary = ac.summarize(records)
    assert (summary["points"], summary["passed"], summary["failed"], summary["not_run"]) == \
        (3, 1, 1, 1)
    assert summary["worst_ratio"]["out"] == (math.inf, "b")
    assert summary["worst_ratio"]["dq"] == (0.7, "b") and summary["phase_seconds"]["sdpa"] == 3.0
    out = tmp_path / "r.json"
    ac.write_json(str(out), {"summary": summary})
    assert json.loads(out.read_text())["summary"]["worst_ratio"]["out"] == ["inf", "b"]


def test_cli_without_gpu():
    script = os.path.join(GPU_DIR, "attention_check.py")
    run = lambda *a: subprocess.run([sys.executable, script, *a], capture_output=True,  # noqa
                                    text=True, timeout=120, env=SCRIPT_ENV)
    listed = run("--list", "--quick", "--points", "^f16-d128-causal")
    assert listed.returncode == 0 and listed.stdout.split() == [
        "f16-d128-causal-b1-h16-kv16-s128", "f16-d128-causal-b1-h16-kv4-s128",
        "f16-d128-causal-b1-h16-kv16-s1000", "f16-d128-causal-b1-h16-kv4-s1000"]
    missing = run("--kernels", "/nonexistent-weft-kernels")
    assert missing.returncode == 1 and "kernels directory /nonexistent-weft-kernels" in \
        missing.stdout


def test_sanitize_script_checks_its_argument(tmp_path):
    script = os.path.join(GPU_DIR, "sanitize.sh")
    assert subprocess.run(["bash", "-n", script]).returncode == 0
    proc = subprocess.run(["bash", script, str(tmp_path / "none")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "none is not a directory" in proc.stderr


def test_watchdog_ends_a_hung_run():
    code = ("import time; from script_modules import load_script; "
            "ac = load_script('test/gpu/attention_check.py'); "
            "w = ac.Watchdog(0.5, lambda name: print('hung:', name, flush=True)); "
            "w.start('p1'); w.stop(); time.sleep(1.5); w.start('p2'); time.sleep(30)")
    env = dict(SCRIPT_ENV, PYTHONPATH=os.pathsep.join(
        [SCRIPT_ENV["PYTHONPATH"], os.path.dirname(os.path.abspath(__file__))]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=25, env=env)
    assert proc.returncode == 1 and proc.stdout == "hung: p2\n"


@pytest.mark.parametrize("fault, failures", [(None, 0), ("unwritten_row", 2), ("scale", 0)])
def test_sanitize_mode_checks_nan_only(tmp_path, capsys, fault, failures):
    # Only NaN/inf counts there (no reference: wrong math passes), and the
    # buffers are unguarded so memcheck sees each allocation's end.
    rt, groups = fake_setup(tmp_path, fault)
    opts = ac.parse_args(["--kernels", str(tmp_path), "--sanitize-config"])
    assert ac.run_sanitize(rt, ac.Loader(rt), groups, opts, "cpu") == failures
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.startswith("FAIL" if failures else "ok") for line in lines)
    assert [launch[1] for launch in rt.launches].count("forward") == 2


def test_launch_arguments_fit_the_runtime_binding(tmp_path):
    # Host-only parts of weft.runtime: the (kind, value) list and the grid the
    # harness builds are what launch() packs for cuLaunchKernel.
    rt = pytest.importorskip("weft.runtime")
    (tmp_path / "u.cubin").write_bytes(b"x")
    dkdv = ku.parse_unit(unit_json("u", "backward"), str(tmp_path), "u.json").kernels[1]
    tensors = {n: torch.zeros(8) for n in ("q", "k", "v", "dout", "lse", "delta", "dk", "dv")}
    values = dict(tensors, batch=2, q_heads=16, kv_heads=4, q_len=1000, k_len=1000, scale=0.125)
    pointers, kept = rt.pack_args(ku.build_args(dkdv, values))
    assert [v.value for v in kept[:8]] == [tensors[n].data_ptr() for n in
                                           ("q", "k", "v", "dout", "lse", "delta", "dk", "dv")]
    assert [v.value for v in kept[8:]] == [2, 16, 4, 1000, 1000, 0.125]
    assert [type(v) for v in kept[8:]] == [ctypes.c_int32] * 5 + [ctypes.c_float]
    grid = ku.grid_for(dkdv, {k: values[k] for k in ("batch", "q_heads", "kv_heads",
                                                     "q_len", "k_len")})
    assert list(rt._dims3(grid, "grid")) == [8, 4, 2]


def test_units_keep_their_mma_kind_apart(tmp_path):
    # Two forwards of one problem and tiles, mma.sync and wgmma (their JSON
    # config "mma"; older units have none: warp), and one warp backward.
    directory = write_kernels_dir(tmp_path, [("bf16", 64, True)])
    sub = tmp_path / "ir0"
    obj = json.loads((sub / "step_attention_0.json").read_text())
    obj.update(name="wg_forward")
    obj["config"].update(mma="warpgroup", stages=2)
    (sub / "wg_forward.json").write_text(json.dumps(obj))
    (sub / "wg_forward.cubin").write_bytes(b"fake")
    index = json.loads((sub / "kernels.json").read_text())
    index["units"].append("wg_forward")
    (sub / "kernels.json").write_text(json.dumps(index))
    units = ku.load_units(directory)
    assert sorted(u.mma for u in units) == ["warp", "warp", "warpgroup"]
    groups, notes = ku.group_units(units)
    assert not notes and set(groups) == {("bf16", 64, True, 64, 64, "warp", 2),
                                         ("bf16", 64, True, 64, 64, "warpgroup", 2)}
    wg = groups[("bf16", 64, True, 64, 64, "warpgroup", 2)]
    # The wgmma forward pairs with the warp backward of its tiles.
    assert wg["forward"].name == "wg_forward" and wg["backward"].name == "step_attention_grad_0"
    assert ku.config_name(wg["forward"].config_key) == "bf16-d64-causal-q64k64-wgmma"
    assert ku.config_name(("bf16", 64, True, 64, 64)) == "bf16-d64-causal-q64k64"
    assert ku.pair_name(wg) == "bf16-d64-causal fwd q64k64 wgmma / bwd q64k64"
    # By problem they still collide: one pair per problem, the first found.
    by_problem, notes = ku.group_by_problem(units)
    assert list(by_problem) == [("bf16", 64, True)] and len(notes) == 1
    # A bad kind is refused with the values.
    obj["config"]["mma"] = "tensor"
    (sub / "wg_forward.json").write_text(json.dumps(obj))
    with pytest.raises(ku.UnitError, match="config mma 'tensor' is not warp or warpgroup"):
        ku.load_units(directory)
    obj["config"]["mma"] = "warp"
    (sub / "wg_forward.json").write_text(json.dumps(obj))
    # A Hopper backward unit groups under its own kind and stages.
    bwd = json.loads((sub / "step_attention_grad_0.json").read_text())
    bwd["config"].update(mma="warpgroup", stages=3)
    (sub / "step_attention_grad_0.json").write_text(json.dumps(bwd))
    groups, _ = ku.group_units(ku.load_units(directory))
    assert groups[("bf16", 64, True, 64, 64, "warpgroup", 3)] == {
        "backward": next(u for u in ku.load_units(directory) if u.direction == "backward")}


def test_atomic_dq_units(tmp_path):
    # The atomic-dQ backward: preprocess, dK/dV, then backward_dq_convert (no
    # dQ kernel); its workspace adds the f32 accumulator after delta at a
    # 256-byte boundary (weft/Dialect/AttentionWorkspace.h; the lit test
    # emit-kernels-atomic-dq.mlir reads 528384 bytes for these shapes).
    assert ku.grad_workspace_bytes(1, 4, 256, 256, False, 128) == 4096 + 4 * 4 * 256 * 128 \
        == 528384
    mask = 4 * 32 * 16 * 16
    assert ku.grad_workspace_bytes(1, 4, 256, 256, True, 128) == \
        4096 + mask + 4 * 4 * 256 * 128
    assert ku.grad_workspace_bytes(1, 4, 77, 77, False, 64) == 1280 + 4 * 4 * 77 * 64
    obj = unit_json("u", "backward", head_dim=64)
    convert = {"name": "u_convert", "role": "backward_dq_convert",
               "params": [{"name": n, "kind": k}
                          for n, k in ptrs("delta", "dq") + SCALARS],
               "threads": 128, "rows_per_block": 64, "over_keys": False,
               "dynamic_smem_bytes": 0, "registers": 24, "spill_store_bytes": 0,
               "spill_load_bytes": 0}
    obj["config"].update(mma="warpgroup", atomic_dq=True)
    obj["kernels"] = obj["kernels"][:2] + [convert]
    (tmp_path / "u.json").write_text(json.dumps(obj))
    (tmp_path / "u.cubin").write_bytes(b"fake")
    unit = ku.parse_unit(obj, str(tmp_path), str(tmp_path / "u.json"))
    assert unit.atomic_dq and [k.role for k in unit.kernels][-1] == "backward_dq_convert"
    assert ku.workspace_floats(unit, 2, 4, 40, 40) * 4 == \
        ku.grad_workspace_bytes(2, 4, 40, 40, False, 64)
    assert "adq" in ku.pair_name({"backward": unit})
    # A unit listing the dQ kernel while it says atomic_dq is refused.
    obj["kernels"][-1] = dict(convert, role="backward_dq")
    with pytest.raises(ku.UnitError, match="roles"):
        ku.parse_unit(obj, str(tmp_path), str(tmp_path / "u.json"))
