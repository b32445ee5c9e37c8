"""Generated models through weft-run against the PyTorch module: float64
losses to 1e-10 (GPT block, LLaMA block, fused and unfused attention, with and
without dropout), and bf16 blocks by the 2x rule."""
import numpy as np
import pytest
import torch

from harness import F64_TOL, rel_err, run_ir
from weft import npz
from weft.models import PRESETS, write_model


def run_model(config, tmp_path):
    paths = write_model(config, str(tmp_path))
    inputs = npz.ordered(npz.load(paths["inputs"]), "arg")
    with open(paths["model"]) as f:
        (loss,) = run_ir(f.read(), inputs, entry="forward")
    assert loss.shape == () and npz.NAME_OF_TORCH_DTYPE[loss.dtype] == config.dtype
    expected = {name[len("expected_"):] if name != "expected" else "f64": npz.load(path)["res0"]
                for name, path in paths.items() if name.startswith("expected")}
    return loss, expected


F64_CASES = {
    "gpt_block": PRESETS["gpt_block"].replace(dropout=0.0),
    "gpt_block_unfused": PRESETS["gpt_block"].replace(dropout=0.0, attention="unfused"),
    "llama_block": PRESETS["llama_block"],
    "llama_block_unfused": PRESETS["llama_block"].replace(attention="unfused"),
    "llama_mqa_2_layers": PRESETS["llama_block"].replace(kv_heads=1, layers=2),
    # Dropout 0.1 everywhere: the PyTorch module draws weft's Philox masks.
    "gpt_block_dropout": PRESETS["gpt_block"],
    "gpt_block_dropout_unfused": PRESETS["gpt_block"].replace(attention="unfused"),
    "tiny_gpt": PRESETS["tiny_gpt"],
    # The remat anchor's block stack: hidden states in, mean of squares out.
    "anchor_mean_square": PRESETS["gpt_block"].replace(
        dropout=0.0, layers=2, pos_embedding=False, loss="mean_square"),
    "anchor_mean_square_dot": PRESETS["gpt_block"].replace(
        dropout=0.0, layers=2, pos_embedding=False, loss="mean_square_dot"),
}


@pytest.mark.parametrize("name", sorted(F64_CASES))
def test_model_f64(tmp_path, name):
    loss, expected = run_model(F64_CASES[name].replace(dtype="f64"), tmp_path)
    err = rel_err(loss, expected["f64"])
    assert err <= F64_TOL, f"{name}: loss {loss.item()!r} vs PyTorch {expected['f64'].item()!r}, " \
                           f"relative error {err:.3e}"


BF16_HALF_ULP = 2.0 ** -9  # relative half unit in the last place of bfloat16


@pytest.mark.parametrize("name", ["gpt_block", "llama_block"])
@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_model_low_precision(tmp_path, name, dtype):
    config = PRESETS[name].replace(dtype=dtype, dropout=0.0)
    loss, expected = run_model(config, tmp_path)
    err = rel_err(loss, expected["f64"])
    err_torch = rel_err(expected[dtype], expected["f64"])
    # The 2x rule, plus half an ulp of the result type: a 0-d result is one
    # rounded number, so even a perfect computation may be that far off, while
    # PyTorch's rounding can land nearer by luck (over a whole tensor the max
    # error averages such luck out; over one number it does not).
    half_ulp = BF16_HALF_ULP if dtype == "bf16" else 2.0 ** -24
    assert err <= 2 * err_torch + half_ulp, (
        f"{name} {dtype}: loss {loss.item()!r}, float64 {expected['f64'].item()!r}, "
        f"PyTorch {dtype} {expected[dtype].item()!r}: error {err:.3e} > "
        f"2 x {err_torch:.3e} + {half_ulp:.1e}")


def test_loss_is_not_trivial():
    # The comparison means something only if the loss depends on the inputs:
    # far from log(vocab) (uniform logits), and different for another seed.
    from weft.models.arguments import argument_values
    from weft.models.torch_model import reference_loss
    config = PRESETS["llama_block"].replace(dtype="f64")
    a = reference_loss(config, argument_values(config), torch.float64).item()
    other = config.replace(init_seed=1)
    b = reference_loss(other, argument_values(other), torch.float64).item()
    assert abs(a - np.log(config.vocab)) > 0.1 and abs(a - b) > 1e-3
