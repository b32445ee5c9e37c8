"""The split-KV decode units that `weft-compile --emit=kernels` writes for a
weft.attention with few query rows over a long KV cache (JSON config
"decode"), loaded through the CUDA driver (ctypes, no Weft runtime needed)
and launched with checks: a tensor of the wrong dtype, shape, layout, device
or alignment is refused with a message before anything reaches the GPU."""
import ctypes
import json
import os

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
ROLES = ("decode_split", "decode_combine")


class LaunchRefused(Exception):
    """A launch whose arguments do not match the unit: nothing was launched."""


class DriverError(Exception):
    pass


_driver = None


def driver():
    global _driver
    if _driver is None:
        _driver = ctypes.CDLL("libcuda.so.1")
    return _driver


class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: the id, padding to 8 bytes, a 64-byte value union."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig of cuLaunchKernelEx."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_mem_bytes", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)), ("num_attrs", ctypes.c_uint)]


# CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (cuda.h).
_PROGRAMMATIC_STREAM_SERIALIZATION = 6


def dependent_config(grid, threads, smem, stream):
    """A cuLaunchKernelEx config launching a programmatic dependent of the
    kernel before it on `stream`; None where the driver has no
    cuLaunchKernelEx (the kernel then launches plainly)."""
    if not hasattr(driver(), "cuLaunchKernelEx"):
        return None
    attribute = _LaunchAttribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
    attribute.value = (1).to_bytes(4, "little") + bytes(60)
    config = _LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(threads, 1, 1),
                           smem, stream, ctypes.pointer(attribute), 1)
    config._attribute = attribute  # kept alive with the config
    return config


def check(result, what):
    if result != 0:
        name = ctypes.c_char_p()
        driver().cuGetErrorName(result, ctypes.byref(name))
        raise DriverError(f"{what}: {name.value.decode() if name.value else result}")


def find_decode_units(directory):
    """Every unit of DIR/kernels.json whose config has "decode", as dicts."""
    with open(os.path.join(directory, "kernels.json")) as f:
        index = json.load(f)
    units = []
    for name in index["units"]:
        with open(os.path.join(directory, name + ".json")) as f:
            unit = json.load(f)
        if "decode" in unit["config"]:
            unit["directory"] = directory
            units.append(unit)
    return units


class DecodeUnit:
    """One unit's cubin loaded into the current (torch's) context."""

    def __init__(self, meta):
        import torch
        torch.cuda.init()
        torch.empty(1, device="cuda")  # creates torch's (primary) context
        current = ctypes.c_void_p()
        check(driver().cuCtxGetCurrent(ctypes.byref(current)), "cuCtxGetCurrent")
        if not current.value:
            device = ctypes.c_int()
            check(driver().cuDeviceGet(ctypes.byref(device), torch.cuda.current_device()),
                  "cuDeviceGet")
            check(driver().cuDevicePrimaryCtxRetain(ctypes.byref(current), device),
                  "cuDevicePrimaryCtxRetain")
            check(driver().cuCtxSetCurrent(current), "cuCtxSetCurrent")
        self.meta = meta
        self.config, self.shapes = meta["config"], meta["shapes"]
        self.decode = self.config["decode"]
        self.kernels = meta["kernels"]
        if [k["role"] for k in self.kernels] != list(ROLES):
            raise LaunchRefused(f"{meta['name']}: kernels {[k['role'] for k in self.kernels]}, "
                                f"expected {list(ROLES)}")
        with open(os.path.join(meta["directory"], meta["cubin"]), "rb") as f:
            self.image = f.read()
        self.module = ctypes.c_void_p()
        check(driver().cuModuleLoadData(ctypes.byref(self.module), self.image),
              f"cuModuleLoadData({meta['cubin']})")
        self.functions = []
        for kernel in self.kernels:
            function = ctypes.c_void_p()
            check(driver().cuModuleGetFunction(ctypes.byref(function), self.module,
                                               kernel["name"].encode()),
                  f"cuModuleGetFunction({kernel['name']})")
            if kernel["dynamic_smem_bytes"] > 48 * 1024:
                check(driver().cuFuncSetAttribute(
                    function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    kernel["dynamic_smem_bytes"]), "cuFuncSetAttribute")
            self.functions.append(function)
        workspace = meta["workspaces"][0]
        self.workspace_bytes = workspace["bytes"]
        self.lse_partial_offset = workspace["lse_partial_offset"]

    @property
    def name(self):
        return self.meta["name"]

    def expected(self):
        """{tensor: (shape, dtype name)} this unit was built for."""
        s = self.shapes
        dtype = self.config["dtype"]
        q = (s["batch"], s["q_heads"], s["q_len"], s["head_dim"])
        kv = (s["batch"], s["kv_heads"], s["k_len"], s["head_dim"])
        return {"q": (q, dtype), "k": (kv, dtype), "v": (kv, dtype), "out": (q, dtype),
                "lse": (q[:3], "f32")}

    def check_arguments(self, tensors, workspace):
        import torch
        names = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
        for name, (shape, dtype) in self.expected().items():
            t = tensors.get(name)
            if t is None:
                raise LaunchRefused(f"{self.name}: no tensor for {name}")
            if not t.is_cuda:
                raise LaunchRefused(f"{self.name}: {name} is on {t.device}, not a CUDA device")
            if t.dtype != names[dtype]:
                raise LaunchRefused(f"{self.name}: {name} is {t.dtype}, the unit takes {dtype}")
            if tuple(t.shape) != tuple(shape):
                raise LaunchRefused(f"{self.name}: {name} has shape {tuple(t.shape)}, the unit "
                                    f"was built for {tuple(shape)} (head_major [b, h, s, d])")
            if not t.is_contiguous():
                raise LaunchRefused(f"{self.name}: {name} is not contiguous (strides "
                                    f"{t.stride()}); the unit reads head_major [b, h, s, d]")
            # 16-byte vector loads of q, k, v; 4-byte stores of out and lse.
            alignment = 4 if name in ("out", "lse") else 16
            if t.data_ptr() % alignment:
                raise LaunchRefused(f"{self.name}: {name} is not {alignment}-byte aligned")
        if workspace.dtype != torch.uint8 or not workspace.is_cuda \
                or workspace.numel() < self.workspace_bytes or workspace.data_ptr() % 16:
            raise LaunchRefused(f"{self.name}: the split workspace must be a 16-byte aligned "
                                f"CUDA uint8 buffer of at least {self.workspace_bytes} bytes")

    def launch(self, tensors, workspace, stream=None):
        """Checks the arguments, then enqueues split + combine on `stream`
        (torch's current one)."""
        self.prepare(tensors, workspace, stream)()

    def prepare(self, tensors, workspace, stream=None, roles=ROLES, programmatic=True):
        """Checks the arguments once; returns a function that enqueues the two
        kernels (only the launch calls, for timing); `roles` keeps some of
        them (the split kernel alone, to time it). A kernel the unit marks
        "programmatic" (the combine kernel) launches as a programmatic
        dependent of the one before it, as the unit's C launcher does
        (weft_launch_dependent); programmatic=False launches it plainly."""
        import torch
        self.check_arguments(tensors, workspace)
        stream = ctypes.c_void_p((stream or torch.cuda.current_stream()).cuda_stream)
        s, d = self.shapes, self.decode
        values = {name: t.data_ptr() for name, t in tensors.items()}
        values["o_partial"] = workspace.data_ptr()
        values["lse_partial"] = workspace.data_ptr() + self.lse_partial_offset
        values.update(batch=s["batch"], q_heads=s["q_heads"], kv_heads=s["kv_heads"],
                      q_len=s["q_len"], k_len=s["k_len"], scale=s["scale"],
                      num_splits=d["num_splits"], keys_per_split=d["keys_per_split"])
        launches = []
        for kernel, function in zip(self.kernels, self.functions):
            if kernel["role"] not in roles:
                continue
            storage = []
            for param in kernel["params"]:
                value = values[param["name"]]
                kind = param["kind"]
                if kind == "pointer":
                    storage.append(ctypes.c_uint64(value))
                elif kind == "i32":
                    storage.append(ctypes.c_int32(value))
                elif kind == "f32":
                    storage.append(ctypes.c_float(value))
                else:
                    raise LaunchRefused(f"{self.name}: parameter {param['name']} of kind {kind}")
            pointers = (ctypes.c_void_p * len(storage))(
                *[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in storage])
            gx, gy, gz = kernel["grid"]
            config = (dependent_config(kernel["grid"], kernel["threads"],
                                       kernel["dynamic_smem_bytes"], stream)
                      if programmatic and kernel.get("programmatic") else None)
            launches.append((function, gx, gy, gz, kernel["threads"],
                             kernel["dynamic_smem_bytes"], pointers, storage, kernel["name"],
                             config))

        def enqueue():
            for function, gx, gy, gz, threads, smem, pointers, _, name, config in launches:
                if config is not None:
                    check(driver().cuLaunchKernelEx(ctypes.byref(config), function, pointers,
                                                    None),
                          f"cuLaunchKernelEx({name}, programmatic)")
                    continue
                check(driver().cuLaunchKernel(function, gx, gy, gz, threads, 1, 1, smem,
                                              stream, pointers, None),
                      f"cuLaunchKernel({name})")
        return enqueue
