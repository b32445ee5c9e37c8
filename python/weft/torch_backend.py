"""The "weft" TorchDynamo backend and weft.compile. CPU tensors: each
captured graph is imported (weft.torch_import) and run on weft-run's
reference interpreter, compiled once per argument shapes and dtypes. When an
argument requires grad, the graph runs as a torch.autograd.Function whose
backward is Weft's own autodiff (weft-opt --weft-autodiff) of
sum(y * dy), so gradients land in .grad and any torch optimizer works.
CUDA tensors: a graph returning a scalar loss runs as Weft's compiled
training step on the GPU runtime (weft.torch_gpu); other graphs, and any
graph under no_grad, run the forward as an inference package, with a VJP
package for their backward (weft.torch_gpu_infer).
docs/torch-import.md, "The torch.compile backend".

    model = weft.compile(model)                  # or
    model = torch.compile(model, backend="weft", options={"strict": True})
"""
import hashlib
import os
import re
import subprocess
import tempfile
import warnings

import torch
import torch.fx
import torch.fx.traceback as fx_traceback
from torch.utils import _pytree as pytree

from weft import npz
from weft import torch_gpu
from weft import torch_gpu_infer
from weft.capi import CompileError
from weft.runtime import WeftError
from weft.torch_import import CaptureError, UnsupportedOp, import_module, new_seed, vjp_text
from weft.torch_import.capture import capture
from weft.torch_split import SplitCompiled, WeftPart, split_graph

__all__ = ["compile", "parse_memory_budget", "register", "weft_backend"]

# option -> (allowed values in words, check)
OPTIONS = {
    "strict": ("True, False or None (None: the WEFT_STRICT environment variable)",
               lambda v: v is None or isinstance(v, bool)),
    "dump_dir": ("a directory path (str) or None (None: the WEFT_DUMP_DIR environment variable)",
                 lambda v: v is None or isinstance(v, (str, os.PathLike))),
    "memory_budget": ("None, a positive number of bytes, or a string such as '20GiB' "
                      "(units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)",
                      lambda v: v is None or _budget_bytes(v) is not None),
    "package_cache": ("a directory path (str) or None (None: the WEFT_PACKAGE_CACHE "
                      "environment variable)",
                      lambda v: v is None or isinstance(v, (str, os.PathLike))),
    "compile_only": ("True, False or None (None: the WEFT_COMPILE_ONLY environment variable)",
                     lambda v: v is None or isinstance(v, bool)),
    "loss_chunks": ("None (on CUDA: row chunks picked from memory_budget, the loss whole "
                    "without one; on CPU: whole) or an int >= 1 of row chunks of the lm_head "
                    "linear + cross-entropy (1: whole)",
                    lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)
                                            and v >= 1)),
    "optimizer_bytes": ("None (3x the parameters' bytes: AdamW's two moments and the one "
                        "parameter-sized temporary of its foreach update; fused AdamW holds "
                        "2x) or a non-negative int of bytes the optimizer allocates; counted "
                        "against memory_budget",
                        lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)
                                                and v >= 0)),
}

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_BUDGET = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*$")


def _budget_bytes(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value) if value > 0 and value == value and value != float("inf") else None
    if isinstance(value, str):
        match = _BUDGET.match(value)
        if match and match[2].lower() in _UNITS:
            size = int(float(match[1]) * _UNITS[match[2].lower()])
            return size if size > 0 else None
    return None


def parse_memory_budget(value):
    """Bytes of a memory budget (None stays None); ValueError naming the
    allowed forms otherwise."""
    validate_options({"memory_budget": value})
    return None if value is None else _budget_bytes(value)


def validate_options(options):
    """The options with defaults filled in; ValueError naming the option and
    its allowed values for an unknown option or a bad value."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise ValueError(f"options must be a dict of {sorted(OPTIONS)}, got {type(options).__name__}")
    for name, value in options.items():
        if name not in OPTIONS:
            raise ValueError(f"unknown weft option {name!r}; the options are "
                             + ", ".join(sorted(OPTIONS)))
        allowed, check = OPTIONS[name]
        if not check(value):
            raise ValueError(f"weft option {name!r} = {value!r} is not allowed: it takes {allowed}")
    settings = {name: None for name in OPTIONS}
    settings.update(options)
    return settings


def _tool(name):
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    build = os.environ.get("WEFT_BUILD_DIR", os.path.join(root, "build"))
    path = os.path.join(build, "bin", name)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is not built (set WEFT_BUILD_DIR to a Weft build directory)")
    return path


def _run(text, entry, values, workdir):
    """weft-run's reference interpreter on @entry of `text` with `values`
    (tensors, in argument order); the results as tensors."""
    ir_path = os.path.join(workdir, "module.mlir")
    in_path, out_path = os.path.join(workdir, "in.npz"), os.path.join(workdir, "out.npz")
    with open(ir_path, "w") as f:
        f.write(text)
    npz.save(in_path, {f"arg{i}": t.detach().contiguous() for i, t in enumerate(values)})
    proc = subprocess.run([_tool("weft-run"), ir_path, "--entry", entry, "--inputs", in_path,
                           "--outputs", out_path], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"weft-run failed (rc {proc.returncode}) on @{entry}:\n"
                           f"{proc.stderr[-4000:]}")
    return npz.ordered(npz.load(out_path), "res")


def run_reference_step(text, entry, values):
    with tempfile.TemporaryDirectory(prefix="weft-backend-") as workdir:
        return _run(text, entry, values, workdir)


def _autodiff(text, entry, loss_chunks=None):
    """weft-autodiff of @entry; with loss_chunks, its loss over that many row
    chunks first (weft-chunk-loss)."""
    passes = f"weft-autodiff{{entry={entry} optimizer=none}}"
    if loss_chunks is not None:
        passes = f"func.func(weft-chunk-loss{{chunks={int(loss_chunks)}}}),{passes}"
    proc = subprocess.run([_tool("weft-opt"), "-", f"--pass-pipeline=builtin.module({passes})"],
                          input=text, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"weft-opt --weft-autodiff failed (rc {proc.returncode}):\n"
                           f"{proc.stderr[-4000:]}")
    return proc.stdout


class _Specialized(torch.nn.Module):
    """The Dynamo graph with its non-tensor arguments (SymInts after a
    dynamic recompile) bound to this call's values, so torch.export sees a
    static graph of tensors. The graph runs under an FX interpreter with
    node meta preserved, so each ATen node keeps the model's source line."""

    def __init__(self, gm, args):
        super().__init__()
        self.gm = gm
        self.template = [None if isinstance(a, torch.Tensor) else a for a in args]

    def forward(self, *tensors):
        tensors = iter(tensors)
        args = [next(tensors) if a is None else a for a in self.template]
        with fx_traceback.preserve_node_meta():
            return torch.fx.Interpreter(self.gm).run(*args)


class _Compiled:
    """One specialization: the imported forward, its VJP step (built on the
    first backward, per set of arguments needing gradients)."""

    def __init__(self, imported, dump, loss_chunks=None):
        self.imported = imported
        self.loss_chunks = loss_chunks
        program = imported.program
        self.out_spec = program.call_spec.out_spec
        self.output_values = [n.meta["val"] for n in _output_nodes(program.graph)]
        self.dump = dump
        self.steps = {}
        self.inputs = [i for i, a in enumerate(imported.arguments) if a.kind == "input"]

    def forward(self, tensors, seed=None):
        """The forward's outputs; `seed` is the dropout seed (drawn anew
        when None and the forward has dropout)."""
        return run_reference_step(self.imported.text, self.imported.entry,
                                  self.imported.argument_values(*tensors, seed=seed))

    def vjp(self, tensors, needs, dys, seed=None):
        """Gradients of sum(y * dy) for the tensors whose `needs` is set
        (None for the others), with the forward's dropout `seed`."""
        params = tuple(self.inputs[i] for i, n in enumerate(needs) if n)
        if params not in self.steps:
            text = _autodiff(vjp_text(self.imported, params, entry="vjp"), "vjp",
                             self.loss_chunks)
            self.dump(text, "vjp_step")
            self.steps[params] = text
        values = self.imported.argument_values(*tensors, seed=seed)
        floats = [dy for dy, v in zip(dys, self.output_values) if v.dtype.is_floating_point]
        results = run_reference_step(self.steps[params], "vjp_step", values + floats)
        grads = iter(results[1:])
        return [next(grads) if n else None for n in needs]


class _WeftFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, compiled, *tensors):
        # One seed for the forward and its backward: the same dropout masks.
        ctx.seed = new_seed() if compiled.imported.has_seed else None
        outputs = compiled.forward(tensors, ctx.seed)
        ctx.compiled = compiled
        ctx.save_for_backward(*tensors)
        ctx.mark_non_differentiable(*[o for o in outputs if not o.is_floating_point()])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *dys):
        tensors = ctx.saved_tensors
        needs = ctx.needs_input_grad[1:]
        dys = [torch.zeros(tuple(v.shape), dtype=v.dtype) if dy is None else dy
               for dy, v in zip(dys, ctx.compiled.output_values)]
        return (None, *ctx.compiled.vjp(tensors, needs, dys, ctx.seed))


_EAGER = object()


class WeftGraph:
    """What the backend returns for one Dynamo graph: imports and runs it
    on the reference interpreter, once per argument shapes and dtypes."""

    _count = 0

    def __init__(self, gm, settings):
        self.gm = gm
        self.settings = settings
        self.cache = {}
        WeftGraph._count += 1
        self.number = WeftGraph._count

    def _flag(self, name, variable):
        if self.settings[name] is not None:
            return self.settings[name]
        return os.environ.get(variable, "0") not in ("", "0")

    @property
    def strict(self):
        return self._flag("strict", "WEFT_STRICT")

    @property
    def compile_only(self):
        return self._flag("compile_only", "WEFT_COMPILE_ONLY")

    def _key(self, args):
        # CUDA keys include which tensors require grad: they are the step's parameters.
        return tuple((tuple(a.shape), a.dtype, a.device.type,
                      a.requires_grad if a.device.type == "cuda" else None)
                     if isinstance(a, torch.Tensor)
                     else (type(a).__name__, a) for a in args)

    def _dump(self, key):
        directory = self.settings["dump_dir"] or os.environ.get("WEFT_DUMP_DIR")
        tag = hashlib.sha1(repr(key).encode()).hexdigest()[:10]

        def dump(text, what):
            if directory:
                os.makedirs(directory, exist_ok=True)
                with open(os.path.join(directory, f"graph{self.number}_{tag}_{what}.mlir"), "w") as f:
                    f.write(text)
        return dump

    def _compile_gpu(self, imported, tensors, dump):
        """The CUDA training step of a graph returning a scalar loss with
        arguments requiring grad; any other graph's inference package (and,
        when grad is on and some tensor requires grad, its VJP package):
        weft.torch_gpu_infer (memory_budget bounds training steps only). On
        CPU tensors with compile_only, the packages compiled into the cache."""
        requires_grad = [t.requires_grad for t in tensors]
        training = torch.is_grad_enabled() and any(requires_grad)
        if not training or torch_gpu.loss_output(imported.program):
            return torch_gpu_infer.CompiledGpuInference(
                imported, requires_grad, None, torch_gpu.cache_directory(self.settings), dump)
        budget = None
        if self.settings["memory_budget"] is not None:
            budget = torch_gpu.TorchBudget(_budget_bytes(self.settings["memory_budget"]),
                                           self.settings["optimizer_bytes"])
        compiled = torch_gpu.CompiledGpuGraph(imported, requires_grad, budget,
                                              torch_gpu.cache_directory(self.settings),
                                              self.settings["loss_chunks"])
        dump(compiled.step.text, "training")
        return compiled

    def _compile(self, args, key):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        devices = sorted({t.device.type for t in tensors} - {"cpu"})
        dump = self._dump(key)
        try:
            if devices and devices != ["cuda"]:
                raise NotImplementedError(f"weft runs CPU and CUDA tensors; this graph has "
                                          f"{', '.join(devices)} tensors")
            if devices and any(t.device.type == "cpu" for t in tensors):
                raise NotImplementedError("this graph mixes CPU and CUDA tensors")
            # GPU packages fill only float splats: other folded constants
            # (position ids, label padding) become arguments.
            imported = import_module(_Specialized(self.gm, args), tuple(tensors),
                                     lift_constants=bool(devices) or self.compile_only)
            dump(imported.text, "forward")
            if devices or self.compile_only:
                compiled = self._compile_gpu(imported, tensors, dump)
                # compile_only: the package is in the cache; the graph runs eagerly.
                return compiled if devices else _EAGER
        except (UnsupportedOp, CaptureError, NotImplementedError, CompileError, WeftError,
                torch_gpu.PackageUnavailable, torch_gpu.LayoutError,
                torch_gpu.BudgetError) as error:
            if self.strict:
                raise
            # Split graphs run their parts on the reference interpreter:
            # CPU tensors only (a CUDA graph with such an op runs eagerly).
            if isinstance(error, UnsupportedOp) and not devices and not self.compile_only:
                split = self._split(args, tensors, key)
                if split is not None:
                    return split
            message = " ".join(str(error).split())
            warnings.warn(f"weft: running this graph in eager PyTorch: {message}", stacklevel=2)
            return _EAGER
        return _Compiled(imported, dump, self.settings["loss_chunks"])

    def _split(self, args, tensors, key):
        """The graph split around the ops Weft cannot import (they run
        eagerly, each named by a one-line warning), or None when no region
        is worth compiling."""
        program, arguments = capture(_Specialized(self.gm, args), tuple(tensors))
        dump = self._dump(key)
        count = [0]

        def make_compiled(imported):
            count[0] += 1
            dump(imported.text, f"part{count[0]}_forward")
            return _Compiled(imported, dump)

        def warn(op, source):
            where = f" at {' '.join(source.split())}" if source else ""
            warnings.warn(f"weft: running {op}{where} in eager PyTorch; the rest of the "
                          "graph runs on weft", stacklevel=4)
        split = split_graph(program, arguments,
                            lambda graph, arguments: WeftPart(graph, arguments, make_compiled,
                                                              _WeftFunction), warn)
        return None if split is None else SplitCompiled(program, arguments, split)

    def __call__(self, *args):
        key = self._key(args)
        if key not in self.cache:
            self.cache[key] = self._compile(args, key)
        compiled = self.cache[key]
        if compiled is _EAGER:
            return self.gm(*args)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if isinstance(compiled, SplitCompiled):
            return compiled(tensors)
        if isinstance(compiled, torch_gpu.CompiledGpuGraph):
            return pytree.tree_unflatten([compiled(tensors)],
                                         compiled.step.imported.program.call_spec.out_spec)
        if isinstance(compiled, torch_gpu_infer.CompiledGpuInference):
            return pytree.tree_unflatten(compiled(tensors), compiled.out_spec)
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            outputs = _WeftFunction.apply(compiled, *tensors)
        else:
            outputs = compiled.forward(tensors)
        return pytree.tree_unflatten(list(outputs), compiled.out_spec)


def _output_nodes(graph):
    output = next(n for n in graph.nodes if n.op == "output")
    return [a for a in pytree.tree_leaves(output.args[0]) if isinstance(a, torch.fx.Node)]


def weft_backend(gm, example_inputs, options=None):
    """The TorchDynamo backend: `torch.compile(model, backend="weft",
    options={...})`. Options: strict, dump_dir, memory_budget (see OPTIONS)."""
    try:
        settings = validate_options(options)
    except ValueError as error:
        # Dynamo would wrap an error raised here in BackendCompilerFailed; the
        # graph raises it as the ValueError it is, on this (first) call.
        message = str(error)

        def bad_options(*args):
            raise ValueError(message)
        return bad_options
    return WeftGraph(gm, settings)


def register():
    """Registers weft_backend as torch.compile's backend "weft" (once)."""
    from torch._dynamo.backends import registry
    if "weft" not in registry._COMPILER_FNS:
        registry.register_backend(weft_backend, name="weft")


def compile(model, memory_budget=None, **options):
    """torch.compile(model, backend="weft", dynamic=False) with Weft's
    options (strict, dump_dir, package_cache, compile_only, optimizer_bytes,
    loss_chunks)
    and a memory budget (bytes or '20GiB').

    On CUDA the budget is the most torch's allocator may hold during
    training (torch.cuda.max_memory_allocated): Weft subtracts what the
    training loop holds beside its step (torch_gpu.TorchBudget): the
    graph's tensor arguments (parameters, read in place, and the batch), the
    optimizer's bytes (optimizer_bytes; default 3x the parameters' bytes,
    AdamW's two moments and its foreach update's temporary) and the caching
    allocator's rounding, and gives the rest to the remat solver, the
    chunked loss and the planner as the arena's budget. The arena stays
    allocated through optimizer.step; the parameter gradients are in it (the
    .grad tensors are its views, until zero_grad sets them to None). A budget they cannot meet
    is an error naming the budget, what torch holds and the smallest arena
    the planner reaches (with strict=False the graph then runs eagerly).
    Tensors the caller keeps beyond these are not covered. Not enforced on
    the reference interpreter, which allocates each value on its own."""
    options = dict(options)
    options["memory_budget"] = memory_budget
    settings = validate_options(options)
    register()
    # dynamic=False: each new shape gets a static Dynamo graph whose guards
    # pick it, so every (shapes, dtypes) is imported once
    return torch.compile(model, backend="weft", dynamic=False,
                         options={k: v for k, v in settings.items() if v is not None} or None)
