"""Where an overlapped step's time goes: a `weft-run --trace-json` file (one
run with an event on each entry's own stream, so the streams overlap as in a
plain run) read as intervals per stream.

  step_trace.py TRACE.json [--timing TIMING.json] [--gaps 12]

Prints the step time; the compute streams' busy time (the union of their
GEMMs and kernel launches) and idle time; the collectives' time and the part
of it no compute covers (exposed), also per segment (forward, backward,
optimizer); the compute entries' time by category
(GEMMs, attention, other kernels), and with --timing (the same package's
`--time-segments --timing-json`, entries alone with the streams joined) how
much longer they ran beside the collectives; and the longest idle gaps of
the compute with the entries that end them.
"""
import argparse
import json


def category(entry):
    if entry["kind"] == "collective":
        return "collective"
    if entry["kind"] == "gemm":
        return "gemm"
    if entry["kind"] == "launch":
        return "attention" if entry["name"].startswith("weft_attn") else "other"
    return "event"


def union(intervals):
    """Sorted, merged [start, end) intervals."""
    merged = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def length(intervals):
    return sum(end - start for start, end in intervals)


def subtract(intervals, cover):
    """The parts of `intervals` (merged) that `cover` (merged) leaves out."""
    out, j = [], 0
    for start, end in intervals:
        while j < len(cover) and cover[j][1] <= start:
            j += 1
        k, at = j, start
        while k < len(cover) and cover[k][0] < end:
            if cover[k][0] > at:
                out.append([at, cover[k][0]])
            at = max(at, cover[k][1])
            k += 1
        if at < end:
            out.append([at, end])
    return out


def summarize(trace, timing=None, gaps=12):
    entries = trace["entries"]
    compute = [e for e in entries if category(e) in ("gemm", "attention", "other")]
    colls = [e for e in entries if category(e) == "collective"]
    busy = union([e["start_ms"], e["end_ms"]] for e in compute)
    comm = union([e["start_ms"], e["end_ms"]] for e in colls)
    exposed = subtract(comm, busy)
    # Each collective's own exposed time, by the segment it belongs to
    # (forward, backward, optimizer).
    by_segment = {}
    for e in colls:
        alone = length(subtract([[e["start_ms"], e["end_ms"]]], busy))
        by_segment[e["segment"]] = by_segment.get(e["segment"], 0.0) + alone
    summary = {
        "step_ms": trace["total_ms"],
        "compute_busy_ms": length(busy),
        "compute_idle_ms": trace["total_ms"] - length(busy),
        "collective_ms": length(comm),
        "collective_exposed_ms": length(exposed),
        "collective_exposed_by_segment_ms": by_segment,
        "by_category_ms": {},
    }
    for e in compute + colls:
        c = category(e)
        summary["by_category_ms"][c] = summary["by_category_ms"].get(c, 0.0) + \
            e["end_ms"] - e["start_ms"]
    if timing:
        alone = {}
        for e, t in zip(entries, timing["entries"]):
            if (e["kind"], e["index"]) != (t["kind"], t["index"]):
                raise SystemExit("the timing file is of another package (entry %s %s against "
                                 "%s %s)" % (e["kind"], e["index"], t["kind"], t["index"]))
            c = category(e)
            alone[c] = alone.get(c, 0.0) + t["ms"]
        summary["alone_by_category_ms"] = alone
    # The longest compute gaps and the first compute entry after each.
    holes = subtract([[0.0, trace["total_ms"]]], busy)
    holes.sort(key=lambda h: h[0] - h[1])
    listed = []
    for start, end in holes[:gaps]:
        after = min((e for e in compute if e["start_ms"] >= end - 1e-6),
                    key=lambda e: e["start_ms"], default=None)
        running = [e["name"] for e in colls if e["start_ms"] < end and e["end_ms"] > start]
        listed.append({"at_ms": start, "ms": end - start,
                       "next": after and f"{after['name']} (index {after['index']}, "
                                         f"{after['segment']})",
                       "collectives_running": running})
    summary["gaps"] = listed
    return summary


def print_summary(name, s):
    print(f"{name}: step {s['step_ms']:.2f} ms; compute busy {s['compute_busy_ms']:.2f}, idle "
          f"{s['compute_idle_ms']:.2f}; collectives {s['collective_ms']:.2f}, exposed "
          f"{s['collective_exposed_ms']:.2f}")
    if s["collective_exposed_by_segment_ms"]:
        print("  exposed collectives by segment: " + ", ".join(
            f"{k} {v:.2f} ms" for k, v in sorted(s["collective_exposed_by_segment_ms"].items())))
    cats = s["by_category_ms"]
    alone = s.get("alone_by_category_ms", {})
    for c in sorted(cats):
        extra = f" (alone {alone[c]:.2f})" if c in alone else ""
        print(f"  {c}: {cats[c]:.2f} ms{extra}")
    for g in s["gaps"]:
        print(f"  gap {g['ms']:.3f} ms at {g['at_ms']:.2f}: then {g['next']}; "
              f"collectives running: {', '.join(g['collectives_running']) or 'none'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--timing")
    parser.add_argument("--gaps", type=int, default=12)
    args = parser.parse_args()
    trace = json.load(open(args.trace))
    timing = json.load(open(args.timing)) if args.timing else None
    print_summary(args.trace, summarize(trace, timing, args.gaps))


if __name__ == "__main__":
    main()
