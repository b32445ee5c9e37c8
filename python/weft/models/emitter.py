"""Writes a ModelConfig as weft IR: `@forward(params..., ids, labels,
[rope cos, sin,] seed) -> loss`, pre-norm blocks, mean cross-entropy."""
from weft.models.arguments import argument_specs
from weft.models.ir import FunctionBuilder, I64Array, module_text


class ModelEmitter:
    def __init__(self, config):
        self.c = config
        self.f = FunctionBuilder("forward")
        self.args = {}

    # -- small helpers ------------------------------------------------------
    def op(self, name, operands, shape, attrs=None, hint=None, dtype=None):
        return self.f.op(name, operands, (tuple(shape), dtype or self.c.dtype), attrs, hint)

    def linear(self, x, prefix, out_features, hint):
        operands = [x, self.args[f"{prefix}.weight"]]
        if f"{prefix}.bias" in self.args:
            operands.append(self.args[f"{prefix}.bias"])
        return self.op("linear", operands, x.shape[:-1] + (out_features,), hint=hint)

    def norm(self, x, prefix, hint):
        if self.c.norm == "layernorm":
            return self.op("layer_norm", [x, self.args[f"{prefix}.weight"], self.args[f"{prefix}.bias"]],
                           x.shape, {"eps": self.c.eps}, hint)
        return self.op("rms_norm", [x, self.args[f"{prefix}.weight"]], x.shape, {"eps": self.c.eps}, hint)

    def dropout(self, x, site, layer, hint, p=None):
        p = self.c.dropout if p is None else p
        if p == 0.0:
            return x
        return self.op("dropout", [x, self.args["seed"]], x.shape,
                       {"p": p, "weft.rng_id": self.c.rng_id(site, layer)}, hint)

    def to_heads(self, x, heads, hint):
        """[b, s, heads, d] -> [b, heads, s, d]."""
        b, s, h, d = x.shape
        return self.op("transpose", [x], (b, h, s, d), {"perm": I64Array((0, 2, 1, 3))}, hint)

    # -- the model ------------------------------------------------------------
    def emit_arguments(self):
        for index, spec in enumerate(argument_specs(self.c)):
            attrs = {}
            if spec.is_param:
                attrs["weft.param"] = True
            if spec.range:
                attrs["weft.range"] = I64Array(spec.range)
            # The comment names the .npz key of the argument.
            name = "p." + spec.name if spec.is_param else spec.name
            self.args[spec.name] = self.f.arg(name, spec.shape, spec.dtype, attrs, f"arg{index}")

    def embed(self):
        c = self.c
        self.f.comment("embeddings")
        x = self.op("embedding", [self.args["ids"], self.args["tok_emb.weight"]],
                    (c.batch, c.seq, c.hidden), hint="tok_emb")
        if c.pos_embedding:
            x = self.op("add", [x, self.args["pos_emb.weight"]], x.shape, hint="emb")
        return self.dropout(x, "embedding", None, "emb.drop")

    def attention(self, h, i):
        c, p = self.c, f"layers.{i}.attn"
        b, s, g, d = c.batch, c.seq, c.group, c.head_dim
        # Rows are laid out per kv group as [kv_heads, group + 2, head_dim]
        # (Megatron-LM; [heads, 3, head_dim] for MHA): a column split keeps
        # whole heads on a rank.
        layout = "[heads, 3, head_dim]" if g == 1 else f"[kv_heads, {g} q + k + v, head_dim]"
        self.f.comment(f"fused QKV projection, rows per head {layout} (Megatron-LM)")
        qkv = self.linear(h, f"{p}.qkv", (c.heads + 2 * c.kv_heads) * d, f"l{i}.qkv")
        qkv = self.op("reshape", [qkv], (b, s, c.kv_heads, g + 2, d), hint=f"l{i}.qkv.heads")
        q, k, v = self.f.op("split", [qkv], [((b, s, c.kv_heads, n, d), c.dtype) for n in (g, 1, 1)],
                            {"dim": 3, "sizes": I64Array((g, 1, 1))}, f"l{i}.qkv.split")
        q = self.op("reshape", [q], (b, s, c.heads, d), hint=f"l{i}.q.bshd")
        k = self.op("reshape", [k], (b, s, c.kv_heads, d), hint=f"l{i}.k.bshd")
        v = self.op("reshape", [v], (b, s, c.kv_heads, d), hint=f"l{i}.v.bshd")
        self.f.comment("q, k, v as [batch, heads, seq, head_dim]")
        q, k, v = (self.to_heads(t, t.shape[2], f"l{i}.{n}") for t, n in ((q, "q"), (k, "k"), (v, "v")))
        if c.rope:
            cos, sin = self.args["rope_cos"], self.args["rope_sin"]
            q = self.op("rope", [q, cos, sin], q.shape, hint=f"l{i}.q.rope")
            k = self.op("rope", [k, cos, sin], k.shape, hint=f"l{i}.k.rope")
        self.f.comment("causal attention" + (f", GQA {c.heads} q / {c.kv_heads} kv heads"
                                              if g > 1 else ""))
        if c.attention == "fused":
            o = self.fused_attention(q, k, v, i)
        else:
            o = self.unfused_attention(q, k, v, i)
        self.f.comment("merge heads, output projection")
        o = self.op("transpose", [o], (b, s, c.heads, d), {"perm": I64Array((0, 2, 1, 3))}, f"l{i}.o.bshd")
        o = self.op("reshape", [o], (b, s, c.hidden), hint=f"l{i}.o")
        o = self.linear(o, f"{p}.proj", c.hidden, f"l{i}.proj")
        return self.dropout(o, "attn_out", i, f"l{i}.proj.drop")

    def fused_attention(self, q, k, v, i):
        attrs = {"causal": True}
        operands = [q, k, v]
        if self.c.dropout > 0.0:
            operands.append(self.args["seed"])
            attrs.update({"dropout_p": self.c.dropout,
                          "weft.rng_id": self.c.rng_id("attn_probs", i)})
        # No `scale`: the default 1/sqrt(head_dim) is exact in f64, an f32
        # attribute would not be.
        return self.op("attention", operands, q.shape, attrs, f"l{i}.attn")

    def repeat_kv(self, t, i, name):
        """[b, hkv, s, d] -> [b, hq, s, d], kv head j serving q heads j*g .. j*g+g-1."""
        c = self.c
        if c.group == 1:
            return t
        b, hkv, s, d = t.shape
        t = self.op("reshape", [t], (b, hkv, 1, s, d), hint=f"l{i}.{name}.g1")
        t = self.f.op("concat", [t] * c.group, ((b, hkv, c.group, s, d), c.dtype), {"dim": 2},
                      f"l{i}.{name}.rep")
        return self.op("reshape", [t], (b, c.heads, s, d), hint=f"l{i}.{name}.hq")

    def unfused_attention(self, q, k, v, i):
        c = self.c
        k, v = self.repeat_kv(k, i, "k"), self.repeat_kv(v, i, "v")
        b, h, s, d = q.shape
        scores = self.op("matmul", [q, k], (b, h, s, s), {"transpose_b": True}, f"l{i}.scores")
        scores = self.op("scale", [scores], scores.shape, {"value": d ** -0.5}, f"l{i}.scores.scaled")
        scores = self.op("causal_mask", [scores], scores.shape, hint=f"l{i}.scores.masked")
        probs = self.op("softmax", [scores], scores.shape, {"dim": -1}, f"l{i}.probs")
        # Same rng_id as the fused form: the mask over [b, hq, sq, sk] is equal.
        probs = self.dropout(probs, "attn_probs", i, f"l{i}.probs.drop")
        return self.op("matmul", [probs, v], (b, h, s, d), hint=f"l{i}.attn")

    def mlp(self, h, i):
        c, p = self.c, f"layers.{i}.mlp"
        if c.mlp == "gelu":
            u = self.linear(h, f"{p}.fc1", c.ffn_hidden, f"l{i}.fc1")
            u = self.op("gelu", [u], u.shape, {"approximate": "tanh"}, f"l{i}.gelu")
            out = self.linear(u, f"{p}.fc2", c.hidden, f"l{i}.fc2")
        else:
            gate = self.linear(h, f"{p}.gate", c.ffn_hidden, f"l{i}.gate")
            up = self.linear(h, f"{p}.up", c.ffn_hidden, f"l{i}.up")
            act = self.op("silu", [gate], gate.shape, hint=f"l{i}.gate.silu")
            act = self.op("mul", [act, up], gate.shape, hint=f"l{i}.swiglu")
            out = self.linear(act, f"{p}.down", c.hidden, f"l{i}.down")
        return self.dropout(out, "mlp_out", i, f"l{i}.mlp.drop")

    def block(self, x, i):
        with self.f.scope(weft__layer=i):
            self.f.comment(f"layer {i}: attention")
            h = self.norm(x, f"layers.{i}.norm1", f"l{i}.norm1")
            x = self.op("add", [x, self.attention(h, i)], x.shape, hint=f"l{i}.resid1")
            self.f.comment(f"layer {i}: mlp")
            h = self.norm(x, f"layers.{i}.norm2", f"l{i}.norm2")
            return self.op("add", [x, self.mlp(h, i)], x.shape, hint=f"l{i}.resid2")

    def mean_square_loss(self, x):
        """The remat anchor's loss: mean(float32(x)^2) over every element
        (float64 stays float64, so a reference model keeps its precision)."""
        wide = "f64" if self.c.dtype == "f64" else "f32"
        self.f.comment(f"loss: mean of squares in {wide} (the remat anchor's)")
        if wide != self.c.dtype:
            x = self.op("convert", [x], x.shape, hint="out.wide", dtype=wide)
        sq = self.op("mul", [x, x], x.shape, hint="out.sq", dtype=wide)
        return self.op("reduce_mean", [sq], (), {"dims": I64Array(tuple(range(len(x.shape))))},
                       "loss", dtype=wide)

    def mean_square_dot_loss(self, x):
        """The same mean of squares as one GEMM: y = x / sqrt(numel) as a
        [1, numel] row, loss = y y^T (f32 accumulation, rounded once)."""
        numel = 1
        for d in x.shape:
            numel *= d
        self.f.comment("loss: mean of squares as the dot product y y^T, y = x / sqrt(numel)")
        y = self.op("scale", [x], x.shape, {"value": numel ** -0.5}, "out.scaled")
        y = self.op("reshape", [y], (1, numel), hint="out.row")
        dot = self.op("matmul", [y, y], (1, 1), {"transpose_b": True}, "out.dot")
        return self.op("reshape", [dot], (), hint="loss")

    def emit(self):
        c = self.c
        self.emit_arguments()
        x = self.embed() if c.loss == "cross_entropy" else self.args["x"]
        for i in range(c.layers):
            x = self.block(x, i)
        if c.loss != "cross_entropy":
            loss = self.mean_square_loss if c.loss == "mean_square" else self.mean_square_dot_loss
            self.f.ret(loss(x))
            return self.f
        self.f.comment("head: final norm, output projection, mean cross-entropy")
        x = self.norm(x, "norm_f", "norm_f")
        logits = self.linear(x, "lm_head", c.vocab, "logits")
        loss = self.op("cross_entropy", [logits, self.args["labels"]], (), hint="loss")
        self.f.ret(loss)
        return self.f


def describe(config, preset=None):
    """Header comment lines: what the model is and how to make the file again."""
    c = config
    kind = "LLaMA-style" if c.norm == "rmsnorm" else "GPT-2-style"
    how = f" --preset {preset} --emit-only" if preset else ""
    return [
        f"{kind} transformer written by `python -m weft.models{how}` (PYTHONPATH=python).",
        f"layers {c.layers}, batch {c.batch}, seq {c.seq}, hidden {c.hidden}, heads {c.heads} "
        f"(kv {c.kv_heads}), ffn {c.ffn_hidden}, vocab {c.vocab}, {c.dtype};",
        f"norm {c.norm}, mlp {c.mlp}, rope {'on' if c.rope else 'off'}, "
        f"attention {c.attention}, dropout {c.dropout}.",
        "Arguments: parameters {weft.param} named as in the PyTorch module, then " +
        ("ids," if c.loss == "cross_entropy" else "x (hidden states; loss mean(x_out^2)),"),
        ("labels, " if c.loss == "cross_entropy" else "") +
        ("RoPE cos/sin tables, " if c.rope else "") + "the dropout seed; "
        "the comment names each one's .npz key.",
    ]


def emit_module(config, preset=None):
    """The model as the text of a weft IR module."""
    return module_text([ModelEmitter(config).emit()], describe(config, preset))
