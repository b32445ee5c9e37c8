#!/usr/bin/env python3
"""One decode point for Nsight Compute: Weft's split + combine kernels and
SDPA at bf16, d 128, batch 64, 1 query row, 32k keys (32 q heads over 4 kv
heads), three times each. From the repository root, units from
`scripts/decode-units build/decode`:

  ncu --launch-skip 6 --launch-count 6 --metrics gpu__time_duration.sum,\\
dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,\\
lts__t_sector_hit_rate.pct python3 bench/decode_ncu_point.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
from weft.gpu.decode_units import DecodeUnit, find_decode_units  # noqa: E402


def main():
    meta = next(m for m in find_decode_units("build/decode")
                if m["config"]["dtype"] == "bf16" and m["config"]["head_dim"] == 128
                and not m["config"]["causal"] and m["shapes"]["batch"] == 64
                and m["shapes"]["q_len"] == 1 and m["shapes"]["k_len"] == 32768)
    unit = DecodeUnit(meta)
    q = torch.randn(64, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(64, 4, 32768, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out, lse = torch.empty_like(q), torch.empty(64, 32, 1, device="cuda")
    workspace = torch.empty(unit.workspace_bytes, dtype=torch.uint8, device="cuda")
    weft = unit.prepare({"q": q, "k": k, "v": v, "out": out, "lse": lse}, workspace)
    for _ in range(3):
        weft()
        F.scaled_dot_product_attention(q, k, v, scale=unit.shapes["scale"], enable_gqa=True)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
