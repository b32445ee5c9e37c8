"""The GPU path of the "weft" torch.compile backend: a captured graph that
returns a scalar loss (the training call `loss = model(x, targets)`) runs as
Weft's compiled training step (optimizer none) on the CUDA runtime, on
torch's current stream, in an arena that is a torch uint8 CUDA tensor (so
torch's caching allocator and its statistics see it). The parameters are
bound in place: the package is compiled with bind_arguments=params, so the
arena holds no copy of them and the runtime reads each parameter's storage
(weft_step_bind_device; a new data_ptr is bound again and a captured CUDA
graph re-captured). The call is an autograd Function: its forward copies
the other arguments (the batch) into the step's buffers (device to device),
runs the step and returns the loss; the parameter gradients the same run
computed are kept, and backward returns grad_output times them.
docs/torch-import.md, "CUDA tensors".

Packages are compiled through the C API (weft.capi) for sm_90a, or read from
a package cache (the `package_cache` option or $WEFT_PACKAGE_CACHE) keyed by
the SHA-256 of the IR and the compile options, so a machine without the
compiler's libraries (a GPU machine without MLIR) runs packages compiled
ahead of time on another one (the `compile_only` option: CPU tensors compile
the CUDA package into the cache and run eagerly).
"""
import hashlib
import contextlib
import json
import os
import re
import sys
import tempfile
import weakref

import torch

from weft import runtime as rt
from weft.torch_import import training_text

TARGET = "sm_90a"

# Weft element types of the step's buffers <-> torch dtypes.
TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
                "f64": torch.float64, "i64": torch.int64, "i32": torch.int32,
                "i16": torch.int16, "i1": torch.bool}
WEFT_DTYPES = {v: k for k, v in TORCH_DTYPES.items()}


# Runs of compiled steps in this process (tests check that calls ran on Weft):
# the last arena's bytes and the device pointers bound in place (parameters).
RUNS = {"steps": 0, "arena_bytes": 0, "bound_pointers": set()}


class PackageUnavailable(RuntimeError):
    """No package in the cache and the compiler cannot make one here."""


class LayoutError(ValueError):
    """The step's buffers do not match the captured graph (or a call's
    tensors do not match the step): names the buffer, expected and got."""


def loss_output(program):
    """None when the captured program returns one 0-d float tensor (a loss),
    else the reason it does not, in words."""
    outputs = [n for n in program.graph.nodes if n.op == "output"][0]
    leaves = [a for a in torch.utils._pytree.tree_leaves(outputs.args[0])]
    values = [getattr(a, "meta", {}).get("val") for a in leaves]
    if len(values) != 1 or not isinstance(values[0], torch.Tensor):
        return f"it returns {len(values)} values, not one scalar loss"
    value = values[0]
    if value.dim() != 0 or not value.is_floating_point():
        return (f"it returns a {value.dtype} tensor of shape {list(value.shape)}, not a "
                "0-d float loss")
    return None


class BudgetError(ValueError):
    """memory_budget cannot be met: names the budget, what torch holds
    beside the step and the smallest arena the planner reaches."""


def _argument_bytes(argument):
    return torch.Size(argument.shape).numel() * torch.tensor(
        [], dtype=TORCH_DTYPES[argument.dtype]).element_size()


# torch's caching allocator counts a tensor's block (allocated_bytes): its
# size rounded up to 512 bytes; a block over 10 MiB gets a segment of its
# own rounded up to 2 MiB, counted whole when at most 1 MiB would remain
# (the allocator splits only larger remainders); blocks of 1-10 MiB are cut
# from 20 MiB segments, each of which may end in such an unsplit tail.
ALLOCATOR_ROUNDING = 512
ALLOCATOR_SPLIT = 1 << 20
ALLOCATOR_LARGE = 10 << 20
ALLOCATOR_SEGMENT_ROUNDING = 2 << 20


def allocated_bytes(nbytes):
    """What torch.cuda.memory_allocated counts for one tensor of `nbytes`
    in a fresh block (a tail left in a shared segment is `segment_tails`)."""
    rounded = -(-max(int(nbytes), 1) // ALLOCATOR_ROUNDING) * ALLOCATOR_ROUNDING
    if rounded > ALLOCATOR_LARGE:
        segment = -(-rounded // ALLOCATOR_SEGMENT_ROUNDING) * ALLOCATOR_SEGMENT_ROUNDING
        if segment - rounded <= ALLOCATOR_SPLIT:
            return segment
    return rounded


def segment_tails(sizes):
    """The most the unsplit tails of the 20 MiB segments that tensors of
    1-10 MiB (`sizes`, allocated one after another) are cut from add: each
    segment holds at least 10 MiB of them (a tensor that does not fit the
    remainder opens the next) and ends in at most one tail of <= 1 MiB."""
    middle = sum(allocated_bytes(n) for n in sizes if ALLOCATOR_SPLIT < n <= ALLOCATOR_LARGE)
    return -(-middle // ALLOCATOR_LARGE) * ALLOCATOR_SPLIT


class TorchBudget:
    """weft.compile's memory_budget on CUDA: the most torch's allocator may
    hold while the compiled model trains (torch.cuda.max_memory_allocated).
    What the training loop holds beside Weft's arena is computed from the
    captured graph, the same on the GPU and on a compile_only machine (so
    the package key is).

    The arena is a torch tensor allocated at the first call and kept (a
    captured CUDA graph bakes its address), so it is live in every phase of
    an iteration: forward and backward (the step runs in it) and
    optimizer.step. The parameter gradients are arena buffers that backward
    scales in place and hands to autograd as the .grad tensors (views: no
    copy), so they are counted once, inside the arena. The peak is then that
    of optimizer.step: the arena, the graph's tensor arguments (parameters,
    bound in place, and the batch), the optimizer's bytes (`optimizer_bytes`;
    None: 3x the parameters' bytes, AdamW's exp_avg and exp_avg_sq, which
    persist, and the one parameter-sized temporary of its foreach update,
    which exists inside step() only; fused AdamW has none, pass 2x), and
    CALL_BYTES for each call's small tensors (the loss, autograd's
    grad_output, AdamW's step counts), and the caching allocator's rounding
    of each of these tensors (`allocated_bytes`, an upper bound). The forward and backward hold the
    same less the temporary, so this sum is the max over the phases. It
    assumes .grad is set to None (zero_grad(set_to_none=True), torch's
    default) before the next forward: a .grad still in the arena then is
    copied out (GpuTrainingStep._own_param_grads), another parameters'
    worth. The rest is the arena's budget, which weft-remat (remat=budget),
    weft-chunk-loss (loss_chunks) and the planner meet. Not counted: torch's
    own cuBLAS workspaces, which the caching allocator holds once torch has
    run a GEMM in the process (Weft's GEMMs use the arena)."""

    CALL_BYTES = 1 << 20

    def __init__(self, total, optimizer_bytes=None):
        self.total, self.optimizer_bytes = int(total), optimizer_bytes

    def held(self, imported, params):
        """Bytes torch holds beside the arena at the peak (optimizer.step), by
        item; the gradients are in the arena. "allocator": what torch's
        caching allocator may count beyond the tensors' bytes (rounding and
        unsplit blocks, allocated_bytes) for the parameters, the batch, the
        optimizer's tensors (one per parameter per parameters' worth of
        optimizer bytes) and the arena."""
        params = set(params)
        sizes = [_argument_bytes(a) for a in imported.arguments]
        param_sizes = [n for i, n in enumerate(sizes) if i in params]
        input_sizes = [n for i, n in enumerate(sizes) if i not in params]
        param_bytes = sum(param_sizes)
        optimizer = 3 * param_bytes if self.optimizer_bytes is None else int(self.optimizer_bytes)
        per_param = -(-optimizer // param_bytes) if param_bytes else 0
        # The parameters and each optimizer tensor set (one tensor per
        # parameter), the batch, and the arena (its own segment: <= 2 MiB).
        per_set = sum(allocated_bytes(n) - n for n in param_sizes) + segment_tails(param_sizes)
        slack = (1 + per_param) * per_set + sum(allocated_bytes(n) - n for n in input_sizes) \
            + ALLOCATOR_SEGMENT_ROUNDING
        return {"parameters": param_bytes, "inputs": sum(input_sizes), "optimizer": optimizer,
                "calls": self.CALL_BYTES, "allocator": slack}

    def describe(self, held):
        parts = ", ".join(f"{name} {value / 2**20:.1f} MiB" for name, value in held.items())
        return (f"memory_budget {self.total} bytes ({self.total / 2**20:.1f} MiB): torch holds "
                f"{sum(held.values()) / 2**20:.1f} MiB beside Weft's arena ({parts}; the "
                "parameter gradients are arena views)")

    def arena_budget(self, imported, params):
        """The arena's budget in bytes; BudgetError when nothing is left."""
        held = self.held(imported, params)
        left = self.total - sum(held.values())
        if left <= 0:
            raise BudgetError(f"{self.describe(held)}, which leaves no bytes for the arena")
        return left, held


def compile_options(arena_budget=None, loss_chunks=None):
    """The C API options of the training step the GPU path runs: pointwise,
    norm and loss ops grouped into kernels (weft-fuse-elementwise; unfused,
    each op is a launch and an HBM round trip), the parameters bound in
    place (no arena copy); with an arena budget in bytes, weft-remat
    chooses what to recompute to meet it, and the lm_head linear + loss run
    over row chunks that weft-chunk-loss picks from the budget (so the whole
    [rows, vocab] logits and their gradient never exist). loss_chunks (an
    int >= 1) forces the chunk count; 1 keeps the loss whole."""
    options = {"optimizer": "none", "target": TARGET, "fuse_elementwise": 1,
               "bind_arguments": "params"}
    if arena_budget is not None:
        options["memory_budget"] = f"{int(arena_budget)}B"
        options["remat"] = "budget"
        options["loss_chunks"] = 0
    if loss_chunks is not None:
        options["loss_chunks"] = int(loss_chunks)
    return options


_COMMENT = re.compile(r"//[^\n]*")
_VALUE = re.compile(r"%[A-Za-z_][A-Za-z0-9_$.]*|%[0-9]+")


def canonical_ir(text):
    """`text` without comments and with its SSA names numbered in order of
    first use: two PyTorch versions that name the FX nodes differently give
    the same key, as the compiled step (arguments bound by position) is the
    same."""
    names = {}

    def number(match):
        return names.setdefault(match.group(0), f"%v{len(names)}")
    lines = (_VALUE.sub(number, _COMMENT.sub("", line)).rstrip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def package_key(text, options):
    """The cache key of a package: SHA-256 of the canonical IR and the options."""
    blob = canonical_ir(text) + "\n// weft compile options: " + json.dumps(options, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def write_request(cache, key, text, options):
    """On a cache miss where the compiler cannot run: DIR/<key>.request.json
    with the IR and options, which `python -m weft.torch_gpu compile DIR`
    compiles on a machine that has the compiler. Best effort."""
    try:
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, key + ".request.json"), "w") as f:
            json.dump({"text": text, "options": options}, f)
    except OSError:
        pass


def compile_requests(directory, into=None):
    """Compiles every <key>.request.json of `directory` into <key>.weftpkg in
    `into` (default: the same directory); returns the keys compiled."""
    into = into or directory
    done = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".request.json"):
            with open(os.path.join(directory, name)) as f:
                request = json.load(f)
            _package, key = training_package(request["text"], request["options"], into)
            done.append(key)
    return done


def cache_directory(settings):
    directory = settings.get("package_cache") or os.environ.get("WEFT_PACKAGE_CACHE")
    return os.fspath(directory) if directory else None


def training_package(text, options, cache):
    """The package bytes of the training step of `text`: from the cache
    directory `cache` when it holds them, else compiled through the C API
    (and stored there when `cache` is set). PackageUnavailable when neither
    works, naming the key and why the compiler cannot run."""
    key = package_key(text, options)
    path = os.path.join(cache, key + ".weftpkg") if cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            return f.read(), key
    try:
        from weft import capi
        capi.load()
    except OSError as error:
        where = f"not in the package cache {cache}" if cache else "no package cache is set"
        if cache:
            write_request(cache, key, text, options)
        raise PackageUnavailable(
            f"the training step package {key[:16]} is {where} (WEFT_PACKAGE_CACHE), and the "
            f"compiler cannot run here: {error}" + (
                f"; its request is {key[:16]}.request.json there: compile it with "
                f"`python -m weft.torch_gpu compile DIR` where the compiler runs" if cache
                else "")) from error
    # Inference packages (weft.torch_gpu_infer) say so in their options.
    options = dict(options)
    inference = options.pop("inference", False)
    with capi.Context() as context:
        module = context.parse(text, name="torch_graph.mlir")
        compile_step = module.compile_inference_step if inference else \
            module.compile_training_step
        package = compile_step(entry="forward", **options)
    if path:
        os.makedirs(cache, exist_ok=True)
        # Written whole, then renamed: a concurrent reader never sees a part.
        with tempfile.NamedTemporaryFile(dir=cache, delete=False, suffix=".tmp") as f:
            f.write(package)
        os.chmod(f.name, 0o644)
        os.replace(f.name, path)
        with open(os.path.join(cache, key + ".mlir"), "w") as f:
            f.write(text)
    return package, key


def _spec(shape, dtype):
    return f"{list(shape)} {dtype}"


def argument_buffers(buffers, arguments):
    """The step buffer of each function argument (the buffer with arg == i),
    its shape and dtype checked against the argument's; LayoutError for a
    missing one, a mismatch, or a step argument the captured graph lacks."""
    by_arg = {b.arg: b for b in buffers if b.arg >= 0}
    extra = sorted(set(by_arg) - set(range(len(arguments))))
    if extra:
        raise LayoutError(f"the step takes arguments {extra} beyond the {len(arguments)} of "
                          "the captured graph (a step count?); the torch backend passes only "
                          "the graph's")
    inputs = []
    for index, argument in enumerate(arguments):
        buffer = by_arg.get(index)
        if buffer is None:
            raise LayoutError(f"the step has no buffer for argument {index} ({argument.name})")
        StepLayout._check(buffer, argument.shape, argument.dtype,
                          f"argument {index} ({argument.name})")
        inputs.append(buffer)
    return inputs


class StepLayout:
    """Which step buffer each function argument, the loss and each parameter
    gradient are, read from a prepared (host-only) or loaded step: argument i
    is the buffer with arg == i, the loss result 0, and the gradient of the
    k-th parameter (argument order) result k + 1. Every shape and dtype is
    checked against the imported function's; LayoutError names the buffer,
    the expected and the found."""

    def __init__(self, buffers, arguments, params):
        by_arg = {b.arg: b for b in buffers if b.arg >= 0}
        by_result = {b.result: b for b in buffers if b.result >= 0}
        for b in buffers:
            if b.copy_of >= 0:
                raise LayoutError(f"step buffer {b.name} is a weight copy of argument "
                                 f"{b.copy_of}; the torch backend binds no weight copies")
        self.inputs = argument_buffers(buffers, arguments)
        for index, (argument, buffer) in enumerate(zip(arguments, self.inputs)):
            if buffer.bound and buffer.size % 16:
                raise LayoutError(f"step buffer {buffer.name} for argument {index} "
                                 f"({argument.name}) is bound in place but has {buffer.size} "
                                 "bytes, not a multiple of 16")
        self.loss = by_result.get(0)
        if self.loss is None:
            raise LayoutError("the step has no result 0 (the loss)")
        if self.loss.shape != ():
            raise LayoutError(f"the step's result 0 (the loss, buffer {self.loss.name}) has "
                              f"shape {self.loss.shape}, not the 0-d loss")
        self.grads = []
        for k, index in enumerate(params):
            buffer = by_result.get(k + 1)
            argument = arguments[index]
            if buffer is None:
                raise LayoutError(f"the step has no gradient result {k + 1} for parameter "
                                 f"argument {index} ({argument.name})")
            self._check(buffer, argument.shape, argument.dtype,
                        f"the gradient of argument {index} ({argument.name})")
            self.grads.append(buffer)
        self.params = list(params)
        # Arguments read in place (bound) and those copied into the arena.
        self.bound = [i for i, b in enumerate(self.inputs) if b.bound]
        self.copied = [i for i, b in enumerate(self.inputs) if not b.bound and b.size]

    @staticmethod
    def _check(buffer, shape, dtype, what):
        if buffer.shape != tuple(shape) or buffer.dtype != dtype:
            raise LayoutError(f"step buffer {buffer.name} for {what}: expected "
                             f"{_spec(shape, dtype)}, the step has "
                             f"{_spec(buffer.shape, buffer.dtype)}")


def check_tensor(buffer, tensor, what, device_type="cuda"):
    """LayoutError naming the buffer, the expected and the given tensor when
    `tensor` is not a CUDA tensor of the buffer's shape and dtype."""
    expected = _spec(buffer.shape, buffer.dtype)
    got_dtype = WEFT_DTYPES.get(tensor.dtype, str(tensor.dtype))
    if (tuple(tensor.shape) != buffer.shape or got_dtype != buffer.dtype
            or tensor.device.type != device_type):
        raise LayoutError(f"step buffer {buffer.name} ({what}) expects {expected} on "
                          f"{device_type}, got "
                         f"{_spec(tuple(tensor.shape), got_dtype)} on {tensor.device}")
    nbytes = tensor.numel() * tensor.element_size()
    if nbytes != buffer.size:
        raise LayoutError(f"step buffer {buffer.name} ({what}) holds {buffer.size} bytes, the "
                         f"tensor {nbytes}")


def stream_handle(stream):
    """The CUstream of a torch stream for the runtime: its default stream's
    handle is 0, which the runtime reads as "the step's own stream", so it
    becomes CU_STREAM_LEGACY."""
    return stream.cuda_stream or rt.CU_STREAM_LEGACY


def _device_scope(device):
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


_LIVE = weakref.WeakSet()  # every GpuTrainingStep, for profile()


def profile(runs=3):
    """Every training step that ran on CUDA, run `runs` more times with an
    event after each schedule entry, on the inputs of its last call (copied
    in again before each run: the planner reuses an input's bytes once it is
    read): one dict per step with the median total and per-entry
    milliseconds (kind, name, GEMM shape)."""
    report = []
    torch.cuda.synchronize()
    for compiled in list(_LIVE):
        if compiled.last is None:
            continue
        key, sized = compiled.last
        step = compiled.loaded[key][0]
        views = compiled._views(key, [b for b, _ in sized])
        entries, timings = step.entries(), []
        for _ in range(runs):
            if sized:
                torch._foreach_copy_(views, [v for _, v in sized])
            torch.cuda.synchronize()
            timings.append(step.run_timed())
        for i, entry in enumerate(entries):
            entry["ms"] = sorted(t[0][i] for t in timings)[runs // 2]
        report.append({"key": compiled.key, "device": key[0],
                       "total_ms": sorted(t[1] for t in timings)[runs // 2],
                       "entries": entries})
    return report


class _ArenaCalls:
    """A loaded CUDA step's calls after the first: the views of its input,
    loss and gradient buffers in the arena made once, and the inputs' shapes,
    dtypes and device remembered, so a call whose tensors match (Dynamo's
    guards make that the rule) skips the per-tensor checks (a mismatch takes
    the checked path again)."""

    def __init__(self, compiled, key, device, step, values):
        self.key, self.device, self.step = key, device, step
        self.signature = [(v.shape, v.dtype, v.device) for v in values]
        self.sized = compiled.layout.copied
        self.bound = compiled.layout.bound
        self.inputs = compiled._views(key, [compiled.layout.inputs[i] for i in self.sized])
        self.loss = compiled._views(key, [compiled.layout.loss])[0]
        self.grads = compiled._views(key, compiled.layout.grads)

    def matches(self, values):
        if len(values) != len(self.signature):
            return False
        if stream_handle(torch.cuda.current_stream(self.device)) != self.key[1]:
            return False
        return all(v.shape == shape and v.dtype == dtype and v.device == device
                   for v, (shape, dtype, device) in zip(values, self.signature))

    def run(self, compiled, values, owner):
        sized = [values[i].detach() for i in self.sized]
        with _device_scope(self.device):
            compiled._bind_in_place(self.key, values)
            if sized:
                torch._foreach_copy_(self.inputs, sized)
            self.step.enqueue()
            RUNS["steps"] += 1
            compiled.last = (self.key, [(compiled.layout.inputs[i], v)
                                        for i, v in zip(self.sized, sized)])
            loss = self.loss.clone()
        if owner is None:
            return loss, [g.clone() for g in self.grads]
        compiled.pending.append(owner)
        return loss, list(self.grads)


class GpuTrainingStep:
    """One compiled training step for one set of argument shapes and dtypes:
    the package, its layout, and the step loaded (lazily, per device and
    stream) with its arena a torch uint8 tensor."""

    device_type = "cuda"  # the host-side tests run a simulated step on "cpu"

    def __init__(self, imported, params, budget, cache, loss_chunks=None):
        """budget: a TorchBudget (weft.compile's memory_budget) or None;
        loss_chunks: weft.compile's option (None: from the budget)."""
        self.imported = imported
        self.params = list(params)
        self.text = training_text(imported, self.params)
        arena_budget, held = budget.arena_budget(imported, self.params) if budget else (None, None)
        self.options = compile_options(arena_budget, loss_chunks)
        try:
            self.package, self.key = training_package(self.text, self.options, cache)
        except Exception as error:
            if budget is None or "is infeasible" not in str(error):
                raise
            raise BudgetError(f"{budget.describe(held)}, which leaves {arena_budget} bytes "
                              f"({arena_budget / 2**20:.1f} MiB) for Weft's arena; the remat "
                              f"solver cannot fit the step in it: {error}") from error
        # Host-only: the layout is checked before any GPU work.
        prepared = rt.prepare_step(self.package, 90)
        try:
            self.layout = StepLayout(prepared.buffers(), imported.arguments, self.params)
            self.arena_bytes = prepared.memory_info()["planned_bytes"]
        finally:
            prepared.free()
        self.loaded = {}  # (device index, stream handle) -> (Step, arena tensor)
        self.pending = []  # autograd contexts holding gradients as arena views
        self.last = None  # (loaded key, [(input buffer, tensor)]) of the last CUDA run
        self._fast = None  # _ArenaCalls of the last checked CUDA call
        self._lifted_on = {}  # device -> {argument index: lifted constant there}
        self._bound_at = {}  # loaded key -> {argument index: data_ptr bound}
        _LIVE.add(self)

    def _step(self, device):
        stream = torch.cuda.current_stream(device)
        key = (device.index, stream_handle(stream))
        if key not in self.loaded:
            with torch.cuda.device(device):
                rt.context_ensure(device.index or 0)  # torch's context is current: kept
                arena = torch.empty(max(self.arena_bytes, 1), dtype=torch.uint8, device=device)
                # A CUDA graph of the schedule, captured at the first run:
                # one launch a step instead of one call per kernel and GEMM.
                step = rt.load_step(self.package, device=device.index or 0, stream=key[1],
                                    arena=arena.data_ptr(), arena_bytes=arena.numel(),
                                    graph=self.device_type == "cuda")
            self.loaded[key] = (step, arena)
            RUNS["arena_bytes"] = arena.numel()
        return self.loaded[key][0]

    def _bind_in_place(self, key, values):
        """Gives the step the storage of every argument it reads in place (the
        parameters): only a data_ptr that changed since the last call is bound
        again (the runtime then re-captures its CUDA graph). A parameter that
        is not contiguous is refused: the step reads its bytes as they lie."""
        step, bound = self.loaded[key][0], self._bound_at.setdefault(key, {})
        for index in self.layout.bound:
            value, buffer = values[index], self.layout.inputs[index]
            if not value.is_contiguous():
                raise LayoutError(f"step buffer {buffer.name} (argument {index}, "
                                  f"{self.imported.arguments[index].name}) is read in place, but "
                                  f"the tensor is not contiguous (strides {value.stride()})")
            pointer = value.data_ptr()
            if bound.get(index) != pointer:
                step.bind_device(buffer.index, pointer, buffer.size, buffer.dtype)
                bound[index] = pointer
                RUNS["bound_pointers"].add(pointer)

    def _place_lifted(self, values):
        """The lifted constants (folded at import, CPU tensors) on the device
        of the call's tensors, copied there once per device."""
        device = next((v.device for v in values if v.device.type == self.device_type), None)
        if device is None:
            return values
        placed = self._lifted_on.get(device)
        if placed is None:
            placed = {i: values[i].to(device) for i, a in enumerate(self.imported.arguments)
                      if a.kind == "lifted"}
            self._lifted_on[device] = placed
        return [placed.get(i, v) for i, v in enumerate(values)]

    def _views(self, key, buffers):
        """Torch tensors over `buffers` in the loaded step's arena (no copy)."""
        arena = self.loaded[key][1]
        return [arena[b.offset:b.offset + b.size].view(TORCH_DTYPES[b.dtype]).view(b.shape)
                for b in buffers]

    def _own_param_grads(self, values):
        """Before a run overwrites the arena: a parameter whose .grad is still
        the arena view backward handed out (no zero_grad(set_to_none=True)
        since, e.g. gradient accumulation) gets a copy of it instead."""
        arenas = {arena.untyped_storage().data_ptr() for _step, arena in self.loaded.values()}
        if not arenas:
            return
        for index in self.params:
            value = values[index]
            grad = value.grad if value.is_leaf else None
            if grad is not None and grad.untyped_storage().data_ptr() in arenas:
                value.grad = grad.clone()

    def _settle(self):
        """Before a run overwrites the arena: the gradients a forward handed
        out as arena views and no backward has read yet become copies."""
        for owner in self.pending:
            owner.grads = {k: g.clone() for k, g in owner.grads.items()}
        self.pending = []

    def run(self, tensors, owner=None):
        """(loss, [gradient per parameter]) of one step on the tensors (the
        graph's tensor arguments), queued on torch's current stream. On CUDA
        the inputs are copied into the arena by one foreach copy and the
        gradients are views of the arena: `owner` (an object with a `grads`
        dict, the autograd context) gets copies before the next run
        overwrites them; without an owner they are copies at once."""
        values = self.imported.argument_values(*tensors)
        if self.imported.lifted:
            values = self._place_lifted(values)
        self._own_param_grads(values)
        fast = self._fast
        if fast is not None and fast.matches(values):
            self._settle()
            return fast.run(self, values, owner)
        device = next((v.device for v in values if v.device.type == self.device_type), None)
        if device is None:
            raise LayoutError(f"the step runs on {self.device_type} tensors; the call has none")
        step = self._step(device)
        layout = self.layout
        with _device_scope(device):
            checked = []
            for index, (buffer, value) in enumerate(zip(layout.inputs, values)):
                argument = self.imported.arguments[index]
                value = value.detach()
                check_tensor(buffer, value, f"argument {index}, {argument.name}", self.device_type)
                checked.append((buffer, value))
            self._settle()
            if self.device_type == "cuda":
                return self._run_in_arena(device, step, checked, owner)
            for buffer, value in checked:
                value = value.contiguous()
                if buffer.bound:
                    step.bind_device(buffer.index, value.data_ptr(), buffer.size, buffer.dtype)
                elif buffer.size:
                    step.copy_in_device(buffer.index, value.data_ptr(), buffer.size)
            step.enqueue()
            RUNS["steps"] += 1
            loss = torch.empty((), dtype=TORCH_DTYPES[layout.loss.dtype], device=device)
            step.copy_out_device(layout.loss.index, loss.data_ptr(), layout.loss.size)
            grads = []
            for buffer in layout.grads:
                grad = torch.empty(buffer.shape, dtype=TORCH_DTYPES[buffer.dtype], device=device)
                if buffer.size:
                    step.copy_out_device(buffer.index, grad.data_ptr(), buffer.size)
                grads.append(grad)
        return loss, grads

    def _run_in_arena(self, device, step, checked, owner):
        key = (device.index, stream_handle(torch.cuda.current_stream(device)))
        self._fast = _ArenaCalls(self, key, device, step, [v for _, v in checked])
        return self._fast.run(self, [v for _, v in checked], owner)

    def release(self, owner):
        """`owner`'s gradients are read: the next run need not copy them."""
        if owner in self.pending:
            self.pending.remove(owner)
        owner.grads = None

    def free(self):
        """Frees the loaded steps before their arenas."""
        for step, _arena in self.loaded.values():
            step.free()
        self.loaded.clear()
        self._bound_at = {}

    def __del__(self):
        try:
            self.free()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class _GradientHolder:
    """A forward's gradients until its backward reads them."""
    grads = None


class GpuStepFunction(torch.autograd.Function):
    """forward(step, *tensors) -> the loss; backward: grad_output times the
    gradients the forward's run computed, for the parameters (None for the
    other tensors)."""

    @staticmethod
    def forward(ctx, compiled, *tensors):
        holder = _GradientHolder()
        loss, grads = compiled.run(tensors, owner=holder)
        holder.grads = dict(zip(compiled.tensor_params, grads))
        ctx.holder, ctx.count, ctx.step = holder, len(tensors), compiled.step
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        holder = ctx.holder
        indices = sorted(holder.grads)
        grads = [holder.grads[i] for i in indices]
        # Scaled in place (arena views, or copies a later run made) and
        # returned as new views with no other reference: autograd's
        # AccumulateGrad then keeps them as .grad instead of copying, so
        # the gradients take no bytes beside the arena (TorchBudget).
        if grads:
            torch._foreach_mul_(grads, grad_output.to(grads[0].dtype))
        by_index = {i: g.view(g.shape) for i, g in zip(indices, grads)}
        del grads
        ctx.step.release(holder)
        return (None, *[by_index.pop(i, None) for i in range(ctx.count)])


class CompiledGpuGraph:
    """What the backend keeps for one CUDA key: the training step and which
    tensor arguments (positions among the call's tensors) are its
    parameters."""

    def __init__(self, imported, requires_grad, budget, cache, loss_chunks=None):
        inputs = [i for i, a in enumerate(imported.arguments) if a.kind == "input"]
        if len(inputs) != len(requires_grad):
            raise LayoutError(f"the captured graph takes {len(inputs)} tensor inputs, the call "
                             f"passes {len(requires_grad)}")
        params = [inputs[i] for i, needs in enumerate(requires_grad) if needs]
        if not params:
            raise NotImplementedError("no argument requires grad, so there is no training "
                                      "step to run (the GPU path runs training calls)")
        self.tensor_params = [i for i, needs in enumerate(requires_grad) if needs]
        self.step = GpuTrainingStep(imported, params, budget, cache, loss_chunks)

    def run(self, tensors, owner=None):
        return self.step.run(tensors, owner)

    def __call__(self, tensors):
        if torch.is_grad_enabled():
            return GpuStepFunction.apply(self, *tensors)
        loss, _grads = self.run(tensors)
        return loss


def main(argv):
    """python -m weft.torch_gpu compile DIR [--into CACHE]: the packages of
    the requests a GPU machine left in DIR (a cache miss without the
    compiler), compiled into CACHE (default DIR)."""
    if len(argv) not in (2, 4) or argv[0] != "compile" or (len(argv) == 4 and argv[2] != "--into"):
        print("usage: python -m weft.torch_gpu compile DIR [--into CACHE]", file=sys.stderr)
        return 2
    keys = compile_requests(argv[1], argv[3] if len(argv) == 4 else None)
    print(f"compiled {len(keys)} package(s): {', '.join(k[:16] for k in keys) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
