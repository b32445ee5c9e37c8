"""Writes one generated model: DIR/model.mlir, DIR/inputs.npz (arg<i>) and
PyTorch's loss as DIR/expected.npz (float64) and, for a lower-precision model,
DIR/expected_<dtype>.npz (computed in that dtype from the same inputs)."""
import os

import torch

from weft import npz
from weft.models.arguments import argument_values
from weft.models.emitter import emit_module
from weft.models.torch_model import reference_loss


def write_model(config, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    paths = {"model": os.path.join(out_dir, "model.mlir"),
             "inputs": os.path.join(out_dir, "inputs.npz"),
             "expected": os.path.join(out_dir, "expected.npz")}
    with open(paths["model"], "w") as f:
        f.write(emit_module(config))
    values = argument_values(config)
    npz.save(paths["inputs"], {f"arg{i}": v for i, v in enumerate(values)})
    npz.save(paths["expected"], {"res0": reference_loss(config, values, torch.float64)})
    if config.dtype != "f64":
        key = f"expected_{config.dtype}"
        paths[key] = os.path.join(out_dir, f"{key}.npz")
        dtype = npz.TORCH_DTYPES[config.dtype]
        npz.save(paths[key], {"res0": reference_loss(config, values, dtype)})
    return paths
