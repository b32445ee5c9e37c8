"""The gradient ops and adamw against PyTorch: references are
torch.autograd's vector-Jacobian products (float64, and in the inputs'
precision for the 2x rule), and one torch.optim.AdamW step."""
import pytest
import torch
import torch.nn.functional as F

from harness import check, compare_op, randint, randn, run_op, wide
from test_ops import rope_tables, rotate_half

DTYPES = ["f64", "f32", "bf16"]


def vjp(fn, primals, cotangent):
    """Gradients of <fn(*primals), cotangent> with respect to every primal."""
    primals = [p.detach().clone().requires_grad_(True) for p in primals]
    with torch.enable_grad():
        return torch.autograd.grad(fn(*primals), primals, cotangent)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps", [1e-5, 0.5])
def test_layer_norm_grad(rng, dtype, eps):
    x = randn(rng, (2, 5, 16), dtype, scale=2.0) + 1.0
    g, dy = randn(rng, (16,), dtype), randn(rng, (2, 5, 16), dtype)

    def fn(dy, x, g):
        beta = torch.zeros_like(g)
        return vjp(lambda x, g, b: F.layer_norm(x, (16,), g, b, eps), [x, g, beta], dy)
    compare_op("layer_norm_grad", [dy, x, g], fn, {"eps": eps}, names=["dx", "dgamma", "dbeta"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps", [1e-6, 0.5])
def test_rms_norm_grad(rng, dtype, eps):
    x, g, dy = randn(rng, (3, 4, 16), dtype), randn(rng, (16,), dtype), randn(rng, (3, 4, 16), dtype)

    def fn(dy, x, g):
        return vjp(lambda x, g: F.rms_norm(x, (16,), g, eps), [x, g], dy)
    compare_op("rms_norm_grad", [dy, x, g], fn, {"eps": eps}, names=["dx", "dgamma"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_grad(rng, dtype, dim):
    x = randn(rng, (3, 4, 6), "f64", scale=3.0)
    y = torch.softmax(x, dim).to(randn(rng, (1,), dtype).dtype)
    dy = randn(rng, (3, 4, 6), dtype)

    def fn(dy, y):  # PyTorch's softmax backward on (dy, y), as autograd runs it
        return torch.ops.aten._softmax_backward_data(dy, y, dim, y.dtype)
    (out,) = compare_op("softmax_grad", [dy, y], fn, {"dim": dim})
    if dtype == "f64":  # and the same as the VJP of softmax at x
        (dx,) = vjp(lambda x: torch.softmax(x, dim), [x], dy)
        check("softmax_grad vs autograd", out, dx)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_grad(rng, dtype, approximate):
    x, dy = randn(rng, (4, 33), dtype, scale=3.0), randn(rng, (4, 33), dtype)
    compare_op("gelu_grad", [dy, x],
               lambda dy, x: vjp(lambda x: F.gelu(x, approximate=approximate), [x], dy)[0],
               {"approximate": approximate})


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_grad(rng, dtype):
    x, dy = randn(rng, (4, 33), dtype, scale=4.0), randn(rng, (4, 33), dtype)
    compare_op("silu_grad", [dy, x], lambda dy, x: vjp(F.silu, [x], dy)[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 17), (9, 4)], ids=str)
def test_cross_entropy_grad(rng, dtype, shape):
    logits = randn(rng, shape, dtype, scale=3.0)
    labels = randint(rng, shape[:-1], shape[-1])
    dloss = randn(rng, (), dtype) + 2.0

    def fn(dloss, logits, labels):
        loss = lambda l: F.cross_entropy(l.reshape(-1, shape[-1]), labels.reshape(-1))
        return vjp(loss, [logits], dloss)[0]
    compare_op("cross_entropy_grad", [dloss, logits, labels], fn)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_grad_ignore_index(rng, dtype):
    """Ignored rows get zero gradient; the others are divided by the number
    of counted positions."""
    logits = randn(rng, (2, 5, 7), dtype, scale=3.0)
    labels = randint(rng, (2, 5), 7)
    labels[0, :3] = -100
    dloss = randn(rng, (), dtype) + 2.0

    def fn(dloss, logits, labels):
        loss = lambda l: F.cross_entropy(l.reshape(-1, 7), labels.reshape(-1))
        return vjp(loss, [logits], dloss)[0]
    compare_op("cross_entropy_grad", [dloss, logits, labels], fn, attrs={"ignore_index": -100})


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_grad(rng, dtype):
    vocab, hidden = 9, 6
    ids = randint(rng, (4, 7), vocab)
    ids[0, :4] = torch.tensor([3, 3, 3, 8])  # repeated ids accumulate
    dy = randn(rng, (4, 7, hidden), dtype)

    def fn(dy, ids):
        table = torch.zeros(vocab, hidden, dtype=dy.dtype)
        return vjp(lambda t: F.embedding(ids, t), [table], dy)[0]
    compare_op("embedding_grad", [dy, ids], fn)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5, 8), (6, 4)], ids=str)
def test_rope_inverse_is_vjp(rng, dtype, shape):
    g = randn(rng, shape, dtype)
    cos, sin = rope_tables(rng, shape[-2], shape[-1], dtype)

    def fn(g, cos, sin):  # rope is linear in x: its VJP does not depend on x
        x = torch.zeros_like(g)
        return vjp(lambda x: x * cos + rotate_half(x) * sin, [x], g)[0]
    compare_op("rope", [g, cos, sin], fn, {"inverse": True})


def test_rope_inverse_undoes_rope(rng):
    # cos^2 + sin^2 = 1: the inverse rotation is the transpose, so it undoes rope.
    x = randn(rng, (2, 6, 8))
    cos, sin = rope_tables(rng, 6, 8, "f64")
    (y,) = run_op("rope", [x, cos, sin], [((2, 6, 8), "f64")])
    (back,) = run_op("rope", [y, cos, sin], [((2, 6, 8), "f64")], {"inverse": True})
    check("rope inverse(rope(x))", back, x)


# -- adamw --------------------------------------------------------------------

def torch_adamw(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay):
    """One torch.optim.AdamW step from moments (m, v) after step - 1 steps."""
    param = torch.nn.Parameter(p.clone())
    opt = torch.optim.AdamW([param], lr=lr, betas=(beta1, beta2), eps=eps,
                            weight_decay=weight_decay, foreach=False, fused=False)
    opt.state[param] = {"step": torch.tensor(float(step - 1)),
                        "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    param.grad = g.clone()
    opt.step()
    state = opt.state[param]
    return param.detach(), state["exp_avg"], state["exp_avg_sq"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("step", [1, 7, 1000])
@pytest.mark.parametrize("hyper", [dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01),
                                   dict(lr=0.05, beta1=0.8, beta2=0.95, eps=1e-6, weight_decay=0.3)],
                         ids=["default", "custom"])
def test_adamw(rng, dtype, step, hyper):
    shape = (5, 12)
    p, g = randn(rng, shape, dtype), randn(rng, shape, dtype)
    m = randn(rng, shape, dtype, scale=0.1)
    v = (randn(rng, shape, "f64", scale=0.1) ** 2).to(p.dtype)
    t = torch.tensor(step, dtype=torch.int64)
    outs = run_op("adamw", [p, g, m, v, t], [(shape, dtype)] * 3, hyper)
    ref = torch_adamw(*(wide(x) for x in (p, g, m, v)), step, **hyper)
    lowp = None if dtype == "f64" else torch_adamw(p, g, m, v, step, **hyper)
    for i, name in enumerate(["param", "m", "v"]):
        check(f"adamw {name}", outs[i], ref[i], None if lowp is None else lowp[i])
    # The update itself (not only the parameter it is added to) must be right.
    if dtype == "f64":
        check("adamw update", outs[0] - p, ref[0] - p)
