"""The planned step IR as text, for weft.memsim (which shares no code with
the C++ liveness analysis it checks): tensor sizes from their types, the
top-level split of an attribute or operand list, attributes by name, and the
functions of a module as ops (results, result and operand types, SSA uses,
nested regions) with their weft.memory_plan."""
import re
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
    # A whole name: `bound_bytes` must not match inside `lower_bound_bytes`.
    match = re.search(r"(?<![\w.])" + re.escape(name) + r" = (-?\d+)", attrs)
    return int(match.group(1)) if match else None


def attr_array(attrs, name):
    match = re.search(r"(?<![\w.])" + re.escape(name) + r" = array<i64(?::([^>]*))?>", attrs)
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
    gemm_workspace: int = 0  # the function's weft.gemm_workspace cap, bytes


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
    for key in ("alignment", "peak_bytes", "lower_bound_bytes", "lower_bound_step",
                "bound_bytes"):
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
        gemm_cap = attr_int(rest, "weft.gemm_workspace") or 0
        ops, i = _parse_body(lines, i + 1)
        functions.append(Function(name, args, result_attrs, plan, ops, gemm_cap))
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
