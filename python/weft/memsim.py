"""An independent check of weft-plan-memory: reads the planned IR as printed by
weft-opt, recomputes every buffer's lifetime from the text (op lines, SSA
uses, sizes from tensor types, offsets from the plan's attributes), replays
the schedule and checks that no two simultaneously live buffers share a byte,
that every buffer lies inside [0, peak), and that the peak and the max-live
lower bound equal the ones the plan states. It shares no code with the C++
liveness analysis; the rules it re-implements are those of
include/weft/Analysis/Liveness.h:

- the schedule is the op order of the body; op i is step i, the return the
  last step;
- arguments start at step 0; `weft.param` arguments and arguments tied by a
  result's `weft.alias` live to the last step, other arguments to their last
  use; an op result lives from its step to its last use (its own step if
  unused); uses inside a nested region count at the step of the op holding
  the region;
- `weft.reshape` results share their operand's buffer; a result with
  `weft.alias = j` is stored in argument j's buffer;
- `weft.attention_grad` has a workspace of 4 * b * h * s bytes (the f32 row
  statistic rowsum(dO * O) per query row; the deterministic backward keeps
  dQ in registers, no accumulator) live during its step;
- every offset is a multiple of the alignment and a buffer occupies its size
  rounded up to it.

    python -m weft.memsim planned.mlir [--report report.json]
"""
import argparse
import json
import re
import sys
from dataclasses import dataclass, field

ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4,
                 "i16": 2, "i8": 1, "i1": 1}
NAME = re.compile(r"%[A-Za-z0-9_.$-]+(?:#\d+)?")
TENSOR = re.compile(r"tensor<([^<>]*)>")


class PlanError(Exception):
    """The plan is wrong, or the text is not what the simulator understands."""


def tensor_bytes(type_text):
    """Bytes of `tensor<AxBxT>`; None for any other type."""
    match = TENSOR.fullmatch(type_text.strip())
    if not match:
        return None
    *dims, element = match.group(1).split("x")
    if element not in ELEMENT_BYTES:
        raise PlanError(f"unknown element type in {type_text}")
    count = 1
    for dim in dims:
        if not dim.isdigit():
            raise PlanError(f"dynamic shape in {type_text}")
        count *= int(dim)
    return count * ELEMENT_BYTES[element]


def tensor_elements(type_text):
    *dims, _ = TENSOR.fullmatch(type_text.strip()).group(1).split("x")
    count = 1
    for dim in dims:
        count *= int(dim)
    return count, [int(d) for d in dims]


def split_top(text, sep=","):
    """Splits on `sep` outside (), [], {}, <> and strings."""
    parts, depth, start, quoted = [], 0, 0, False
    i = 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            # `->` is an arrow, not a closing bracket.
            if not (ch == ">" and i > 0 and text[i - 1] == "-"):
                depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i += len(sep)
            continue
        i += 1
    parts.append(text[start:])
    return parts


def attr_int(attrs, name):
    match = re.search(re.escape(name) + r" = (-?\d+)", attrs)
    return int(match.group(1)) if match else None


def attr_array(attrs, name):
    match = re.search(re.escape(name) + r" = array<i64(?::([^>]*))?>", attrs)
    if not match:
        return None
    body = match.group(1) or ""
    return [int(x) for x in body.split(",") if x.strip()]


@dataclass
class Op:
    step: int
    name: str
    results: list            # SSA names
    result_types: list
    uses: list = field(default_factory=list)
    attrs: str = ""
    operand_types: list = field(default_factory=list)
    line: str = ""
    body: list = field(default_factory=list)  # a region's lines


@dataclass
class Function:
    name: str
    args: list               # (name, type, attrs)
    result_attrs: list
    plan: dict
    ops: list


def result_names(lhs):
    """`%a, %b` or `%0:3` -> the SSA names of the results."""
    names = []
    for part in split_top(lhs):
        part = part.strip()
        match = re.fullmatch(r"(%[A-Za-z0-9_.$-]+)(?::(\d+))?", part)
        if not match:
            raise PlanError(f"cannot read results '{lhs}'")
        if match.group(2):
            names += [f"{match.group(1)}#{i}" for i in range(int(match.group(2)))]
        else:
            names.append(match.group(1))
    return names


def signature_types(text):
    """Operand and result types of an op line's trailing `: ...`."""
    parts = split_top(text, " : ")
    if len(parts) < 2:
        # `ins(%a : T) outs(%b : T) -> T` (linalg): types only after `->`.
        arrow = split_top(text, " -> ")
        if len(arrow) < 2:
            return [], []
        outs = arrow[-1].strip()
        outs = outs[1:-1] if outs.startswith("(") else outs
        return [], [t.strip() for t in split_top(outs) if t.strip()]
    sig = parts[-1].strip()
    arrow = split_top(sig, " -> ")
    strip = lambda s: s.strip()[1:-1] if s.strip().startswith("(") else s.strip()
    if len(arrow) == 2:
        ins, outs = strip(arrow[0]), strip(arrow[1])
        return ([t.strip() for t in split_top(ins) if t.strip()],
                [t.strip() for t in split_top(outs) if t.strip()])
    cast = split_top(sig, " to ")
    if len(cast) == 2:  # `: T1 to T2` (tensor.cast, arith casts)
        return [cast[0].strip()], [cast[1].strip()]
    types = [t.strip() for t in split_top(strip(sig)) if t.strip()]
    return types, types


def parse_plan_dict(text):
    """The `weft.memory_plan = {...}` dictionary as a flat dict of numbers."""
    match = re.search(r"weft\.memory_plan = \{", text)
    if not match:
        return None
    start = match.end() - 1
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            body = text[start:i + 1]
            break
    plan = {}
    for key in ("alignment", "peak_bytes", "lower_bound_bytes", "lower_bound_step"):
        plan[key] = attr_int(body, key)
    frag = re.search(r"fragmentation = ([-0-9.eE+]+)", body)
    plan["fragmentation"] = float(frag.group(1)) if frag else None
    return plan


def parse_functions(text):
    """Every func.func with a body in the printed module."""
    functions = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if not line.startswith("func.func @") or not line.endswith("{"):
            i += 1
            continue
        header = line
        name = re.match(r"func\.func @([\w.$-]+)\(", header).group(1)
        open_paren = header.index("(")
        args_text, rest = _balanced(header, open_paren)
        args = []
        for arg in split_top(args_text):
            arg = arg.strip()
            if not arg:
                continue
            m = re.match(r"(%[\w.$-]+): (.*)$", arg)
            type_and_attrs = m.group(2)
            type_text = split_top(type_and_attrs, " {")[0].strip()
            args.append((m.group(1), type_text, type_and_attrs[len(type_text):]))
        result_attrs = []
        if rest.lstrip().startswith("->"):
            results = rest.lstrip()[2:].strip()
            results = split_top(results, " attributes ")[0].rstrip(" {")
            if results.startswith("("):
                results = _balanced(results, 0)[0]
            for r in split_top(results):
                r = r.strip()
                result_attrs.append(r[len(split_top(r, " {")[0]):])
        plan = parse_plan_dict(header)
        ops, i = _parse_body(lines, i + 1)
        functions.append(Function(name, args, result_attrs, plan, ops))
    return functions


def _balanced(text, open_index):
    depth = 0
    for j in range(open_index, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[open_index + 1:j], text[j + 1:]
    raise PlanError(f"unbalanced parentheses in {text[:80]}...")


def _parse_body(lines, i):
    ops = []
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("//"):
            continue
        if line == "}":
            return ops, i
        lhs, rhs = "", line
        if line.startswith("%"):
            parts = split_top(line, " = ")
            lhs, rhs = parts[0], " = ".join(parts[1:])
        op_name = rhs.split()[0].split("(")[0]
        if op_name in ("return", "func.return"):
            op_name = "func.return"
        results = result_names(lhs) if lhs else []
        uses = NAME.findall(rhs)
        # A region: its lines are uses at this op's step.
        has_region = rhs.endswith("{")
        depth = rhs.count("{") - rhs.count("}") if has_region else 0
        closing = ""
        body = []
        while depth > 0 and i < len(lines):
            inner = lines[i]
            body.append(inner.strip())
            i += 1
            depth += inner.count("{") - inner.count("}")
            uses += NAME.findall(inner.split(" = ", 1)[-1] if inner.strip().startswith("%") else inner)
            closing = inner.strip()
        if has_region:
            # Result types follow the last `->`, of the closing line
            # (`} -> tensor<...>`) or else of the header (scf.for's
            # `-> (tensor<...>) {`).
            header = rhs[:-1].strip()
            source = closing.lstrip("}") if "->" in closing else header
            arrow = split_top(source, "->")
            types = arrow[-1].strip() if len(arrow) > 1 else ""
            if types.startswith("("):
                types = types[1:-1]
            operand_types = []
            result_types = [t.strip() for t in split_top(types) if t.strip()]
        else:
            operand_types, result_types = signature_types(rhs)
            if op_name == "tensor.extract":  # `: tensor<T>` names the operand
                result_types = ["scalar"]
        # The attributes are looked up by name in the whole line: an op's
        # attr-dict is not always right before its type (arith.constant).
        # A region op prints its attr-dict after the region: `} {...}`.
        ops.append(Op(len(ops), op_name, results, result_types, uses,
                      rhs + " " + closing if has_region else rhs, operand_types, line, body))
    raise PlanError("function body does not end")


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


def workspace_bytes(op):
    """The workspace of the ops that have one (the MemoryOpInterface rule,
    restated here)."""
    if op.name == "weft.attention_grad":
        _, q_dims = tensor_elements(op.operand_types[1])
        return 4 * q_dims[0] * q_dims[1] * q_dims[2]
    scratch = column_sum_workspace(op) if op.name == "weft.fused" else None
    if scratch is not None:
        return scratch
    raise PlanError(f"step {op.step}: {op.name} has weft.workspace_offset but "
                    "the simulator does not know its workspace size")


def align(n, alignment):
    return (n + alignment - 1) // alignment * alignment


@dataclass
class Buffer:
    members: list
    size: int
    start: int
    end: int
    offset: int


def simulate(function):
    """Recomputes buffers from the text and checks the plan. Returns a dict
    with peak, lower bound and buffers; raises PlanError on any mismatch."""
    plan = function.plan
    if plan is None or plan["peak_bytes"] is None:
        raise PlanError(f"@{function.name} has no weft.memory_plan")
    alignment = plan["alignment"]
    last = len(function.ops) - 1
    size, start, end, offset = {}, {}, {}, {}
    parent = {}

    def find(name):
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    def define(name, type_text, step, off):
        b = tensor_bytes(type_text)
        if b is None:
            return
        size[name], start[name], end[name], offset[name] = b, step, step, off
        parent[name] = name

    persistent = set()
    for index, (name, type_text, attrs) in enumerate(function.args):
        define(name, type_text, 0, attr_int(attrs, "weft.offset"))
        if "weft.param" in attrs:
            persistent.add(name)
    for op in function.ops:
        offsets = attr_array(op.attrs, "weft.offsets")
        if op.results and len(op.result_types) != len(op.results):
            raise PlanError(f"step {op.step}: {len(op.results)} results but "
                            f"{len(op.result_types)} result types in: {op.line}")
        for k, (name, type_text) in enumerate(zip(op.results, op.result_types)):
            define(name, type_text, op.step, offsets[k] if offsets else None)
        for use in op.uses:
            if use in end:
                end[use] = max(end[use], op.step)
    for op in function.ops:
        if op.name == "weft.reshape":
            a, b = find(op.uses[0]), find(op.results[0])
            if a != b:
                parent[max(a, b, key=lambda n: start[n])] = min(a, b, key=lambda n: start[n])
    returned = function.ops[-1].uses
    for k, attrs in enumerate(function.result_attrs):
        j = attr_int(attrs, "weft.alias")
        if j is None:
            continue
        arg = function.args[j][0]
        persistent.add(arg)
        root_arg, root_new = find(arg), find(returned[k])
        if root_arg != root_new:
            parent[root_new] = root_arg

    buffers = {}
    for name in size:
        root = find(name)
        buf = buffers.get(root)
        if buf is None:
            buf = buffers[root] = Buffer([], 0, start[name], end[name], offset[name])
        buf.members.append(name)
        buf.size = max(buf.size, size[name])
        buf.start = min(buf.start, start[name])
        buf.end = max(buf.end, last if name in persistent else end[name])
        if offset[name] is None:
            raise PlanError(f"{name} has no offset attribute")
        if offset[name] != buf.offset:
            raise PlanError(f"{name} shares the buffer of {root} but has offset "
                            f"{offset[name]}, not {buf.offset}")
    buffers = list(buffers.values())
    for op in function.ops:
        ws = attr_int(op.attrs, "weft.workspace_offset")
        if op.name == "weft.attention_grad" and ws is None:
            raise PlanError(f"step {op.step}: weft.attention_grad has no workspace offset")
        if ws is not None:
            buffers.append(Buffer([f"workspace@{op.step}"], workspace_bytes(op),
                                  op.step, op.step, ws))

    peak = plan["peak_bytes"]
    for buf in buffers:
        if buf.offset < 0 or buf.offset % alignment:
            raise PlanError(f"{buf.members[0]}: offset {buf.offset} is not a "
                            f"non-negative multiple of {alignment}")
        if buf.offset + align(buf.size, alignment) > peak:
            raise PlanError(f"{buf.members[0]}: [{buf.offset}, {buf.offset + buf.size}) "
                            f"is not inside the arena of {peak} bytes")
    # Replay: at each step the live buffers must occupy disjoint bytes.
    by_start = sorted(buffers, key=lambda b: b.start)
    active = []
    for buf in by_start:
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
    live = [0] * (last + 2)
    for buf in buffers:
        live[buf.start] += align(buf.size, alignment)
        live[buf.end + 1] -= align(buf.size, alignment)
    running, max_live = 0, 0
    for step in range(last + 1):
        running += live[step]
        max_live = max(max_live, running)
    used = max((b.offset + align(b.size, alignment) for b in buffers), default=0)
    if used != peak:
        raise PlanError(f"@{function.name}: the buffers reach {used} bytes, the plan "
                        f"says peak_bytes = {peak}")
    if max_live != plan["lower_bound_bytes"]:
        raise PlanError(f"@{function.name}: max-live is {max_live} bytes, the plan "
                        f"says lower_bound_bytes = {plan['lower_bound_bytes']}")
    return {"peak_bytes": peak, "lower_bound_bytes": max_live,
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


def check_text(text, report=None):
    """Simulates every planned function; returns {name: result}."""
    results = {}
    for function in parse_functions(text):
        result = simulate(function)
        if report is not None:
            compare_report(function, result, report)
        results[function.name] = result
    if not results:
        raise PlanError("no func.func with a body in the input")
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m weft.memsim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ir", help="IR printed by weft-opt --weft-plan-memory")
    parser.add_argument("--report", help="the pass's report=FILE JSON, compared too")
    args = parser.parse_args(argv)
    with open(args.ir) as f:
        text = f.read()
    report = None
    if args.report:
        with open(args.report) as f:
            report = json.load(f)
    try:
        results = check_text(text, report)
    except PlanError as error:
        print(f"memsim: plan rejected: {error}", file=sys.stderr)
        return 1
    for name, r in results.items():
        print(f"@{name}: peak {r['peak_bytes']} lower bound {r['lower_bound_bytes']} "
              f"fragmentation {100 * r['fragmentation']:.2f}% buffers {len(r['buffers'])}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
