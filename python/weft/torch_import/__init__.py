"""PyTorch module -> weft IR: capture a forward with torch.export, map its
ATen ops to weft ops, raise written-out patterns to fused ops (docs/torch-import.md).

    imported = import_module(model, (x,))
    imported.text                      # weft IR, func @forward
    imported.argument_values(x)        # parameters, buffers, constants, then x
    outputs = run_reference(imported, x)   # on weft-run's reference interpreter
"""
import os
import subprocess
import tempfile
from dataclasses import dataclass, field

import torch

from weft import npz

from .capture import (Argument, CaptureError, UnsupportedOp, argument_values, capture,
                      weft_dtype)
from .lowering import lower_graph
from .ops import HANDLERS
from .patterns import find_matches

__all__ = ["Argument", "CaptureError", "ImportedModule", "UnsupportedOp",
           "import_module", "new_seed", "run_reference", "training_text", "vjp_text"]


@dataclass
class ImportedModule:
    text: str                       # the weft module's IR
    entry: str                      # its function's name
    arguments: list                 # [Argument], in the function's argument order
    raised: list                    # fused ops raised from written-out patterns
    program: object = field(repr=False)  # the torch.export ExportedProgram
    lifted: dict = field(default_factory=dict, repr=False)  # argument name -> tensor

    @property
    def graph_arguments(self):
        """The arguments of the captured graph (without the trailing lifted
        constants and dropout seed)."""
        return [a for a in self.arguments if a.kind not in TRAILING_KINDS]

    @property
    def has_seed(self):
        """Whether the forward draws dropout masks (its last arguments
        include the seed)."""
        return any(a.kind == "seed" for a in self.arguments)

    def argument_values(self, *inputs, seed=None):
        """The function's arguments: the captured parameters, buffers and
        constants, then `inputs` (tensors, in the forward's order), then the
        lifted constants and the dropout seed (`seed`, or one drawn by
        new_seed on the inputs' device)."""
        values = argument_values(self.program, self.graph_arguments, inputs)
        if self.has_seed and seed is None:
            seed = new_seed(next((v.device for v in inputs if isinstance(v, torch.Tensor)),
                                 None))
        return values + [seed if a.kind == "seed" else self.lifted[a.name]
                         for a in self.arguments if a.kind in TRAILING_KINDS]

    def lower(self, entry, **kwargs):
        """lower_graph of the captured graph with this import's arguments (and
        its trailing arguments, checked to be the same ones)."""
        graph = self.program.graph
        lifted, trailing = ([] if self.lifted else None), []
        text, raised = lower_graph(graph, self.graph_arguments, entry, find_matches(graph),
                                   HANDLERS, lifted=lifted, trailing=trailing, **kwargs)
        if [n for n, _ in trailing] != [a.name for a in self.arguments
                                         if a.kind in TRAILING_KINDS]:
            raise RuntimeError("lowering made other trailing arguments than the import did")
        return text, raised


TRAILING_KINDS = ("lifted", "seed")


def new_seed(device=None):
    """A dropout seed: a 0-d int64 tensor in [0, 2^31) drawn from torch's
    generator of `device` (so torch.manual_seed makes runs repeat)."""
    return torch.randint(0, 1 << 31, (), dtype=torch.int64, device=device)


def import_module(module, example_inputs, entry="forward", lift_constants=False):
    """Captures module(*example_inputs) (static shapes and dtypes from the
    examples) and returns its weft IR. Raises UnsupportedOp naming an op and
    its source line when some op has no weft form, CaptureError when
    torch.export cannot capture the forward. With `lift_constants` the
    folded constants a GPU package cannot fill (integers, non-splat tensors:
    position ids, label padding) are trailing arguments of kind "lifted"
    whose values argument_values supplies. Training-mode dropout adds a
    trailing argument of kind "seed" (weft's masks, not torch's)."""
    program, arguments = capture(module, example_inputs)
    graph = program.graph
    lifted, trailing = ([] if lift_constants else None), []
    text, raised = lower_graph(graph, arguments, entry, find_matches(graph), HANDLERS,
                               lifted=lifted, trailing=trailing)
    tensors = dict(lifted or [])
    extra = [Argument(name, kind, None, tuple(tensors[name].shape),
                      weft_dtype(tensors[name].dtype)) if kind == "lifted"
             else Argument(name, kind, None, (), "i64") for name, kind in trailing]
    return ImportedModule(text, entry, arguments + extra, raised, program, tensors)


def vjp_text(imported, params, entry="vjp"):
    """The imported forward y = f(args) as func @entry(args..., dy...) ->
    sum_i sum(y_i * dy_i) (one dy per float output, in output order), the
    arguments at indices `params` marked {weft.param}: weft-autodiff turns it
    into @<entry>_step(args..., dy...) -> (that sum, d/d param for each param
    in argument order), the vector-Jacobian product."""
    text, _ = imported.lower(entry, params=frozenset(params), vjp=True)
    return text


def training_text(imported, params):
    """The imported forward with the arguments at indices `params` marked
    {weft.param}: what weft-compile --train (or the C API's
    weftCompileTrainingStep) turns into the training step, whose loss is the
    forward's 0-d result."""
    text, _ = imported.lower(imported.entry, params=frozenset(params))
    return text


def run_reference(imported, *inputs, weft_run=None, workdir=None):
    """Runs the imported forward on weft-run's reference interpreter with
    the captured parameters and `inputs`; returns the results as tensors.
    `weft_run` defaults to $WEFT_BUILD_DIR/bin/weft-run (build/ in the repo)."""
    if weft_run is None:
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
        weft_run = os.path.join(os.environ.get("WEFT_BUILD_DIR", os.path.join(root, "build")),
                                "bin", "weft-run")
    workdir = workdir or tempfile.mkdtemp(prefix="weft-import-")
    ir_path = os.path.join(workdir, f"{imported.entry}.mlir")
    in_path = os.path.join(workdir, "inputs.npz")
    out_path = os.path.join(workdir, "outputs.npz")
    with open(ir_path, "w") as f:
        f.write(imported.text)
    values = imported.argument_values(*inputs)
    npz.save(in_path, {f"arg{i}": t for i, t in enumerate(values)})
    proc = subprocess.run([weft_run, ir_path, "--entry", imported.entry, "--inputs", in_path,
                           "--outputs", out_path], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"weft-run failed (rc {proc.returncode}) on {ir_path}:\n"
                           f"{proc.stderr[-4000:]}")
    return npz.ordered(npz.load(out_path), "res")
