# lit configuration for Weft's regression tests.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "WEFT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.weft_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
# weft-compile --emit=kernels reads bench/attention_tuning.json by default;
# tests name their tables (tuning-table.mlir) and otherwise see 64/64 tiles.
config.environment["WEFT_TUNING_TABLE"] = "none"
config.substitutions.append(("%weft_src", config.weft_src_root))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["weft-opt", "weft-run", "weft-compile", "weft-cpu-run", "weft-package-gemms",
     "weft-capi-example"], [config.weft_tools_dir])

# test/Target/GPU assembles PTX: those tests REQUIRE ptxas (the CUDA toolkit),
# found where weft-compile looks for it.
import shutil
_ptxas = [os.environ.get("WEFT_PTXAS"), "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")]
if os.environ.get("CUDA_HOME"):
    _ptxas.append(os.path.join(os.environ["CUDA_HOME"], "bin", "ptxas"))
if any(p and os.access(p, os.X_OK) for p in _ptxas):
    config.available_features.add("ptxas")
