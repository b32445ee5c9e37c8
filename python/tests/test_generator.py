"""The model generator: its IR verifies with weft-opt, carries the promised
attributes, matches the PyTorch module's parameters, the CLI writes the
promised files, and the committed examples are what it produces now."""
import os
import re
import subprocess
import sys

import pytest
import torch

from harness import REPO
from weft import npz
from weft.models import PRESETS, emit_module
from weft.models.arguments import argument_specs
from weft.models.torch_model import Transformer

VARIANTS = {
    **{name: config for name, config in PRESETS.items()},
    "gpt_unfused_bf16": PRESETS["gpt_block"].replace(attention="unfused", dtype="bf16"),
    "llama_unfused_mqa": PRESETS["llama_block"].replace(attention="unfused", kv_heads=1),
    "llama_dropout_f16": PRESETS["llama_block"].replace(dropout=0.2, dtype="f16", layers=3),
    "gpt_f64_no_bias": PRESETS["gpt_block"].replace(dtype="f64", bias=False),
}


def weft_opt():
    build = os.environ.get("WEFT_BUILD_DIR", os.path.join(REPO, "build"))
    path = os.path.join(build, "bin", "weft-opt")
    if not os.access(path, os.X_OK):
        pytest.skip(f"weft-opt is not built ({path} missing)")
    return path


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_ir_verifies(tmp_path, name):
    path = tmp_path / "model.mlir"
    path.write_text(emit_module(VARIANTS[name]))
    proc = subprocess.run([weft_opt(), str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


OP_LINE = re.compile(r"^\s*(%\S.*?) = weft\.(\w+) (.*)$")


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_ir_attributes(name):
    config = VARIANTS[name]
    text = emit_module(config)
    specs = argument_specs(config)
    header = text[text.index("func.func @forward("):text.index(") -> ")]
    arg_lines = [l for l in header.splitlines()[1:] if l.strip()]
    assert len(arg_lines) == len(specs)
    for i, (line, spec) in enumerate(zip(arg_lines, specs)):
        assert line.rstrip().endswith(f"// arg{i}")
        assert ("{weft.param}" in line) == spec.is_param, line
        if spec.kind in ("ids", "labels"):
            assert f"weft.range = array<i64: 0, {config.vocab}>" in line
    rng_ids, layer = [], None
    for line in text.splitlines():
        m = re.match(r"\s*// layer (\d+):", line)
        if m:
            layer = int(m.group(1))
        if line.strip().startswith("// head"):
            layer = None
        op = OP_LINE.match(line)
        if not op:
            continue
        layer_attr = re.search(r"weft\.layer = (\d+) : i64", line)
        assert (int(layer_attr.group(1)) if layer_attr else None) == layer, line
        rng = re.search(r"weft\.rng_id = (\d+) : i64", line)
        random = op.group(2) == "dropout" or (op.group(2) == "attention" and "dropout_p" in line)
        assert bool(rng) == random, line
        if rng:
            rng_ids.append(int(rng.group(1)))
    assert len(rng_ids) == len(set(rng_ids)), f"rng_ids not unique: {rng_ids}"
    sites_per_layer = 3 if config.dropout > 0 else 0
    assert len(rng_ids) == (1 + sites_per_layer * config.layers if config.dropout > 0 else 0)
    assert len(re.findall(r"// layer \d+: ", text)) == 2 * config.layers
    assert ("weft.attention " in text) == (config.attention == "fused")


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_torch_module_parameters_match_ir(name):
    config = VARIANTS[name]
    module = Transformer(config)
    specs = [s for s in argument_specs(config) if s.is_param]
    assert [(n, tuple(p.shape)) for n, p in module.named_parameters()] == \
        [(s.name, s.shape) for s in specs]


@pytest.mark.parametrize("name", ["gpt_block", "llama_block"])
def test_committed_example_is_current(name):
    path = os.path.join(REPO, "examples", f"{name}.mlir")
    with open(path) as f:
        committed = f.read()
    assert committed == emit_module(PRESETS[name], name), (
        f"examples/{name}.mlir is stale: regenerate with `PYTHONPATH=python python -m "
        f"weft.models --preset {name} --emit-only > examples/{name}.mlir`")


def test_cli_writes_model_inputs_and_expected(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    cmd = [sys.executable, "-m", "weft.models", "--preset", "llama_block", "--dtype", "bf16",
           "--layers", "2", "--kv-heads", "1", "--out-dir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    names = sorted(os.listdir(tmp_path))
    assert names == ["expected.npz", "expected_bf16.npz", "inputs.npz", "model.mlir"]
    config = PRESETS["llama_block"].replace(dtype="bf16", layers=2, kv_heads=1)
    assert (tmp_path / "model.mlir").read_text() == emit_module(config)
    inputs = npz.load(tmp_path / "inputs.npz")
    specs = argument_specs(config)
    assert list(inputs) == [f"arg{i}" for i in range(len(specs))]
    for i, spec in enumerate(specs):
        t = inputs[f"arg{i}"]
        assert tuple(t.shape) == spec.shape and npz.NAME_OF_TORCH_DTYPE[t.dtype] == spec.dtype
    expected = npz.load(tmp_path / "expected.npz")["res0"]
    expected_bf16 = npz.load(tmp_path / "expected_bf16.npz")["res0"]
    assert expected.dtype == torch.float64 and expected_bf16.dtype == torch.bfloat16
    assert abs(expected.item() - expected_bf16.item()) < 0.05 * abs(expected.item())


def test_cli_rejects_bad_config(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    cmd = [sys.executable, "-m", "weft.models", "--preset", "gpt_block", "--kv-heads", "3",
           "--out-dir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode != 0 and "kv_heads must divide heads" in proc.stderr
