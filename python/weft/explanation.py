"""weft.explain(model, example_inputs): what Weft makes of a PyTorch module,
before anything runs (issue 19's tools).

    report = weft.explain(model, (x,), memory_budget="2GiB", html="plan.html")
    print(report)

It prints four parts:
- Dynamo: how many graphs torch.compile would capture and each graph break
  with its reason and source line (torch._dynamo.explain);
- the capture: the weft ops the forward became, by count, and the fused ops
  raised from written-out patterns (RMSNorm, tanh GELU, rotary, GQA, ...), or
  the op Weft cannot import and its source line (that graph runs eagerly);
- the memory plan of the training step (loss and every parameter's gradient,
  as weft-compile --train plans it, with --remat=budget when a budget is
  given): planned peak, budget, lower bound, bytes by category at the peak,
  recomputed ops; `html` also writes the plan as a page
  (--memory-report=PLAN.html).
"""
import collections
import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field

import torch

from .torch_import import CaptureError, UnsupportedOp, import_module, vjp_text

__all__ = ["ExplainReport", "explain"]


@dataclass
class ExplainReport:
    graph_count: int = None                 # Dynamo graphs (None: Dynamo not run)
    graph_breaks: list = field(default_factory=list)   # "reason (file:line)" per break
    ops: dict = field(default_factory=dict)            # weft op -> count
    raised: list = field(default_factory=list)         # fused ops raised from patterns
    unsupported: str = None                 # why the capture falls back, if it does
    memory: dict = None                     # weft-compile's --memory-report (JSON)
    memory_error: str = None                # why there is no plan
    html: str = None                        # the page written, if any
    ir: str = field(default=None, repr=False)

    def __str__(self):
        lines = ["== Dynamo"]
        if self.graph_count is None:
            lines.append("not run")
        else:
            lines.append(f"{self.graph_count} graph(s), {len(self.graph_breaks)} graph break(s)")
            lines += [f"  break: {b}" for b in self.graph_breaks]
        lines.append("== capture")
        if self.unsupported:
            lines.append(f"falls back to eager PyTorch: {self.unsupported}")
        else:
            lines.append("weft ops: " + ", ".join(f"{op} x{n}" for op, n in
                                                  sorted(self.ops.items(), key=lambda kv: -kv[1])))
            lines.append("raised to fused ops: " + (", ".join(
                f"{op} x{n}" for op, n in collections.Counter(self.raised).most_common())
                or "none"))
        lines.append("== memory plan of the training step")
        if self.memory is None:
            lines.append(f"none: {self.memory_error}")
        else:
            m = self.memory
            budget = m.get("budget_bytes")
            lines.append(f"planned peak {_gib(m['peak_bytes'])}, budget "
                         f"{_gib(budget) if budget is not None else 'none'}, lower bound "
                         f"{_gib(m['lower_bound_bytes'])}, remat {m['remat_policy']} "
                         f"({m['recomputed_ops']} op(s) recomputed)")
            lines.append("at the peak: " + ", ".join(
                f"{k} {_gib(v)}" for k, v in m["categories"].items() if v))
            if self.html:
                lines.append(f"drawn in {self.html}")
        return "\n".join(lines)


def _gib(n):
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def _tool(name):
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    path = os.path.join(os.environ.get("WEFT_BUILD_DIR", os.path.join(root, "build")), "bin", name)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is not built (set WEFT_BUILD_DIR to a Weft build directory)")
    return path


def _dynamo(model, example_inputs, report):
    import torch._dynamo as dynamo
    dynamo.reset()
    try:
        result = dynamo.explain(model)(*example_inputs)
    finally:
        dynamo.reset()
    report.graph_count = result.graph_count
    for reason in result.break_reasons:
        where = ""
        if reason.user_stack:
            frame = reason.user_stack[-1]
            where = f" ({frame.filename}:{frame.lineno})"
        report.graph_breaks.append(" ".join(str(reason.reason).split()) + where)


def _memory_plan(imported, memory_budget, html, report):
    params = [i for i, a in enumerate(imported.arguments) if a.kind == "parameter"]
    if not params:
        report.memory_error = "the module has no parameters to train"
        return
    text = vjp_text(imported, params, entry="vjp")
    with tempfile.TemporaryDirectory(prefix="weft-explain-") as work:
        source, json_path = os.path.join(work, "vjp.mlir"), os.path.join(work, "report.json")
        with open(source, "w") as f:
            f.write(text)
        command = [_tool("weft-compile"), source, "--entry", "vjp", "--train", "--fuse-elementwise",
                   "-o", os.devnull]
        if memory_budget is not None:
            command += [f"--memory-budget={memory_budget}", "--remat=budget"]
        for path in [json_path] + ([os.path.abspath(html)] if html else []):
            proc = subprocess.run(command + [f"--memory-report={path}"], capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                report.memory_error = (f"weft-compile failed (rc {proc.returncode}): "
                                       f"{proc.stderr.strip()[-2000:]}")
                return
        report.memory = json.load(open(json_path))
        report.html = os.path.abspath(html) if html else None


def explain(model, example_inputs, memory_budget=None, html=None, dynamo=True):
    """Explains how Weft compiles `model(*example_inputs)`; returns an
    ExplainReport (print it). memory_budget: bytes or a size such as "2GiB"
    (the plan then recomputes to fit it); html: a path for the plan's page;
    dynamo=False skips Dynamo's graph-break analysis."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"weft.explain: model must be a torch.nn.Module, not "
                         f"{type(model).__name__}")
    example_inputs = tuple(example_inputs)
    report = ExplainReport()
    if dynamo:
        _dynamo(model, example_inputs, report)
    try:
        imported = import_module(model, example_inputs)
    except (UnsupportedOp, CaptureError) as error:
        report.unsupported = " ".join(str(error).split())
        report.memory_error = "nothing was imported"
        return report
    report.ir = imported.text
    report.raised = list(imported.raised)
    report.ops = dict(collections.Counter(re.findall(r"= (weft\.[a-z_]+)", imported.text)))
    _memory_plan(imported, memory_budget, html, report)
    return report
