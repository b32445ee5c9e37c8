"""Reads the attention kernel units that `weft-compile --emit=kernels` wrote
(found by their JSON "config" and "direction", never by name) and turns a
unit's kernel list into launches: grid, block, dynamic smem and arguments."""
import json
import os
from dataclasses import dataclass, field

FORMAT_VERSION = 1
DIRECTIONS = ("forward", "backward")
ROLES = ("forward", "backward_preprocess", "keep_mask", "backward_dkdv", "backward_dq",
         "backward_dq_convert")
# A unit's MMA kind (its JSON config "mma"; absent in older units = warp).
MMA_KINDS = ("warp", "warpgroup")
# A warpgroup forward's schedule (its JSON config "schedule"; absent = serial):
# FlashAttention-3's intra-warpgroup overlap, and that plus ping-pong of the
# two consumer warpgroups (AttentionKernelConfig::ForwardSchedule).
SCHEDULES = ("serial", "overlap", "pingpong")
SCHEDULE_TAGS = {"serial": "", "overlap": "ov", "pingpong": "pp"}
# Where a unit's tensors live (its JSON config "layout"; absent = head_major):
# [b, h, s, d], [b, s, h, d], or [b, s, h, d] with q, k, v one packed
# [b, s, hq + 2 hkv, d] tensor (and dq, dk, dv another in the backward).
LAYOUTS = ("head_major", "seq_major", "packed", "packed_grouped")
PARAM_KINDS = {"pointer": "ptr", "i32": "i32", "f32": "f32", "tensormap": "tensormap"}
# A tensormap param's tensor viewed as [batch * heads][len][head_dim]: its
# "len" and "heads" name these scalars.
TENSOR_MAP_LENS = ("q_len", "k_len")
TENSOR_MAP_HEADS = ("q_heads", "kv_heads")
SCALAR_PARAMS = ("batch", "q_heads", "kv_heads", "q_len", "k_len", "scale")
# Spellings a kernel's params might use for the harness's buffers; the contract
# names are the keys' targets, the rest are accepted so a rename in the kernel
# builder is not mistaken for a kernel bug.
PARAM_ALIASES = {
    "o": "out", "output": "out", "do": "dout", "grad_out": "dout", "d_out": "dout",
    "delta_workspace": "delta", "softmax_lse": "lse", "logsumexp": "lse",
    "d_q": "dq", "d_k": "dk", "d_v": "dv", "grad_q": "dq", "grad_k": "dk", "grad_v": "dv",
    "b": "batch", "num_heads": "q_heads", "num_kv_heads": "kv_heads",
    "seq_q": "q_len", "seq_k": "k_len", "softmax_scale": "scale",
}


class UnitError(Exception):
    """A kernels directory or unit JSON that the harness cannot use."""


@dataclass
class Kernel:
    name: str
    role: str
    params: list  # [(name, kind)] in launch order
    threads: int
    rows_per_block: int
    over_keys: bool
    dynamic_smem_bytes: int
    registers: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    # {param name: (len scalar, heads scalar, box rows)} of tensormap params.
    tensor_maps: dict = field(default_factory=dict)


def grad_workspace_bytes(batch, q_heads, q_len, k_len, dropout, atomic_dq_head_dim=0):
    """The backward's workspace (weft/Dialect/AttentionWorkspace.h's
    attentionGradWorkspaceBytes): delta [batch, q_heads, q_len] f32, with
    dropout the tiled keep mask after it at a 256-byte boundary, and with the
    atomic dQ (atomic_dq_head_dim > 0) the f32 accumulator [batch * q_heads,
    q_len, head_dim] at the next."""
    planes = batch * q_heads
    delta = 4 * planes * q_len
    end = delta if not dropout else \
        (delta + 255) // 256 * 256 + keep_mask_bytes(batch, q_heads, q_len, k_len)
    if not atomic_dq_head_dim:
        return end
    return (end + 255) // 256 * 256 + 4 * planes * q_len * atomic_dq_head_dim


def keep_mask_bytes(batch, q_heads, q_len, k_len):
    """The tiled keep mask (weft/Dialect/AttentionWorkspace.h): 16 bytes per
    8 query rows x 16 keys of each (batch, head)."""
    return batch * q_heads * -(-q_len // 8) * -(-k_len // 16) * 16


def workspace_floats(unit, batch, q_heads, q_len, k_len):
    """A unit's workspace for a run's shapes, in f32 elements (4 bytes): the
    backward's delta (and keep mask), a Hopper forward's keep mask with
    dropout, else 0."""
    if unit.direction == "forward":
        hopper_mask = unit.dropout_p > 0.0 and unit.mma == "warpgroup"
        return keep_mask_bytes(batch, q_heads, q_len, k_len) // 4 if hopper_mask else 0
    atomic_dq = getattr(unit, "atomic_dq", False)
    return grad_workspace_bytes(batch, q_heads, q_len, k_len, unit.dropout_p > 0.0,
                                unit.head_dim if atomic_dq else 0) // 4


@dataclass
class Unit:
    name: str
    directory: str
    direction: str
    dtype: str
    head_dim: int
    causal: bool
    block_q: int
    block_k: int
    arch: str
    cubin_path: str
    kernels: list
    workspaces: list = field(default_factory=list)  # [(name, dtype)]
    mma: str = "warp"
    stages: int = 2
    layout: str = "head_major"
    schedule: str = "serial"
    # Dropout on the probabilities (the config's "dropout" object): p and
    # rng_id; the kernels then take a `seed` pointer (one int64).
    dropout_p: float = 0.0
    rng_id: int = 0
    # A Hopper backward whose dQ the dK/dV kernel adds with atomics (the
    # config's "atomic_dq"; its last kernel is backward_dq_convert).
    atomic_dq: bool = False

    @property
    def config_key(self):
        """(dtype, head_dim, causal, block_q, block_k, mma, stages[, layout]
        [, dropout][, schedule]): two forward units that differ only in MMA
        kind, pipeline stages, layout or schedule are two configs (head_major
        and serial add nothing to the key)."""
        key = (self.dtype, self.head_dim, self.causal, self.block_q, self.block_k, self.mma,
               self.stages)
        key = key if self.layout == "head_major" else key + (self.layout,)
        key = key if not self.dropout_p else key + (("dropout", self.dropout_p, self.rng_id),)
        return key if self.schedule == "serial" else key + (("schedule", self.schedule),)


def config_name(key):
    """'bf16-d128-causal-q64k64' for a config key (dtype, d, causal, bq, bk[,
    mma]), 'bf16-d128-causal-q64k64-wgmma' when mma is warpgroup;
    'bf16-d128-causal' for a problem key (dtype, d, causal)."""
    if len(key) == 3:
        dtype, head_dim, causal = key
        return f"{dtype}-d{head_dim}-{'causal' if causal else 'full'}"
    dtype, head_dim, causal, block_q, block_k = key[:5]
    mma = key[5] if len(key) > 5 else "warp"
    stages = key[6] if len(key) > 6 else 2
    return (f"{dtype}-d{head_dim}-{'causal' if causal else 'full'}-q{block_q}k{block_k}"
            + mma_suffix(mma, "-", stages, key_schedule(key)))


def key_schedule(key):
    """The schedule a config key names ("serial" when it names none)."""
    return next((part[1] for part in key[7:] if isinstance(part, tuple) and part
                 and part[0] == "schedule"), "serial")


def without_schedule(key):
    """`key` with its schedule part dropped: the key of the serial units,
    whose backward every schedule's forward pairs with."""
    return tuple(part for part in key if not (isinstance(part, tuple) and part
                                              and part[0] == "schedule"))


def mma_suffix(mma, sep=" ", stages=2, schedule="serial"):
    """'' for warp, ' wgmma' (with `sep`) for warpgroup, ' wgmma s3' when its
    K/V pipeline has other than 2 stages, then ' ov' / ' pp' for the overlap /
    ping-pong forward schedules: names and labels."""
    if mma != "warpgroup":
        return ""
    return (f"{sep}wgmma" + (f"{sep}s{stages}" if stages != 2 else "")
            + (f"{sep}{SCHEDULE_TAGS[schedule]}" if schedule != "serial" else ""))


def _field(obj, key, types, where):
    if key not in obj:
        raise UnitError(f"{where}: missing \"{key}\"")
    value = obj[key]
    # bool is an int in Python; a JSON true is not a valid count.
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
        raise UnitError(f"{where}: \"{key}\" is {value!r}, expected {_names(types)}")
    return value


def _tuple(types):
    return types if isinstance(types, tuple) else (types,)


def _names(types):
    return " or ".join(t.__name__ for t in _tuple(types))


def _parse_kernel(obj, where):
    name = _field(obj, "name", str, where)
    where = f"{where} kernel {name}"
    role = _field(obj, "role", str, where)
    if role not in ROLES:
        raise UnitError(f"{where}: role {role!r} is not one of {', '.join(ROLES)}")
    params, tensor_maps = [], {}
    for i, p in enumerate(_field(obj, "params", list, where)):
        pname = _field(p, "name", str, f"{where} param {i}")
        kind = _field(p, "kind", str, f"{where} param {pname}")
        if kind not in PARAM_KINDS:
            raise UnitError(f"{where} param {pname}: kind {kind!r} is not one of "
                            f"{', '.join(PARAM_KINDS)}")
        params.append((pname, kind))
        if kind == "tensormap":
            where_p = f"{where} param {pname}"
            length = _field(p, "len", str, where_p)
            heads = _field(p, "heads", str, where_p)
            box_rows = _field(p, "box_rows", int, where_p)
            if length not in TENSOR_MAP_LENS or heads not in TENSOR_MAP_HEADS:
                raise UnitError(f"{where_p}: tensor map over len {length!r} and heads "
                                f"{heads!r}; expected one of {TENSOR_MAP_LENS} and "
                                f"{TENSOR_MAP_HEADS}")
            if not 1 <= box_rows <= 256:
                raise UnitError(f"{where_p}: box_rows {box_rows} is outside 1..256")
            tensor_maps[pname] = (length, heads, box_rows)
    kernel = Kernel(name=name, role=role, params=params, tensor_maps=tensor_maps,
                    threads=_field(obj, "threads", int, where),
                    rows_per_block=_field(obj, "rows_per_block", int, where),
                    over_keys=_field(obj, "over_keys", bool, where),
                    dynamic_smem_bytes=_field(obj, "dynamic_smem_bytes", int, where),
                    registers=obj.get("registers", 0),
                    spill_store_bytes=obj.get("spill_store_bytes", 0),
                    spill_load_bytes=obj.get("spill_load_bytes", 0))
    if not 1 <= kernel.threads <= 1024:
        raise UnitError(f"{where}: threads {kernel.threads} is outside 1..1024")
    if kernel.rows_per_block < 1:
        raise UnitError(f"{where}: rows_per_block {kernel.rows_per_block} must be positive")
    if kernel.dynamic_smem_bytes < 0:
        raise UnitError(f"{where}: dynamic_smem_bytes {kernel.dynamic_smem_bytes} is negative")
    return kernel


def parse_unit(obj, directory, where):
    """A Unit from one NAME.json's parsed contents; `directory` holds its cubin."""
    version = obj.get("format_version")
    if version != FORMAT_VERSION:
        raise UnitError(f"{where}: format_version {version!r}, this harness reads {FORMAT_VERSION}")
    name = _field(obj, "name", str, where)
    direction = _field(obj, "direction", str, where)
    if direction not in DIRECTIONS:
        raise UnitError(f"{where}: direction {direction!r} is not forward or backward")
    config = _field(obj, "config", dict, where)
    dtype = _field(config, "dtype", str, f"{where} config")
    if dtype not in ("bf16", "f16"):
        raise UnitError(f"{where}: config dtype {dtype!r} is not bf16 or f16")
    mma = config.get("mma", "warp")
    if mma not in MMA_KINDS:
        raise UnitError(f"{where}: config mma {mma!r} is not warp or warpgroup")
    schedule = config.get("schedule", "serial")
    if schedule not in SCHEDULES:
        raise UnitError(f"{where}: config schedule {schedule!r} is not one of "
                        f"{', '.join(SCHEDULES)}")
    layout = config.get("layout", "head_major")
    if layout not in LAYOUTS:
        raise UnitError(f"{where}: config layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    dropout = config.get("dropout", {})
    if not isinstance(dropout, dict):
        raise UnitError(f"{where}: config dropout {dropout!r} is not an object")
    dropout_p = float(dropout.get("p", 0.0))
    if not 0.0 <= dropout_p < 1.0:
        raise UnitError(f"{where}: config dropout p {dropout_p!r} is not in [0, 1)")
    kernels = [_parse_kernel(k, where) for k in _field(obj, "kernels", list, where)]
    # A Hopper unit with dropout draws the keep mask in its own kernel first
    # (the backward's after the delta preprocess).
    keep_mask = dropout_p > 0.0 and mma == "warpgroup"
    atomic_dq = config.get("atomic_dq", False)
    if not isinstance(atomic_dq, bool) or (atomic_dq and direction != "backward"):
        raise UnitError(f"{where}: config atomic_dq {atomic_dq!r} is not a backward's true / "
                        f"false")
    skipped = ("backward_dq" if atomic_dq else "backward_dq_convert",) + \
        (() if keep_mask else ("keep_mask",))
    expected = ((["keep_mask"] if keep_mask else []) + ["forward"] if direction == "forward"
                else [r for r in ROLES[1:] if r not in skipped])
    roles = [k.role for k in kernels]
    if roles != expected:
        raise UnitError(f"{where}: a {direction} unit needs kernels with roles "
                        f"{expected} in that order, it lists {roles}")
    workspaces = []
    for ws in obj.get("workspaces", []):
        wname = _field(ws, "name", str, f"{where} workspace")
        wdtype = _field(ws, "dtype", str, f"{where} workspace {wname}")
        if direction == "forward":
            # The forward's keep mask: bits, sized by workspace_floats.
            if (wname, wdtype) != ("mask", "bits") or not keep_mask:
                raise UnitError(f"{where}: forward workspace {wname} ({wdtype}) is not the "
                                "keep mask of a Hopper unit with dropout")
            workspaces.append((wname, wdtype))
            continue
        if wdtype != "f32":
            raise UnitError(f"{where}: workspace {wname} has dtype {wdtype!r}, expected f32")
        # "shape" is delta's, [batch, q_heads, q_len]; the harnesses size the
        # whole buffer (with dropout the keep mask follows delta) from a run's
        # shapes by grad_workspace_bytes.
        shapes = obj.get("shapes", {})
        expected_shape = [shapes.get("batch"), shapes.get("q_heads"), shapes.get("q_len")]
        if ws.get("shape") != expected_shape:
            raise UnitError(f"{where}: workspace {wname} has shape {ws.get('shape')}, expected "
                            f"[batch, q_heads, q_len] = {expected_shape}")
        workspaces.append((wname, wdtype))
    cubin = os.path.join(directory, _field(obj, "cubin", str, where))
    if not os.path.isfile(cubin):
        raise UnitError(f"{where}: its cubin {cubin} does not exist")
    return Unit(name=name, directory=directory, direction=direction, dtype=dtype,
                head_dim=_field(config, "head_dim", int, f"{where} config"),
                causal=_field(config, "causal", bool, f"{where} config"),
                block_q=_field(config, "block_q", int, f"{where} config"),
                block_k=_field(config, "block_k", int, f"{where} config"),
                arch=obj.get("arch", "?"), cubin_path=cubin, kernels=kernels,
                workspaces=workspaces, mma=mma, stages=config.get("stages", 2), layout=layout,
                schedule=schedule,
                dropout_p=dropout_p, rng_id=int(dropout.get("rng_id", 0)), atomic_dq=atomic_dq)


def load_units(root):
    """Every unit listed by a kernels.json at or below `root`."""
    if not os.path.isdir(root):
        raise UnitError(f"kernels directory {root} does not exist")
    units = []
    for directory, _, files in sorted(os.walk(root)):
        if "kernels.json" not in files:
            continue
        index_path = os.path.join(directory, "kernels.json")
        try:
            with open(index_path) as f:
                index = json.load(f)
        except (OSError, ValueError) as e:
            raise UnitError(f"{index_path}: {e}") from e
        if index.get("format_version") != FORMAT_VERSION:
            raise UnitError(f"{index_path}: format_version {index.get('format_version')!r}, "
                            f"this harness reads {FORMAT_VERSION}")
        for name in _field(index, "units", list, index_path):
            path = os.path.join(directory, f"{name}.json")
            try:
                with open(path) as f:
                    obj = json.load(f)
            except (OSError, ValueError) as e:
                raise UnitError(f"{index_path} lists unit {name}, but {path}: {e}") from e
            units.append(parse_unit(obj, directory, path))
    if not units:
        raise UnitError(f"no kernels.json listing any unit at or below {root} "
                        f"(make them with scripts/check-kernels {root})")
    return units


def group_units(units):
    """{config_key: {"forward": Unit, "backward": Unit}}, and notes on
    duplicates (same config and direction; the first one found is used).
    A warpgroup-MMA forward's group without a Hopper backward gets the warp
    backward of its tiles, and an overlap / ping-pong forward's the backward
    of its serial forward's group: any backward runs on any forward's out and
    lse."""
    groups, notes = _group(units, lambda unit: unit.config_key)
    for key, slot in groups.items():
        if key_schedule(key) != "serial" and "backward" not in slot:
            serial = groups.get(without_schedule(key), {}).get("backward")
            if serial is not None:
                slot["backward"] = serial
    for key, slot in groups.items():
        if key[5] != "warp" and "backward" not in slot:
            warp = groups.get(key[:5] + ("warp", 2), {}).get("backward")
            if warp is not None:
                slot["backward"] = warp
    return groups, notes


def group_by_problem(units, by_layout=False, by_mma=False):
    """{(dtype, head_dim, causal): {"forward": Unit, "backward": Unit}}, and
    notes on duplicates: the pairs a training step runs, whose forward and
    backward may have different tiles (the autotuner picks them apart,
    bench/attention_tuning.json). by_layout / by_mma extend the key with the
    unit's layout / MMA kind, so each is a pair of its own."""
    def key(unit):
        return (unit.config_key[:3] + ((unit.layout,) if by_layout else ())
                + ((unit.mma,) if by_mma else ()))
    return _group(units, key)


def _group(units, key_of):
    groups, notes = {}, []
    for unit in units:
        key = key_of(unit)
        slot = groups.setdefault(key, {})
        if unit.direction in slot:
            notes.append(f"{unit.name} ({unit.directory}) duplicates {slot[unit.direction].name} "
                         f"for {config_name(key)} {unit.direction}; using the first")
            continue
        slot[unit.direction] = unit
    return groups, notes


def pair_name(group):
    """'bf16-d128-full fwd q128k128 / bwd q64k64' for a group's two units
    ('fwd q128k64 wgmma / ...' for a warpgroup-MMA forward)."""
    short = {"forward": "fwd", "backward": "bwd"}
    parts = [f"{short[d]} q{u.block_q}k{u.block_k}{mma_suffix(u.mma, schedule=u.schedule)}"
             + (" adq" if u.atomic_dq else "")
             for d, u in sorted(
        group.items(), key=lambda item: item[0] != "forward")]
    unit = next(iter(group.values()))
    layout = "" if unit.layout == "head_major" else f" [{unit.layout}]"
    return f"{config_name(unit.config_key[:3])}{layout} " + " / ".join(parts)


def ceil_div(a, b):
    return -(-a // b)


def grid_for(kernel, shapes):
    """(x, y, z) of the contract: x over rows of q (or of k when over_keys),
    y over the heads of that side, z over the batch."""
    if kernel.over_keys:
        length, heads = shapes["k_len"], shapes["kv_heads"]
    else:
        length, heads = shapes["q_len"], shapes["q_heads"]
    return (ceil_div(length, kernel.rows_per_block), heads, shapes["batch"])


def _pointer(value):
    return value if isinstance(value, int) else value.data_ptr()


def tensor_map_view(pname, values, head_dim, length, heads, box_rows, layout="head_major"):
    """(dims, strides, box) of attentionTensorMap (AttentionKernels.h): rank 4,
    dims innermost first (d, len, heads, batch), byte strides of dims 1..3."""
    rows, n_heads, batch = values[length], values[heads], values["batch"]
    if layout == "head_major":
        strides = (head_dim * 2, rows * head_dim * 2, n_heads * rows * head_dim * 2)
    else:
        if layout.startswith("packed") and pname in ("q", "k", "v"):
            n_heads = values["q_heads"] + 2 * values["kv_heads"]
        pitch = n_heads * head_dim * 2
        strides = (pitch, head_dim * 2, rows * pitch)
    return (head_dim, rows, n_heads, batch), strides, (64, box_rows, 1, 1)


def tensor_map_for(kernel, pname, values, dtype, head_dim, layout="head_major"):
    """The CUtensorMap (runtime.TensorMap) of tensormap param `pname`: its
    tensor viewed as (head_dim, len, heads, batch) for the unit's layout, box
    (64, box rows, 1, 1), 128-byte swizzle, as the warpgroup kernels read it."""
    from weft import runtime as rt
    length, heads, box_rows = kernel.tensor_maps[pname]
    dims, strides, box = tensor_map_view(pname, values, head_dim, length, heads, box_rows,
                                         layout)
    return rt.tensor_map_encode_tiled(dtype, _pointer(values[pname]), dims, strides, box,
                                      swizzle=128)


def build_args(kernel, values, dtype=None, head_dim=None, layout="head_major"):
    """The runtime's argument list for `kernel`: [(kind, value)] in param order.
    `values` maps contract names (q, ..., delta, batch, ..., scale) to tensors
    (anything with data_ptr()) or ints for pointers, and ints/floats for scalars.
    A kernel with tensormap params also needs the unit's dtype and head_dim."""
    args = []
    for pname, kind in kernel.params:
        if kind == "tensormap":
            if dtype is None or head_dim is None or pname not in values:
                raise UnitError(f"kernel {kernel.name}: tensormap param {pname!r} needs its "
                                f"tensor, the dtype and head_dim")
            args.append(("tensormap", tensor_map_for(kernel, pname, values, dtype, head_dim,
                                                     layout)))
            continue
        key = pname if pname in values else PARAM_ALIASES.get(pname, pname)
        if key not in values:
            raise UnitError(f"kernel {kernel.name}: param {pname!r} ({kind}) names nothing the "
                            f"harness has; it has {', '.join(sorted(values))}")
        value = values[key]
        is_scalar = isinstance(value, (int, float)) and key in SCALAR_PARAMS
        if kind == "pointer":
            if is_scalar:
                raise UnitError(f"kernel {kernel.name}: param {pname!r} is a pointer but "
                                f"{key} is the scalar {value!r}")
            args.append(("ptr", _pointer(value)))
        elif kind == "i32":
            if not is_scalar or isinstance(value, float) or not -2**31 <= value < 2**31:
                raise UnitError(f"kernel {kernel.name}: param {pname!r} is i32 but {key} is "
                                f"{value!r}")
            args.append(("i32", int(value)))
        else:
            if not is_scalar:
                raise UnitError(f"kernel {kernel.name}: param {pname!r} is f32 but {key} is "
                                f"not a scalar")
            args.append(("f32", float(value)))
    return args


class LoadedUnit:
    """A unit's module loaded through the runtime binding `rt`, with each
    kernel's function handle and dynamic smem set once."""

    def __init__(self, rt, unit):
        self.unit = unit
        with open(unit.cubin_path, "rb") as f:
            image = f.read()
        self.module = rt.module_load(image)
        self.functions = []
        for kernel in unit.kernels:
            fn = self.module.function(kernel.name)
            if kernel.dynamic_smem_bytes > 0:
                rt.set_dynamic_smem(fn, kernel.dynamic_smem_bytes)
            self.functions.append(fn)

    def launch(self, rt, values, shapes, stream):
        """Launches the unit's kernels in their listed order on `stream`;
        returns [(kernel name, grid, block, smem)] as launched."""
        launched = []
        for kernel, fn in zip(self.unit.kernels, self.functions):
            grid = grid_for(kernel, shapes)
            block = (kernel.threads, 1, 1)
            args = build_args(kernel, values, self.unit.dtype, self.unit.head_dim,
                              self.unit.layout)
            rt.launch(fn, grid, block, kernel.dynamic_smem_bytes, stream, args)
            launched.append((kernel.name, grid, block, kernel.dynamic_smem_bytes))
        return launched
