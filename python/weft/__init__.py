"""Weft's Python side: the .npz tensor convention, the Philox reference and
the model generator (weft.models) that writes transformer graphs as weft IR
together with an equivalent PyTorch module."""
