"""weft-autodiff against torch.autograd, in float64 (relative error 1e-10).

Every differentiable op gets a small forward whose loss is
sum(op(inputs) * W) with a random weight W given as an input, so every
gradient is non-trivial; `weft-opt --weft-autodiff` builds @main_step and
weft-run runs it. The generated GPT and LLaMA-style blocks are compared with
their PyTorch modules, and three AdamW steps with torch.optim.AdamW. Dropout
masks are weft's (Philox), so random forwards are checked against references
built with weft.philox."""
import os
import subprocess

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness import check, dtype_name, randint, randn, run_ir, weft_run_path
from weft import philox
from weft.models.arguments import argument_specs, argument_values
from weft.models.config import PRESETS
from weft.models.emitter import emit_module
from weft.models.ir import F32, FunctionBuilder, I64Array, module_text
from weft.models.torch_model import Transformer, rotate_half


# -- running weft-autodiff ----------------------------------------------------

def weft_opt_path():
    return os.path.join(os.path.dirname(weft_run_path()), "weft-opt")


def autodiff(text, entry="main", **options):
    """`text` with @<entry>_step added by weft-opt --weft-autodiff."""
    binary = weft_opt_path()
    if not os.access(binary, os.X_OK):
        pytest.skip(f"weft-opt is not built ({binary} missing)")
    settings = {"entry": entry, **options}
    flag = "--weft-autodiff=" + " ".join(f"{k.replace('_', '-')}={v}" for k, v in settings.items())
    proc = subprocess.run([binary, "-", flag], input=text, capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        pytest.fail(f"weft-opt {flag} failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}\n"
                    f"--- IR ---\n{text}")
    return proc.stdout


def differentiate(rng, inputs, params, build):
    """Builds @main(inputs..., weights...) -> sum_i sum(out_i * w_i), where
    `build(f, args)` emits the forward and returns its outputs, marks the
    inputs at `params` {weft.param}, runs weft-autodiff and then @main_step
    on the inputs and fresh random weights. Returns (results, weights)."""
    f = FunctionBuilder("main")
    args = [f.arg(f"x{i}", tuple(t.shape), dtype_name(t),
                  {"weft.param": True} if i in params else None)
            for i, t in enumerate(inputs)]
    outs = build(f, args)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    weights = [randn(rng, out.shape) for out in outs]
    loss = None
    for i, (out, w) in enumerate(zip(outs, weights)):
        warg = f.arg(f"w{i}", out.shape, "f64")
        term = f.op("mul", [out, warg], (out.shape, "f64"))
        term = f.op("reduce_sum", [term], ((), "f64"), {"dims": I64Array(tuple(range(len(out.shape))))})
        loss = term if loss is None else f.op("add", [loss, term], ((), "f64"))
    f.ret(loss)
    got = run_ir(autodiff(module_text([f])), list(inputs) + weights, entry="main_step")
    assert len(got) == 1 + len(params), f"{len(got)} results, expected {1 + len(params)}"
    return got, weights


def check_gradients(rng, name, inputs, params, build, fn):
    """differentiate(), then the step's loss and gradients against
    torch.autograd of the same loss over `fn(*inputs)` (the forward's outputs)."""
    got, weights = differentiate(rng, inputs, params, build)
    leaves = [t.detach().clone().requires_grad_(i in params) for i, t in enumerate(inputs)]
    with torch.enable_grad():
        ref_outs = fn(*leaves)
        ref_outs = ref_outs if isinstance(ref_outs, (list, tuple)) else [ref_outs]
        ref_loss = sum((o * w).sum() for o, w in zip(ref_outs, weights))
        grads = torch.autograd.grad(ref_loss, [leaves[i] for i in params], allow_unused=True)
    check(f"{name} loss", got[0], ref_loss)
    for j, (i, grad) in enumerate(zip(params, grads)):
        grad = torch.zeros_like(inputs[i]) if grad is None else grad
        check(f"{name} d{i}", got[1 + j], grad)
    return got


def single_op(opname, results, attrs=None):
    """build() for one op whose (shape, dtype) results are given."""
    def build(f, args):
        return f.op(opname, args, results, attrs)
    return build


# -- GEMMs and attention ------------------------------------------------------

@pytest.mark.parametrize("x_shape", [(2, 3, 6), (5, 6), (6,)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_linear(rng, x_shape, bias):
    inputs = [randn(rng, x_shape), randn(rng, (4, 6))] + ([randn(rng, (4,))] if bias else [])
    check_gradients(rng, "linear", inputs, list(range(len(inputs))),
                    single_op("linear", (x_shape[:-1] + (4,), "f64")), lambda *t: F.linear(*t))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("batch,b_2d", [((2, 3), False), ((2, 3), True), ((), True)], ids=str)
def test_matmul(rng, ta, tb, batch, b_2d):
    m, k, n = 5, 4, 3
    a = randn(rng, batch + ((k, m) if ta else (m, k)))
    b = randn(rng, (() if b_2d else batch) + ((n, k) if tb else (k, n)))

    def fn(a, b):
        return (a.transpose(-1, -2) if ta else a) @ (b.transpose(-1, -2) if tb else b)
    check_gradients(rng, "matmul", [a, b], [0, 1],
                    single_op("matmul", (batch + (m, n), "f64"), {"transpose_a": ta, "transpose_b": tb}),
                    fn)


def test_matmul_same_operand(rng):
    """x x^T: both operands' gradients accumulate into x."""
    x = randn(rng, (2, 5, 4))
    check_gradients(rng, "matmul x x^T", [x], [0],
                    lambda f, a: f.op("matmul", [a[0], a[0]], ((2, 5, 5), "f64"), {"transpose_b": True}),
                    lambda x: x @ x.transpose(-1, -2))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("scale", [None, 0.25])
def test_attention(rng, causal, kv_heads, scale):
    q = randn(rng, (2, 4, 6, 8))
    k, v = randn(rng, (2, kv_heads, 7 if not causal else 6, 8)), randn(rng, (2, kv_heads, 7 if not causal else 6, 5))
    attrs = {"causal": causal, "scale": None if scale is None else F32(scale)}

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                              enable_gqa=kv_heads != 4)
    check_gradients(rng, "attention", [q, k, v], [0, 1, 2],
                    single_op("attention", ((2, 4, 6, 5), "f64"), attrs), fn)


def test_attention_with_lse_result(rng):
    """A forward that already asks for the lse keeps it; only `out` is weighted."""
    q, k, v = randn(rng, (1, 2, 5, 4)), randn(rng, (1, 2, 5, 4)), randn(rng, (1, 2, 5, 4))

    def build(f, a):
        out, _ = f.op("attention", a, [((1, 2, 5, 4), "f64"), ((1, 2, 5), "f32")], {"causal": True})
        return out
    check_gradients(rng, "attention+lse", [q, k, v], [0, 1, 2], build,
                    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))


def philox_attention(q, k, v, p, seed, rng_id, causal=True):
    """Attention with weft's dropout mask on the probabilities (GQA by repeat)."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if causal:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    probs = scores.softmax(-1)
    keep = torch.from_numpy(philox.keep_mask(tuple(probs.shape), p, seed, rng_id))
    return torch.where(keep, probs / (1 - p), torch.zeros((), dtype=probs.dtype)) @ v


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_attention_dropout(rng, kv_heads):
    """attention_grad shares the forward's seed and rng_id: its gradient is
    that of attention under the same Philox mask."""
    q, k, v = randn(rng, (2, 4, 6, 8)), randn(rng, (2, kv_heads, 6, 8)), randn(rng, (2, kv_heads, 6, 8))
    seed = torch.tensor(20240611, dtype=torch.int64)
    p, rng_id = 0.25, 7
    attrs = {"causal": True, "dropout_p": p, "weft.rng_id": rng_id}
    check_gradients(rng, "attention dropout", [q, k, v, seed], [0, 1, 2],
                    single_op("attention", ((2, 4, 6, 8), "f64"), attrs),
                    lambda q, k, v, s: philox_attention(q, k, v, p, int(s), rng_id))


# -- norms, activations, softmax ----------------------------------------------

def test_layer_norm(rng):
    x = randn(rng, (2, 5, 16), scale=2.0) + 1.0
    g, b = randn(rng, (16,)), randn(rng, (16,))
    check_gradients(rng, "layer_norm", [x, g, b], [0, 1, 2],
                    single_op("layer_norm", ((2, 5, 16), "f64"), {"eps": 1e-5}),
                    lambda x, g, b: F.layer_norm(x, (16,), g, b, 1e-5))


def test_rms_norm(rng):
    x, g = randn(rng, (3, 4, 16)), randn(rng, (16,))
    check_gradients(rng, "rms_norm", [x, g], [0, 1],
                    single_op("rms_norm", ((3, 4, 16), "f64"), {"eps": 1e-6}),
                    lambda x, g: F.rms_norm(x, (16,), g, 1e-6))


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax(rng, dim):
    x = randn(rng, (3, 4, 6), scale=2.0)
    check_gradients(rng, "softmax", [x], [0], single_op("softmax", ((3, 4, 6), "f64"), {"dim": dim}),
                    lambda x: torch.softmax(x, dim))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(rng, approximate):
    x = randn(rng, (4, 9), scale=2.0)
    check_gradients(rng, "gelu", [x], [0],
                    single_op("gelu", ((4, 9), "f64"), {"approximate": approximate}),
                    lambda x: F.gelu(x, approximate=approximate))


def test_silu(rng):
    x = randn(rng, (4, 9), scale=2.0)
    check_gradients(rng, "silu", [x], [0], single_op("silu", ((4, 9), "f64")), F.silu)


# -- elementwise ----------------------------------------------------------------

BROADCASTS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 1)),
              ((1, 4), (3, 1)), ((3,), (2, 1, 3)), ((2, 1, 4), (2, 3, 1))]


@pytest.mark.parametrize("opname,fn", [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul)])
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_binary(rng, opname, fn, shapes):
    a, b = randn(rng, shapes[0]), randn(rng, shapes[1])
    out = tuple(torch.broadcast_shapes(shapes[0], shapes[1]))
    check_gradients(rng, opname, [a, b], [0, 1], single_op(opname, (out, "f64")), fn)


def test_binary_one_parameter(rng):
    """Only the parameter gets a gradient; the other operand is batch data."""
    a, b = randn(rng, (3, 4)), randn(rng, (4,))
    check_gradients(rng, "mul", [a, b], [1], single_op("mul", ((3, 4), "f64")), torch.mul)


def test_value_with_several_uses(rng):
    """x feeds three ops: its gradient is the sum of the three."""
    x, y = randn(rng, (3, 4)), randn(rng, (3, 4))

    def build(f, a):
        sq = f.op("mul", [a[0], a[0]], ((3, 4), "f64"))
        s = f.op("add", [sq, a[0]], ((3, 4), "f64"))
        return [f.op("mul", [s, a[1]], ((3, 4), "f64")), f.op("silu", [a[0]], ((3, 4), "f64"))]
    check_gradients(rng, "several uses", [x, y], [0, 1], build,
                    lambda x, y: [(x * x + x) * y, F.silu(x)])


def test_scale(rng):
    x = randn(rng, (3, 5))
    check_gradients(rng, "scale", [x], [0], single_op("scale", ((3, 5), "f64"), {"value": -0.375}),
                    lambda x: x * -0.375)


@pytest.mark.parametrize("fill", [None, 2.5])
def test_causal_mask(rng, fill):
    """With the default -inf fill the loss goes through a softmax (as in
    attention), so it stays finite."""
    x = randn(rng, (2, 5, 5))

    def build(f, a):
        m = f.op("causal_mask", a, ((2, 5, 5), "f64"), {"fill": fill})
        return m if fill is not None else f.op("softmax", [m], ((2, 5, 5), "f64"), {"dim": -1})

    def fn(x):
        mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
        m = x.masked_fill(mask, float("-inf") if fill is None else fill)
        return m if fill is not None else m.softmax(-1)
    check_gradients(rng, "causal_mask", [x], [0], build, fn)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)),
                                    ((2, 1, 4), (3, 4), ())], ids=str)
def test_where(rng, shapes):
    cond = torch.from_numpy(rng.random(shapes[0]) < 0.5)
    a, b = randn(rng, shapes[1]), randn(rng, shapes[2])
    out = tuple(torch.broadcast_shapes(*shapes))
    check_gradients(rng, "where", [cond, a, b], [1, 2], single_op("where", (out, "f64")), torch.where)


def test_convert(rng):
    """f64 -> f32 -> f64: the gradient is rounded to f32 on the way back, as
    PyTorch's autograd of .to() does."""
    x = randn(rng, (3, 7))

    def build(f, a):
        narrow = f.op("convert", a, ((3, 7), "f32"))
        return f.op("convert", [narrow], ((3, 7), "f64"))
    check_gradients(rng, "convert", [x], [0], build,
                    lambda x: x.to(torch.float32).to(torch.float64))


@pytest.mark.parametrize("p", [0.0, 0.3, 0.75])
def test_dropout_uses_the_forward_mask(rng, p):
    """dropout's gradient is dropout with the same seed, p and rng_id: the
    loss and dx against numpy with weft.philox's mask, y = x keep / (1 - p)
    and dx = w keep / (1 - p)."""
    x, seed, rng_id = randn(rng, (6, 10)), 987654321, 11
    got, (w,) = differentiate(rng, [x, torch.tensor(seed, dtype=torch.int64)], [0],
                              single_op("dropout", ((6, 10), "f64"), {"p": p, "weft.rng_id": rng_id}))
    keep = philox.keep_mask((6, 10), p, seed, rng_id)
    assert p == 0.0 or (keep.any() and not keep.all())
    loss = np.sum(philox.dropout(x.numpy(), p, seed, rng_id) * w.numpy())
    check("dropout loss", got[0], torch.tensor(loss))
    check("dropout dx", got[1], torch.from_numpy(philox.dropout(w.numpy(), p, seed, rng_id)))
    assert np.array_equal(got[1].numpy() == 0, ~keep), "dx is zero exactly where x was dropped"


# -- reductions and shapes ------------------------------------------------------

@pytest.mark.parametrize("opname,fn", [("reduce_sum", torch.sum), ("reduce_mean", torch.mean)])
@pytest.mark.parametrize("dims", [(0,), (-1,), (0, 2), (0, 1, 2)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduce(rng, opname, fn, dims, keepdim):
    x = randn(rng, (2, 3, 4))
    out = tuple(1 if (i in dims or i - 3 in dims) else d for i, d in enumerate(x.shape)
                if keepdim or not (i in dims or i - 3 in dims))
    check_gradients(rng, opname, [x], [0],
                    single_op(opname, (out, "f64"), {"dims": I64Array(dims), "keepdim": keepdim}),
                    lambda x: fn(x, dim=dims, keepdim=keepdim))


def test_reshape(rng):
    x = randn(rng, (2, 3, 4))
    check_gradients(rng, "reshape", [x], [0], single_op("reshape", ((4, 6), "f64")),
                    lambda x: x.reshape(4, 6))


@pytest.mark.parametrize("perm", [(0, 2, 1, 3), (3, 1, 0, 2)], ids=str)
def test_transpose(rng, perm):
    x = randn(rng, (2, 3, 4, 5))
    out = tuple(x.shape[p] for p in perm)
    check_gradients(rng, "transpose", [x], [0],
                    single_op("transpose", (out, "f64"), {"perm": I64Array(perm)}),
                    lambda x: x.permute(*perm))


def test_split(rng):
    x = randn(rng, (3, 8))
    check_gradients(rng, "split", [x], [0],
                    single_op("split", [((3, 3), "f64"), ((3, 5), "f64")],
                              {"dim": 1, "sizes": I64Array((3, 5))}),
                    lambda x: list(torch.split(x, [3, 5], dim=1)))


def test_split_with_unused_piece(rng):
    """A piece the loss ignores contributes zeros to the concatenated gradient."""
    x = randn(rng, (4, 3, 2))

    def build(f, a):
        pieces = f.op("split", a, [((1, 3, 2), "f64"), ((2, 3, 2), "f64"), ((1, 3, 2), "f64")],
                      {"dim": -3, "sizes": I64Array((1, 2, 1))})
        return [pieces[0], pieces[2]]
    check_gradients(rng, "split unused", [x], [0], build,
                    lambda x: [x[0:1], x[3:4]])


def test_concat(rng):
    """The same value concatenated twice (kv heads repeated for GQA)."""
    a, b = randn(rng, (2, 3)), randn(rng, (2, 4))
    check_gradients(rng, "concat", [a, b], [0, 1],
                    lambda f, t: f.op("concat", [t[0], t[1], t[0]], ((2, 10), "f64"), {"dim": -1}),
                    lambda a, b: torch.cat([a, b, a], dim=-1))


# -- embedding, loss, rope ----------------------------------------------------

def test_embedding(rng):
    ids = randint(rng, (2, 7), 5)  # repeated ids: rows accumulate
    table = randn(rng, (5, 6))
    check_gradients(rng, "embedding", [ids, table], [1], single_op("embedding", ((2, 7, 6), "f64")),
                    F.embedding)


@pytest.mark.parametrize("shape", [(2, 5, 7), (6, 4)], ids=str)
def test_cross_entropy(rng, shape):
    logits = randn(rng, shape, scale=2.0)
    labels = randint(rng, shape[:-1], shape[-1])
    check_gradients(rng, "cross_entropy", [logits, labels], [0],
                    single_op("cross_entropy", ((), "f64")),
                    lambda l, y: F.cross_entropy(l.reshape(-1, shape[-1]), y.reshape(-1)))


def test_cross_entropy_ignore_index(rng):
    logits = randn(rng, (2, 5, 7), scale=2.0)
    labels = randint(rng, (2, 5), 7)
    labels[1, 1:4] = -1
    check_gradients(rng, "cross_entropy", [logits, labels], [0],
                    single_op("cross_entropy", ((), "f64"), {"ignore_index": -1}),
                    lambda l, y: F.cross_entropy(l.reshape(-1, 7), y.reshape(-1), ignore_index=-1))


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("tables_trained", [False, True])
def test_rope(rng, inverse, tables_trained):
    """rope's gradient is rope with the rotation reversed; tables marked as
    parameters get theirs too."""
    x, cos, sin = randn(rng, (2, 3, 5, 8)), randn(rng, (5, 8)), randn(rng, (5, 8))

    def fn(x, c, s):
        return x * c - rotate_half(x * s) if inverse else x * c + rotate_half(x) * s
    check_gradients(rng, "rope", [x, cos, sin], [0, 1, 2] if tables_trained else [0],
                    single_op("rope", ((2, 3, 5, 8), "f64"), {"inverse": inverse}), fn)


# -- generated blocks -----------------------------------------------------------

def module_inputs(config, values):
    """The PyTorch module's forward inputs from @forward's argument values."""
    inputs = {}
    for spec, value in zip(argument_specs(config), values, strict=True):
        if not spec.is_param:
            inputs[spec.kind] = value
    return (inputs["ids"], inputs["labels"], inputs.get("rope_cos"), inputs.get("rope_sin"),
            int(inputs["seed"]))


def torch_block(config, values):
    torch.manual_seed(0)  # construction draws initial values; overwritten
    model = Transformer(config).to(torch.float64).load_arguments(values)
    return model


BLOCKS = {
    "gpt_block": PRESETS["gpt_block"].replace(dtype="f64", dropout=0.0),
    "llama_block": PRESETS["llama_block"].replace(dtype="f64", dropout=0.0),
    "llama_block-unfused": PRESETS["llama_block"].replace(dtype="f64", attention="unfused"),
    "gpt_block-dropout": PRESETS["gpt_block"].replace(dtype="f64"),
    "gpt_2layers-unfused-dropout": PRESETS["gpt_block"].replace(dtype="f64", layers=2,
                                                                attention="unfused"),
}


@pytest.mark.parametrize("name", list(BLOCKS))
def test_block_gradients(name):
    """Loss and every parameter gradient of a generated block against
    torch.autograd on the generated PyTorch module (dropout draws the same
    Philox masks there)."""
    config = BLOCKS[name]
    values = argument_values(config)
    step = autodiff(emit_module(config), entry="forward")
    got = run_ir(step, values, entry="forward_step")

    model = torch_block(config, values)
    with torch.enable_grad():
        loss = model(*module_inputs(config, values))
        loss.backward()
    names = [n for n, _ in model.named_parameters()]
    assert len(got) == 1 + len(names)
    check(f"{name} loss", got[0], loss)
    for i, (pname, param) in enumerate(model.named_parameters()):
        check(f"{name} d{pname}", got[1 + i], param.grad)


def test_adamw_three_steps():
    """The adamw step run three times on the interpreter, feeding params, m
    and v back (step 1, 2, 3), against torch.optim.AdamW in float64."""
    config = PRESETS["gpt_block"].replace(dtype="f64", dropout=0.0)
    settings = {"lr": 0.01, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6, "weight_decay": 0.1}
    values = argument_values(config)
    specs = argument_specs(config)
    params = [v for s, v in zip(specs, values) if s.is_param]
    batch = [v for s, v in zip(specs, values) if not s.is_param and s.kind != "seed"]
    seed = [v for s, v in zip(specs, values) if s.kind == "seed"]
    step_ir = autodiff(emit_module(config), entry="forward", optimizer="adamw", **settings)

    n = len(params)
    state = [p.clone() for p in params] + [torch.zeros_like(p) for p in params] * 2
    weft_losses = []
    for t in (1, 2, 3):
        out = run_ir(step_ir, state + batch + [torch.tensor(t, dtype=torch.int64)] + seed,
                     entry="forward_step")
        assert len(out) == 1 + 3 * n
        weft_losses.append(out[0])
        state = list(out[1:])

    model = torch_block(config, values)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings["lr"],
                                  betas=(settings["beta1"], settings["beta2"]),
                                  eps=settings["eps"], weight_decay=settings["weight_decay"])
    for t in range(3):
        optimizer.zero_grad()
        with torch.enable_grad():
            loss = model(*module_inputs(config, values))
            loss.backward()
        optimizer.step()
        check(f"adamw loss at step {t + 1}", weft_losses[t], loss)
    for i, (pname, param) in enumerate(model.named_parameters()):
        moments = optimizer.state[param]
        check(f"adamw {pname}", state[i], param)
        check(f"adamw m {pname}", state[n + i], moments["exp_avg"])
        check(f"adamw v {pname}", state[2 * n + i], moments["exp_avg_sq"])
        # The parameters moved: the comparison is not of initial values.
        assert not torch.equal(state[i], params[i]), f"{pname} did not change"


def test_adamw_bf16_master_weights():
    """A bf16 model trains f32 master weights: the step takes and returns f32
    params and moments, and its loss is the bf16 forward on the rounded
    masters."""
    config = PRESETS["llama_block"].replace(dtype="bf16", dropout=0.0)
    values = argument_values(config)
    specs = argument_specs(config)
    step_ir = autodiff(emit_module(config), entry="forward", optimizer="adamw")
    masters = [v.to(torch.float32) for s, v in zip(specs, values) if s.is_param]
    batch = [v for s, v in zip(specs, values) if not s.is_param and s.kind != "seed"]
    seed = [v for s, v in zip(specs, values) if s.kind == "seed"]
    n = len(masters)
    state = masters + [torch.zeros_like(p) for p in masters] * 2
    out = run_ir(step_ir, state + batch + [torch.tensor(1, dtype=torch.int64)] + seed,
                 entry="forward_step")
    assert len(out) == 1 + 3 * n
    assert all(o.dtype == torch.float32 for o in out[1:])
    forward = run_ir(emit_module(config), values, entry="forward")
    assert torch.equal(out[0], forward[0]), "the step's loss is the bf16 forward's"
