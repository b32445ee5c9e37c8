"""Tensors in .npz files as weft-run reads and writes them.

Keys are `arg<i>` (inputs, in function-argument order) and `res<i>` (results).
Every file carries `__weft_dtypes__`, a 1-D unicode array of "key:dtype"
strings naming each key's element type (f64, f32, f16, bf16, i64, i1, i16);
numpy
has no bfloat16, so bf16 tensors are stored as their uint16 bit patterns.
"""
import numpy as np
import torch

DTYPES_KEY = "__weft_dtypes__"

TORCH_DTYPES = {
    "f64": torch.float64,
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i64": torch.int64,
    "i1": torch.bool,
    "i16": torch.int16,
}
NAME_OF_TORCH_DTYPE = {v: k for k, v in TORCH_DTYPES.items()}
# How each element type is stored in the .npz (bf16: raw bits).
STORAGE = {
    "f64": np.float64,
    "f32": np.float32,
    "f16": np.float16,
    "bf16": np.uint16,
    "i64": np.int64,
    "i1": np.bool_,
    "i16": np.int16,
}
NAME_OF_NUMPY_DTYPE = {
    np.dtype(np.float64): "f64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(np.int64): "i64",
    np.dtype(np.bool_): "i1",
    np.dtype(np.int16): "i16",
}


def f32_to_bf16_bits(values):
    """Rounds float32 values to bfloat16 (nearest, ties to even), exactly, with
    integer bit operations; returns the uint16 bit patterns. NaNs stay NaN."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    bits = bits.astype(np.uint64)
    rounding = np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))
    rounded = ((bits + rounding) >> np.uint64(16)).astype(np.uint16)
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    # A quiet NaN with the original sign.
    quiet = ((bits >> np.uint64(16)).astype(np.uint16) | np.uint16(0x0040))
    return np.where(nan, quiet, rounded)


def bf16_bits_to_f32(bits):
    """Widens bfloat16 bit patterns (uint16) to float32, exactly."""
    wide = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)
    return wide.view(np.float32)


def split_master(values):
    """A split f32 master (--weight-copies=split): (bf16 high half as uint16
    bits, i16 low half). The high half rounds to nearest, ties away from zero;
    the low half is the signed remainder, so join_master gives the f32 back
    bit-exactly. A NaN gives a quiet NaN high half (sign kept) and low 0.
    As splitMasterHigh / splitMasterLow in weft/Support/FloatBits.h."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    high = ((bits.astype(np.uint64) + np.uint64(0x8000)) >> np.uint64(16)).astype(np.uint16)
    low = (bits & np.uint32(0xFFFF)).astype(np.uint16).view(np.int16)
    nan = np.isnan(values)
    quiet = (bits >> np.uint32(16)).astype(np.uint16) | np.uint16(0x0040)
    return np.where(nan, quiet, high), np.where(nan, np.int16(0), low)


def join_master(high, low):
    """The f32 master from its bf16 high half (uint16 bits) and i16 low half:
    bitcast((high << 16) + low) in wrapping 32-bit arithmetic."""
    high = np.asarray(high, dtype=np.uint16).astype(np.uint32) << np.uint32(16)
    low = np.asarray(low, dtype=np.int16).astype(np.int32).view(np.uint32)
    return (high + low).astype(np.uint32).view(np.float32)


def to_storage(value):
    """(numpy array as stored, dtype name) for a torch tensor or numpy array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        name = NAME_OF_TORCH_DTYPE.get(value.dtype)
        if name is None:
            raise TypeError(f"weft has no element type for {value.dtype}")
        if name == "bf16":
            return value.contiguous().view(torch.int16).numpy().view(np.uint16), name
        return value.contiguous().numpy(), name
    array = np.asarray(value)
    name = NAME_OF_NUMPY_DTYPE.get(array.dtype)
    if name is None:
        raise TypeError(f"weft has no element type for numpy {array.dtype}; "
                        "pass bf16 as a torch.bfloat16 tensor")
    return array, name


def from_storage(array, name):
    """A torch tensor of element type `name` from its stored numpy array."""
    if name not in STORAGE:
        raise ValueError(f"unknown weft dtype {name!r}")
    array = np.asarray(array)
    if array.dtype != np.dtype(STORAGE[name]):
        raise ValueError(f"{name} is stored as {np.dtype(STORAGE[name])}, "
                         f"found {array.dtype}")
    if name == "bf16":
        return torch.from_numpy(array.astype(np.uint16).view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(array.copy())


def save(path, tensors):
    """Writes {key: torch tensor or numpy array} with the dtype table."""
    arrays, names = {}, []
    for key, value in tensors.items():
        if key == DTYPES_KEY:
            raise ValueError(f"{DTYPES_KEY} is reserved")
        arrays[key], name = to_storage(value)
        names.append(f"{key}:{name}")
    arrays[DTYPES_KEY] = np.array(names, dtype=np.str_)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load(path):
    """{key: torch tensor} from a file written by save or weft-run. A file
    without a dtype table is read by numpy's dtypes (no bf16 then)."""
    with np.load(path, allow_pickle=False) as data:
        names = {}
        if DTYPES_KEY in data.files:
            for entry in data[DTYPES_KEY]:
                key, _, name = str(entry).rpartition(":")
                names[key] = name
        tensors = {}
        for key in data.files:
            if key == DTYPES_KEY:
                continue
            array = data[key]
            name = names.get(key) or NAME_OF_NUMPY_DTYPE.get(array.dtype)
            if name is None:
                raise ValueError(f"{path}: no weft dtype for key {key!r} ({array.dtype})")
            tensors[key] = from_storage(array, name)
        missing = set(names) - set(tensors)
        if missing:
            raise ValueError(f"{path}: dtype table names missing keys {sorted(missing)}")
    return tensors


def ordered(tensors, prefix):
    """[tensors[prefix0], tensors[prefix1], ...] for consecutive indices."""
    result = []
    while f"{prefix}{len(result)}" in tensors:
        result.append(tensors[f"{prefix}{len(result)}"])
    extra = [k for k in tensors if k.startswith(prefix) and k[len(prefix):].isdigit()
             and int(k[len(prefix):]) >= len(result)]
    if extra:
        raise ValueError(f"non-consecutive {prefix}<i> keys: {sorted(extra)}")
    return result
