"""The GPU scripts of test/gpu, bench/ and scripts/ are programs in no
package: their host-side tests import them as modules by their path."""
import importlib.machinery
import importlib.util
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_script(path):
    """The module of the script at REPO/`path` (e.g. "test/gpu/fused_check.py"),
    named after its file; loaded once, so test files share it."""
    name = os.path.basename(path).removesuffix(".py").replace("-", "_")
    if name not in sys.modules:
        loader = importlib.machinery.SourceFileLoader(name, os.path.join(REPO, path))
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
        sys.modules[name] = module
        try:
            loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]
