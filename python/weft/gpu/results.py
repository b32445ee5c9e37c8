"""Result files of the GPU runs, rewritten as a run goes: each written whole
or not at all, so a run cut short (a deadline, a device call's time limit)
keeps its last complete file."""
import json
import math
import os


def json_safe(x):
    """JSON has no inf/NaN: write them as strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def write_json(path, obj):
    """`obj` as JSON at `path` (nothing when path is empty or None)."""
    write_text(path, json.dumps(json_safe(obj), indent=1) + "\n" if path else "")


def write_text(path, text):
    """`text` at `path`, through a temporary file (nothing without a path)."""
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
