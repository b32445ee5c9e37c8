#!/usr/bin/env python3
"""Bytes each launch of a training step moves, counted from its IR (no GPU):
per top-level op of the @*_step function of `weft-compile ... -o STEP.mlir`,
its operands' bytes (read) and results' bytes (written), grouped by fused
kind, with the time they take at 3 TB/s (H100 HBM3). Views (reshape, split,
concat) run nothing and are skipped. Issue 19's GPT-2 analysis used it.

    python3 bench/step_bytes.py STEP.mlir [KIND_REGEX]   (the regex lists each launch of those kinds)
"""
import re, sys, collections
BYTES = {"f32": 4, "bf16": 2, "f16": 2, "f64": 8, "i64": 8, "i1": 1, "i32": 4}
def tbytes(t):
    m = re.match(r"tensor<((?:\d+x)*)(\w+)>", t)
    dims = [int(d) for d in m.group(1).split("x") if d]
    n = 1
    for d in dims: n *= d
    return n * BYTES[m.group(2)]
text = open(sys.argv[1]).read()
step = text[text.index("_step("):]
body = step[step.index("{\n"):]
lines = body.split("\n")
launches = []
depth = 0
for line in lines[1:]:
    s = line.strip()
    if depth == 0 and s.startswith("%") and " = " in s:
        m = re.search(r"= (\w+\.\w+)", s)
        op = m.group(1)
        kind = re.search(r'kind = "([^"]+)"', s)
        sig = s[s.rindex(" : ") + 3:].rstrip(" {")
        ins, _, outs = sig.partition(" -> ")
        rd = sum(tbytes(t) for t in re.findall(r"tensor<[^>]+>", ins))
        wr = sum(tbytes(t) for t in re.findall(r"tensor<[^>]+>", outs))
        name = kind.group(1) if kind else op
        if op in ("weft.reshape", "weft.split", "arith.constant", "weft.concat") : name = None
        if name: launches.append((name, rd, wr, sig))
    depth += s.count("{") - s.count("}") if s.endswith("{") or s == "}" else 0
    if s.startswith("return") and depth == 0: break
agg = collections.defaultdict(lambda: [0, 0, 0])
for n, r, w, sig in launches:
    a = agg[n]; a[0] += 1; a[1] += r; a[2] += w
tot = 0
for n, (c, r, w) in sorted(agg.items(), key=lambda x: -(x[1][1] + x[1][2])):
    tot += r + w
    print(f"{n:45s} x{c:4d}  read {r/1e6:9.1f} MB  write {w/1e6:9.1f} MB  {(r+w)/3e9:7.3f} ms@3TB/s")
print("total", tot / 1e6, "MB", len(launches), "launches")
if len(sys.argv) > 2:
    for n, r, w, sig in launches:
        if re.fullmatch(sys.argv[2], n): print(f"{n} {r/1e6:.1f} {w/1e6:.1f} {sig}")
