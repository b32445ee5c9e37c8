"""ctypes binding of Weft's compiler C API, libweft_c.so (include/weft-c/Weft.h,
docs/c-api.md): parse a forward graph and compile its training step to a
package in memory, as `weft-compile --train --emit=package` does.

    with capi.Context() as ctx:
        module = ctx.parse(text, name="gpt.mlir")
        package = module.compile_training_step(entry="forward", optimizer="adamw",
                                               memory_budget="20GiB")

Every failing call raises CompileError carrying the status and the
diagnostics ("file:line:col: error: ..."); a bad option raises
InvalidOptionError, a ValueError as well. The library is found at
$WEFT_CAPI_LIB, else $WEFT_BUILD_DIR/lib or the repository's build/lib.
"""
import ctypes
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# weft_capi_status_t values, as in Weft.h.
OK = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_PARSE = 2
ERROR_INVALID_OPTION = 3
ERROR_COMPILE = 4
STATUS_NAMES = {
    OK: "ok",
    ERROR_INVALID_ARGUMENT: "invalid argument",
    ERROR_PARSE: "parse error",
    ERROR_INVALID_OPTION: "invalid option",
    ERROR_COMPILE: "compile error",
}


class CompileError(Exception):
    """A weft_capi_status_t other than OK: `status`, `status_name` and
    `diagnostics`, the context's text for the failing call."""

    def __init__(self, status, diagnostics):
        self.status = status
        self.status_name = STATUS_NAMES.get(status, "status %d" % status)
        self.diagnostics = diagnostics
        super().__init__("%s:\n%s" % (self.status_name, diagnostics.rstrip("\n")))


class InvalidOptionError(CompileError, ValueError):
    """An option outside its allowed values; the message names both."""


class _Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_uint8)), ("size", ctypes.c_size_t)]


class _TrainingOptions(ctypes.Structure):
    _fields_ = [
        ("entry", ctypes.c_char_p),
        ("optimizer", ctypes.c_char_p),
        ("lr", ctypes.c_double),
        ("weight_decay", ctypes.c_double),
        ("memory_budget", ctypes.c_char_p),
        ("remat", ctypes.c_char_p),
        ("remat_layers", ctypes.c_int64),
        ("weight_copies", ctypes.c_char_p),
        ("fuse_elementwise", ctypes.c_int),
        ("target", ctypes.c_char_p),
        ("grid", ctypes.c_char_p),
        ("sequence_parallel", ctypes.c_int),
        ("tuning_table", ctypes.c_char_p),
        ("bind_arguments", ctypes.c_char_p),
        ("loss_chunks", ctypes.c_int64),
    ]


_STRING_OPTIONS = ("optimizer", "memory_budget", "remat", "weight_copies", "target", "grid",
                   "tuning_table", "bind_arguments")
_NUMBER_OPTIONS = {"lr": float, "weight_decay": float, "remat_layers": int,
                   "fuse_elementwise": int, "sequence_parallel": int, "loss_chunks": int}


def library_path():
    """$WEFT_CAPI_LIB, else libweft_c.so in $WEFT_BUILD_DIR/lib or build/lib."""
    if os.environ.get("WEFT_CAPI_LIB"):
        return os.environ["WEFT_CAPI_LIB"]
    build = os.environ.get("WEFT_BUILD_DIR", os.path.join(REPO, "build"))
    return os.path.join(build, "lib", "libweft_c.so")


_lib = None


def load():
    """The library with its functions typed (loaded once)."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if not os.path.exists(path):
        raise OSError("libweft_c.so not found at %s (build it: ninja -C build weft_c, "
                      "or set WEFT_CAPI_LIB)" % path)
    lib = ctypes.CDLL(path)
    c_void_p, c_char_p, c_size_t, c_int = (ctypes.c_void_p, ctypes.c_char_p,
                                           ctypes.c_size_t, ctypes.c_int)
    lib.weftVersion.restype = c_char_p
    lib.weftVersion.argtypes = []
    lib.weftContextCreate.restype = c_void_p
    lib.weftContextCreate.argtypes = []
    lib.weftContextDestroy.restype = None
    lib.weftContextDestroy.argtypes = [c_void_p]
    lib.weftGetDiagnostics.restype = c_char_p
    lib.weftGetDiagnostics.argtypes = [c_void_p]
    lib.weftModuleParseNamed.restype = c_int
    lib.weftModuleParseNamed.argtypes = [c_void_p, c_char_p, c_size_t, c_char_p,
                                         ctypes.POINTER(c_void_p)]
    lib.weftModuleDestroy.restype = None
    lib.weftModuleDestroy.argtypes = [c_void_p]
    lib.weftModulePrint.restype = c_int
    lib.weftModulePrint.argtypes = [c_void_p, ctypes.POINTER(_Buffer)]
    lib.weftTrainingOptionsInit.restype = None
    lib.weftTrainingOptionsInit.argtypes = [ctypes.POINTER(_TrainingOptions)]
    lib.weftCompileTrainingStep.restype = c_int
    lib.weftCompileTrainingStep.argtypes = [c_void_p, ctypes.POINTER(_TrainingOptions),
                                            ctypes.POINTER(_Buffer)]
    lib.weftCompileInferenceStep.restype = c_int
    lib.weftCompileInferenceStep.argtypes = [c_void_p, ctypes.POINTER(_TrainingOptions),
                                             ctypes.POINTER(_Buffer)]
    lib.weftBufferFree.restype = None
    lib.weftBufferFree.argtypes = [_Buffer]
    _lib = lib
    return lib


def version():
    return load().weftVersion().decode()


def _take(lib, buffer):
    """The buffer's bytes, copied into Python; the C buffer is freed."""
    try:
        return ctypes.string_at(buffer.data, buffer.size) if buffer.size else b""
    finally:
        lib.weftBufferFree(buffer)


class Context:
    """weft_context_t: Weft's dialects and passes, and the diagnostics of the
    last call. One thread at a time."""

    def __init__(self):
        self._lib = load()
        self._handle = self._lib.weftContextCreate()
        if not self._handle:
            raise MemoryError("weftContextCreate failed")
        self._modules = []

    def diagnostics(self):
        return self._lib.weftGetDiagnostics(self._handle).decode(errors="replace")

    def _check(self, status):
        if status == OK:
            return
        error = InvalidOptionError if status == ERROR_INVALID_OPTION else CompileError
        raise error(status, self.diagnostics())

    def parse(self, text, name="<input>"):
        """A Module of IR text (str or bytes); CompileError with the
        diagnostics' file:line:col when it does not parse or verify."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        handle = ctypes.c_void_p()
        self._check(self._lib.weftModuleParseNamed(self._handle, data, len(data),
                                                   name.encode(), ctypes.byref(handle)))
        module = Module(self, handle.value)
        self._modules.append(module)
        return module

    def close(self):
        if getattr(self, "_handle", None):
            for module in self._modules:
                module.close()
            self._lib.weftContextDestroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Module:
    """weft_module_t: a parsed module of its context."""

    def __init__(self, context, handle):
        self._context = context
        self._handle = handle

    def __str__(self):
        lib = self._context._lib
        buffer = _Buffer()
        self._context._check(lib.weftModulePrint(self._handle, ctypes.byref(buffer)))
        return _take(lib, buffer).decode()

    def compile_training_step(self, entry, **options):
        """The package (bytes) of the training step of `entry`, as
        weft-compile --train --emit=package gives it. Options (the fields of
        weft_training_options_t): optimizer, lr, weight_decay,
        memory_budget, remat, remat_layers, weight_copies, fuse_elementwise,
        target, grid, sequence_parallel, tuning_table, bind_arguments,
        loss_chunks."""
        return self._compile(self._context._lib.weftCompileTrainingStep, entry, options)

    def compile_inference_step(self, entry, **options):
        """The package (bytes) of the forward `entry` itself, no autodiff
        (weftCompileInferenceStep, weft-compile --inference --emit=package):
        result i is the entry's result i. The options of
        compile_training_step (optimizer and remat must stay none)."""
        return self._compile(self._context._lib.weftCompileInferenceStep, entry, options)

    def _compile(self, function, entry, options):
        lib = self._context._lib
        raw = _TrainingOptions()
        lib.weftTrainingOptionsInit(ctypes.byref(raw))
        keep = [entry.encode()]  # alive until the call returns
        raw.entry = keep[0]
        for key, value in options.items():
            if key in _STRING_OPTIONS:
                keep.append(None if value is None else str(value).encode())
                setattr(raw, key, keep[-1])
            elif key in _NUMBER_OPTIONS:
                setattr(raw, key, _NUMBER_OPTIONS[key](value))
            else:
                allowed = ", ".join(_STRING_OPTIONS + tuple(_NUMBER_OPTIONS))
                raise ValueError("unknown option '%s'; options: %s" % (key, allowed))
        buffer = _Buffer()
        self._context._check(function(self._handle, ctypes.byref(raw), ctypes.byref(buffer)))
        return _take(lib, buffer)

    def close(self):
        if self._handle:
            self._context._lib.weftModuleDestroy(self._handle)
            self._handle = None
