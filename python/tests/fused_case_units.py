"""One case of test/gpu/fused_cases.py compiled the way test/gpu/fused_check.py
gets it (weft-compile --emit=elementwise-kernels): its unit JSON and its IR,
for the CPU-side tests of fused_check's references."""
import json
import os
import shutil
import subprocess

import pytest

from harness import tool
from script_modules import load_script

fused_cases = load_script("test/gpu/fused_cases.py")


def case_unit(tmp_path, name):
    """(unit JSON of case `name`'s first kernel, the case's IR); skips without
    ptxas, which weft-compile assembles the units with."""
    if not (os.environ.get("WEFT_PTXAS") or shutil.which("ptxas")
            or os.access("/usr/local/cuda/bin/ptxas", os.X_OK)):
        pytest.skip("the unit JSON comes from weft-compile --emit=elementwise-kernels, "
                    "which assembles with ptxas (CUDA toolkit)")
    text = fused_cases.cases(small=True)
    start = text.index(f"func.func @{name}(")
    ir = text[start:text.index("\n}\n", start) + 3]
    ir_path = tmp_path / f"{name}.mlir"
    ir_path.write_text(ir)
    out = tmp_path / "units"
    proc = subprocess.run([tool("weft-compile"), str(ir_path), "--emit=elementwise-kernels",
                           "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / f"{name}_0.json").read_text()), ir
