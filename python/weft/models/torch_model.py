"""The generated model as a torch.nn.Module: the same parameters (names and
order of the IR's @forward arguments) and the same loss. Dropout draws weft's
Philox masks (weft.philox), so with dropout > 0 it still matches weft, not
PyTorch's own dropout."""
import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn

from weft import philox
from weft.models.arguments import argument_specs


def weft_dropout(x, p, seed, rng_id):
    if p == 0.0:
        return x
    keep = torch.from_numpy(philox.keep_mask(tuple(x.shape), p, int(seed), rng_id)).to(x.device)
    return torch.where(keep, x * (1.0 / (1.0 - p)), torch.zeros((), dtype=x.dtype, device=x.device))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class PositionEmbedding(nn.Module):
    def __init__(self, seq, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(seq, hidden))


def make_norm(config):
    if config.norm == "layernorm":
        return nn.LayerNorm(config.hidden, eps=config.eps)
    return nn.RMSNorm(config.hidden, eps=config.eps)


class Attention(nn.Module):
    def __init__(self, config, layer):
        super().__init__()
        self.c, self.layer = config, layer
        rows = (config.heads + 2 * config.kv_heads) * config.head_dim
        self.qkv = nn.Linear(config.hidden, rows, bias=config.bias)
        self.proj = nn.Linear(config.hidden, config.hidden, bias=config.bias)
        # Causal attention without dropout; a caller may put a memory-lean
        # one here (a float64 reference at long sequences).
        self.sdpa = F.scaled_dot_product_attention

    def forward(self, x, rope, seed):
        c = self.c
        b, s, _ = x.shape
        qkv = self.qkv(x).view(b, s, c.kv_heads, c.group + 2, c.head_dim)
        q = qkv[:, :, :, :c.group].reshape(b, s, c.heads, c.head_dim).transpose(1, 2)
        k = qkv[:, :, :, c.group].transpose(1, 2)
        v = qkv[:, :, :, c.group + 1].transpose(1, 2)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        if c.dropout == 0.0:
            o = self.sdpa(q, k, v, is_causal=True, enable_gqa=c.group > 1)
        else:
            k = k.repeat_interleave(c.group, dim=1)
            v = v.repeat_interleave(c.group, dim=1)
            scores = (q @ k.transpose(-1, -2)) * c.head_dim ** -0.5
            causal = torch.ones(s, s, dtype=torch.bool, device=scores.device).triu(1)
            probs = scores.masked_fill(causal, float("-inf")).softmax(-1)
            probs = weft_dropout(probs, c.dropout, seed, c.rng_id("attn_probs", self.layer))
            o = probs @ v
        o = self.proj(o.transpose(1, 2).reshape(b, s, c.hidden))
        return weft_dropout(o, c.dropout, seed, c.rng_id("attn_out", self.layer))


class MLP(nn.Module):
    def __init__(self, config, layer):
        super().__init__()
        self.c, self.layer = config, layer
        h, f, bias = config.hidden, config.ffn_hidden, config.bias
        if config.mlp == "gelu":
            self.fc1, self.fc2 = nn.Linear(h, f, bias=bias), nn.Linear(f, h, bias=bias)
        else:
            self.gate, self.up = nn.Linear(h, f, bias=bias), nn.Linear(h, f, bias=bias)
            self.down = nn.Linear(f, h, bias=bias)

    def forward(self, x, seed):
        if self.c.mlp == "gelu":
            out = self.fc2(F.gelu(self.fc1(x), approximate="tanh"))
        else:
            out = self.down(F.silu(self.gate(x)) * self.up(x))
        return weft_dropout(out, self.c.dropout, seed, self.c.rng_id("mlp_out", self.layer))


class Block(nn.Module):
    def __init__(self, config, layer):
        super().__init__()
        self.norm1 = make_norm(config)
        self.attn = Attention(config, layer)
        self.norm2 = make_norm(config)
        self.mlp = MLP(config, layer)

    def forward(self, x, rope, seed):
        x = x + self.attn(self.norm1(x), rope, seed)
        return x + self.mlp(self.norm2(x), seed)


class Transformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c = config
        tokens = config.loss == "cross_entropy"
        if tokens:
            self.tok_emb = nn.Embedding(config.vocab, config.hidden)
        if config.pos_embedding:
            self.pos_emb = PositionEmbedding(config.seq, config.hidden)
        self.layers = nn.ModuleList(Block(config, i) for i in range(config.layers))
        self.checkpoint_blocks = False  # recompute each block in the backward
        if tokens:
            self.norm_f = make_norm(config)
            self.lm_head = nn.Linear(config.hidden, config.vocab, bias=False)
        names = [n for n, _ in self.named_parameters()]
        expected = [s.name for s in argument_specs(config) if s.is_param]
        assert names == expected, f"module parameters {names} != IR parameters {expected}"

    def forward(self, ids, labels, rope_cos=None, rope_sin=None, seed=0):
        """ids and labels; with loss mean_square, ids is the hidden-state input x
        (labels unused) and the loss is mean(x_out^2) in float32 (float64 for
        a float64 model)."""
        c = self.c
        if c.loss != "cross_entropy":
            rope = (rope_cos, rope_sin) if c.rope else None
            x = ids
            for block in self.layers:
                x = torch.utils.checkpoint.checkpoint(block, x, rope, seed, use_reentrant=False) \
                    if self.checkpoint_blocks else block(x, rope, seed)
            return x.to(torch.promote_types(x.dtype, torch.float32)).pow(2).mean()
        x = self.tok_emb(ids)
        if c.pos_embedding:
            x = x + self.pos_emb.weight
        x = weft_dropout(x, c.dropout, seed, c.rng_id("embedding"))
        rope = (rope_cos, rope_sin) if c.rope else None
        for block in self.layers:
            x = block(x, rope, seed)
        logits = self.lm_head(self.norm_f(x))
        return F.cross_entropy(logits.reshape(-1, c.vocab), labels.reshape(-1))

    def load_arguments(self, values):
        """Copies the parameter values (argument order) into the module."""
        params = list(self.parameters())
        with torch.no_grad():
            for param, value in zip(params, values[:len(params)], strict=True):
                param.copy_(value)
        return self

    def loss_from_arguments(self, values, dtype):
        """The loss for @forward's argument values, computed in `dtype`."""
        self.to(dtype).load_arguments([v.to(dtype) for v in values])
        inputs = {}
        for spec, value in zip(argument_specs(self.c), values, strict=True):
            if spec.is_param:
                continue
            inputs[spec.kind] = value.to(dtype) if value.is_floating_point() else value
        with torch.no_grad():
            if self.c.loss != "cross_entropy":
                return self(inputs["hidden"], None, inputs.get("rope_cos"),
                            inputs.get("rope_sin"), int(inputs["seed"]))
            return self(inputs["ids"], inputs["labels"], inputs.get("rope_cos"),
                        inputs.get("rope_sin"), int(inputs["seed"]))


def reference_loss(config, values, dtype):
    """PyTorch's loss for the argument values, in `dtype`."""
    torch.manual_seed(0)  # module construction draws initial values; overwritten
    return Transformer(config).loss_from_arguments(values, dtype)
