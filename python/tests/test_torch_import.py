"""weft.torch_import: PyTorch modules imported as weft IR, run on weft-run's
reference interpreter with the module's parameters, and compared with the
module's eager float64 output. The blocks are written as their users write
them (nanoGPT, LLaMA), so the raised fused ops must be found in the IR."""
import inspect
import math
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from harness import rel_err, require_weft_run
from weft.torch_import import UnsupportedOp, import_module, run_reference

HIDDEN, HEADS, KV_HEADS, SEQ, BATCH = 64, 4, 2, 32, 2
F64_TOL = 1e-10


class NanoGPTBlock(nn.Module):
    """nanoGPT's Block: LayerNorm, causal SDPA, an MLP with GELU written out."""

    def __init__(self, d=HIDDEN, heads=HEADS):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def attention(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def mlp(self, x):
        h = self.c_fc(x)
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return self.mlp_proj(h)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    b, h, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class LlamaBlock(nn.Module):
    """LLaMA's decoder layer: RMSNorm, rotary (rotate_half), GQA, SwiGLU."""

    def __init__(self, d=HIDDEN, heads=HEADS, kv_heads=KV_HEADS, ffn=2 * HIDDEN):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.input_norm, self.post_norm = RMSNorm(d), RMSNorm(d)
        self.q_proj = nn.Linear(d, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        h = self.input_norm(x)
        q = self.q_proj(h).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = cos.unsqueeze(0).unsqueeze(0), sin.unsqueeze(0).unsqueeze(0)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        n_rep = self.heads // self.kv_heads
        y = F.scaled_dot_product_attention(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep),
                                           is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).reshape(B, T, C))
        h = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


def rotary_tables(seq, head_dim, dtype):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.outer(torch.arange(seq, dtype=torch.float64), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def randomized(module):
    """Random parameters (norm weights too, so a dropped weight shows)."""
    torch.manual_seed(1234)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 1.0))
    return module.eval()


def imported_and_checked(module, inputs):
    """Imports module(*inputs), runs it on weft-run and asserts it matches
    the module's eager float64 output; returns the IR text."""
    weft_run = require_weft_run()
    imported = import_module(module, inputs)
    (out,) = run_reference(imported, *inputs, weft_run=weft_run)
    ref = module.double()(*[t.double() if t.is_floating_point() else t for t in inputs])
    assert torch.isfinite(out).all(), "weft's result has non-finite entries"
    err = rel_err(out, ref)
    if inputs[0].dtype == torch.float64:
        assert err <= F64_TOL, f"f64: relative error {err:.3e} > {F64_TOL:g}"
    else:
        # f32: weft's error against float64 within 2x eager f32's (both
        # run from the same f32 parameters and inputs).
        module_f32 = module.float()
        eager = module_f32(*inputs)
        bound = 2 * rel_err(eager, ref) + 1e-7
        assert err <= bound, f"f32: relative error {err:.3e} > {bound:.3e}"
    return imported.text, imported.raised


def attention_heads(text):
    """(q heads, kv heads) of each weft.attention in the IR."""
    heads = []
    for line in text.splitlines():
        if "weft.attention " in line:
            types = re.findall(r"tensor<(\d+)x(\d+)x\d+x\d+x\w+>", line.split(":")[-1])
            heads.append((int(types[0][1]), int(types[1][1])))
    return heads


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_nanogpt_block(dtype):
    module = randomized(NanoGPTBlock()).to(dtype)
    x = torch.randn(BATCH, SEQ, HIDDEN, generator=torch.Generator().manual_seed(7), dtype=dtype)
    text, raised = imported_and_checked(module, (x,))
    assert 'weft.gelu' in text and 'approximate = "tanh"' in text
    # The formula's pieces are gone: no tanh, no pow-as-mul, no scale by 0.5.
    assert "weft.tanh" not in text and "weft.mul" not in text and "weft.scale" not in text
    assert text.count("weft.layer_norm") == 2
    assert attention_heads(text) == [(HEADS, HEADS)]
    assert re.search(r"weft\.attention .*\{causal\}", text)
    assert sorted(raised) == ["attention", "gelu(tanh)"]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_llama_block(dtype):
    module = randomized(LlamaBlock()).to(dtype)
    gen = torch.Generator().manual_seed(8)
    x = torch.randn(BATCH, SEQ, HIDDEN, generator=gen, dtype=dtype)
    cos, sin = rotary_tables(SEQ, HIDDEN // HEADS, dtype)
    text, raised = imported_and_checked(module, (x, cos, sin))
    assert text.count("weft.rms_norm") == 2
    assert text.count("weft.rope") == 2
    assert attention_heads(text) == [(HEADS, KV_HEADS)]
    # RMSNorm, rotate_half and repeat_kv leave none of their pieces behind.
    for piece in ("weft.rsqrt", "weft.reduce_mean", "weft.concat", "weft.neg", "weft.split"):
        assert piece not in text, piece
    assert "weft.silu" in text
    assert sorted(raised) == ["attention(gqa)", "rms_norm", "rms_norm", "rope", "rope"]


class OpZoo(nn.Module):
    """Mapped ops outside the two blocks, none raised."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 8)
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, ids, x):
        e = self.emb(ids)                                     # [2, 5, 8]
        s = torch.matmul(e, self.w) - 0.25                    # 2-d b
        s = torch.bmm(s, e.transpose(1, 2)) / 4.0             # [2, 5, 5]
        p = torch.softmax(s, dim=-1).sum(-1, keepdim=True)    # rows sum to 1
        a, b = x.chunk(2, dim=-1)                             # [2, 5, 4] each
        c = torch.cat([torch.exp(-a), F.gelu(b)], dim=-1) * p
        m = c.mean(dim=(0, 1))                                # [8]
        f = F.layer_norm(c.permute(1, 0, 2).flatten(1), (16,))
        g = (c * c).to(torch.float32).to(torch.float64)       # convert and back
        return f.sum() + m.sum() + g.pow(2).sum() + (1.0 - x).tanh().sum()


def test_mapped_ops():
    weft_run = require_weft_run()
    torch.manual_seed(3)
    module = OpZoo().double().eval()
    ids = torch.randint(0, 11, (2, 5))
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    imported = import_module(module, (ids, x))
    (out,) = run_reference(imported, ids, x, weft_run=weft_run)
    ref = module(ids, x)
    for op in ("embedding", "matmul", "softmax", "reduce_sum", "reduce_mean", "split",
               "concat", "exp", "neg", "gelu", "layer_norm", "transpose", "convert", "tanh",
               "sub", "scale"):
        assert f"weft.{op} " in imported.text, op
    assert imported.raised == []
    assert torch.isfinite(out).all()
    assert rel_err(out, ref) <= F64_TOL


class Sorts(nn.Module):
    def forward(self, x):
        y, _ = torch.sort(x, dim=-1)
        return y + 1.0


class PowByTensor(nn.Module):
    def forward(self, x):
        return x.pow(x) + x


def test_unsupported_op_names_op_and_line():
    with pytest.raises(UnsupportedOp) as error:
        import_module(Sorts(), (torch.randn(3, 4),))
    line = inspect.getsourcelines(Sorts.forward)[1] + 1
    message = str(error.value)
    assert "aten.sort" in message, message
    assert f"test_torch_import.py:{line}" in message and "torch.sort(x, dim=-1)" in message, message


def test_pow_by_a_tensor_is_unsupported():
    with pytest.raises(UnsupportedOp, match=r"aten\.pow\.Tensor_Tensor .*x\.pow\(x\)"):
        import_module(PowByTensor(), (torch.randn(3, 4),))


class NoGradOnParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        with torch.no_grad():
            s = self.w * 2.0
        return x * s


def test_no_grad_region_reading_a_parameter_is_unsupported():
    """Inlined, the region would let gradients reach w."""
    with pytest.raises(UnsupportedOp, match=r"torch\.no_grad\(\) region reading tensors.*"
                                             r"test_torch_import\.py:\d+ in forward: s = self\.w"):
        import_module(NoGradOnParameter(), (torch.randn(3, 4),))


class PointwiseAndLoss(nn.Module):
    """The generic pointwise ops (div by a tensor and by a constant's
    reciprocal, log, sqrt, pow by constants, sigmoid, cos, sin), a
    broadcasting expand, addmm (GPT-2's Conv1D), a constant pad, a region
    under torch.no_grad(), a causal mask built from arange (folded at import
    and raised to causal attention) and the loss in its three spellings."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 6))
        self.b = nn.Parameter(torch.randn(6))

    def forward(self, x, labels, q):
        rows = x.view(-1, 8)
        # A linear of w's transpose; with alpha != 1 a matmul, a scale and an add.
        y = (torch.addmm(self.b, rows, self.w)
             + torch.addmm(self.b, rows, self.w, alpha=0.5)).view(2, 5, 6)  # [2, 5, 6]
        with torch.no_grad():
            angle = torch.arange(6, dtype=x.dtype).view(1, 1, 6).expand(2, 5, 6)
        y = y * angle.cos() + y.sin() * y.cos()
        z = torch.log(y * y + 1.0) / torch.sqrt(y * y + 2.0) + torch.sigmoid(y).pow(3)
        z = z + (2.0 / (y.pow(2) + 1.0)) + (y * y + 0.5).pow(-1.5)
        pos = torch.arange(5)
        mask = pos[None, :] <= pos[:, None]                                 # causal, [5, 5]
        a = F.scaled_dot_product_attention(q, q, q, attn_mask=mask[None, None])
        logits = z.reshape(10, 6)
        shifted = F.pad(labels, (0, 1), value=-100)[..., 1:].reshape(-1)    # transformers' shift
        ce = F.cross_entropy(logits, shifted)
        nll = F.nll_loss(F.log_softmax(logits, dim=-1), labels.reshape(-1), ignore_index=2)
        return ce + nll + z.mean() + a.sum()


def test_pointwise_ops_and_losses():
    weft_run = require_weft_run()
    torch.manual_seed(7)
    module = PointwiseAndLoss().double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    labels = torch.randint(0, 6, (2, 5))
    labels[0, 0] = 2  # an ignored position for the nll_loss spelling
    q = torch.randn(1, 2, 5, 4, dtype=torch.float64)
    imported = import_module(module, (x, labels, q))
    for op in ("div", "log", "sqrt", "pow", "sigmoid", "cos", "sin", "matmul", "linear",
               "transpose", "scale", "concat"):
        assert f"weft.{op} " in imported.text, op
    assert "exponent = -1.5" in imported.text and "exponent = 3.0" in imported.text
    assert "ignore_index = -100 : i64" in imported.text and "ignore_index = 2 : i64" in imported.text
    assert "causal" in imported.text and imported.raised.count("cross_entropy") == 1
    (out,) = run_reference(imported, x, labels, q, weft_run=weft_run)
    assert rel_err(out, module(x, labels, q)) <= F64_TOL


class HFRMSNorm(nn.Module):
    """transformers' LlamaRMSNorm: the statistics in f32, weight on the left."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(d)), eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class PatternVariants(nn.Module):
    """The raised patterns in other spellings: HF's RMSNorm, a weightless
    RMSNorm, rotate_half by chunk with the products reversed, GQA by
    repeat_interleave, GELU with x*x*x and the constant as a literal."""

    def __init__(self, d=HIDDEN, heads=HEADS, kv_heads=KV_HEADS):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.norm = HFRMSNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.kv_proj = nn.Linear(d, 2 * kv_heads * self.head_dim, bias=False)

    @staticmethod
    def rotate(x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        return sin * torch.cat((-x2, x1), dim=-1) + cos * x

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        h = self.norm(x)
        q = self.q_proj(h).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        kv = self.kv_proj(h).view(B, T, 2 * self.kv_heads, self.head_dim).transpose(1, 2)
        k, v = kv.chunk(2, dim=1)
        n_rep = self.heads // self.kv_heads
        y = F.scaled_dot_product_attention(
            self.rotate(q, cos, sin), self.rotate(k, cos, sin).repeat_interleave(n_rep, dim=1),
            v.repeat_interleave(n_rep, dim=1), is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, C)
        y = y * torch.rsqrt(torch.mean(y * y, dim=-1, keepdim=True) + 1e-5)
        return y * 0.5 * (1.0 + torch.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))


def test_pattern_variants_are_raised():
    weft_run = require_weft_run()
    module = randomized(PatternVariants())
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(BATCH, SEQ, HIDDEN, generator=gen)
    cos, sin = rotary_tables(SEQ, HIDDEN // HEADS, torch.float32)
    imported = import_module(module, (x, cos, sin))
    assert sorted(imported.raised) == ["attention(gqa)", "gelu(tanh)", "rms_norm", "rms_norm",
                                       "rope", "rope"], imported.raised
    assert attention_heads(imported.text) == [(HEADS, KV_HEADS)]
    for piece in ("weft.rsqrt", "weft.tanh", "weft.concat", "weft.mul "):
        assert piece not in imported.text, piece
    (out,) = run_reference(imported, x, cos, sin, weft_run=weft_run)
    eager = module(x, cos, sin)
    assert torch.isfinite(out).all()
    assert rel_err(out, eager) <= 1e-5, rel_err(out, eager)


class AutocastGelu(nn.Module):
    """HF's NewGELUActivation between two bf16 linears as CUDA autocast runs
    it: pow's operand cast to f32, x + 0.044715 x^3 and 0.5 * x promoted."""

    def __init__(self):
        super().__init__()
        self.fc, self.proj = nn.Linear(16, 32), nn.Linear(32, 16)

    def forward(self, x):
        h = self.fc(x)
        g = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                        * (h + 0.044715 * torch.pow(h.float(), 3.0))))
        return self.proj(g.to(h.dtype))


def test_tanh_gelu_under_autocast_is_raised_in_f32():
    weft_run = require_weft_run()
    module = randomized(AutocastGelu()).to(torch.bfloat16)
    x = torch.randn(BATCH, SEQ, 16, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    imported = import_module(module, (x,))
    assert imported.raised == ["gelu(tanh)"], imported.raised
    assert 'weft.gelu %' in imported.text and "tensor<2x32x32xf32>) -> tensor<2x32x32xf32>" \
        in imported.text.split("weft.gelu")[1].split("\n")[0]
    for piece in ("weft.tanh", "weft.pow"):
        assert piece not in imported.text, piece
    (out,) = run_reference(imported, x, weft_run=weft_run)
    exact = module.double()(x.double())  # the formula in float64
    assert rel_err(out.double(), exact) <= 2e-2, rel_err(out.double(), exact)


class MoreOps(nn.Module):
    """SDPA with enable_gqa and a scale f32 cannot hold, F.rms_norm, a
    buffer and a lifted constant (argument order), unbind/select/slice,
    amax, squeeze and a constant minus a tensor."""

    def __init__(self):
        super().__init__()
        self.gamma = nn.Parameter(torch.randn(16))
        self.register_buffer("shift", torch.randn(16))

    def forward(self, q, k, v, x):
        a = F.scaled_dot_product_attention(q, k, v, scale=0.3, enable_gqa=True)
        r = F.rms_norm(x, (16,), self.gamma, eps=1e-5) + self.shift
        u = x.unbind(0)[1] - x.select(1, 2).unsqueeze(1)[0]
        t = x[:, -3:].amax(dim=1, keepdim=True).squeeze(1)
        return (a.sum() + r.mean() + (2.0 - u).sum() + t.sum()
                + torch.tensor(1.5, dtype=torch.float64) * x.sum())


def test_more_mapped_ops_and_argument_order():
    weft_run = require_weft_run()
    torch.manual_seed(5)
    module = MoreOps().double()
    inputs = (torch.randn(2, 4, 8, 16, dtype=torch.float64),
              torch.randn(2, 2, 8, 16, dtype=torch.float64),
              torch.randn(2, 2, 8, 16, dtype=torch.float64),
              torch.randn(3, 5, 16, dtype=torch.float64))
    imported = import_module(module, inputs)
    assert [a.kind for a in imported.arguments] == \
        ["parameter", "buffer", "constant", "input", "input", "input", "input"]
    assert [a.target for a in imported.arguments[:2]] == ["gamma", "shift"]
    assert attention_heads(imported.text) == [(4, 2)]
    assert "weft.rms_norm" in imported.text and "weft.reduce_max" in imported.text
    (out,) = run_reference(imported, *inputs, weft_run=weft_run)
    assert torch.isfinite(out).all()
    assert rel_err(out, module(*inputs)) <= F64_TOL


class MiniGPT(nn.Module):
    """nanoGPT's GPT at a small size: token and position embeddings (the
    positions from torch.arange, folded to a constant), blocks, the final
    LayerNorm and an lm_head tied to the token embedding."""

    def __init__(self, vocab=50, layers=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, HIDDEN), nn.Embedding(SEQ, HIDDEN)
        self.h = nn.ModuleList(NanoGPTBlock() for _ in range(layers))
        self.ln_f = nn.LayerNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, vocab, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def test_mini_gpt_with_tied_weights():
    weft_run = require_weft_run()
    module = randomized(MiniGPT()).double()
    idx = torch.randint(0, 50, (BATCH, SEQ), generator=torch.Generator().manual_seed(11))
    imported = import_module(module, (idx,))
    # The embedding and the lm_head read one argument for the tied table
    # (torch.export lists the tied weight under both names; one goes unread).
    table = re.search(r"weft\.embedding %idx, %([\w.]+) ", imported.text).group(1)
    assert re.search(rf"weft\.linear %[\w.]+, %{table} :", imported.text)
    # wpe(arange(T)) is the table's first T rows, not a gather of an i64
    # constant (a package holds no i64 constants).
    assert "arith.constant dense<[0, 1, 2" not in imported.text
    assert imported.raised.count("gelu(tanh)") == 2
    (out,) = run_reference(imported, idx, weft_run=weft_run)
    assert torch.isfinite(out).all()
    assert rel_err(out, module(idx)) <= F64_TOL


class DecodeSdpa(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def test_is_causal_with_unequal_lengths_is_unsupported():
    """SDPA's is_causal is top-left; weft.attention's causal is bottom-right,
    the same mask only when q and k lengths are equal."""
    q, k = torch.randn(1, 2, 2, 8), torch.randn(1, 2, 6, 8)
    with pytest.raises(UnsupportedOp, match=r"is_causal with q length != k length"):
        import_module(DecodeSdpa(), (q, k, k))


class AutocastRegions(nn.Module):
    """A region with autocast disabled (as transformers' LLaMA rotary
    embedding writes it; torch.export keeps it as wrap_with_autocast)."""

    def __init__(self, enabled=False):
        super().__init__()
        self.proj, self.enabled = nn.Linear(8, 8), enabled

    def forward(self, x):
        with torch.autocast("cpu", enabled=self.enabled):
            y = x.float().cos()
        return self.proj(x) + y


def test_autocast_disabled_region_is_inlined():
    weft_run = require_weft_run()
    module = randomized(AutocastRegions()).double()
    x = torch.randn(2, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    imported = import_module(module, (x,))
    assert "wrap_with_autocast" not in imported.text and "weft.cos" in imported.text
    (out,) = run_reference(imported, x, weft_run=weft_run)
    assert rel_err(out, module(x)) <= 1e-6  # the region computes in f32


def test_autocast_enabled_region_is_refused():
    module = AutocastRegions(enabled=True).double()
    with pytest.raises(UnsupportedOp, match="autocast region enabled inside the model"):
        import_module(module, (torch.randn(2, 8, dtype=torch.float64),))


class AutocastRotary(nn.Module):
    """HF LLaMA's rotary step as autocast leaves it: bf16 q and k (from the
    projections) times f32 cos/sin tables, the sum in f32, then two linears
    reading one f32 activation (autocast converts it for each)."""

    def __init__(self):
        super().__init__()
        self.q, self.k = nn.Linear(16, 16, bias=False), nn.Linear(16, 16, bias=False)

    def forward(self, x, cos, sin):
        def rotate_half(t):
            return torch.cat((-t[..., 8:], t[..., :8]), dim=-1)
        q, k = self.q(x), self.k(x)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        return q + k


def test_autocast_rope_is_raised_in_f32():
    """bf16 x with f32 tables is one weft.rope on x converted to f32 (exact),
    and x is converted to bf16 once for both linears."""
    weft_run = require_weft_run()
    module = randomized(AutocastRotary())
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(2, 6, 16, generator=gen)
    cos, sin = rotary_tables(6, 16, torch.float32)
    # Autocast around the call, as torch.compile sees it.
    with torch.autocast("cpu", dtype=torch.bfloat16):
        imported = import_module(module, (x, cos, sin))
        eager = module(x, cos, sin)
    text = imported.text
    assert sorted(imported.raised) == ["rope", "rope"], imported.raised
    for piece in ("weft.neg", "weft.concat", "weft.split"):
        assert piece not in text, piece
    assert re.search(r"weft\.rope .*-> tensor<2x6x16xf32>", text)
    assert len(re.findall(r"weft\.convert %x\b", text)) == 1, text
    (out,) = run_reference(imported, x, cos, sin, weft_run=weft_run)
    # bf16 projections: the GEMMs may round an element of q or k one bf16
    # ulp apart from eager's, nothing more.
    assert rel_err(out, eager) <= 1e-2


class RoundTrip(nn.Module):
    """A bf16 value widened to f32 and narrowed back (HF LLaMA's v under
    autocast): the same bf16 value, no conversion."""

    def forward(self, x):
        return x.float().to(torch.bfloat16) * 2 + x.float().to(torch.float16).to(torch.bfloat16)


def test_widen_then_narrow_back_is_no_convert():
    weft_run = require_weft_run()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    imported = import_module(RoundTrip(), (x,))
    converts = re.findall(r"weft\.convert .*", imported.text)
    # Only the f16 detour converts (f32 -> f16 rounds, f16 -> bf16 too).
    assert len(converts) == 3 and not any("-> tensor<4x8xbf16>" in c and "f32>)" in c
                                          for c in converts), converts
    (out,) = run_reference(imported, x, weft_run=weft_run)
    assert torch.equal(out, RoundTrip()(x))
