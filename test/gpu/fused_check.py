"""GPU check of the elementwise kernels (ElementwiseToNVVM): every unit that
`scripts/build-fused-kernels DIR` wrote (weft-compile --emit=elementwise-kernels
of test/gpu/fused_cases.py) is loaded through the Weft runtime binding, run on
fresh random inputs with NaN-poisoned, guarded outputs, and compared with a
float64 torch evaluation of the unit's own body (its JSON "body": ops,
operands, attributes); PyTorch eager in the unit's dtypes is measured against
the same float64 reference. Each kernel is timed (triton.testing.do_bench
median) next to torch eager and torch.compile of the same group, with GB/s
over the bytes the unit reads and writes. Prints a pass/fail table; exit 1 on
any failure.

A weft.dropout with p > 0 is referenced with weft's Philox mask
(python/weft/philox.py, the reference interpreter's rule), and the mask the
kernel applied is read back from its outputs and must equal the reference's
at every element (dropout_mask_failures).

    PYTHONPATH=python python3 test/gpu/fused_check.py --kernels DIR [--no-compile]
"""
import argparse
import glob
import json
import math
import os
import sys
import traceback

import torch
import torch.nn.functional as F

from weft import philox
from weft.pointwise import POINTWISE
from weft.gpu import results
from weft.gpu.poison import Poisoned
from weft.gpu.progress import Deadline, add_deadline_option

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
          "f64": torch.float64, "i64": torch.int64, "bool": torch.bool, "i16": torch.int16}
# Max |weft - float64| / max |float64| per output dtype.
TOLERANCE = {"bf16": 1.6e-2, "f16": 2e-3, "f32": 2e-4}
# A split master's update (new_param joined with new_param_low) against the
# float64 AdamW: f32's level (a few ulps of the largest weight). Rounded to
# bf16, or with the low half lost, the error would be ~2^-9.
SPLIT_MASTER_TOLERANCE = 2e-6


class UnitError(Exception):
    pass


def load_units(root):
    units = []
    for path in sorted(glob.glob(os.path.join(root, "*.json"))):
        with open(path) as f:
            unit = json.load(f)
        for key in ("name", "op", "params", "launches", "body", "cubin"):
            if key not in unit:
                raise UnitError(f"{path}: no '{key}'")
        unit["dir"] = root
        units.append(unit)
    if not units:
        raise UnitError(f"{root}: no unit JSON (run scripts/build-fused-kernels {root})")
    return units


# ---------------------------------------------------------------- the body

def _layer_norm_grad(dy, x, g, eps):
    n = x.shape[-1]
    xf = x if x.dtype == torch.float64 else x.float()
    _, mean, rstd = torch.native_layer_norm(xf, [n], None, None, eps)
    dyf = dy if dy.dtype == torch.float64 else dy.float()
    gf = g if g.dtype == torch.float64 else g.float()
    dx, dg, db = torch.ops.aten.native_layer_norm_backward(
        dyf, xf, [n], mean, rstd, gf, gf, [True, True, True])
    return dx, dg, db


def _rms_norm_grad(dy, x, g, eps):
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    xf, dyf, gf = x.to(acc), dy.to(acc), g.to(acc)
    rstd = torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps)
    gx = (dyf * gf * xf).mean(-1, keepdim=True)
    dx = rstd * (dyf * gf - xf * rstd * rstd * gx)
    dg = (dyf * xf * rstd).reshape(-1, x.shape[-1]).sum(0)
    return dx, dg


def _rms_norm(x, g, eps):
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    xf = x.to(acc)
    return xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps) * g.to(acc)


def _cross_entropy_grad(dloss, logits, labels):
    acc = torch.float64 if logits.dtype == torch.float64 else torch.float32
    rows = labels.numel()
    p = torch.softmax(logits.to(acc), -1)
    p = p - F.one_hot(labels, logits.shape[-1]).to(acc)
    return p * (dloss.to(acc) / rows)


def _rope(x, cos, sin, inverse):
    """LLaMA's rotate_half RoPE; `inverse`: its transpose (rope's gradient)."""
    half = x.shape[-1] // 2

    def rotate_half(t):
        return torch.cat((-t[..., half:], t[..., :half]), -1)

    if inverse:
        return x * cos - rotate_half(x * sin)
    return x * cos + rotate_half(x) * sin


def _adamw(p, g, m, v, step, a):
    lr, b1, b2, eps, wd = a["lr"], a.get("beta1", 0.9), a.get("beta2", 0.999), \
        a.get("eps", 1e-8), a.get("weight_decay", 0.01)
    s = float(step.item())
    bc1 = 1 - b1 ** s
    bc2 = math.sqrt(1 - b2 ** s)
    pd = p * (1 - lr * wd)
    nm = m + (1 - b1) * (g - m)
    nv = v * b2 + (1 - b2) * g * g
    return pd - (lr / bc1) * nm / (nv.sqrt() / bc2 + eps), nm, nv


# ------------------------------------------------------ split f32 masters

def join_master(high, low):
    """The f32 master of a bf16 high half and an i16 low half:
    bitcast((bits(high) << 16) + sext(low)), wrapping as u32."""
    bits = ((high.view(torch.int16).to(torch.int64) & 0xFFFF) << 16) + low.to(torch.int64)
    bits = bits & 0xFFFFFFFF
    bits = torch.where(bits >= 1 << 31, bits - (1 << 32), bits)
    return bits.to(torch.int32).view(torch.float32)


def split_master(master):
    """(bf16 high half, i16 low half) of f32 `master`: the high half rounded
    to nearest, ties away from zero, the low half the signed remainder; a NaN
    gives a quiet NaN high half (sign kept) and low half 0."""
    bits = master.to(torch.float32).view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    nan = torch.isnan(master)
    rounded = ((bits + 0x8000) >> 16) & 0xFFFF
    high = torch.where(nan, ((bits >> 16) | 0x40) & 0xFFFF, rounded)
    low = torch.where(nan, torch.zeros_like(bits), bits - (rounded << 16))
    high = torch.where(high >= 1 << 15, high - (1 << 16), high)
    return high.to(torch.int16).view(torch.bfloat16), low.to(torch.int16)


def _split_adamw(p, g, m, v, step, low, a, reference):
    """AdamW of a split master: (new master, m, v, new master) in float64
    (`reference`; the low half's reference is the master it completes), else
    in f32 as the kernel computes it, the new master split again."""
    master = join_master(p.to(torch.bfloat16), low)
    acc = torch.float64 if reference else torch.float32
    x, nm, nv = _adamw(master.to(acc), g.to(acc), m.to(acc), v.to(acc), step, a)
    if reference:
        return [x, nm, nv, x]
    high, new_low = split_master(x)
    return [high, nm, nv, new_low]


def split_adamw_op(unit):
    """(body index, op) of the unit's weft.adamw on a split master, or None."""
    for j, member in enumerate(unit.get("body", {}).get("ops", [])):
        if member["op"] == "weft.adamw" and len(member["operands"]) == 6:
            return j, member
    return None


def _masked_rel_error(value, ref, keep):
    value, ref = value.to(torch.float64)[keep], ref.to(torch.float64)[keep]
    return rel_error(value, ref)


def split_adamw_failures(unit, outputs, reference):
    """The checks of a split-master AdamW unit's outputs (kernel's or any
    candidate's) against the float64 reference; (failures, max error). The
    joined new master must be within SPLIT_MASTER_TOLERANCE of float64 AdamW;
    new_param / new_param_low must be the ties-away split of that master bit
    for bit (and join back to it); where the reference is NaN (a NaN
    gradient) new_param must be a quiet NaN with low half 0, and nowhere
    else may anything be NaN; m and v as f32 outputs."""
    j, _ = split_adamw_op(unit)
    slot = {ref[2]: k for k, ref in enumerate(unit["body"]["yield"])
            if ref[0] == "op" and ref[1] == j}
    if sorted(slot) != [0, 1, 2, 3]:
        return [f"the split AdamW yields results {sorted(slot)}, expected [0, 1, 2, 3]"], math.inf
    high, new_m, new_v, low = (outputs[slot[r]] for r in range(4))
    ref_x, ref_m, ref_v = (reference[slot[r]] for r in range(3))
    nan = torch.isnan(ref_x)
    finite = ~nan
    failures = []
    joined = join_master(high, low)
    got_nan = torch.isnan(high.to(torch.float32))
    if not torch.equal(got_nan, nan):
        failures.append(f"new_param is NaN at {int(got_nan.sum())} elements, the float64 "
                        f"update at {int(nan.sum())} (NaN gradients)")
    high_bits = high.view(torch.int16).to(torch.int32) & 0xFFFF
    if bool(((high_bits & 0x40) == 0)[nan & got_nan].any()):
        failures.append("a NaN new_param is not a quiet NaN")
    if bool((low[nan] != 0).any()):
        failures.append(f"new_param_low is not 0 at {int((low[nan] != 0).sum())} NaN masters")
    want_high, want_low = split_master(joined)
    keep = finite & ~got_nan
    bad = (high.view(torch.int16) != want_high.view(torch.int16)) | (low != want_low)
    if bool(bad[keep].any()):
        failures.append(f"{int(bad[keep].sum())} elements are not the ties-away split of "
                        f"their own master")
    round_trip = join_master(want_high, want_low).view(torch.int32)
    if not torch.equal(round_trip[keep], joined.view(torch.int32)[keep]):
        failures.append("join(new_param, new_param_low) differs from the master it split")
    err = _masked_rel_error(joined, ref_x, keep)
    if not err <= SPLIT_MASTER_TOLERANCE:
        failures.append(f"joined master: rel err {err:.3g} > {SPLIT_MASTER_TOLERANCE:g}")
    for name, value, ref in (("new_m", new_m, ref_m), ("new_v", new_v, ref_v)):
        value_nan = torch.isnan(value)
        if not torch.equal(value_nan, torch.isnan(ref)):
            failures.append(f"{name} is NaN at {int(value_nan.sum())} elements, the float64 "
                            f"update at {int(torch.isnan(ref).sum())}")
        e = _masked_rel_error(value, ref, ~torch.isnan(ref) & ~value_nan)
        if not e <= TOLERANCE["f32"]:
            failures.append(f"{name}: rel err {e:.3g} > {TOLERANCE['f32']:g}")
    return failures, err


def split_master_inputs(unit, inputs, generator):
    """A split-master AdamW unit's inputs made as a training step has them:
    random f32 masters (N(0, 1), so many updates lie below the bf16 step)
    split into (param, param_low), a step > 1, and NaN gradients at two
    elements (one in the scalar tail when there is one)."""
    found = split_adamw_op(unit)
    if not found:
        return
    _, member = found
    refs = member["operands"]
    for position in (0, 4, 5):
        if refs[position][0] != "arg":
            raise UnitError(f"split AdamW operand {position} is computed in the group")
    p_index, step_index, low_index = refs[0][1], refs[4][1], refs[5][1]
    shape = list(inputs[p_index].shape)
    master = torch.randn(shape, generator=generator, dtype=torch.float32)
    high, low = split_master(master)
    inputs[p_index] = high.to(inputs[p_index].device)
    inputs[low_index] = low.to(inputs[low_index].device)
    inputs[step_index] = torch.randint(2, 1000, (), generator=generator).to(
        inputs[step_index].device)
    # The gradient: the unit's argument, or the first argument of its producer.
    ref = refs[1]
    while ref[0] == "op":
        ref = unit["body"]["ops"][ref[1]]["operands"][0]
    grad = inputs[ref[1]].view(-1)
    grad[grad.numel() // 3] = float("nan")
    grad[grad.numel() - 1] = float("nan")


# ------------------------------------------------------------------ dropout

def dropout_keep(unit, j, inputs, shape):
    """The reference keep mask (bool, on the inputs' device) of body op j, a
    weft.dropout of a tensor of `shape`: philox.keep_mask over its row-major
    indices with
    the unit's seed and the op's weft.rng_id. Cached in the unit for the
    same seed tensor, so timed torch runs neither draw it again nor read the
    seed back from the device."""
    masks = unit.setdefault("dropout_masks", {})
    member = unit["body"]["ops"][j]
    seed_ref = member["operands"][1]
    if seed_ref[0] != "arg":
        raise UnitError("a dropout seed computed inside the group")
    seed_tensor = inputs[seed_ref[1]]
    if j not in masks or masks[j][0] is not seed_tensor:
        keep = philox.keep_mask(list(shape), member["attrs"]["p"], int(seed_tensor.item()),
                                member["attrs"]["weft.rng_id"])
        masks[j] = (seed_tensor, torch.from_numpy(keep).to(seed_tensor.device))
    return masks[j][1]


def dropout_ops(unit):
    return [j for j, member in enumerate(unit.get("body", {}).get("ops", []))
            if member["op"] == "weft.dropout" and member["attrs"].get("p", 0.0) != 0.0]


def observed_keep(unit, j, inputs, outputs):
    """The mask the kernel applied at body op j (a dropout), read from the
    outputs: (kept, where it is readable), or None. A yielded dropout keeps
    exactly its nonzero outputs (readable where its input is nonzero); a
    dropout of a unit argument (|x| >= 1, make_inputs) added to another
    argument r changes r exactly where it keeps: |x / (1 - p)| is above
    r's rounding, a dropped element adds 0."""
    body = unit["body"]
    yields = body["yield"]
    mine = ["op", j, 0]

    def known(ref):
        if ref[0] == "arg":
            return inputs[ref[1]]
        return outputs[yields.index(ref)] if ref in yields else None

    x_ref = body["ops"][j]["operands"][0]
    if mine in yields:
        x = known(x_ref)
        if x is None:
            return None
        y = outputs[yields.index(mine)].to(torch.float64)
        x = x.to(torch.float64)
        return y != 0, (x != 0) & ~torch.isnan(x)
    for k, user in enumerate(body["ops"]):
        if user["op"] != "weft.add" or mine not in user["operands"] or x_ref[0] != "arg":
            continue
        other = user["operands"][1 - user["operands"].index(mine)]
        r, s = known(other), known(["op", k, 0])
        if r is None or s is None or r.shape != s.shape:
            continue
        x = inputs[x_ref[1]].to(torch.float64)
        return s.to(torch.float64) != r.to(torch.float64), x.abs() >= 1
    return None


def dropout_mask_failures(unit, inputs, outputs):
    """Each p > 0 dropout's applied mask against the reference's, element
    by element (failures, notes)."""
    failures, notes = [], []
    for j in dropout_ops(unit):
        seen = observed_keep(unit, j, inputs, outputs)
        if seen is None:
            failures.append(f"the mask of dropout (body op {j}) cannot be read from the outputs")
            continue
        got, readable = seen
        want = dropout_keep(unit, j, inputs, got.shape)
        if int(readable.sum()) < 0.99 * readable.numel():
            failures.append(f"dropout (body op {j}): the mask is readable at only "
                            f"{int(readable.sum())} of {readable.numel()} elements")
        bad = (got != want) & readable
        wrong = int(bad.sum())
        notes.append(f"op {j}: kept {int(got[readable].sum())}/{int(readable.sum())} "
                     f"(reference {int(want[readable].sum())}), {wrong} differ")
        if wrong:
            at = int(bad.reshape(-1).nonzero()[0].item())
            failures.append(
                f"dropout (body op {j}, rng_id {unit['body']['ops'][j]['attrs']['weft.rng_id']}):"
                f" {wrong} elements kept/dropped unlike the reference mask (first at"
                f" flat index {at}: kernel {'kept' if got.reshape(-1)[at] else 'dropped'})")
    return failures, notes


def run_op(name, attrs, xs, types, reference, keep=None):
    """One body op; `types` are its result dtypes (cast to them unless
    `reference`, which stays in float64)."""
    a = attrs

    def out(*values):
        if reference:
            return [v.to(torch.float64) if v.is_floating_point() else v for v in values]
        return [v.to(DTYPES[t]) for v, t in zip(values, types)]

    # The pointwise ops with a formula: their PyTorch function from the one
    # table the formula tests use (weft.pointwise).
    pointwise = POINTWISE.get(name.removeprefix("weft."))
    if pointwise:
        kwargs = {k: a[k] for v in pointwise.variants for k in v if k in a}
        return out(pointwise.torch_fn(*xs, **kwargs))
    if name == "weft.convert":
        return out(xs[0])
    if name == "weft.dropout":
        p = a.get("p", 0.0)
        if p == 0.0:
            return out(xs[0])
        return out(torch.where(keep, xs[0] / (1.0 - p), torch.zeros_like(xs[0])))
    if name == "weft.layer_norm":
        x, g, b = xs
        return out(F.layer_norm(x, (x.shape[-1],), g, b, a.get("eps", 1e-5)))
    if name == "weft.rms_norm":
        return out(_rms_norm(xs[0], xs[1], a.get("eps", 1e-6)))
    if name == "weft.softmax":
        return out(torch.softmax(xs[0], a.get("dim", -1)))
    if name == "weft.softmax_grad":
        dy, y = xs
        return out(y * (dy - (dy * y).sum(a.get("dim", -1), keepdim=True)))
    if name == "weft.layer_norm_grad":
        return out(*_layer_norm_grad(xs[0], xs[1], xs[2], a.get("eps", 1e-5)))
    if name == "weft.rms_norm_grad":
        return out(*_rms_norm_grad(xs[0], xs[1], xs[2], a.get("eps", 1e-6)))
    if name == "weft.cross_entropy":
        logits, labels = xs
        return out(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)))
    if name == "weft.cross_entropy_grad":
        return out(_cross_entropy_grad(*xs))
    if name == "weft.rope":
        return out(_rope(*xs, inverse="inverse" in a))
    if name == "weft.adamw" and len(xs) == 6:
        return out(*_split_adamw(*xs, a, reference))
    if name == "weft.adamw":
        return out(*_adamw(*xs, a))
    if name == "weft.transpose":
        perm = [int(p) for p in a["perm"].split(":")[1].strip(" >").split(",")]
        return out(xs[0].permute(perm).contiguous())
    if name == "weft.split":
        sizes = [int(p) for p in a["sizes"].split(":")[1].strip(" >").split(",")]
        return out(*[p.contiguous() for p in torch.split(xs[0], sizes, a["dim"])])
    if name == "weft.concat":
        return out(torch.cat(xs, a["dim"]))
    if name == "weft.embedding":
        ids, table = xs
        return out(F.embedding(ids, table))
    if name == "weft.embedding_grad":
        dy, ids = xs
        raise UnitError("embedding_grad is evaluated by unit_outputs")
    if name in ("weft.reduce_sum", "weft.reduce_mean", "weft.reduce_max"):
        dims = [int(p) for p in a["dims"].split(":")[1].strip(" >").split(",")]
        fn = {"weft.reduce_sum": torch.sum, "weft.reduce_mean": torch.mean,
              "weft.reduce_max": torch.amax}[name]
        return out(fn(xs[0], dim=dims, keepdim="keepdim" in a))
    raise UnitError(f"the checker has no reference for {name}")


def unit_outputs(unit, inputs, reference, masks=None):
    """The unit's outputs from its body, in float64 (`reference`) or in the
    declared dtypes (PyTorch eager). `masks`: the dropouts' keep masks by
    body op, drawn beforehand (torch.compile traces no Philox draw)."""
    if unit["op"] == "arith.constant":
        p = unit["params"]
        dtype = torch.float64 if reference else DTYPES[p[0]["dtype"]]
        return [torch.full(p[0]["shape"], p[2]["value"], dtype=dtype, device=inputs_device(unit))]
    body = unit["body"]
    if reference:
        inputs = [x.to(torch.float64) if x.is_floating_point() else x for x in inputs]
    values = []
    for j, member in enumerate(body["ops"]):
        xs = []
        for ref in member["operands"]:
            xs.append(inputs[ref[1]] if ref[0] == "arg" else values[ref[1]][ref[2]])
        if member["op"] == "weft.embedding_grad":
            dy, ids = xs
            vocab = next(p for p in unit["params"] if p["role"] == "output")["shape"][0]
            hid = dy.shape[-1]
            acc = torch.float64 if reference else torch.float32
            table = torch.zeros(vocab, hid, dtype=acc, device=dy.device)
            table.index_add_(0, ids.reshape(-1), dy.reshape(-1, hid).to(acc))
            values.append([table if reference else table.to(DTYPES[member["types"][0]])])
            continue
        keep = None
        if j in dropout_ops(unit):
            keep = masks[j] if masks is not None else dropout_keep(unit, j, inputs, xs[0].shape)
        values.append(run_op(member["op"], member["attrs"], xs, member["types"], reference,
                             keep))
    return [inputs[r[1]] if r[0] == "arg" else values[r[1]][r[2]] for r in body["yield"]]


_DEVICE = "cuda"


def inputs_device(unit):
    return _DEVICE


def make_inputs(unit, generator):
    """Random inputs shaped by the unit's input params; what each feeds
    decides its range (ids, labels, AdamW's v >= 0 and step >= 1, gamma ~ 1)."""
    params = [p for p in unit["params"] if p.get("role") == "input"]
    roles = {}
    dropped = set()  # arguments a p > 0 dropout reads as x
    for member in unit["body"]["ops"]:
        for position, ref in enumerate(member["operands"]):
            if ref[0] == "arg":
                roles.setdefault(ref[1], (member["op"], position))
                if (member["op"] == "weft.dropout" and position == 0
                        and member["attrs"].get("p", 0.0) != 0.0):
                    dropped.add(ref[1])
    vocab = None
    for member in unit["body"]["ops"]:
        if member["op"] in ("weft.cross_entropy", "weft.cross_entropy_grad"):
            logits = params[member["operands"][0 if member["op"] == "weft.cross_entropy" else 1][1]]
            vocab = logits["shape"][-1]
        if member["op"] == "weft.embedding":
            vocab = params[member["operands"][1][1]]["shape"][0]
        if member["op"] == "weft.embedding_grad":
            vocab = next(p for p in unit["params"] if p["role"] == "output")["shape"][0]
    inputs = []
    for index, p in enumerate(params):
        shape, dtype = p["shape"], DTYPES[p["dtype"]]
        op, position = roles.get(index, ("", -1))
        if p["dtype"] == "i16":
            x = torch.zeros(shape, dtype=torch.int16)  # split_master_inputs fills it
        elif p["dtype"] == "i64":
            if op == "weft.adamw":
                x = torch.randint(1, 1000, shape, generator=generator, device="cpu")
            elif op == "weft.dropout":
                # Beyond 32 bits (the key takes the low 32) and within 2^52
                # (the reference interpreter stores i64 in float64).
                x = torch.randint(-2**52, 2**52, shape, generator=generator, dtype=torch.int64)
            else:
                x = torch.randint(0, vocab, shape, generator=generator, device="cpu")
        elif p["dtype"] == "bool":
            x = torch.rand(shape, generator=generator) < 0.5
        else:
            x = torch.randn(shape, generator=generator, dtype=torch.float32)
            if op in ("weft.layer_norm", "weft.rms_norm", "weft.layer_norm_grad",
                      "weft.rms_norm_grad") and position == (2 if "grad" in op else 1):
                x = 1.0 + 0.1 * x  # gamma
            if op == "weft.adamw" and position == 3:
                x = x.abs() * 1e-2  # the second moment
            if op == "weft.softmax_grad" and position == 1:
                x = torch.softmax(x, -1)  # y is a softmax
            if op == "weft.cross_entropy_grad" and position == 0:
                x = torch.ones(shape)
            if index in dropped:
                # |x| >= 1: a kept element visibly changes what it is added
                # to (observed_keep reads the mask from the sum).
                x = torch.where(x >= 0, x + 1, x - 1)
            x = x.to(dtype)
        inputs.append(x.to(_DEVICE))
    split_master_inputs(unit, inputs, generator)
    return inputs


# ------------------------------------------------------------- the kernels

class LoadedUnit:
    def __init__(self, rt, unit):
        with open(os.path.join(unit["dir"], unit["cubin"]), "rb") as f:
            self.module = rt.module_load(f.read())
        self.unit = unit
        self.functions = [self.module.function(l["kernel"]) for l in unit["launches"]]

    def launch(self, rt, args, stream):
        for launch, fn in zip(self.unit["launches"], self.functions):
            rt.launch(fn, (launch["grid"], 1, 1), (launch["threads"], 1, 1), 0, stream, args)


def kernel_args(unit, inputs, outputs, workspaces=()):
    """(kind, value) per param: pointers in param order (inputs, outputs,
    the op's workspace); the fill unit's elements and value."""
    if unit["op"] == "arith.constant":
        p = unit["params"]
        return [("ptr", outputs[0].data_ptr()), ("i64", int(p[1]["value"])),
                ("f32", float(p[2]["value"]))]
    return [("ptr", t.data_ptr()) for t in list(inputs) + list(outputs) + list(workspaces)]


def rel_error(value, ref):
    value = value.to(torch.float64)
    if torch.isnan(value).any() or torch.isinf(value).any():
        return math.inf
    scale = ref.abs().max().item() if ref.numel() else 0.0
    err = (value - ref).abs().max().item() if ref.numel() else 0.0
    return err / scale if scale > 0 else err


def bench(fn, quick):
    try:
        from triton.testing import do_bench
        return do_bench(fn, warmup=5 if quick else 25, rep=20 if quick else 100,
                        return_mode="median") * 1e-3
    except ImportError:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(5 if quick else 20):
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
        return sorted(times)[len(times) // 2]


def unit_bytes(unit):
    total = 0
    for p in unit["params"]:
        if p.get("kind") == "pointer":
            n = 1
            for d in p["shape"]:
                n *= d
            total += n * {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "i64": 8, "bool": 1,
                          "i16": 2}[p["dtype"]]
    return total


def check_unit(rt, unit, opts, stream):
    row = {"name": unit["name"], "kind": unit.get("kind", unit["op"].replace("weft.", "")),
           "dtype": next((p["dtype"] for p in unit["params"] if p["dtype"] in TOLERANCE), "-")}
    generator = torch.Generator().manual_seed(sum(map(ord, unit["name"])))
    inputs = make_inputs(unit, generator) if unit["op"] != "arith.constant" else []
    out_params = [p for p in unit["params"] if p.get("role") == "output"]
    poisoned = [Poisoned(p["shape"], DTYPES[p["dtype"]], _DEVICE) for p in out_params]
    outputs = [p.tensor for p in poisoned]
    # Workspaces start as NaN: a kernel reading what no kernel wrote shows.
    workspaces = [Poisoned(p["shape"], DTYPES[p["dtype"]], _DEVICE)
                  for p in unit["params"] if p.get("role") == "workspace"]
    loaded = LoadedUnit(rt, unit)
    args = kernel_args(unit, inputs, outputs, [w.tensor for w in workspaces])
    loaded.launch(rt, args, stream)
    torch.cuda.synchronize()
    reference = unit_outputs(unit, inputs, reference=True)
    eager = unit_outputs(unit, inputs, reference=False)
    failures, errors, eager_errors = [], [], []
    if split_adamw_op(unit):
        # A split master is graded as one f32 master across its two halves.
        failures, err = split_adamw_failures(unit, outputs, reference)
        errors.append(err)
        eager_errors.append(split_adamw_failures(unit, eager, reference)[1])
        out_params = []
    for k, (p, out, ref, eg) in enumerate(zip(out_params, outputs, reference, eager)):
        err = rel_error(out, ref)
        eerr = rel_error(eg, ref)
        errors.append(err)
        eager_errors.append(eerr)
        tol = TOLERANCE.get(p["dtype"], 0.0)
        if not err <= tol:
            failures.append(f"output {k} ({p['dtype']}): rel err {err:.3g} > {tol:g}"
                            f" (torch eager {eerr:.3g})")
    mask_failures, mask_notes = dropout_mask_failures(unit, inputs, outputs)
    failures += mask_failures
    if mask_notes:
        row["mask"] = "; ".join(mask_notes)
    guards = sum(p.guard_violations() for p in poisoned + workspaces)
    if guards:
        failures.append(f"{guards} guard elements overwritten (write out of bounds)")
    row["err"] = max(errors) if errors else 0.0
    row["eager_err"] = max(eager_errors) if eager_errors else 0.0
    row["ok"] = not failures
    row["why"] = "; ".join(failures)
    if opts.no_timing:
        return row
    nbytes = unit_bytes(unit)
    row["weft_s"] = bench(lambda: loaded.launch(rt, args, stream), opts.quick)
    row["eager_s"] = bench(lambda: unit_outputs(unit, inputs, reference=False), opts.quick)
    if not opts.no_compile:
        try:
            # Every unit compiles the same lambda: without a reset dynamo's
            # recompile limit would silently leave later units in eager.
            torch._dynamo.reset()
            masks = {j: unit["dropout_masks"][j][1] for j in dropout_ops(unit)}
            compiled = torch.compile(
                lambda *xs: unit_outputs(unit, list(xs), reference=False, masks=masks),
                dynamic=False)
            compiled(*inputs)
            row["compile_s"] = bench(lambda: compiled(*inputs), opts.quick)
        except Exception as e:  # a group torch.compile cannot take is reported, not fatal
            row["compile_note"] = f"torch.compile failed: {type(e).__name__}"
    for key in ("weft_s", "eager_s", "compile_s"):
        if key in row:
            row[key.replace("_s", "_gbs")] = nbytes / row[key] / 1e9
    return row


def print_table(rows):
    head = (f"{'unit':34} {'kind':26} {'dtype':5} {'result':6} {'rel err':>9} {'eager err':>9}"
            f" {'weft us':>9} {'GB/s':>7} {'eager us':>9} {'GB/s':>7} {'compile us':>10} {'GB/s':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        def us(key):
            return f"{r[key] * 1e6:9.1f}" if key in r else f"{'-':>9}"

        def gbs(key):
            return f"{r[key]:7.0f}" if key in r else f"{'-':>7}"
        print(f"{r['name']:34.34} {r['kind']:26.26} {r['dtype']:5} {'PASS' if r['ok'] else 'FAIL':6}"
              f" {r.get('err', math.nan):9.2e} {r.get('eager_err', math.nan):9.2e}"
              f" {us('weft_s')} {gbs('weft_gbs')} {us('eager_s')} {gbs('eager_gbs')}"
              f" {us('compile_s'):>10} {gbs('compile_gbs')}")
        if not r["ok"]:
            print(f"    FAIL: {r['why']}")
        if "compile_note" in r:
            print(f"    note: {r['compile_note']}")
        if "mask" in r:
            print(f"    dropout mask: {r['mask']}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", required=True, help="directory of scripts/build-fused-kernels")
    parser.add_argument("--only", default="", help="regex on unit names")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile timings")
    parser.add_argument("--quick", action="store_true", help="fewer timing repetitions")
    parser.add_argument("--json", default="", help="write the rows here")
    add_deadline_option(parser, "units")
    opts = parser.parse_args(argv)
    import re
    units = [u for u in load_units(opts.kernels) if re.search(opts.only, u["name"])]
    torch.zeros(1, device=_DEVICE)
    import weft.runtime as rt
    rt.init()
    rt.context_ensure(torch.cuda.current_device())
    stream = torch.cuda.current_stream().cuda_stream
    deadline = Deadline(opts.deadline)
    rows, not_run = [], []
    for unit in units:
        if deadline.passed():
            not_run.append(unit["name"])
            continue
        try:
            row = check_unit(rt, unit, opts, stream)
        except Exception as e:
            traceback.print_exc()
            row = {"name": unit["name"], "kind": unit.get("kind", unit["op"]), "dtype": "-",
                   "ok": False, "why": f"{type(e).__name__}: {e}"}
        rows.append(row)
        print(f"{row['name']}: {'PASS' if row['ok'] else 'FAIL ' + row['why']}", flush=True)
        results.write_json(opts.json, {"rows": rows, "not_run": not_run})
    print()
    print_table(rows)
    failed = [r["name"] for r in rows if not r["ok"]]
    print(f"\n{len(rows) - len(failed)}/{len(rows)} units pass"
          + (f"; NOT RUN (deadline): {', '.join(not_run)}" if not_run else ""))
    results.write_json(opts.json, {"rows": rows, "not_run": not_run})
    return 1 if failed or not_run else 0


if __name__ == "__main__":
    sys.exit(main())
