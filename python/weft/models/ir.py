"""A small writer of weft IR text: one func.func, one op per line, comment
lines between sub-blocks, readable SSA names (`%l0.attn.qkv`). Every op is
printed in the dialect's one form:
`%r = weft.<op> %a, %b {attrs} : (operand types) -> result types`."""
import contextlib
import math
import re
from dataclasses import dataclass


def tensor_type(shape, dtype):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


@dataclass(frozen=True)
class Value:
    name: str      # with the leading %
    shape: tuple
    dtype: str

    @property
    def type(self):
        return tensor_type(self.shape, self.dtype)


def format_float(x):
    """A float literal MLIR's parser reads back to the same double."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite float attribute {x}")
    text = repr(x)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + (f"e{exponent}" if e else "")


@dataclass(frozen=True)
class F32:
    """A float attribute of type f32 (attention's `scale`)."""
    value: float


@dataclass(frozen=True)
class I64Array:
    values: tuple


def format_attr(value):
    if isinstance(value, bool):
        raise TypeError("unit attributes are written as `name: True`")
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{format_float(value)} : f64"
    if isinstance(value, F32):
        return f"{format_float(value.value)} : f32"
    if isinstance(value, I64Array):
        return "array<i64" + (": " + ", ".join(str(int(v)) for v in value.values)
                              if value.values else "") + ">"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(f"cannot print attribute {value!r}")


def format_attr_dict(attrs):
    items = []
    for name, value in attrs.items():
        if value is True:
            items.append(name)
        elif value is not None and value is not False:
            items.append(f"{name} = {format_attr(value)}")
    return "{" + ", ".join(items) + "}" if items else ""


_NAME_CHARS = re.compile(r"[^A-Za-z0-9$._-]")


class FunctionBuilder:
    """Collects the arguments and the body of one function."""

    def __init__(self, name):
        self.name = name
        self.args = []          # (Value, attrs text, comment)
        self.lines = []
        self.results = None
        self._names = set()
        self._scope = {}        # attributes added to every op (weft.layer)

    def _fresh(self, hint):
        base = _NAME_CHARS.sub("_", hint) or "v"
        if not re.match(r"[A-Za-z$._-]", base):
            base = "v" + base
        name, n = base, 1
        while name in self._names:
            name, n = f"{base}_{n}", n + 1
        self._names.add(name)
        return "%" + name

    def arg(self, hint, shape, dtype, attrs=None, comment=None):
        value = Value(self._fresh(hint), tuple(shape), dtype)
        self.args.append((value, format_attr_dict(attrs or {}), comment))
        return value

    def comment(self, text):
        self.lines.append(f"// {text}")

    @contextlib.contextmanager
    def scope(self, **attrs):
        """Ops created inside carry these extra attributes (e.g. weft.layer)."""
        saved = dict(self._scope)
        self._scope.update({k.replace("__", "."): v for k, v in attrs.items()})
        try:
            yield
        finally:
            self._scope = saved

    def op(self, opname, operands, results, attrs=None, hint=None):
        """Appends `weft.<opname>`; `results` is one (shape, dtype) pair or a
        list of them. Returns one Value or a list of Values."""
        single = isinstance(results, tuple) and len(results) == 2 and isinstance(results[1], str)
        result_list = [results] if single else list(results)
        hint = hint or opname
        values = [Value(self._fresh(hint if len(result_list) == 1 else f"{hint}.{i}"),
                        tuple(shape), dtype) for i, (shape, dtype) in enumerate(result_list)]
        merged = dict(attrs or {})
        merged.update(self._scope)
        attr_text = format_attr_dict(merged)
        operand_types = ", ".join(v.type for v in operands)
        result_types = ", ".join(v.type for v in values)
        if len(values) != 1:
            result_types = f"({result_types})"
        line = (", ".join(v.name for v in values) + f" = weft.{opname} "
                + ", ".join(v.name for v in operands)
                + (f" {attr_text}" if attr_text else "")
                + f" : ({operand_types}) -> {result_types}")
        self.lines.append(line)
        return values[0] if single else values

    def ret(self, *values):
        self.results = list(values)

    def text(self, indent="  "):
        if self.results is None:
            raise ValueError(f"function @{self.name} has no return")
        out = []
        args = []
        for value, attrs, comment in self.args:
            arg = f"{value.name}: {value.type}" + (f" {attrs}" if attrs else "")
            args.append((arg, comment))
        result_types = ", ".join(v.type for v in self.results)
        if len(self.results) != 1:
            result_types = f"({result_types})"
        if any(comment for _, comment in args):
            out.append(f"func.func @{self.name}(")
            for i, (arg, comment) in enumerate(args):
                sep = "," if i + 1 < len(args) else ""
                out.append(f"{indent}{indent}{arg}{sep}" + (f"  // {comment}" if comment else ""))
            out.append(f"{indent}) -> {result_types} {{")
        else:
            out.append(f"func.func @{self.name}({', '.join(a for a, _ in args)}) -> {result_types} {{")
        for line in self.lines:
            out.append(indent + line)
        names = ", ".join(v.name for v in self.results)
        types = ", ".join(v.type for v in self.results)
        out.append(f"{indent}return {names} : {types}")
        out.append("}")
        return "\n".join(out) + "\n"


def module_text(functions, header=None):
    """A module of functions, with optional leading comment lines."""
    parts = [f"// {line}" if line else "//" for line in (header or [])]
    body = "\n".join(f.text() for f in functions)
    return ("\n".join(parts) + "\n\n" if parts else "") + body
