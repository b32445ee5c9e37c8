"""pytest setup: import weft from python/ and seed each test's generator from
its id, so every test draws fresh but reproducible inputs."""
import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(scope="session", autouse=True)
def case_directory(tmp_path_factory):
    """weft-run cases go under pytest's temporary root (pruned by pytest), each
    in a fresh directory of its own (harness.run_ir)."""
    os.environ["WEFT_TEST_TMP"] = str(tmp_path_factory.mktemp("weft-cases"))


def pytest_addoption(parser):
    parser.addoption("--compile-only", action="store_true", default=False,
                     help="test_torch_backend_gpu.py: compile the CUDA packages into "
                          "$WEFT_PACKAGE_CACHE on this (CPU) machine instead of running them")
