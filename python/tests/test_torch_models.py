"""Whole language models through torch.compile(backend="weft") on CPU,
with the loss computed inside the compiled graph: nanoGPT's GPT (written as
Karpathy's model.py writes it), and transformers' LlamaForCausalLM and
GPT2LMHeadModel at small random configs, in float32 and in float64. Under
WEFT_STRICT=1 an unsupported op is an error, so a passing test means every
graph ran on weft (no eager fallback); the loss and every parameter's
gradient match eager PyTorch (float64: within 1e-10)."""
import copy
import math
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import weft
from harness import require_weft_run

# float32 end to end: weft's reference interpreter computes in float64 and
# rounds to f32, eager PyTorch in f32, so both are within a few f32 ulps of
# the exact value; 1e-4 (relative to the tensor's largest entry) leaves room
# for the reduction orders of 2-layer models.
RTOL = 1e-4
# float64 end to end: the interpreter and eager PyTorch differ only in
# reduction order.
RTOL_F64 = 1e-10
VOCAB, SEQ, BATCH = 128, 32, 2


@pytest.fixture(autouse=True)
def strict_and_fresh(monkeypatch):
    require_weft_run()
    monkeypatch.setenv("WEFT_STRICT", "1")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def check_training_step(model, call, tmp_path, dtype=torch.float32, rtol=RTOL):
    """One forward and backward of `call(model)` (it returns the loss)
    compiled with weft against eager on a copy, the model in `dtype`;
    returns the dumped IR."""
    model = model.to(dtype)
    reference = copy.deepcopy(model)
    compiled = weft.compile(model, dump_dir=str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = call(compiled)
        loss.backward()
    fallbacks = [str(w.message) for w in caught if str(w.message).startswith("weft:")]
    assert not fallbacks, fallbacks
    ref_loss = call(reference)
    ref_loss.backward()
    assert loss.dtype == dtype
    assert abs(loss.item() - ref_loss.item()) <= rtol * abs(ref_loss.item())
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert q.grad is not None, name
        assert p.grad is not None, name
        assert p.grad.dtype == dtype, name
        assert rel(p.grad, q.grad) <= rtol, (name, rel(p.grad, q.grad))
    forwards = sorted(tmp_path.glob("*_forward.mlir"))
    assert forwards, "no graph ran on weft"
    return "\n".join(path.read_text() for path in forwards)


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    return ids, torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)


# -- nanoGPT (karpathy/nanoGPT model.py at a small size) -------------------------------

class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout=0.0):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout, self.resid_dropout = nn.Dropout(dropout), nn.Dropout(dropout)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd, dropout=0.0):
        super().__init__()
        self.c_fc, self.gelu = nn.Linear(n_embd, 4 * n_embd), nn.GELU()
        self.c_proj, self.dropout = nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1, self.attn = LayerNorm(n_embd, True), CausalSelfAttention(n_embd, n_head)
        self.ln_2, self.mlp = LayerNorm(n_embd, True), MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size=VOCAB, block_size=64, n_layer=2, n_head=4, n_embd=64):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd),
            drop=nn.Dropout(0.0), h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, True)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        tok_emb, pos_emb = self.transformer.wte(idx), self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


def test_nanogpt(tmp_path):
    torch.manual_seed(0)
    model = GPT().train()
    ids, targets = batch(1)
    targets[0, :5] = -1  # ignored positions (nanoGPT's ignore_index)
    text = check_training_step(model, lambda m: m(ids, targets)[1], tmp_path)
    assert "weft.attention" in text and "weft.layer_norm" in text
    assert "weft.cross_entropy" in text and "ignore_index = -1 : i64" in text


def test_nanogpt_adamw_steps_with_torch_compile():
    """Plain torch.compile(backend="weft") (Dynamo's own shape handling)
    and two AdamW steps on the compiled model: at each step the loss and
    gradients match eager's from the same parameters (eager restarts from
    the compiled model's, since AdamW's first steps move each weight by
    about lr whatever the size of its gradient, so float32 noise in a
    tiny gradient would otherwise grow into the parameters)."""
    torch.manual_seed(0)
    model = GPT().train()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="weft")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(2):
        ids, targets = batch(10 + step)
        reference.load_state_dict(model.state_dict())
        optimizer.zero_grad()
        reference.zero_grad()
        loss = compiled(ids, targets)[1]
        loss.backward()
        ref_loss = reference(ids, targets)[1]
        ref_loss.backward()
        assert abs(loss.item() - ref_loss.item()) <= RTOL * abs(ref_loss.item()), step
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert rel(p.grad, q.grad) <= RTOL, (step, name, rel(p.grad, q.grad))
        optimizer.step()


# -- transformers -----------------------------------------------------------------------

def transformers_or_skip():
    return pytest.importorskip("transformers", reason="transformers is not installed "
                               "(scripts/setup installs it into the weft venv)")


def small_llama(transformers):
    """LlamaForCausalLM at the tests' small config (seeded, train mode)."""
    config = transformers.LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=64)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).train()


def small_gpt2(transformers, **dropouts):
    """GPT2LMHeadModel at the tests' small config (seeded, train mode);
    `dropouts` override GPT-2's default 0.1s."""
    config = transformers.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64, **dropouts)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config).train()


def test_llama_for_causal_lm(tmp_path):
    transformers = transformers_or_skip()
    model = small_llama(transformers)
    ids, labels = batch(2)
    text = check_training_step(model, lambda m: m(input_ids=ids, labels=labels).loss, tmp_path)
    # RMSNorm, rotary embeddings and GQA attention raised; the loss is
    # weft.cross_entropy over the shifted labels (the pad's -100 ignored).
    for op in ("weft.rms_norm", "weft.rope", "weft.attention", "weft.silu"):
        assert op in text, op
    assert "ignore_index = -100 : i64" in text


def test_gpt2_lm_head_model(tmp_path):
    transformers = transformers_or_skip()
    model = small_gpt2(transformers, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    ids, labels = batch(3)
    text = check_training_step(model, lambda m: m(input_ids=ids, labels=labels).loss, tmp_path)
    # Conv1D's addmm as a linear of the weight's transpose (bias in the
    # GEMM's epilogue), gelu_new raised to the tanh GELU.
    for op in ("weft.linear", "weft.transpose", "weft.layer_norm", "weft.attention",
               'approximate = "tanh"'):
        assert op in text, op
    assert "weft.matmul" not in text
    assert "weft.cross_entropy" in text


# -- float64 ------------------------------------------------------------------------

def shifted_loss(model, ids, labels):
    """The causal LM loss from the logits, in the model's dtype (transformers'
    own loss upcasts the logits to float32); outside the compiled module,
    so eager computes it on both sides and the logits' gradient flows back
    through weft's step."""
    logits = model(input_ids=ids).logits
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


@pytest.fixture
def llama_in_model_dtype(monkeypatch):
    """transformers' Llama computes RMSNorm and the rotary tables in float32
    whatever the model's dtype (for bf16 training), so its float64 model is
    not float64 there; the float64 check computes them in the model's dtype,
    the same formulas, on both sides."""
    transformers_or_skip()
    from transformers.models.llama import modeling_llama

    def rms_norm(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))

    def rotary(self, x, position_ids):
        freqs = position_ids[..., None].to(x.dtype) * self.inv_freq.to(x.device, x.dtype)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling

    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", rms_norm)
    monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", rotary)


def test_nanogpt_float64(tmp_path):
    torch.manual_seed(0)
    model = GPT().train()
    ids, targets = batch(1)
    targets[0, :5] = -1
    text = check_training_step(model, lambda m: m(ids, targets)[1], tmp_path,
                               torch.float64, RTOL_F64)
    assert "weft.attention" in text and "f64" in text


def test_llama_for_causal_lm_float64(tmp_path, llama_in_model_dtype):
    transformers = transformers_or_skip()
    model = small_llama(transformers)
    ids, labels = batch(2)
    text = check_training_step(model, lambda m: shifted_loss(m, ids, labels), tmp_path,
                               torch.float64, RTOL_F64)
    for op in ("weft.rms_norm", "weft.rope", "weft.attention"):
        assert op in text, op


def test_gpt2_lm_head_model_float64(tmp_path):
    transformers = transformers_or_skip()
    model = small_gpt2(transformers, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    ids, labels = batch(3)
    text = check_training_step(model, lambda m: shifted_loss(m, ids, labels), tmp_path,
                               torch.float64, RTOL_F64)
    for op in ("weft.linear", "weft.layer_norm", "weft.attention", 'approximate = "tanh"'):
        assert op in text, op


# -- graph breaks ---------------------------------------------------------------------

def dynamo_breaks(fn, *args):
    torch._dynamo.reset()
    explained = torch._dynamo.explain(fn)(*args)
    return explained.graph_count, [str(b.reason) for b in explained.break_reasons]


def test_no_graph_break_in_the_models():
    """Dynamo captures each model's forward and loss as one graph (what
    bench/torch_train_bench.py trains on the H100): no break in the
    transformer blocks. GPT2LMHeadModel gets loss_type set as the bench sets
    it: without it transformers warns about the missing loss type, which
    breaks the graph after the blocks, before the loss."""
    transformers = transformers_or_skip()
    torch.manual_seed(0)
    gpt = GPT().train()
    ids, targets = batch(1)
    assert dynamo_breaks(lambda i, t: gpt(i, t)[1], ids, targets) == (1, [])
    llama = small_llama(transformers)
    ids, labels = batch(2)
    assert dynamo_breaks(lambda i, l: llama(input_ids=i, labels=l).loss, ids, labels) == (1, [])
    gpt2 = small_gpt2(transformers)
    gpt2.loss_type = "ForCausalLM"
    ids, labels = batch(3)
    assert dynamo_breaks(lambda i, l: gpt2(input_ids=i, labels=l).loss, ids, labels) == (1, [])
