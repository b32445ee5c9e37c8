"""The arguments of a generated model's @forward, in order: the parameters
(names as in the PyTorch module), then token ids, labels, the RoPE tables
when used, and the dropout seed; and their values for a given config."""
from dataclasses import dataclass

import numpy as np
import torch

from weft.npz import TORCH_DTYPES


@dataclass(frozen=True)
class ArgSpec:
    name: str          # parameter name in the PyTorch module, or an input's name
    shape: tuple
    dtype: str         # weft element type
    kind: str          # param | ids | labels | hidden | rope_cos | rope_sin | seed
    init: str = ""     # how a parameter is drawn (see draw_parameter)
    range: tuple = None  # valid half-open range of an integer input

    @property
    def is_param(self):
        return self.kind == "param"


def _linear(prefix, out_features, in_features, config, dtype, bias=None):
    specs = [ArgSpec(f"{prefix}.weight", (out_features, in_features), dtype, "param", "linear")]
    if config.bias if bias is None else bias:
        specs.append(ArgSpec(f"{prefix}.bias", (out_features,), dtype, "param", "bias"))
    return specs


def _norm(prefix, config, dtype):
    specs = [ArgSpec(f"{prefix}.weight", (config.hidden,), dtype, "param", "norm_weight")]
    if config.norm == "layernorm":
        specs.append(ArgSpec(f"{prefix}.bias", (config.hidden,), dtype, "param", "bias"))
    return specs


def parameter_specs(config):
    c, dt = config, config.dtype
    tokens = c.loss == "cross_entropy"
    specs = [ArgSpec("tok_emb.weight", (c.vocab, c.hidden), dt, "param", "embedding")] \
        if tokens else []
    if c.pos_embedding:
        specs.append(ArgSpec("pos_emb.weight", (c.seq, c.hidden), dt, "param", "embedding"))
    qkv_rows = (c.heads + 2 * c.kv_heads) * c.head_dim
    for i in range(c.layers):
        p = f"layers.{i}"
        specs += _norm(f"{p}.norm1", c, dt)
        specs += _linear(f"{p}.attn.qkv", qkv_rows, c.hidden, c, dt)
        specs += _linear(f"{p}.attn.proj", c.hidden, c.hidden, c, dt)
        specs += _norm(f"{p}.norm2", c, dt)
        if c.mlp == "gelu":
            specs += _linear(f"{p}.mlp.fc1", c.ffn_hidden, c.hidden, c, dt)
            specs += _linear(f"{p}.mlp.fc2", c.hidden, c.ffn_hidden, c, dt)
        else:
            specs += _linear(f"{p}.mlp.gate", c.ffn_hidden, c.hidden, c, dt)
            specs += _linear(f"{p}.mlp.up", c.ffn_hidden, c.hidden, c, dt)
            specs += _linear(f"{p}.mlp.down", c.hidden, c.ffn_hidden, c, dt)
    if tokens:
        specs += _norm("norm_f", c, dt)
        specs += _linear("lm_head", c.vocab, c.hidden, c, dt, bias=False)
    return specs


def argument_specs(config):
    c = config
    specs = parameter_specs(c)
    if c.loss != "cross_entropy":
        specs.append(ArgSpec("x", (c.batch, c.seq, c.hidden), c.dtype, "hidden"))
    else:
        specs.append(ArgSpec("ids", (c.batch, c.seq), "i64", "ids", range=(0, c.vocab)))
        specs.append(ArgSpec("labels", (c.batch, c.seq), "i64", "labels", range=(0, c.vocab)))
    if c.rope:
        specs.append(ArgSpec("rope_cos", (c.seq, c.head_dim), c.dtype, "rope_cos"))
        specs.append(ArgSpec("rope_sin", (c.seq, c.head_dim), c.dtype, "rope_sin"))
    specs.append(ArgSpec("seed", (), "i64", "seed"))
    return specs


def draw_parameter(rng, spec):
    """float64 values: sizes chosen so activations and logits are O(1) and the
    loss is far from log(vocab), which makes numerical comparisons telling."""
    if spec.init == "embedding":
        return rng.standard_normal(spec.shape)
    if spec.init == "linear":
        return rng.standard_normal(spec.shape) / np.sqrt(spec.shape[1])
    if spec.init == "bias":
        return 0.1 * rng.standard_normal(spec.shape)
    if spec.init == "norm_weight":
        return 1.0 + 0.1 * rng.standard_normal(spec.shape)
    raise ValueError(f"unknown init {spec.init!r} for {spec.name}")


def rope_tables(seq, head_dim, base):
    """LLaMA's cos/sin tables [seq, head_dim] (rotate_half layout), float64."""
    inv_freq = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(seq, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=-1)
    return np.cos(angles), np.sin(angles)


def argument_values(config, specs=None):
    """Torch tensors in the specs' element types (floats rounded once from
    float64 draws), in argument order."""
    specs = specs or argument_specs(config)
    rng = np.random.default_rng(config.init_seed)
    cos, sin = rope_tables(config.seq, config.head_dim, config.rope_base)
    values = []
    for spec in specs:
        if spec.is_param:
            array = draw_parameter(rng, spec)
        elif spec.kind in ("ids", "labels"):
            array = rng.integers(spec.range[0], spec.range[1], size=spec.shape, dtype=np.int64)
        elif spec.kind == "hidden":
            array = rng.standard_normal(spec.shape)
        elif spec.kind == "rope_cos":
            array = cos
        elif spec.kind == "rope_sin":
            array = sin
        elif spec.kind == "seed":
            array = np.array(config.dropout_seed, dtype=np.int64)
        else:
            raise ValueError(f"unknown argument kind {spec.kind!r}")
        values.append(torch.from_numpy(np.asarray(array)).to(TORCH_DTYPES[spec.dtype]))
    return values
