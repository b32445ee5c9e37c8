#!/usr/bin/env python3
"""One training-attention point for Nsight Compute: the backward of the
units in each DIR (bf16, d 128, s 4096, batch 4, 16 heads, not causal, the
forward and backward units of one configuration), run three times each,
in the order given. From the repository root, e.g. the deterministic and
the atomic-dQ backward side by side:

  ncu --kernel-name regex:"backward_(dkdv|dq)" --launch-count 12 \
      --section SpeedOfLight --section WarpStateStats --section LaunchStats \
      python3 bench/attention_ncu_point.py build/dev2/base build/dev2/atomic_dq

  (the command of bench/results/h100-2026-11-28-attention-atomic-dq-ncu.log,
  build/dev2 holding units of build/ck/ir/*.mlir and *_atomic_dq.mlir).
  (PYTHONPATH is set here; WEFT_RUNTIME_LIB as for the other GPU scripts.)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
from weft.gpu import attention_timing as wa  # noqa: E402
from weft.gpu import kernel_units as ku  # noqa: E402

HEAD_DIM, SEQ, BATCH, HEADS, CAUSAL = 128, 4096, 4, 16, False


def pair(directory):
    groups, _ = ku.group_by_problem(ku.load_units(directory))
    group = groups.get(("bf16", HEAD_DIM, CAUSAL), {})
    if "forward" not in group or "backward" not in group:
        raise SystemExit(f"{directory}: no bf16 d{HEAD_DIM} forward + backward units")
    return group["forward"], group["backward"]


def main(argv):
    import torch
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    rt = wa.start_runtime()
    cache = wa.UnitCache(rt)
    shape = wa.Shape(HEAD_DIM, SEQ, BATCH, HEADS, CAUSAL)
    inputs = wa.make_inputs(shape, "bf16", requires_grad=False)
    for directory in argv:
        fwd, bwd = pair(directory)
        weft = wa.WeftAttention(rt, cache, fwd, bwd, shape, *inputs)
        weft.forward()
        for _ in range(3):
            weft.backward()
        torch.cuda.synchronize()
        print(f"{directory}: {ku.pair_name({'forward': fwd, 'backward': bwd})}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
