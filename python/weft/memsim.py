"""An independent check of weft-plan-memory: reads the planned IR as printed by
weft-opt (or weft-compile's step IR, whose planned step is the plan
--emit=package exports), recomputes every buffer's lifetime from the text (op
lines, SSA uses, sizes from tensor types, offsets from the plan's
attributes), replays the schedule and checks that no two simultaneously live
buffers share a byte, that every buffer lies inside [0, peak), and that the
peak and the max-live lower bound equal the ones the plan states. It shares no
code with the C++ liveness analysis; the rules it re-implements are those of
include/weft/Analysis/Liveness.h:

- the schedule is the op order of the body; op i is step i, the return the
  last step;
- arguments start at step 0; `weft.param` arguments and arguments tied by a
  result's `weft.alias` live to the last step, other arguments to their last
  use; an op result lives from its step to its last use (its own step if
  unused); uses inside a nested region count at the step of the op holding
  the region;
- views share one buffer with all their operands and results: every
  `weft.reshape`, and the `weft.split` / `weft.concat` around seq-major
  attention that the kernels read and write packed (AttentionPacking.cpp:
  the split of the packed q, k, v, the concat of dq, dk, dv); a result with
  `weft.alias = j` is stored in argument j's buffer;
- workspaces live during their op's step only: `weft.attention_grad` has
  4 * b * h * s bytes (the f32 row statistic rowsum(dO * O) per query row);
  a GEMM (`weft.linear`, `weft.matmul`, a GEMM `weft.fused` group) in a
  function with `weft.gemm_workspace = cap` has min(cap, max(1 MiB,
  16 * output elements) rounded up to 256) (cuBLASLt's split-K partials); a
  `weft.fused` group with column sums has its row statistics and partials;
- an argument marked `weft.bound` lives in the caller's memory: its buffer
  (the argument, its views, its in-place update and nothing else) takes no
  arena bytes, and its bytes must equal the plan's `bound_bytes`;
- every offset is a multiple of the alignment and a buffer occupies its size
  rounded up to it.

Functions without a `weft.memory_plan` (weft-compile's unplanned forward) are
skipped; an input with none planned is an error.

    python -m weft.memsim planned.mlir [--report report.json]
"""
import argparse
import json
import re
import sys
from dataclasses import dataclass

from .memsim_ir import (NAME, PlanError, attr_array, attr_int, parse_functions,
                        result_names, signature_types, tensor_bytes, tensor_elements)


# f32 row statistics per row of each op in a norm-weight gradient group
# (WeftColumnSums.cpp's rowStatCount).
ROW_STATS = {"weft.layer_norm": 2, "weft.softmax": 2, "weft.rms_norm_grad": 2,
             "weft.rms_norm": 1, "weft.softmax_grad": 1, "weft.cross_entropy": 1,
             "weft.cross_entropy_grad": 1, "weft.layer_norm_grad": 4}


def column_sum_workspace(op):
    """A weft.fused group's column-sum scratch: its row statistics, then the
    per-chunk partials of its column sums (dgamma, dbeta), chunks of about 128
    rows, at most 64; None when the group has no column sums."""
    stats, sums, norm_x = 0, 0, None
    results = {}
    for line in op.body:
        lhs, _, rhs = line.partition(" = ") if line.startswith("%") else ("", "", line)
        name = rhs.split()[0] if rhs else ""
        stats += ROW_STATS.get(name, 0)
        for k, result in enumerate(result_names(lhs) if lhs else []):
            results[result] = (name, k, rhs)
        if name == "weft.yield":
            for value in NAME.findall(rhs.split(":")[0]):
                source, k, text = results.get(value, ("", 0, ""))
                if (source == "weft.layer_norm_grad" and k > 0) or \
                        (source == "weft.rms_norm_grad" and k == 1):
                    sums += 1
                    norm_x = signature_types(text)[0][1]
    if not sums:
        return None
    _, dims = tensor_elements(norm_x)
    rows = 1
    for d in dims[:-1]:
        rows *= d
    chunks = min(max(rows // 128, 1), 64)
    return 4 * (stats * rows + (chunks * sums * dims[-1] if chunks > 1 else 0))


GEMM_OPS = ("weft.linear", "weft.matmul")
# weft.fused kinds that run one cuBLASLt GEMM (KernelGroupRules.h).
GEMM_GROUP_KINDS = ("linear+gelu", "matmul+gelu_grad", "matmul+reduce_sum")


def gemm_workspace_bytes(result_type, cap):
    """cuBLASLt's workspace of a GEMM writing `result_type` under the
    function's cap (WeftCost.cpp's gemmWorkspaceBytes): room for four f32
    copies of the output, at least 1 MiB, rounded up to 256, at most cap."""
    outputs, _ = tensor_elements(result_type)
    if cap <= 0 or outputs == 0:
        return 0
    need = align(max(1 << 20, 16 * outputs), 256)
    return min(cap, need)


def group_gemm_result(op):
    """The result type of the GEMM a GEMM weft.fused group runs; None for
    other groups."""
    kind = re.search(r'kind = "([^"]*)"', op.attrs)
    if kind is None or kind.group(1) not in GEMM_GROUP_KINDS:
        return None
    for line in op.body:
        rhs = line.partition(" = ")[2] if line.startswith("%") else line
        if rhs.split(" ", 1)[0] in GEMM_OPS:
            return signature_types(rhs)[1][0]
    raise PlanError(f"step {op.step}: GEMM group {op.name} holds no weft.linear or "
                    f"weft.matmul: {op.line}")


def workspace_bytes(op, gemm_cap):
    """The workspace of `op` (the MemoryOpInterface rules, restated here);
    0 when it has none."""
    if op.name in ("weft.attention", "weft.attention_grad"):
        # weft/Dialect/AttentionWorkspace.h: the forward's keep mask with
        # dropout; the backward's delta, and with dropout the keep mask
        # after it at a 256-byte boundary.
        grad = op.name == "weft.attention_grad"
        _, q_dims = tensor_elements(op.operand_types[1 if grad else 0])
        _, k_dims = tensor_elements(op.operand_types[2 if grad else 1])
        seq, heads = (1, 2) if is_seq_major_attention(op) else (2, 1)
        planes, q_len, k_len = q_dims[0] * q_dims[heads], q_dims[seq], k_dims[seq]
        mask = planes * -(-q_len // 8) * -(-k_len // 16) * 16
        dropout = re.search(r"dropout_p = ([-+0-9.eE]+)", op.attrs)
        dropout = dropout is not None and float(dropout.group(1)) > 0.0
        if not grad:
            return mask if dropout else 0
        delta = 4 * planes * q_len
        return (delta + 255) // 256 * 256 + mask if dropout else delta
    if op.name in GEMM_OPS:
        return gemm_workspace_bytes(op.result_types[0], gemm_cap)
    if op.name != "weft.fused":
        return 0
    gemm = group_gemm_result(op)
    if gemm is not None:
        return gemm_workspace_bytes(gemm, gemm_cap)
    return column_sum_workspace(op) or 0


def align(n, alignment):
    return (n + alignment - 1) // alignment * alignment


# -- views: reshapes, and the packed split / concat around attention ----------

def is_seq_major_attention(op):
    return op.name in ("weft.attention", "weft.attention_grad") and \
        re.search(r"[{ ]seq_major[,}]", op.attrs) is not None


def qkv_operand(op, piece):
    """Operand position of q (0), k (1) or v (2); attention_grad reads dO first."""
    return piece + 1 if op.name == "weft.attention_grad" else piece


def packing_form(whole_type, dim, piece_sizes):
    """"blocked" (the last dim of [b, s, C]) or "grouped" (dim 3 of
    [b, s, hk, g + 2, d], pieces (g, 1, 1)); None for other cuts."""
    _, whole = tensor_elements(whole_type)
    dim = dim + len(whole) if dim < 0 else dim
    if len(piece_sizes) != 3:
        return None
    if len(whole) == 3 and dim == 2:
        return "blocked"
    if len(whole) == 5 and dim == 3 and piece_sizes[1] == 1 and piece_sizes[2] == 1:
        return "grouped"
    return None


class UseGraph:
    """Defining op and users (op, operand index) of every SSA name of a body."""

    def __init__(self, ops):
        self.defining, self.users = {}, {}
        for op in ops:
            for k, name in enumerate(op.results):
                self.defining[name] = (op, k)
            for index, name in enumerate(op.uses):
                self.users.setdefault(name, []).append((op, index))

    def piece_of(self, value):
        """(split op, piece) when `value` is a reshape of a split result."""
        reshape = self.defining.get(value, (None, 0))[0]
        if reshape is None or reshape.name != "weft.reshape":
            return None, 0
        split, piece = self.defining.get(reshape.uses[0], (None, 0))
        return (split, piece) if split is not None and split.name == "weft.split" \
            else (None, 0)

    def packed_qkv_split(self, split):
        """The packing of a split whose pieces are read only (through reshapes
        to [b, s, h, d]) as q, k, v of seq-major attention; None otherwise."""
        whole_type = split.operand_types[0]
        form = packing_form(whole_type, attr_int(split.attrs, "dim"),
                            attr_array(split.attrs, "sizes") or [])
        if form is None:
            return None
        _, whole = tensor_elements(whole_type)
        read = False
        for piece, result in enumerate(split.results):
            for reshape, _ in self.users.get(result, []):
                if reshape.name != "weft.reshape":
                    return None
                _, shape = tensor_elements(reshape.result_types[0])
                if len(shape) != 4 or shape[:2] != whole[:2] or \
                        (form == "grouped" and shape[3] != whole[4]):
                    return None
                for attention, index in self.users.get(reshape.results[0], []):
                    if not is_seq_major_attention(attention) or \
                            index != qkv_operand(attention, piece):
                        return None
                    if any(self.piece_of(attention.uses[qkv_operand(attention, other)])
                           != (split, other) for other in range(3)):
                        return None
                    read = True
        return form if read else None

    def packed_qkv_of(self, attention):
        split, piece = self.piece_of(attention.uses[qkv_operand(attention, 0)])
        if split is None or piece != 0:
            return None
        return self.packed_qkv_split(split)

    def packed_grads_concat(self, grad):
        """The concat that writes a seq-major attention_grad's dq, dk, dv
        (each through one reshape) packed, in the operands' packing; None
        otherwise."""
        if not is_seq_major_attention(grad):
            return None
        concat, piece_sizes = None, []
        for piece, result in enumerate(grad.results):
            users = self.users.get(result, [])
            if len(users) != 1 or users[0][0].name != "weft.reshape":
                return None
            reshape = users[0][0]
            uses = self.users.get(reshape.results[0], [])
            if len(uses) != 1 or uses[0][0].name != "weft.concat" or uses[0][1] != piece \
                    or (concat is not None and uses[0][0] is not concat):
                return None
            concat = uses[0][0]
            _, shape = tensor_elements(reshape.result_types[0])
            dim = attr_int(concat.attrs, "dim")
            piece_sizes.append(shape[dim])
        if concat is None or len(concat.uses) != 3:
            return None
        form = packing_form(concat.result_types[0], attr_int(concat.attrs, "dim"), piece_sizes)
        _, whole = tensor_elements(concat.result_types[0])
        _, dq = tensor_elements(grad.result_types[0])
        if form is None or whole[:2] != dq[:2] or (form == "grouped" and whole[4] != dq[3]):
            return None
        operands = self.packed_qkv_of(grad)
        return concat if operands is None or operands == form else None

    def is_view(self, op):
        if op.name == "weft.reshape":
            return True
        if op.name == "weft.split":
            return self.packed_qkv_split(op) is not None
        if op.name == "weft.concat" and len(op.uses) == 3:
            reshape = self.defining.get(op.uses[0], (None, 0))[0]
            grad = self.defining.get(reshape.uses[0], (None, 0))[0] \
                if reshape is not None and reshape.name == "weft.reshape" else None
            return grad is not None and grad.name == "weft.attention_grad" and \
                self.packed_grads_concat(grad) is op
        return False


# -- simulation ----------------------------------------------------------------

@dataclass
class Buffer:
    members: list
    size: int
    start: int
    end: int
    offset: int
    bound: bool = False  # in the caller's memory (weft.bound), not the arena

    def arena_size(self, alignment):
        return 0 if self.bound else align(self.size, alignment)


class Values:
    """Every tensor value of a function: size, lifetime, offset, and a
    union-find of the values sharing a buffer (its root the earliest)."""

    def __init__(self, function):
        self.size, self.start, self.end, self.offset, self.parent = {}, {}, {}, {}, {}
        for name, type_text, attrs in function.args:
            self.define(name, type_text, 0, attr_int(attrs, "weft.offset"))
        for op in function.ops:
            offsets = attr_array(op.attrs, "weft.offsets")
            if op.results and len(op.result_types) != len(op.results):
                raise PlanError(f"step {op.step}: {len(op.results)} results but "
                                f"{len(op.result_types)} result types in: {op.line}")
            for k, (name, type_text) in enumerate(zip(op.results, op.result_types)):
                self.define(name, type_text, op.step, offsets[k] if offsets else None)
            for use in op.uses:
                if use in self.end:
                    self.end[use] = max(self.end[use], op.step)

    def define(self, name, type_text, step, offset):
        size = tensor_bytes(type_text)
        if size is None:
            return
        self.size[name], self.start[name], self.end[name] = size, step, step
        self.offset[name], self.parent[name] = offset, name

    def find(self, name):
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def unite(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            early, late = sorted((a, b), key=lambda n: self.start[n])
            self.parent[late] = early


def unite_views(function, values):
    """Gives each view the buffer of its first operand; returns the views'
    result names."""
    graph = UseGraph(function.ops)
    views = set()
    for op in function.ops:
        if not graph.is_view(op):
            continue
        views.update(op.results)
        for name in op.uses + op.results:
            if name in values.size:
                values.unite(op.uses[0], name)
    return views


def tie_aliases(function, values):
    """Unites each `weft.alias` result with its argument; returns the
    persistent arguments and the ops writing an in-place update."""
    persistent = {name for name, _, attrs in function.args if "weft.param" in attrs}
    writers = set()
    returned = function.ops[-1].uses
    for k, attrs in enumerate(function.result_attrs):
        j = attr_int(attrs, "weft.alias")
        if j is None:
            continue
        arg = function.args[j][0]
        persistent.add(arg)
        root = values.find(returned[k])
        if root != values.find(arg):
            writers.add(root)
            values.unite(arg, root)
    return persistent, writers


def collect_buffers(function, values, persistent):
    last = len(function.ops) - 1
    buffers = {}
    for name in values.size:
        root = values.find(name)
        buf = buffers.get(root)
        if buf is None:
            buf = buffers[root] = Buffer([], 0, values.start[name], values.end[name],
                                         values.offset[name])
        buf.members.append(name)
        buf.size = max(buf.size, values.size[name])
        buf.start = min(buf.start, values.start[name])
        buf.end = max(buf.end, last if name in persistent else values.end[name])
        if values.offset[name] is None:
            raise PlanError(f"{name} has no offset attribute")
        if values.offset[name] != buf.offset:
            raise PlanError(f"{name} shares the buffer of {root} but has offset "
                            f"{values.offset[name]}, not {buf.offset}")
    return buffers


def mark_bound(function, values, buffers, views, writers):
    """Buffers of `weft.bound` arguments leave the arena; they may hold only
    the argument, its views and its in-place update."""
    for name, _, attrs in function.args:
        if not re.search(r"[{ ]weft\.bound[,}]", attrs) or name not in values.size:
            continue
        buf = buffers[values.find(name)]
        for member in buf.members:
            if member != name and member not in views and member not in writers:
                raise PlanError(f"{name} is bound by the caller (weft.bound) but its "
                                f"buffer also holds {member}")
        buf.bound = True


def add_workspaces(function, buffers):
    """A buffer per op workspace; the plan must place each one the rules
    give, and no other."""
    for op in function.ops:
        planned = attr_int(op.attrs, "weft.workspace_offset")
        size = workspace_bytes(op, function.gemm_workspace)
        if size and planned is None:
            raise PlanError(f"step {op.step}: {op.name} needs a workspace of {size} "
                            f"bytes but has no weft.workspace_offset")
        if planned is not None and not size:
            raise PlanError(f"step {op.step}: {op.name} has weft.workspace_offset = "
                            f"{planned} but the simulator gives it no workspace")
        if size:
            buffers.append(Buffer([f"workspace@{op.step}"], size, op.step, op.step, planned))


def check_placement(buffers, alignment, peak):
    for buf in buffers:
        if buf.bound:
            continue
        if buf.offset < 0 or buf.offset % alignment:
            raise PlanError(f"{buf.members[0]}: offset {buf.offset} is not a "
                            f"non-negative multiple of {alignment}")
        if buf.offset + align(buf.size, alignment) > peak:
            raise PlanError(f"{buf.members[0]}: [{buf.offset}, {buf.offset + buf.size}) "
                            f"is not inside the arena of {peak} bytes")


def check_disjoint(buffers):
    """Replays the schedule: live arena buffers must occupy disjoint bytes."""
    active = []
    for buf in sorted((b for b in buffers if not b.bound), key=lambda b: b.start):
        active = [a for a in active if a.end >= buf.start]
        for other in active:
            if buf.size and other.size and buf.offset < other.offset + other.size \
                    and other.offset < buf.offset + buf.size:
                raise PlanError(
                    f"{other.members[0]} (steps {other.start}..{other.end}, bytes "
                    f"[{other.offset}, {other.offset + other.size})) and {buf.members[0]} "
                    f"(steps {buf.start}..{buf.end}, bytes [{buf.offset}, "
                    f"{buf.offset + buf.size})) overlap")
        active.append(buf)


def max_live_bytes(buffers, alignment, steps):
    live = [0] * (steps + 1)
    for buf in buffers:
        live[buf.start] += buf.arena_size(alignment)
        live[buf.end + 1] -= buf.arena_size(alignment)
    running, most = 0, 0
    for step in range(steps):
        running += live[step]
        most = max(most, running)
    return most


def simulate(function):
    """Recomputes buffers from the text and checks the plan. Returns a dict
    with peak, lower bound, bound bytes and buffers (bound ones included,
    marked); raises PlanError on any mismatch."""
    plan = function.plan
    if plan is None or plan["peak_bytes"] is None:
        raise PlanError(f"@{function.name} has no weft.memory_plan")
    alignment, peak = plan["alignment"], plan["peak_bytes"]
    values = Values(function)
    views = unite_views(function, values)
    persistent, writers = tie_aliases(function, values)
    by_root = collect_buffers(function, values, persistent)
    mark_bound(function, values, by_root, views, writers)
    buffers = list(by_root.values())
    add_workspaces(function, buffers)
    check_placement(buffers, alignment, peak)
    check_disjoint(buffers)
    max_live = max_live_bytes(buffers, alignment, len(function.ops))
    used = max((b.offset + b.arena_size(alignment) for b in buffers if not b.bound),
               default=0)
    if used != peak:
        raise PlanError(f"@{function.name}: the buffers reach {used} bytes, the plan "
                        f"says peak_bytes = {peak}")
    if max_live != plan["lower_bound_bytes"]:
        raise PlanError(f"@{function.name}: max-live is {max_live} bytes, the plan "
                        f"says lower_bound_bytes = {plan['lower_bound_bytes']}")
    bound = sum(b.size for b in buffers if b.bound)
    if bound != (plan["bound_bytes"] or 0):
        raise PlanError(f"@{function.name}: the weft.bound arguments hold {bound} bytes, "
                        f"the plan says bound_bytes = {plan['bound_bytes'] or 0}")
    return {"peak_bytes": peak, "lower_bound_bytes": max_live, "bound_bytes": bound,
            "fragmentation": (peak - max_live) / peak if peak else 0.0,
            "buffers": buffers}


def compare_report(function, result, report):
    """The JSON report's buffers must be the simulator's, as multisets of
    (offset, size, start, end)."""
    entry = report["functions"][function.name]
    mine = sorted((b.offset, b.size, b.start, b.end) for b in result["buffers"])
    theirs = sorted((b["offset"], b["size"], b["start"], b["end"]) for b in entry["buffers"])
    if mine != theirs:
        missing = sorted(set(mine) - set(theirs))[:3]
        extra = sorted(set(theirs) - set(mine))[:3]
        raise PlanError(f"@{function.name}: report buffers differ; only simulated "
                        f"{missing}, only reported {extra}")
    for key in ("peak_bytes", "lower_bound_bytes"):
        if entry[key] != result[key]:
            raise PlanError(f"@{function.name}: report {key} {entry[key]} != {result[key]}")


def is_workspace(buf):
    return buf.members[0].startswith("workspace@")


def compare_package(result, planned_bytes, package_buffers):
    """A package built from the same step (weft-compile --emit=package) must
    hold the simulator's plan: its arena is the peak, and its buffers
    (weft.runtime StepBuffers: role, offset, size, first, last, bound) are the
    simulator's as multisets of (offset, size, first, last) for the arena's
    tensors and for the workspaces, of (size, first, last) for bound ones
    (the caller's memory has no offset)."""
    if planned_bytes != result["peak_bytes"]:
        raise PlanError(f"the package's arena is {planned_bytes} bytes, the simulated "
                        f"peak {result['peak_bytes']}")
    groups = {
        "arena tensors": (
            [(b.offset, b.size, b.start, b.end) for b in result["buffers"]
             if not b.bound and not is_workspace(b)],
            [(b.offset, b.size, b.first, b.last) for b in package_buffers
             if not b.bound and b.role != "workspace"]),
        "workspaces": (
            [(b.offset, b.size, b.start, b.end) for b in result["buffers"] if is_workspace(b)],
            [(b.offset, b.size, b.first, b.last) for b in package_buffers
             if b.role == "workspace"]),
        "bound arguments": (
            [(b.size, b.start, b.end) for b in result["buffers"] if b.bound],
            [(b.size, b.first, b.last) for b in package_buffers if b.bound]),
    }
    for what, (mine, theirs) in groups.items():
        if sorted(mine) != sorted(theirs):
            missing = sorted(set(mine) - set(theirs))[:3]
            extra = sorted(set(theirs) - set(mine))[:3]
            raise PlanError(f"the package's {what} differ ({len(theirs)} in the package, "
                            f"{len(mine)} simulated); only simulated {missing}, only in "
                            f"the package {extra}")


def check_text(text, report=None):
    """Simulates every planned function (those with a weft.memory_plan);
    returns {name: result}."""
    results = {}
    for function in parse_functions(text):
        if function.plan is None:
            continue
        result = simulate(function)
        if report is not None:
            compare_report(function, result, report)
        results[function.name] = result
    if not results:
        raise PlanError("no func.func with a body and a weft.memory_plan in the input")
    return results


def check_package_file(results, function, path):
    from weft import runtime  # only here: the simulator needs no runtime library
    if function not in results:
        raise PlanError(f"--function {function} is not a planned function of the IR "
                        f"(planned: {', '.join(sorted(results))})")
    with open(path, "rb") as f:
        step = runtime.prepare_step(f.read(), 90)
    compare_package(results[function], step.memory_info()["planned_bytes"], step.buffers())


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m weft.memsim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ir", help="IR printed by weft-opt --weft-plan-memory")
    parser.add_argument("--report", help="the pass's report=FILE JSON, compared too")
    parser.add_argument("--package", help="a .weftpkg of the same step, compared too "
                        "(needs the runtime library: $WEFT_RUNTIME_LIB)")
    parser.add_argument("--function", default="forward_step",
                        help="the planned function --package holds (default forward_step)")
    args = parser.parse_args(argv)
    with open(args.ir) as f:
        text = f.read()
    report = None
    if args.report:
        with open(args.report) as f:
            report = json.load(f)
    try:
        results = check_text(text, report)
        if args.package:
            check_package_file(results, args.function, args.package)
    except PlanError as error:
        print(f"memsim: plan rejected: {error}", file=sys.stderr)
        return 1
    for name, r in results.items():
        bound = f" bound outside the arena {r['bound_bytes']}" if r["bound_bytes"] else ""
        print(f"@{name}: peak {r['peak_bytes']} lower bound {r['lower_bound_bytes']} "
              f"fragmentation {100 * r['fragmentation']:.2f}% buffers "
              f"{len(r['buffers'])}{bound}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
