"""ctypes binding of Weft's CUDA runtime, libweft_runtime.so (C API in
runtime/include/weft_runtime.h). Every failing call raises WeftError with the
runtime's status, the CUresult and the message.

The library is found at $WEFT_RUNTIME_LIB, else $WEFT_BUILD_DIR/lib or the
repository's build/lib. With PyTorch, launch into its context and stream:

    rt.context_ensure(0)            # keeps PyTorch's current context
    fn = rt.module_load(cubin).function("kernel")
    rt.launch(fn, (blocks, 1, 1), (128, 1, 1), 0,
              torch.cuda.current_stream().cuda_stream,
              [("ptr", x.data_ptr()), ("i32", x.numel())])

A compiled step (a package from weft.capi) on torch's stream and memory:

    arena = torch.empty(planned_bytes, dtype=torch.uint8, device="cuda")
    step = rt.load_step(package, stream=torch.cuda.current_stream().cuda_stream
                        or rt.CU_STREAM_LEGACY, arena=arena.data_ptr(),
                        arena_bytes=arena.numel())
    step.copy_in_device(step.find("arg0"), x.data_ptr(), x.numel() * x.element_size())
    step.enqueue()                  # queued on torch's stream, no host wait
"""
import ctypes
import os
from collections import namedtuple

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# weft_status values, as in weft_runtime.h.
OK = 0
ERROR_DRIVER_MISSING = 1
ERROR_CUDA = 2
ERROR_INVALID_IMAGE = 3
ERROR_ARCH_MISMATCH = 4
ERROR_INVALID_ARGUMENT = 5
ERROR_NOT_FOUND = 6
ERROR_VERSION_MISMATCH = 7
ERROR_LIBRARY_MISSING = 8
ERROR_CUBLAS = 9

IMAGE_CUBIN = 1
IMAGE_PTX = 2
IMAGE_KINDS = {IMAGE_CUBIN: "cubin", IMAGE_PTX: "ptx"}

# CUtensorMapDataType / CUtensorMapSwizzle values from cuda.h.
TENSOR_MAP_DTYPES = {
    "u8": 0, "u16": 1, "u32": 2, "i32": 3, "u64": 4, "i64": 5, "f16": 6,
    "f32": 7, "f64": 8, "bf16": 9, "f32_ftz": 10, "tf32": 11, "tf32_ftz": 12,
}
SWIZZLES = {None: 0, 0: 0, 32: 1, 64: 2, 128: 3}
TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)

# Launch argument kinds and the ctypes value each becomes.
ARG_TYPES = {
    "ptr": ctypes.c_uint64,
    "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64,
    "u64": ctypes.c_uint64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}

ImageInfo = namedtuple("ImageInfo", "kind sm arch_specific family_specific elf_abi_version")


class WeftError(Exception):
    """A weft_status other than WEFT_OK: `status` (int), `status_name`,
    `cu_result` (the CUresult for WEFT_ERROR_CUDA, else 0) and `message`."""

    def __init__(self, status, cu_result, message, status_name=None):
        self.status = status
        self.status_name = status_name or f"weft_status {status}"
        self.cu_result = cu_result
        self.message = message
        super().__init__(f"{self.status_name}: {message}")


class _ImageInfo(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("sm", ctypes.c_int), ("arch_specific", ctypes.c_int),
                ("family_specific", ctypes.c_int), ("elf_abi_version", ctypes.c_int)]


_lib = None


def library_path():
    """Where the runtime library is looked for (it may not exist)."""
    explicit = os.environ.get("WEFT_RUNTIME_LIB")
    if explicit:
        return explicit
    build = os.environ.get("WEFT_BUILD_DIR", os.path.join(REPO, "build"))
    return os.path.join(build, "lib", "libweft_runtime.so")


def _declare(lib):
    c_int, c_size_t, c_void_p, c_char_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p
    dims3 = ctypes.c_uint * 3
    signatures = {
        "weft_last_error": (c_char_p, []),
        "weft_last_cu_result": (c_int, []),
        "weft_status_to_cu_result": (c_int, [c_int]),
        "weft_status_name": (c_char_p, [c_int]),
        "weft_runtime_version": (c_char_p, []),
        "weft_init": (c_int, []),
        "weft_context_ensure": (c_int, [c_int]),
        "weft_device_arch": (c_int, [ctypes.POINTER(c_int)]),
        "weft_device_memory": (c_int, [ctypes.POINTER(c_size_t), ctypes.POINTER(c_size_t)]),
        "weft_image_check": (c_int, [c_void_p, c_size_t, ctypes.POINTER(c_int),
                                     ctypes.POINTER(c_int)]),
        "weft_image_inspect": (c_int, [c_void_p, c_size_t, ctypes.POINTER(_ImageInfo)]),
        "weft_image_check_arch": (c_int, [ctypes.POINTER(_ImageInfo), c_int]),
        "weft_module_load": (c_int, [c_void_p, c_size_t, ctypes.POINTER(c_void_p)]),
        "weft_module_unload": (c_int, [c_void_p]),
        "weft_module_function": (c_int, [c_void_p, c_char_p, ctypes.POINTER(c_void_p)]),
        "weft_function_set_dynamic_smem": (c_int, [c_void_p, c_size_t]),
        "weft_launch": (c_int, [c_void_p, dims3, dims3, c_size_t, c_void_p,
                                ctypes.POINTER(c_void_p)]),
        "weft_tensor_map_encode_tiled": (
            c_int, [c_void_p, c_int, ctypes.c_uint, c_void_p, ctypes.POINTER(ctypes.c_ulonglong),
                    ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(ctypes.c_uint), c_int]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


def lib():
    """The loaded runtime library (loaded on first use)."""
    global _lib
    if _lib is None:
        path = library_path()
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"Weft runtime library not found at {path}; build it with "
                f"`ninja -C build weft_runtime_shared` or set WEFT_RUNTIME_LIB")
        loaded = ctypes.CDLL(path)
        _declare(loaded)
        _lib = loaded
    return _lib


def _check(status):
    if status != OK:
        runtime = lib()
        raise WeftError(status, runtime.weft_last_cu_result(),
                        runtime.weft_last_error().decode(errors="replace"),
                        runtime.weft_status_name(status).decode())


def version():
    return lib().weft_runtime_version().decode()


def status_to_cu_result(status):
    return lib().weft_status_to_cu_result(status)


def init():
    _check(lib().weft_init())


def context_ensure(ordinal=0):
    _check(lib().weft_context_ensure(ordinal))


def device_arch():
    """Compute capability of the current context's device, e.g. 90."""
    sm = ctypes.c_int()
    _check(lib().weft_device_arch(ctypes.byref(sm)))
    return sm.value


def device_memory():
    """(free_bytes, total_bytes) of the current context's device."""
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    _check(lib().weft_device_memory(ctypes.byref(free), ctypes.byref(total)))
    return free.value, total.value


def image_check(image):
    """("cubin" | "ptx", sm) of an image given as bytes; host-only."""
    kind, sm = ctypes.c_int(), ctypes.c_int()
    _check(lib().weft_image_check(image, len(image), ctypes.byref(kind), ctypes.byref(sm)))
    return IMAGE_KINDS[kind.value], sm.value


def image_inspect(image):
    info = _ImageInfo()
    _check(lib().weft_image_inspect(image, len(image), ctypes.byref(info)))
    return ImageInfo(IMAGE_KINDS[info.kind], info.sm, bool(info.arch_specific),
                     bool(info.family_specific), info.elf_abi_version)


def check_arch(info, device_sm):
    """Raises WeftError (ARCH_MISMATCH) when an ImageInfo cannot run on device_sm."""
    kinds = {name: value for value, name in IMAGE_KINDS.items()}
    raw = _ImageInfo(kinds[info.kind], info.sm, int(info.arch_specific),
                     int(info.family_specific), info.elf_abi_version)
    _check(lib().weft_image_check_arch(ctypes.byref(raw), device_sm))


class Module:
    """A loaded cubin/PTX module; unloaded by unload() or on leaving a `with`."""

    def __init__(self, handle, image):
        self.handle = handle
        self._image = image  # the driver may read it lazily; keep it alive

    def function(self, name):
        """The CUfunction of kernel `name`, as an int handle."""
        if self.handle is None:
            raise WeftError(ERROR_INVALID_ARGUMENT, 0, "module is unloaded",
                            "WEFT_ERROR_INVALID_ARGUMENT")
        fn = ctypes.c_void_p()
        _check(lib().weft_module_function(self.handle, name.encode(), ctypes.byref(fn)))
        return fn.value

    def unload(self):
        handle, self.handle = self.handle, None
        if handle is not None:
            _check(lib().weft_module_unload(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unload()


def module_load(image):
    """Loads cubin or PTX bytes (PTX must end with a NUL byte) in the current context."""
    image = bytes(image)
    handle = ctypes.c_void_p()
    _check(lib().weft_module_load(image, len(image), ctypes.byref(handle)))
    return Module(handle.value, image)


def set_dynamic_smem(fn, nbytes):
    _check(lib().weft_function_set_dynamic_smem(fn, nbytes))


def _dims3(values, what):
    values = tuple(values)
    if len(values) != 3 or not all(isinstance(v, int) and 0 <= v < 2**32 for v in values):
        raise ValueError(f"{what} must be three unsigned 32-bit ints, got {values!r}")
    return (ctypes.c_uint * 3)(*values)


def pack_args(args):
    """(void** array, keep-alive list) for kernel arguments given as (kind, value)
    tuples: kinds are those of ARG_TYPES, plus ("tensormap", TensorMap) for a
    __grid_constant__ CUtensorMap parameter."""
    values = []
    for index, arg in enumerate(args):
        if not isinstance(arg, tuple) or len(arg) != 2:
            raise ValueError(f"argument {index} must be a (kind, value) tuple, got {arg!r}")
        kind, value = arg
        if kind == "tensormap":
            if not isinstance(value, TensorMap):
                raise ValueError(f"argument {index}: 'tensormap' needs a TensorMap, got {value!r}")
            values.append(value)
        elif kind in ARG_TYPES:
            converted = ARG_TYPES[kind](value)
            # ctypes wraps out-of-range ints silently; a kernel would see garbage.
            if kind not in ("f32", "f64") and converted.value != value:
                raise ValueError(f"argument {index}: {value!r} does not fit {kind}")
            values.append(converted)
        else:
            raise ValueError(f"argument {index}: unknown kind {kind!r}; expected one of "
                             f"{sorted(ARG_TYPES) + ['tensormap']}")
    pointers = (ctypes.c_void_p * max(len(values), 1))()
    for index, value in enumerate(values):
        pointers[index] = value.address if isinstance(value, TensorMap) else ctypes.addressof(value)
    return pointers, values


def launch(fn, grid, block, smem, stream_handle, args):
    """cuLaunchKernel of `fn` (from Module.function) on the stream handle
    (an int such as torch.cuda.current_stream().cuda_stream; 0 or None for the
    default stream), with args as (kind, value) tuples; see pack_args."""
    grid3, block3 = _dims3(grid, "grid"), _dims3(block, "block")
    pointers, keep_alive = pack_args(args)
    array = pointers if args else None
    _check(lib().weft_launch(fn, grid3, block3, smem, stream_handle or None, array))
    del keep_alive  # the driver copied the values during the call


class TensorMap:
    """A CUtensorMap in a 128-byte aligned host buffer (ctypes cannot align
    a Structure to 128, so the buffer is over-allocated and offset)."""

    def __init__(self):
        self._buffer = ctypes.create_string_buffer(2 * TENSOR_MAP_BYTES)
        base = ctypes.addressof(self._buffer)
        self.address = (base + TENSOR_MAP_BYTES - 1) // TENSOR_MAP_BYTES * TENSOR_MAP_BYTES

    def raw(self):
        return ctypes.string_at(self.address, TENSOR_MAP_BYTES)


def tensor_map_encode_tiled(dtype, global_address, dims, strides_bytes, box, swizzle=None):
    """TensorMap for a row-major tensor at global_address (e.g. a CUDA tensor's
    data_ptr()); dims and box innermost first, strides_bytes for dims 1..rank-1,
    swizzle None/32/64/128 bytes; dtype a TENSOR_MAP_DTYPES name."""
    if dtype not in TENSOR_MAP_DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {sorted(TENSOR_MAP_DTYPES)}")
    if swizzle not in SWIZZLES:
        raise ValueError(f"swizzle {swizzle!r} is not one of None, 32, 64, 128")
    rank = len(dims)
    if len(box) != rank or len(strides_bytes) != max(rank - 1, 0):
        raise ValueError(f"rank {rank} needs {rank} box dims and {rank - 1} strides, got "
                         f"{len(box)} and {len(strides_bytes)}")
    tensor_map = TensorMap()
    c_dims = (ctypes.c_ulonglong * max(rank, 1))(*dims)
    c_strides = (ctypes.c_ulonglong * max(rank - 1, 1))(*strides_bytes)
    c_box = (ctypes.c_uint * max(rank, 1))(*box)
    _check(lib().weft_tensor_map_encode_tiled(tensor_map.address, TENSOR_MAP_DTYPES[dtype], rank,
                                              global_address, c_dims, c_strides, c_box,
                                              SWIZZLES[swizzle]))
    return tensor_map


# ---- GEMMs through cuBLASLt (weft_gemm_*) ---------------------------------

# weft_dtype and weft_gemm_epilogue values, as in weft_runtime.h.
DTYPES = {"f32": 1, "bf16": 2, "f16": 3}
GEMM_EPILOGUES = {"none": 0, "bias": 1, "gelu": 2, "bias_gelu": 3, "bgrad_a": 4}
GEMM_ALGO_BYTES = 64  # sizeof(cublasLtMatmulAlgo_t)


class GemmDesc(ctypes.Structure):
    """weft_gemm_desc: D[m,n] = epilogue(alpha * op(A) op(B) + beta * C), row-major
    as torch.matmul; A is [m,k] ([k,m] when trans_a), B [k,n] ([n,k] when
    trans_b); strides in elements between batches."""
    _fields_ = [("m", ctypes.c_int), ("n", ctypes.c_int), ("k", ctypes.c_int),
                ("batch", ctypes.c_int),
                ("stride_a", ctypes.c_longlong), ("stride_b", ctypes.c_longlong),
                ("stride_c", ctypes.c_longlong), ("stride_d", ctypes.c_longlong),
                ("trans_a", ctypes.c_int), ("trans_b", ctypes.c_int),
                ("dtype", ctypes.c_int), ("epilogue", ctypes.c_int),
                ("alpha", ctypes.c_float), ("beta", ctypes.c_float)]


class GemmAlgo(ctypes.Structure):
    """weft_gemm_algo: a cublasLtMatmulAlgo_t's 64 bytes and a valid flag; raw()
    and from_raw() carry it in and out of a package."""
    _fields_ = [("bytes", ctypes.c_ubyte * GEMM_ALGO_BYTES), ("valid", ctypes.c_int)]

    def raw(self):
        return bytes(self.bytes)

    @classmethod
    def from_raw(cls, data):
        data = bytes(data)
        if len(data) != GEMM_ALGO_BYTES:
            raise ValueError(f"a GEMM algorithm is {GEMM_ALGO_BYTES} bytes, got {len(data)}")
        algo = cls()
        ctypes.memmove(algo.bytes, data, GEMM_ALGO_BYTES)
        algo.valid = 1
        return algo


_gemm_declared = False


def _gemm_lib():
    """lib() with the weft_gemm_* signatures declared."""
    global _gemm_declared
    runtime = lib()
    if not _gemm_declared:
        c_int, c_size_t, c_void_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p
        desc, algo = ctypes.POINTER(GemmDesc), ctypes.POINTER(GemmAlgo)
        signatures = {
            "weft_gemm_check": (c_int, [desc]),
            "weft_gemm_desc_size": (c_size_t, []),
            "weft_gemm_algo_size": (c_size_t, []),
            "weft_gemm_library_version": (c_int, [ctypes.POINTER(c_size_t)]),
            "weft_gemm_select": (c_int, [desc, c_size_t, algo, ctypes.POINTER(c_size_t)]),
            "weft_gemm_run": (c_int, [desc, algo, c_void_p, c_void_p, c_void_p, c_void_p,
                                      c_void_p, c_void_p, c_size_t, c_void_p]),
        }
        for name, (restype, argtypes) in signatures.items():
            function = getattr(runtime, name)
            function.restype = restype
            function.argtypes = argtypes
        _gemm_declared = True
    return runtime


def gemm_desc(m, n, k, dtype="bf16", *, batch=1, trans_a=False, trans_b=False, epilogue="none",
              alpha=1.0, beta=0.0, stride_a=None, stride_b=None, stride_c=None, stride_d=None):
    """A GemmDesc; dtype a DTYPES name, epilogue a GEMM_EPILOGUES name; batch
    strides default to packed matrices (m*k, k*n, m*n, m*n)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {sorted(DTYPES)}")
    if epilogue not in GEMM_EPILOGUES:
        raise ValueError(f"epilogue {epilogue!r} is not one of {sorted(GEMM_EPILOGUES)}")
    for name, value in (("m", m), ("n", n), ("k", k), ("batch", batch)):
        if not isinstance(value, int) or not -2**31 <= value < 2**31:
            raise ValueError(f"{name} must be a 32-bit int, got {value!r}")
    return GemmDesc(m, n, k, batch,
                    m * k if stride_a is None else stride_a,
                    k * n if stride_b is None else stride_b,
                    m * n if stride_c is None else stride_c,
                    m * n if stride_d is None else stride_d,
                    int(bool(trans_a)), int(bool(trans_b)), DTYPES[dtype],
                    GEMM_EPILOGUES[epilogue], alpha, beta)


def gemm_desc_size():
    """sizeof(weft_gemm_desc) as the library was compiled."""
    return _gemm_lib().weft_gemm_desc_size()


def gemm_algo_size():
    return _gemm_lib().weft_gemm_algo_size()


def gemm_check(desc):
    """Raises WeftError (INVALID_ARGUMENT) naming what is wrong with `desc`; host-only."""
    _check(_gemm_lib().weft_gemm_check(ctypes.byref(desc)))


def gemm_library_version():
    """cublasLtGetVersion() of the cuBLASLt the runtime loads, e.g. 130100."""
    version = ctypes.c_size_t()
    _check(_gemm_lib().weft_gemm_library_version(ctypes.byref(version)))
    return version.value


def gemm_select(desc, workspace_limit=32 << 20):
    """(GemmAlgo, workspace_bytes): cuBLASLt's best algorithm for `desc` on the
    current context's device whose workspace fits workspace_limit."""
    algo, workspace = GemmAlgo(), ctypes.c_size_t()
    _check(_gemm_lib().weft_gemm_select(ctypes.byref(desc), workspace_limit, ctypes.byref(algo),
                                        ctypes.byref(workspace)))
    return algo, workspace.value


def gemm_run(desc, algo, a, b, c, d, bias=None, workspace=None, workspace_bytes=0, stream=None):
    """Enqueues the GEMM on `stream` (an int handle; None/0 the default stream).
    a, b, c, d, bias and workspace are device addresses (ints, e.g.
    tensor.data_ptr()) or None."""
    _check(_gemm_lib().weft_gemm_run(ctypes.byref(desc), ctypes.byref(algo), a, b, c, d, bias,
                                     workspace, workspace_bytes, stream or None))


# ---- Running a compiled step (weft_step_*) ----------------------------------

CU_STREAM_LEGACY = 1  # cuda.h's CU_STREAM_LEGACY: the legacy default stream (handle 0 in torch)
STEP_ROLES = ("parameter", "optimizer_state", "input", "output", "gradient", "activation",
              "temporary", "workspace")
STEP_MAX_RANK = 8


class _StepOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("graph", ctypes.c_int),
                ("debug_buffers", ctypes.c_int), ("stream", ctypes.c_void_p),
                ("arena", ctypes.c_uint64), ("arena_bytes", ctypes.c_size_t),
                ("collectives", ctypes.c_int), ("comm_priority", ctypes.c_int),
                ("gemm_sm_margin", ctypes.c_int)]


class _StepBuffer(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_char_p), ("role", ctypes.c_int),
                ("offset", ctypes.c_size_t), ("size", ctypes.c_size_t),
                ("first", ctypes.c_uint), ("last", ctypes.c_uint),
                ("arg", ctypes.c_int), ("result", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_longlong * STEP_MAX_RANK), ("dtype", ctypes.c_char_p),
                ("has_initial_data", ctypes.c_int), ("copy_of", ctypes.c_int)]


class _StepMemory(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "planned_bytes", "total_bytes", "used_before_load", "used_after_arena",
        "used_after_load", "used_peak")]


# One planned buffer of a step; shape is None when the package gives no type.
# bound: an argument the caller binds outside the arena (bind_device).
StepBuffer = namedtuple("StepBuffer", "index name type role offset size first last arg result "
                                      "shape dtype has_initial_data copy_of bound",
                        defaults=(False,))

_step_declared = False


class _StepEntry(ctypes.Structure):
    """weft_step_entry."""
    _fields_ = [("kind", ctypes.c_int), ("name", ctypes.c_char_p), ("index", ctypes.c_uint),
                ("stream", ctypes.c_uint), ("m", ctypes.c_longlong), ("n", ctypes.c_longlong),
                ("k", ctypes.c_longlong), ("batch", ctypes.c_longlong)]


_ENTRY_KINDS = {0: "launch", 1: "gemm", 2: "event", 3: "collective"}


def _step_lib():
    """lib() with the weft_step_* signatures declared; refuses a library whose
    weft_step_options has another size than this binding's."""
    global _step_declared
    runtime = lib()
    if not _step_declared:
        c_int, c_size_t, c_void_p, c_uint64 = (ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p,
                                               ctypes.c_uint64)
        step_out = ctypes.POINTER(c_void_p)
        options = ctypes.POINTER(_StepOptions)
        signatures = {
            "weft_step_options_size": (c_size_t, []),
            "weft_step_load": (c_int, [c_void_p, c_size_t, options, step_out]),
            "weft_step_prepare": (c_int, [c_void_p, c_size_t, c_int, options, step_out]),
            "weft_step_free": (c_int, [c_void_p]),
            "weft_step_buffer_count": (c_size_t, [c_void_p]),
            "weft_step_buffer_info": (c_int, [c_void_p, c_size_t, ctypes.POINTER(_StepBuffer)]),
            "weft_step_find_buffer": (c_int, [c_void_p, ctypes.c_char_p,
                                              ctypes.POINTER(c_size_t)]),
            "weft_step_bind": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t]),
            "weft_step_read": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t]),
            "weft_step_copy_in_device": (c_int, [c_void_p, c_size_t, c_uint64, c_size_t]),
            "weft_step_copy_out_device": (c_int, [c_void_p, c_size_t, c_uint64, c_size_t]),
            "weft_step_buffer_bound": (c_int, [c_void_p, c_size_t, ctypes.POINTER(c_int)]),
            "weft_step_bind_device": (c_int, [c_void_p, c_size_t, c_uint64, c_size_t,
                                              ctypes.c_char_p]),
            "weft_step_run": (c_int, [c_void_p]),
            "weft_step_enqueue": (c_int, [c_void_p]),
            "weft_step_describe": (ctypes.c_char_p, [c_void_p]),
            "weft_step_memory_info": (c_int, [c_void_p, ctypes.POINTER(_StepMemory)]),
            "weft_step_entry_count": (c_size_t, [c_void_p]),
            "weft_step_entry_info": (c_int, [c_void_p, c_size_t, ctypes.POINTER(_StepEntry)]),
            "weft_step_run_timed": (c_int, [c_void_p, ctypes.POINTER(ctypes.c_float), c_size_t,
                                            ctypes.POINTER(ctypes.c_float)]),
        }
        for name, (restype, argtypes) in signatures.items():
            try:
                function = getattr(runtime, name)
            except AttributeError:
                raise WeftError(ERROR_VERSION_MISMATCH, 0,
                                f"{library_path()} (runtime {version()}) has no {name}; this "
                                f"binding needs a runtime with the caller's stream and arena (weft_step_options_size)",
                                "WEFT_ERROR_VERSION_MISMATCH") from None
            function.restype = restype
            function.argtypes = argtypes
        size = runtime.weft_step_options_size()
        if size != ctypes.sizeof(_StepOptions):
            raise WeftError(ERROR_VERSION_MISMATCH, 0,
                            f"weft_step_options is {size} bytes in {library_path()} but "
                            f"{ctypes.sizeof(_StepOptions)} in this binding",
                            "WEFT_ERROR_VERSION_MISMATCH")
        _step_declared = True
    return runtime


def _step_options(device, graph, debug_buffers, stream, arena, arena_bytes):
    for name, value in (("device", device), ("stream", stream or 0), ("arena", arena or 0),
                        ("arena_bytes", arena_bytes or 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"step option {name} must be a non-negative int, got {value!r}")
    return _StepOptions(device, int(bool(graph)), int(bool(debug_buffers)), stream or None,
                        arena or 0, arena_bytes or 0)


class Step:
    """A loaded (or, from prepare_step, only prepared) package. Buffers are
    addressed by index (buffers(), find()); every failing call raises
    WeftError with the runtime's message. Freed by free() or leaving a `with`."""

    def __init__(self, handle, package):
        self.handle = handle
        self._package = package
        self._buffers = None

    def _live(self):
        if self.handle is None:
            raise WeftError(ERROR_INVALID_ARGUMENT, 0, "the step is freed",
                            "WEFT_ERROR_INVALID_ARGUMENT")
        return self.handle

    def buffers(self):
        """Every planned buffer as a StepBuffer, in the package's order."""
        if self._buffers is None:
            runtime, handle = _step_lib(), self._live()
            result = []
            for index in range(runtime.weft_step_buffer_count(handle)):
                raw = _StepBuffer()
                _check(runtime.weft_step_buffer_info(handle, index, ctypes.byref(raw)))
                bound = ctypes.c_int()
                _check(runtime.weft_step_buffer_bound(handle, index, ctypes.byref(bound)))
                shape = tuple(raw.shape[:raw.rank]) if raw.rank >= 0 else None
                result.append(StepBuffer(index, raw.name.decode(), raw.type.decode(),
                                         STEP_ROLES[raw.role], raw.offset, raw.size, raw.first,
                                         raw.last, raw.arg, raw.result, shape,
                                         raw.dtype.decode(), bool(raw.has_initial_data),
                                         raw.copy_of, bool(bound.value)))
            self._buffers = result
        return self._buffers

    def find(self, name):
        """The index of the buffer named `name` (WeftError NOT_FOUND otherwise)."""
        index = ctypes.c_size_t()
        _check(_step_lib().weft_step_find_buffer(self._live(), name.encode(), ctypes.byref(index)))
        return index.value

    def copy_in_device(self, index, source, nbytes):
        """Queues a device-to-device copy of nbytes from the device address
        `source` into buffer `index` on the step's (or the caller's) stream."""
        _check(_step_lib().weft_step_copy_in_device(self._live(), index, source, nbytes))

    def copy_out_device(self, index, destination, nbytes):
        _check(_step_lib().weft_step_copy_out_device(self._live(), index, destination, nbytes))

    def bind_device(self, index, pointer, nbytes, dtype=None):
        """Gives buffer `index`, one the package marks bound, the caller's
        device memory at `pointer` (nbytes, exactly the buffer's size; dtype
        such as "bf16" checked when given): every later run reads it in
        place. Another address re-captures a CUDA graph at the next run."""
        _check(_step_lib().weft_step_bind_device(self._live(), index, pointer, nbytes,
                                                 dtype.encode() if dtype else None))

    def bind(self, index, data):
        """Copies host bytes (exactly the buffer's size) into buffer `index`."""
        data = bytes(data)
        _check(_step_lib().weft_step_bind(self._live(), index, data, len(data)))

    def read(self, index):
        """The bytes of buffer `index` after the work queued so far."""
        out = ctypes.create_string_buffer(self.buffers()[index].size)
        _check(_step_lib().weft_step_read(self._live(), index, out, len(out.raw)))
        return out.raw

    def run(self):
        """One run, waited for."""
        _check(_step_lib().weft_step_run(self._live()))

    def enqueue(self):
        """One run queued on the caller's stream (or stream 0); nothing waits."""
        _check(_step_lib().weft_step_enqueue(self._live()))

    def describe(self):
        return _step_lib().weft_step_describe(self._live()).decode()

    def memory_info(self):
        """weft_step_memory as a dict: planned_bytes (the arena the step
        needs; also for a prepared step), and for a loaded one the device's
        total_bytes and used bytes before and after loading, and the peak."""
        raw = _StepMemory()
        _check(_step_lib().weft_step_memory_info(self._live(), ctypes.byref(raw)))
        return {name: getattr(raw, name) for name, _ in _StepMemory._fields_}

    def entries(self):
        """The schedule's entries in issue order, as dicts (kind: launch,
        gemm, event or collective; name; index; stream; GEMM m, n, k, batch)."""
        runtime, handle = _step_lib(), self._live()
        out = []
        for i in range(runtime.weft_step_entry_count(handle)):
            raw = _StepEntry()
            _check(runtime.weft_step_entry_info(handle, i, ctypes.byref(raw)))
            out.append({"kind": _ENTRY_KINDS.get(raw.kind, str(raw.kind)),
                        "name": (raw.name or b"").decode(), "index": raw.index,
                        "stream": raw.stream, "m": raw.m, "n": raw.n, "k": raw.k,
                        "batch": raw.batch})
        return out

    def run_timed(self):
        """One run with an event after every entry (weft_step_run_timed):
        (milliseconds per entry, in entries() order, and of the whole run)."""
        runtime, handle = _step_lib(), self._live()
        count = runtime.weft_step_entry_count(handle)
        entry_ms, total = (ctypes.c_float * count)(), ctypes.c_float()
        _check(runtime.weft_step_run_timed(handle, entry_ms, count, ctypes.byref(total)))
        return list(entry_ms), total.value

    def free(self):
        handle, self.handle = self.handle, None
        if handle is not None:
            _check(_step_lib().weft_step_free(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __del__(self):
        if getattr(self, "handle", None) is not None and _lib is not None:
            _lib.weft_step_free(self.handle)
            self.handle = None


def load_step(package, *, device=0, graph=False, debug_buffers=False, stream=None, arena=None,
              arena_bytes=0):
    """Loads a package (bytes, as weft.capi compiles it) on the GPU. stream: a
    CUstream handle to run and copy on (an int, e.g. torch's
    current_stream().cuda_stream, CU_STREAM_LEGACY for its default stream
    whose handle is 0; None: the step's own). arena/arena_bytes: device
    memory for the arena (e.g. a torch uint8 tensor's data_ptr() and numel());
    it must stay alive as long as the step."""
    package = bytes(package)
    options = _step_options(device, graph, debug_buffers, stream, arena, arena_bytes)
    handle = ctypes.c_void_p()
    _check(_step_lib().weft_step_load(package, len(package), ctypes.byref(options),
                                      ctypes.byref(handle)))
    return Step(handle.value, package)


def prepare_step(package, device_sm, *, stream=None, arena=None, arena_bytes=0):
    """Host-only: what load_step checks and resolves before its first driver
    call, for a device of compute capability device_sm (e.g. 90); the Step can
    be inspected (buffers, describe) but not run."""
    package = bytes(package)
    options = _step_options(0, False, False, stream, arena, arena_bytes)
    handle = ctypes.c_void_p()
    _check(_step_lib().weft_step_prepare(package, len(package), device_sm, ctypes.byref(options),
                                         ctypes.byref(handle)))
    return Step(handle.value, package)
