"""weft-fuse-elementwise: grouping changes which values reach memory, never
results.

Every group kind (bias + GELU, dropout + residual + LayerNorm, RMSNorm +
residual, softmax and its gradient, cross-entropy and its gradient, the norm
and GELU/SiLU gradients with the accumulation around them, AdamW) is built
from small hand-written IR in f32 and bf16 and run by weft-run before and
after the pass on the same inputs: results must agree bit for bit (the
interpreter runs a group's body, rounding each op as unfused). Generated GPT
and LLaMA training steps (AdamW, dropout) are checked the same way, then the
training pipeline with fuse-elementwise=true: every remat policy keeps the
results, and with remat=budget the planned peak (weft-plan-memory's, checked
again by the independent simulator weft.memsim) stays within the budget,
from the smallest feasible budget up."""
import json
import os
import re
import subprocess
import tempfile

import pytest
import torch

from harness import tool
from weft import memsim, npz
from weft.models.config import PRESETS
from weft.models.emitter import emit_module

SEED = 11
SMALL = dict(hidden=32, heads=4, kv_heads=4, seq=16, batch=2, ffn_hidden=128, vocab=64)
MODELS = {
    "gpt2": PRESETS["gpt_block"].replace(layers=2, dtype="f32", **SMALL),
    "gpt2_bf16": PRESETS["gpt_block"].replace(layers=2, dtype="bf16", **SMALL),
    "llama2": PRESETS["llama_block"].replace(layers=2, dtype="f32", dropout=0.1,
                                             **{**SMALL, "kv_heads": 2}),
}


def tmpdir():
    return tempfile.mkdtemp(prefix="weft-fuse-", dir=os.environ.get("WEFT_TEST_TMP"))


def weft_opt(text, *flags, check=True):
    proc = subprocess.run([tool("weft-opt"), "-", *flags], input=text, capture_output=True,
                          text=True, timeout=600)
    if check and proc.returncode != 0:
        pytest.fail(f"weft-opt {' '.join(flags)} failed (rc {proc.returncode}):\n"
                    f"{proc.stderr[-4000:]}")
    return proc


def run(text, entry, inputs=None):
    """Runs `entry` with weft-run on `inputs` (.npz) or on seeded random
    inputs, which are saved. Returns (results, inputs path)."""
    tmp = tmpdir()
    ir, out = os.path.join(tmp, "in.mlir"), os.path.join(tmp, "out.npz")
    with open(ir, "w") as f:
        f.write(text)
    cmd = [tool("weft-run"), ir, "--entry", entry, "--outputs", out]
    if inputs is None:
        inputs = os.path.join(tmp, "inputs.npz")
        cmd += ["--random-inputs", "--seed", str(SEED), "--save-inputs", inputs]
    else:
        cmd += ["--inputs", inputs]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"weft-run failed on {ir}:\n{proc.stderr[-4000:]}")
    return npz.ordered(npz.load(out), "res"), inputs


def assert_bitwise_equal(got, ref, label):
    assert len(got) == len(ref), f"{label}: {len(got)} results, expected {len(ref)}"
    for i, (a, b) in enumerate(zip(got, ref)):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{label} res{i}"
        bits = {torch.float32: torch.int32, torch.float64: torch.int64,
                torch.bfloat16: torch.int16, torch.float16: torch.int16}.get(a.dtype)
        same = torch.equal(a.view(bits), b.view(bits)) if bits else torch.equal(a, b)
        assert same, f"{label} res{i}: max |diff| {(a.double() - b.double()).abs().max()}"


def kinds(text):
    return re.findall(r'weft\.fused .*\{kind = "([^"]+)"', text)


#===-----------------------------------------------------------------------===#
# Each group kind on hand-written IR
#===-----------------------------------------------------------------------===#

def T(shape, dt):
    return f"tensor<{'x'.join(map(str, shape))}x{dt}>" if shape else f"tensor<{dt}>"


def kind_cases(dt):
    """(name, IR of @f, the group kinds the pass must form). Rows 2x4, n 16.
    Forward and backward ops form separate groups: the backward starts at
    the first *_grad op or after the op defining a 0-d loss result."""
    x, v, r = T([2, 4, 16], dt), T([16], dt), T([2, 4], "i64")
    w = T([16, 16], dt)
    loss = T([], dt)
    return [
        ("bias_gelu", f"""
func.func @f(%a: {x}, %w: {w}, %b: {v}) -> {x} {{
  %m = weft.matmul %a, %w : ({x}, {w}) -> {x}
  %s = weft.add %m, %b : ({x}, {v}) -> {x}
  %g = weft.gelu %s {{approximate = "tanh"}} : ({x}) -> {x}
  return %g : {x}
}}""", ["add+gelu"]),
        ("dropout_residual_layer_norm", f"""
func.func @f(%h: {x}, %seed: tensor<i64> {{weft.range = array<i64: 0, 1000>}}, %res: {x}, %g: {v}, %b: {v}) -> ({x}, {x}) {{
  %d = weft.dropout %h, %seed {{p = 0.25 : f64, weft.rng_id = 3 : i64}} : ({x}, tensor<i64>) -> {x}
  %s = weft.add %res, %d : ({x}, {x}) -> {x}
  %n = weft.layer_norm %s, %g, %b : ({x}, {v}, {v}) -> {x}
  return %s, %n : {x}, {x}
}}""", ["dropout+add+layer_norm"]),
        ("residual_rms_norm", f"""
func.func @f(%h: {x}, %res: {x}, %g: {v}) -> ({x}, {x}) {{
  %s = weft.add %res, %h : ({x}, {x}) -> {x}
  %n = weft.rms_norm %s, %g {{eps = 1.0e-6 : f64}} : ({x}, {v}) -> {x}
  return %s, %n : {x}, {x}
}}""", ["add+rms_norm"]),
        ("scale_softmax_and_grad", f"""
func.func @f(%s: {x}, %dy: {x}) -> ({x}, {x}) {{
  %t = weft.scale %s {{value = 0.25 : f64}} : ({x}) -> {x}
  %p = weft.softmax %t {{dim = -1 : i64}} : ({x}) -> {x}
  %dx = weft.softmax_grad %dy, %p {{dim = -1 : i64}} : ({x}, {x}) -> {x}
  %dt = weft.scale %dx {{value = 0.25 : f64}} : ({x}) -> {x}
  return %p, %dt : {x}, {x}
}}""", ["scale+softmax", "softmax_grad+scale"]),
        ("cross_entropy_and_grad", f"""
func.func @f(%h: {x}, %labels: {r} {{weft.range = array<i64: 0, 16>}}) -> ({loss}, {x}) {{
  %z = weft.scale %h {{value = 3.0 : f64}} : ({x}) -> {x}
  %l = weft.cross_entropy %z, %labels : ({x}, {r}) -> {loss}
  %one = arith.constant dense<0.5> : {loss}
  %dz = weft.cross_entropy_grad %one, %z, %labels : ({loss}, {x}, {r}) -> {x}
  return %l, %dz : {loss}, {x}
}}""", ["scale+cross_entropy", "cross_entropy_grad"]),
        ("layer_norm_grad_accumulate", f"""
func.func @f(%dy: {x}, %x: {x}, %g: {v}, %acc: {x}, %seed: tensor<i64> {{weft.range = array<i64: 0, 1000>}}) -> ({x}, {v}, {v}) {{
  %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : ({x}, {x}, {v}) -> ({x}, {v}, {v})
  %s = weft.add %acc, %dx : ({x}, {x}) -> {x}
  %d = weft.dropout %s, %seed {{p = 0.1 : f64, weft.rng_id = 7 : i64}} : ({x}, tensor<i64>) -> {x}
  return %d, %dg, %db : {x}, {v}, {v}
}}""", ["layer_norm_grad+add+dropout"]),
        ("rms_norm_grad", f"""
func.func @f(%dy: {x}, %x: {x}, %g: {v}, %acc: {x}) -> ({x}, {v}) {{
  %dx, %dg = weft.rms_norm_grad %dy, %x, %g : ({x}, {x}, {v}) -> ({x}, {v})
  %s = weft.add %acc, %dx : ({x}, {x}) -> {x}
  return %s, %dg : {x}, {v}
}}""", ["rms_norm_grad+add"]),
        ("gelu_silu_grads", f"""
func.func @f(%dy: {x}, %u: {x}, %gate: {x}) -> ({x}, {x}) {{
  %dg = weft.gelu_grad %dy, %u {{approximate = "tanh"}} : ({x}, {x}) -> {x}
  %s = weft.silu %gate : ({x}) -> {x}
  %m = weft.mul %dy, %s : ({x}, {x}) -> {x}
  %ds = weft.silu_grad %m, %gate : ({x}, {x}) -> {x}
  return %dg, %ds : {x}, {x}
}}""", ["gelu_grad+silu+mul+silu_grad"]),  # siblings through dy: one group
        ("adamw", f"""
func.func @f(%p: {T([8, 16], "f32")}, %g: {T([8, 16], dt)}, %m: {T([8, 16], "f32")}, %v: {T([8, 16], "f32")}, %t: tensor<i64> {{weft.range = array<i64: 1, 100>}}) -> ({T([8, 16], "f32")}, {T([8, 16], "f32")}, {T([8, 16], "f32")}) {{
  %g32 = weft.convert %g : ({T([8, 16], dt)}) -> {T([8, 16], "f32")}
  %gs = weft.scale %g32 {{value = 0.5 : f64}} : ({T([8, 16], "f32")}) -> {T([8, 16], "f32")}
  %p1, %m1, %v1 = weft.adamw %p, %gs, %m, %v, %t {{lr = 1.0e-2 : f64, weight_decay = 0.1 : f64}} : ({T([8, 16], "f32")}, {T([8, 16], "f32")}, {T([8, 16], "f32")}, {T([8, 16], "f32")}, tensor<i64>) -> ({T([8, 16], "f32")}, {T([8, 16], "f32")}, {T([8, 16], "f32")})
  return %p1, %m1, %v1 : {T([8, 16], "f32")}, {T([8, 16], "f32")}, {T([8, 16], "f32")}
}}""", ["convert+scale+adamw"]),
    ]


KIND_CASES = [(dt, name) for dt in ("f32", "bf16") for name, _, _ in kind_cases("f32")]


@pytest.mark.parametrize("dt,name", KIND_CASES)
def test_group_kind_matches_unfused(dt, name):
    (_, text, expected), = [c for c in kind_cases(dt) if c[0] == name]
    fused = weft_opt(text, "--weft-fuse-elementwise").stdout
    assert kinds(fused) == expected, fused
    # Only the matmul may stay outside a group.
    body = fused.split("weft.yield")[-1]
    assert not re.search(r"= weft\.(?!fused|matmul)", body.split("return")[0]), fused
    ref, inputs = run(text, "f")
    got, _ = run(fused, "f", inputs)
    assert_bitwise_equal(got, ref, f"{name}/{dt}")


#===-----------------------------------------------------------------------===#
# Training steps and the pipeline
#===-----------------------------------------------------------------------===#

_STEPS = {}


def reference(model):
    """The unfused AdamW step of `model` and its results on seeded inputs."""
    if model not in _STEPS:
        step = weft_opt(emit_module(MODELS[model]), "--weft-autodiff=optimizer=adamw").stdout
        results, inputs = run(step, "forward_step")
        _STEPS[model] = (step, results, inputs)
    return _STEPS[model]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_step_fused_bit_exact(model):
    step, ref, inputs = reference(model)
    fused = weft_opt(step, "--weft-fuse-elementwise").stdout
    found = kinds(fused)
    # Per layer at least one norm group with the residual, and every AdamW
    # update in its own group.
    norm = "rms_norm" if MODELS[model].norm == "rmsnorm" else "layer_norm"
    assert any(k.endswith("add+" + norm) for k in found), found
    assert sum(1 for k in found if k.endswith("adamw")) == step.count("weft.adamw ")
    assert "cross_entropy_grad" in " ".join(found)
    got, _ = run(fused, "forward_step", inputs)
    assert_bitwise_equal(got, ref, model)


def pipeline(model, options, fuse=True):
    """The training step through weft-train-pipeline (fused unless `fuse` is
    False) and its memory report."""
    tmp = tmpdir()
    report = os.path.join(tmp, "report.json")
    text = emit_module(MODELS[model])
    proc = weft_opt(text, f"--weft-train-pipeline=entry=forward optimizer=adamw "
                          f"fuse-elementwise={str(fuse).lower()} memory-report={report} "
                          f"{options}",
                    check=False)
    data = json.load(open(report)) if os.path.exists(report) else None
    return proc, data


@pytest.mark.parametrize("policy", ["none", "full", "selective", "block remat-layers=1"])
@pytest.mark.parametrize("model", ["gpt2", "llama2"])
def test_pipeline_policies_bit_exact(model, policy):
    _, ref, inputs = reference(model)
    proc, _ = pipeline(model, f"remat={policy}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "weft.fused" in proc.stdout
    if policy.startswith(("full", "block")):
        # Remat recomputes groups: cloned weft.fused ops carry weft.recompute.
        assert re.search(r"weft\.fused [^\n]*weft\.recompute", proc.stdout), policy
    got, _ = run(proc.stdout, "forward_step", inputs)
    assert_bitwise_equal(got, ref, f"{model}/{policy}")


@pytest.mark.parametrize("model", ["gpt2", "llama2"])
def test_pipeline_budget_peak_within_budget(model):
    _, ref, inputs = reference(model)
    proc, report = pipeline(model, "remat=none")
    assert proc.returncode == 0, proc.stderr[-4000:]
    unconstrained = report["peak_bytes"]
    # Against the unfused step: intermediates of a group are never stored, so
    # the peak does not grow; each group moves only its inputs and results,
    # so the roofline step time falls; FLOPs are the same.
    unfused_proc, unfused = pipeline(model, "remat=none", fuse=False)
    assert unfused_proc.returncode == 0 and "weft.fused" not in unfused_proc.stdout
    assert unconstrained <= unfused["peak_bytes"]
    assert report["step_time_estimate_s"] < unfused["step_time_estimate_s"]
    for key in ("forward_flops", "backward_flops", "optimizer_flops"):
        assert report[key] == unfused[key], key
    # The smallest reachable peak, from the infeasible-budget diagnostic.
    proc, _ = pipeline(model, "remat=budget memory-budget=1")
    assert proc.returncode != 0
    m = re.search(r"the smallest peak Weft can reach is (\d+) bytes", proc.stderr)
    assert m, proc.stderr[-2000:]
    floor = int(m.group(1))
    assert floor < unconstrained
    for budget in sorted({floor, (floor + unconstrained) // 2, unconstrained}):
        proc, report = pipeline(model, f"remat=budget memory-budget={budget}")
        assert proc.returncode == 0, f"budget {budget}: {proc.stderr[-2000:]}"
        peak = report["peak_bytes"]
        assert report["budget_bytes"] == budget and peak <= budget
        if budget == floor:
            # Remat decided on groups: some recomputed clones are groups.
            assert re.search(r"weft\.fused [^\n]*weft\.recompute", proc.stdout), f"planned peak {peak} > budget {budget}"
        # weft-plan-memory plans the same peak again, and the independent
        # simulator replays its plan (no overlap, same buffers and peak).
        tmp = tmpdir()
        path = os.path.join(tmp, "plan.json")
        planned = weft_opt(proc.stdout, f"--weft-plan-memory=report={path}").stdout
        with open(path) as f:
            plan = json.load(f)
        assert plan["functions"]["forward_step"]["peak_bytes"] == peak
        memsim.check_text(planned, plan)
        got, _ = run(proc.stdout, "forward_step", inputs)
        assert_bitwise_equal(got, ref, f"{model}/budget={budget}")
