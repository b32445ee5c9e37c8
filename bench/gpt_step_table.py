"""Host-side logic of bench/gpt_step_bench.py (no GPU, unit-tested in
python/tests/test_gpt_step_table.py): memory budgets from a no-recompute
--memory-report, component totals from per-entry timings and from
torch.profiler kernel names, the torch.compile budget matching a peak, the
`budget` policy against the cheapest fixed policy that fits, the markdown."""
import re
import statistics

FIXED_POLICIES = ("none", "full", "selective", "block", "uniform")
FRACTIONS = (1.0, 0.5, 0.3)


def resident_bytes(report, low_precision_copy=0.5):
    """The state every step keeps, on the side PyTorch's anchor puts it:
    f32 master parameters and AdamW moments (categories at the planned peak
    of weft-compile --memory-report) and the bf16 weight copies (half the
    masters' bytes; converted in the step, the report counts them as saved
    activations; carried between steps, as parameters). gpt_step_bench
    measures torch above its bf16 weights (gradients set to None before each
    step): the weights are resident there, so the copies are here, and the
    activations above are comparable. Converted copies are not pinned:
    --remat=full, and --remat=budget where it is the cheapest fit, convert
    them again in the backward (weft-remat weight-copies), so a plan may go
    below this figure (a negative "planned above resident"). Gradients are
    above on both sides: torch's are made afresh each step, Weft's are
    transient (each AdamW update runs as soon as its gradient is final); at
    the no-recompute peak the report holds none."""
    cats = report["categories"]
    return cats["parameters"] + cats["optimizer_state"] + int(low_precision_copy *
                                                               cats["parameters"])


def budgets(report, fractions=FRACTIONS):
    """{fraction: bytes}: the resident state plus `fraction` of the
    no-recompute activation memory (the planned peak above the resident)."""
    resident = resident_bytes(report)
    activations = report["peak_bytes"] - resident
    if activations <= 0:
        raise ValueError(f"peak {report['peak_bytes']} is not above the resident state {resident}")
    return {f: resident + int(f * activations) for f in fractions}


def weft_component(entry):
    """gemm | attention | elementwise (every other kernel: fused groups,
    norms, copies, AdamW) | event."""
    if entry["kind"] == "gemm":
        return "gemm"
    if entry["kind"] == "event":
        return "event"
    name = entry["name"]
    if "attn" in name or "attention" in name:
        return "attention"
    return "elementwise"


def weft_breakdown(timing, wall_ms):
    """Milliseconds per component over forward + backward, the optimizer
    apart, and gaps = the step's wall time (untimed run) minus the sum of all
    entries' times."""
    out = {"gemm": 0.0, "attention": 0.0, "elementwise": 0.0, "optimizer": 0.0}
    for e in timing["entries"]:
        if e["segment"] == "optimizer":
            out["optimizer"] += e["ms"]
        else:
            comp = weft_component(e)
            if comp != "event":
                out[comp] += e["ms"]
    out["kernels"] = sum(e["ms"] for e in timing["entries"])
    out["gaps"] = wall_ms - out["kernels"]
    return out


GEMM_KERNEL = re.compile(r"gemm|sm90_xmma|cutlass|nvjet|cublas|matmul|_mm_|splitk", re.I)
ATTENTION_KERNEL = re.compile(r"flash|fmha|attention|sdpa|cudnn", re.I)


def torch_component(kernel_name):
    if ATTENTION_KERNEL.search(kernel_name):
        return "attention"
    if GEMM_KERNEL.search(kernel_name):
        return "gemm"
    return "other"


def sdpa_backend(kernel_names):
    """SDPA's backend as its kernels name it: flash, cudnn, efficient, math."""
    names = " ".join(kernel_names).lower()
    if "cudnn" in names or "fmha_sm90" in names:
        return "cudnn"
    if "flash" in names:
        return "flash"
    if "fmha_cutlass" in names or "efficient" in names or "mem_eff" in names:
        return "efficient"
    return "math (no fused attention kernel seen)"


def torch_breakdown(kernel_ms, steps):
    """kernel name -> total ms over `steps` profiled steps: ms per step per
    component (gemm, attention, other)."""
    out = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    for name, ms in kernel_ms.items():
        out[torch_component(name)] += ms / steps
    return out


def match_torch_budget(sweep, target_bytes):
    """The fastest torch.compile run whose peak above resident is not above
    `target_bytes` (torch's best within the memory Weft uses; its peak is not
    monotonic in the budget), else the smallest peak: (entry, exact)."""
    ok = [s for s in sweep if "peak_bytes" in s]
    if not ok:
        return None, False
    fitting = [s for s in ok if s["peak_bytes"] <= target_bytes]
    if fitting:
        return min(fitting, key=lambda s: (s["ms"], -s["peak_bytes"])), True
    return min(ok, key=lambda s: s["peak_bytes"]), False


def budget_vs_fixed(runs):
    """runs: [{policy, ms}] at one budget (only packages that compiled and
    ran). The cheapest fixed policy, the budget policy's time and whether
    budget <= cheapest fixed (None when either is missing)."""
    fixed = [r for r in runs if r["policy"] in FIXED_POLICIES and r.get("ms") is not None]
    chosen = [r for r in runs if r["policy"] == "budget" and r.get("ms") is not None]
    cheapest = min(fixed, key=lambda r: r["ms"]) if fixed else None
    budget = chosen[0] if chosen else None
    ok = None if cheapest is None or budget is None else budget["ms"] <= cheapest["ms"]
    # The fixed policies whose package is byte for byte the budget policy's
    # (the same program: their times differ by run-to-run noise only).
    same = [r["policy"] for r in fixed
            if budget and r.get("sha256") and r.get("sha256") == budget.get("sha256")]
    return {"cheapest_fixed": cheapest and cheapest["policy"],
            "cheapest_fixed_ms": cheapest and cheapest["ms"],
            "budget_ms": budget and budget["ms"], "budget_le_fixed": ok,
            "same_package_as": same}


def median(values):
    return statistics.median(values) if values else None


def fmt(value, digits=2):
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(results):
    """The tables of bench/RESULTS.md from the results JSON."""
    gib = 2.0 ** 30
    lines = [f"GPT step, {results['model']}; {results.get('device', '?')}, {results.get('date', '?')}.",
             f"Resident (f32 masters + AdamW moments + bf16 weight copies): {results['resident_bytes'] / gib:.2f} GiB; "
             f"no-recompute activations above it: {results['activation_bytes'] / gib:.2f} GiB.", "",
             "| budget (activations kept) | Weft policy | fwd+bwd ms | optimizer ms | planned GiB above resident | "
             "eager ms / GiB | torch.compile (budget) ms / GiB | Weft / compile |",
             "|---|---|---|---|---|---|---|---|"]
    eager = results.get("torch", {}).get("eager", {})
    for b in results["budgets"]:
        for r in b["runs"]:
            if r.get("ms") is None:
                lines.append(f"| {int(100 * b['fraction'])} % | {r['policy']} | – ({r.get('error', 'not run')[:60]}) | | | | | |")
                continue
            tc = b.get("torch_compile") or {}
            ratio = r["ms"] / tc["ms"] if tc.get("ms") else None
            n, split = r.get("carried_copies"), r.get("split_masters")
            copies = f" ({split} split masters)" if split else \
                f" ({n} copies carried)" if n and n is not True else \
                " (copies carried)" if n else ""
            lines.append(
                f"| {int(100 * b['fraction'])} % | {r['policy']}{copies} | {fmt(r['ms'])} | {fmt(r.get('optimizer_ms'))} | "
                f"{fmt(r['planned_above_resident'] / gib)} | {fmt(eager.get('ms'))} / "
                f"{fmt(eager.get('peak_bytes', 0) / gib)} | {fmt(tc.get('ms'))} ({tc.get('budget', '–')}) / "
                f"{fmt((tc.get('peak_bytes') or 0) / gib)} | {fmt(ratio)} |")
    agree = results.get("losses_agree")
    if agree:
        lines += ["", f"Losses of the {agree['packages']} packages run (same state, data and steps): "
                      + ("identical" if agree["all_equal"] else f"differ in {agree['differing']}")
                      + f"; first: {agree['losses'][:4]}"]
    lines += ["", "| budget | budget policy ms | cheapest fixed policy | its ms | budget <= fixed | "
              "same package as |", "|---|---|---|---|---|---|"]
    for b in results["budgets"]:
        c = b["choice"]
        lines.append(f"| {int(100 * b['fraction'])} % | {fmt(c['budget_ms'])} | {c['cheapest_fixed'] or '–'} | "
                     f"{fmt(c['cheapest_fixed_ms'])} | {c['budget_le_fixed']} | "
                     f"{', '.join(c.get('same_package_as') or []) or '–'} |")
    lines += ["", "Components per step, ms (Weft: per-entry CUDA events, forward+backward; torch.compile: torch.profiler)",
              "", "| budget | Weft GEMM | Weft attention | Weft elementwise/fused | Weft gaps | Weft optimizer | "
              "compile GEMM | compile attention | compile other | GEMM ratio | other ratio |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for b in results["budgets"]:
        tb = (b.get("torch_compile") or {}).get("breakdown")
        for r in b["runs"]:
            if not r["policy"].startswith("budget") or not r.get("breakdown"):
                continue
            w = r["breakdown"]
            g = w["gemm"] / tb["gemm"] if tb and tb["gemm"] else None
            o = w["elementwise"] / tb["other"] if tb and tb["other"] else None
            label = "" if r["policy"] == "budget" else f" ({r['policy']})"
            lines.append(f"| {int(100 * b['fraction'])} %{label} | {fmt(w['gemm'])} | {fmt(w['attention'])} | "
                         f"{fmt(w['elementwise'])} | {fmt(w['gaps'])} | {fmt(w['optimizer'])} | "
                         f"{fmt(tb and tb['gemm'])} | {fmt(tb and tb['attention'])} | {fmt(tb and tb['other'])} | "
                         f"{fmt(g)} | {fmt(o)} |")
    return "\n".join(lines) + "\n"
