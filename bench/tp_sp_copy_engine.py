"""Copy-engine collectives (weft-run --collectives) in tp_sp_bench.py: the
packages `prepare --copy-engine` adds, and the opt-in run phase `ce`. At
each T the anchor's gradient step is timed (tp_sp_phases.timing: median of
20 graph replays, max over ranks) as

  tpT/nccl              TP only (the target: TP+SP at most this)
  tpTsp/nccl            TP+SP, all-gathers on NCCL (the time phase's)
  tpTsp/copy-engine     the same package, all-gathers on the copy engines
  tpTspce/copy-engine   TP+SP compiled with --collective-engine=copy-engine
                        (collective matmul's cost model charges a gather's
                        chunk 8 us instead of 50: it may chunk the gathers)
  tpTspce/nccl          that package with its chunks on NCCL

and checked: the same package's loss on both engines, and the small
model's loss and every gradient (tpTsp, and tpTspc2 with 2 chunks forced),
gathered from the ranks, equal bit for bit between the engines (an
all-gather moves bytes: the engines must agree exactly), each also within
the gradient check's bound against float64. The opt-in phase `cefault`
runs tp_sp_phases.fault_test (a rank killed; a rank stopped, the others at
the collective timeout) with the copy engine: a flag a dead peer never
writes must end in the error, not a hang (the rank sets its own flags after
the abort so its streams drain).
"""
import copy
import re
import signal

import tp_sp_phases as ph


def variants(tp):
    """The packages prepare --copy-engine adds at tp."""
    return [(f"tp{tp}spce", [f"--grid=tp={tp}", "--sequence-parallel",
                             "--collective-engine=copy-engine"])]


def timed(tp):
    return [(f"tp{tp}", "nccl"), (f"tp{tp}sp", "nccl"), (f"tp{tp}sp", "copy-engine"),
            (f"tp{tp}spce", "copy-engine"), (f"tp{tp}spce", "nccl")]


def collective_counts(check):
    """{kind: count} from weft-run --check's line "65 collectives: 25
    all_reduce 24 all_gather 16 reduce_scatter ..." (prepare keeps it)."""
    return {kind: int(n) for n, kind in re.findall(
        r"(\d+) (all_reduce|all_gather|reduce_scatter|all_to_all|send_recv)\b", check)}


def outputs_equal(a, b):
    """Every tensor of two .npz files (weft.npz: torch tensors) equal bit for
    bit."""
    import torch
    from weft import npz
    x, y = npz.load(a), npz.load(b)

    def raw(t):
        return t.contiguous().view(-1).view(torch.uint8)
    return sorted(x) == sorted(y) and all(
        x[k].shape == y[k].shape and x[k].dtype == y[k].dtype and torch.equal(raw(x[k]), raw(y[k]))
        for k in x if isinstance(x[k], torch.Tensor))


def phase(sh, grad, tp, anchor, small):
    """The `ce` phase at tp: the timings and the bit-for-bit checks."""
    timing = {}
    for package, engine in timed(tp):
        r = ph.timing(sh, anchor, package, tp, engine=engine)
        if r:
            timing[f"{package}/{engine}"] = {k: r[k] for k in (
                "ms", "ms_per_rank", "loss", "collectives", "in_use_gib", "max_abs_gap")}
    name, config = small
    checks = {}
    for variant in (f"tp{tp}sp", f"tp{tp}spc2"):
        runs = {e: grad.check(name, config, f"{name}_{variant}.weftpkg", tp, engine=e)
                for e in ("nccl", "copy-engine")}
        if not sh.dry:
            checks[variant] = {
                "bitwise_equal": outputs_equal(runs["nccl"]["outputs"],
                                               runs["copy-engine"]["outputs"]),
                "gradient_check_ok": {e: r["ok"] for e, r in runs.items()},
                "worst_ratio": {e: r["worst_ratio"] for e, r in runs.items()}}
    if sh.dry:
        return None
    ms = {k: v["ms"] for k, v in timing.items()}
    sp, ce, tp_only = ms[f"tp{tp}sp/nccl"], ms[f"tp{tp}sp/copy-engine"], ms[f"tp{tp}/nccl"]
    chunked = ms[f"tp{tp}spce/copy-engine"]
    # Every TP+SP form, on either engine (tpTsp/..., tpTspce/...).
    best = min(v for k, v in ms.items() if k.startswith(f"tp{tp}sp"))
    return {"timing": timing, "checks": checks,
            "anchor_loss_equal": timing[f"tp{tp}sp/nccl"]["loss"] ==
            timing[f"tp{tp}sp/copy-engine"]["loss"],
            "engines_used": {k: v["collectives"] for k, v in timing.items()},
            "summary": {"copy_engine_over_nccl": ce / sp,
                        "chunked_copy_engine_over_nccl": chunked / sp,
                        "best_tp_sp_over_tp_only": best / tp_only,
                        "ms": ms}}


def faults(sh, tp, data):
    """The kill and hang tests with $WEFT_COLLECTIVES=copy-engine."""
    ce_sh = copy.copy(sh)
    ce_sh.weft_env = dict(sh.weft_env, WEFT_COLLECTIVES="copy-engine")
    return {"kill": ph.fault_test(ce_sh, tp, data, 60, signal.SIGKILL, "kill_test_ce"),
            "hang": ph.fault_test(ce_sh, tp, data, 15, signal.SIGSTOP, "hang_test_ce")}
