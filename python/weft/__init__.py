"""Weft's Python side: the .npz tensor convention, the Philox reference, the
model generator (weft.models) that writes transformer graphs as weft IR
together with an equivalent PyTorch module, and the GPU harness (weft.gpu)
that test/gpu and bench/ run on a lent GPU."""


def __getattr__(name):
    # weft.compile imports torch and TorchDynamo only when first used
    if name == "compile":
        from .torch_backend import compile
        return compile
    if name == "explain":
        from .explanation import explain
        return explain
    raise AttributeError(f"module 'weft' has no attribute {name!r}")
