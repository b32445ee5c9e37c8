"""bench/flashinfer_decode.py's point list and JIT module plan, without a GPU
or flashinfer (--dry-list): the caches over 12 GiB of K+V are left out, each
point names its variants, and --no-fa3 drops the fa3 modules."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "flashinfer_decode.py")


def dry_list(*args):
    result = subprocess.run([sys.executable, SCRIPT, "--dry-list", *args],
                            capture_output=True, text=True, check=True)
    return result.stdout.splitlines()


def test_points_and_modules():
    lines = dry_list("--points", "^bf16-d128")
    points = [line for line in lines if line.startswith("bf16-d128-")]
    # 3 batches x 2 row counts x 4 caches, less batch 64 at 128k (16 GiB).
    assert len(points) == 22
    assert not any(line.startswith("bf16-d128-b64-q1-k131072") for line in points)
    one_row = next(line for line in points if line.startswith("bf16-d128-b8-q1-k16384 "))
    assert one_row.split()[-4:] == ["paged16/cuda-core", "paged16/tensor-core",
                                    "contig/cuda-core", "contig/tensor-core"]
    assert lines[-1].startswith("22 points; 6 JIT modules:")
    assert "batch_prefill-fa3-bf16-d128" in lines[-1]


def test_no_fa3():
    last = dry_list("--points", "^bf16-d128", "--no-fa3")[-1]
    assert last.startswith("22 points; 4 JIT modules:")
    assert "fa3" not in last
