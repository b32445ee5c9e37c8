#!/usr/bin/env python3
"""Times Weft's GPU attention kernels next to the anchors (SDPA's flash and
cuDNN backends, compiled FlexAttention) in one process on the same inputs,
with triton.testing.do_bench medians as /work/shared/anchors measured them;
prints TFLOP/s and Weft's ratio to each anchor, writes JSON and markdown.

  PYTHONPATH=python python3 bench/attention_bench.py --kernels DIR [--tuning TABLE]
      [--json OUT.json] [--markdown OUT.md] [--quick] [--deadline SECONDS] [--dropout P]

DIR holds units of weft-compile --emit=kernels (found by their JSON config);
every configuration in it is timed, or with --tuning only the tiles the table
chose (what weft-compile --emit=kernels picks). --dropout P times only
units with dropout_p = P (e.g. scripts/check-kernels' dropout and
dropout_warp sets) against SDPA with dropout_p = P; their masks differ
(Weft's Philox rule), so the SDPA sanity check is skipped
(test/gpu/attention_dropout_check.py checks them) and FlexAttention, which
has no dropout, is not run. See bench/README.md.
"""
import argparse
import contextlib
import sys
import time
import traceback

from weft.gpu import attention_timing as wa
from weft.gpu import kernel_units as ku
from weft.gpu import results
from weft.gpu.progress import ContextLost, Deadline, add_deadline_option, check_context

ANCHORS = ("flash", "cudnn", "flex")
ANCHOR_TITLES = {"flash": "FA2 (sdpa flash)", "cudnn": "cuDNN (sdpa)", "flex": "FlexAttention"}
MODES = ("fwd", "fwdbwd")
QUICK_SEQS = (1024, 4096)
DASH = "\u2013"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernels", required=True,
                   help="units of weft-compile --emit=kernels (e.g. scripts/autotune-attention "
                        "prepare's directory, or scripts/check-kernels')")
    p.add_argument("--tuning", help="bench/attention_tuning.json: time only the tiles it chose "
                                    "(forward and backward tiles may differ)")
    p.add_argument("--json", help="write every number here (rewritten after each shape)")
    p.add_argument("--markdown", help="write the table as markdown here")
    p.add_argument("--quick", action="store_true",
                   help=f"only s in {{{', '.join(map(str, QUICK_SEQS))}}}")
    p.add_argument("--seqs", type=int, nargs="+", default=list(wa.SEQS), metavar="S")
    p.add_argument("--head-dims", type=int, nargs="+", default=list(wa.HEAD_DIMS), metavar="D")
    p.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    p.add_argument("--no-flex", action="store_true", help="skip FlexAttention (its compiles)")
    p.add_argument("--schedules", nargs="+", choices=ku.SCHEDULES, metavar="SCHEDULE",
                   help="with --tuning: time the table's forward tiles once per warpgroup "
                        "forward schedule listed (serial, overlap, pingpong; the units of "
                        "each must be in --kernels, e.g. scripts/check-kernels' schedules/), "
                        "side by side, instead of the table's schedule")
    p.add_argument("--dropout", type=float, default=0.0, metavar="P",
                   help="time the units with dropout_p = P against SDPA with dropout_p = P")
    add_deadline_option(p, "shapes and backends")
    opts = p.parse_args(argv)
    if opts.quick:
        opts.seqs = list(QUICK_SEQS)
    if not 0.0 <= opts.dropout < 1.0:
        p.error(f"--dropout must be in [0, 1), got {opts.dropout:g}")
    if opts.dropout:
        opts.no_flex = True
    if opts.schedules and not opts.tuning:
        p.error("--schedules picks schedules of the table's tiles: it needs --tuning")
    for d in opts.head_dims:
        if d not in (64, 128, 256):
            p.error(f"--head-dims: the kernels have head_dim 64, 128 and 256, got {d}")
    for s in opts.seqs:
        if s <= 0 or wa.TOKENS % s:
            p.error(f"--seqs: {s} does not divide the {wa.TOKENS} tokens of a shape")
    if opts.deadline is not None and opts.deadline <= 0:
        p.error(f"--deadline must be positive, got {opts.deadline:g}")
    return opts


# ---- choosing what to time (host side, tested without a GPU) ---------------

def load_tuning(path):
    """{(arch, dtype, head_dim, causal): ((fq, fk, mma, stages[, schedule]),
    (bq, bk, mma, stages))} from the table; the forward's mma is "warp" where
    the entry has none, stages 2 where it has none; a schedule other than
    serial is the forward's fifth element."""
    import json
    try:
        with open(path) as f:
            table = json.load(f)
    except (OSError, ValueError) as e:
        raise ku.UnitError(f"tuning table {path}: {e}") from e
    chosen = {}
    for i, entry in enumerate(table.get("entries", [])):
        try:
            key = (entry["arch"], entry["dtype"], entry["head_dim"], entry["causal"])
            fwd, bwd = entry["forward"], entry["backward"]
            schedule = fwd.get("schedule", "serial")
            chosen[key] = ((fwd["block_q"], fwd["block_k"], fwd.get("mma", "warp"),
                            fwd.get("stages", 2))
                           + ((schedule,) if schedule != "serial" else ()),
                           (bwd["block_q"], bwd["block_k"], bwd.get("mma", "warp"),
                            bwd.get("stages", 2)))
        except (KeyError, TypeError) as e:
            raise ku.UnitError(f"tuning table {path}: entries[{i}] lacks {e}") from e
    return chosen


def atomic_tag(backward):
    """' adq' for a backward whose dQ is added with atomics (atomic_dq)."""
    return " adq" if backward.atomic_dq else ""


def untuned_tiles(head_dim):
    """What weft-compile takes without a table entry (chooseAttentionTiles):
    64 x 64 mma.sync, at head_dim 256 (warpgroup kernels only) forward 128 x
    64 and backward 64 x 64 in 2 stages."""
    if head_dim == 256:
        return (128, 64, "warpgroup", 2), (64, 64, "warpgroup", 2)
    return (64, 64, "warp", 2), (64, 64)


def weft_variants(groups, dtype, head_dim, causal, tuning=None, schedules=None):
    """[(label, fwd unit, bwd unit)] to time for a configuration, and notes on
    what is missing. Without `tuning`: each tile config (and forward MMA kind
    and schedule: a directory may hold serial, overlap and ping-pong forwards,
    timed side by side) with both units; with it: the table's forward tiles and MMA kind and
    backward tiles and MMA kinds (untuned_tiles where it has no entry, as
    weft-compile); `schedules` (with `tuning`) times the table's forward
    tiles once per listed forward schedule instead of the table's one."""
    keys = sorted(k for k in groups if k[:3] == (dtype, head_dim, causal))
    if tuning is None:
        variants, notes = [], []
        for key in keys:
            fwd, bwd = groups[key].get("forward"), groups[key].get("backward")
            if fwd and bwd:
                variants.append((wa.config_label((fwd.block_q, fwd.block_k),
                                                 (bwd.block_q, bwd.block_k), fwd.mma,
                                                 fwd.stages, bwd.mma, bwd.stages,
                                                 fwd.schedule) + atomic_tag(bwd), fwd, bwd))
            else:
                notes.append(f"{ku.config_name(key)}: no {'forward' if not fwd else 'backward'} "
                             f"unit")
        if not keys:
            notes.append(f"no units for {dtype} d{head_dim} {'causal' if causal else 'full'}")
        return variants, notes
    arch = next((groups[k][d].arch for k in keys for d in groups[k]), "sm_90a")
    fwd_tiles, bwd_tiles = tuning.get((arch, dtype, head_dim, causal),
                                      untuned_tiles(head_dim))
    # (bq, bk) alone is a warp forward, as a table entry without "mma";
    # stages 2 and the serial schedule where the entry has none.
    schedule = fwd_tiles[4] if len(fwd_tiles) > 4 else "serial"
    fwd_tiles = tuple(fwd_tiles[:2]) + (tuple(fwd_tiles[2:3]) or ("warp",)) + \
        (tuple(fwd_tiles[3:4]) or (2,))
    bwd_tiles = tuple(bwd_tiles[:2]) + (tuple(bwd_tiles[2:3]) or ("warp",)) + \
        (tuple(bwd_tiles[3:4]) or (2,))
    bwd = groups.get((dtype, head_dim, causal) + bwd_tiles, {}).get("backward")
    variants, notes = [], []
    for schedule in schedules or [schedule]:
        fwd_key = (dtype, head_dim, causal) + fwd_tiles + \
            ((("schedule", schedule),) if schedule != "serial" else ())
        fwd = groups.get(fwd_key, {}).get("forward")
        missing = [f"{d} q{t[0]}k{t[1]}{ku.mma_suffix(t[2], ' ', t[3], s)}"
                   for d, t, u, s in (("forward", fwd_tiles, fwd, schedule),
                                      ("backward", bwd_tiles, bwd, "serial"))
                   if u is None]
        if missing:
            notes.append(f"{dtype} d{head_dim} {'causal' if causal else 'full'}: the table's "
                         f"{' and '.join(missing)} unit is not in the kernels directory")
            continue
        variants.append(("tuned " + wa.config_label(fwd_tiles[:2], bwd_tiles[:2], fwd_tiles[2],
                                                    fwd_tiles[3], bwd_tiles[2], bwd_tiles[3],
                                                    schedule) + atomic_tag(bwd), fwd, bwd))
    return variants, notes


# ---- the report (host side, tested with fake timings) ----------------------

def measured(shape, mode, ms):
    return {"ms": ms, "tflops": wa.tflops(shape, mode, ms)}


def best_weft(result, mode):
    """The fastest Weft variant of a shape for a mode: (label, tflops) or None."""
    best = None
    for variant in result.get("weft", []):
        m = variant.get(mode, {})
        if m.get("tflops") and (best is None or m["tflops"] > best[1]):
            best = (variant["config"], m["tflops"])
    return best


def tflops_text(slot, mode):
    value = slot.get(mode, {}).get("tflops")
    return f"{value:.0f}" if value else DASH


def table_rows(report):
    """One row per (shape, mode): Weft's best, each anchor, and the ratios."""
    rows = []
    for result in report["results"]:
        shape = result["shape"]
        for mode in MODES:
            row = {"head_dim": shape["head_dim"], "seq": shape["seq"],
                   "causal": shape["causal"], "mode": mode, "weft": best_weft(result, mode),
                   "anchors": {}, "ratios": {}}
            for name in ANCHORS:
                m = result.get("anchors", {}).get(name, {}).get(mode, {})
                row["anchors"][name] = m.get("tflops")
                if row["weft"] and m.get("tflops"):
                    row["ratios"][name] = row["weft"][1] / m["tflops"]
            rows.append(row)
    return rows


def _cells(row):
    weft = f"{row['weft'][1]:.0f} ({row['weft'][0]})" if row["weft"] else DASH
    anchors = [f"{row['anchors'][n]:.0f}" if row["anchors"][n] else DASH for n in ANCHORS]
    ratios = [f"{row['ratios'][n]:.2f}" if n in row["ratios"] else DASH for n in ANCHORS]
    return [str(row["head_dim"]), str(row["seq"]), "yes" if row["causal"] else "no",
            "fwd" if row["mode"] == "fwd" else "fwd+bwd", weft] + anchors + ratios


HEADER = ["d", "seq", "causal", "pass", "Weft (tiles)"] + \
    [ANCHOR_TITLES[n] for n in ANCHORS] + [f"Weft / {n}" for n in ANCHORS]


def render_text(report):
    rows = [_cells(r) for r in table_rows(report)]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(HEADER, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def unavailable(report):
    """'backend shape mode: reason' for every dash of the table."""
    lines = []
    for result in report["results"]:
        where = result["name"]
        for variant in result.get("weft", []):
            for mode in MODES:
                if "error" in variant.get(mode, {}):
                    lines.append(f"Weft {variant['config']} {where} {mode}: "
                                 f"{variant[mode]['error']}")
        for note in result.get("notes", []):
            lines.append(f"Weft {where}: {note}")
        for name, modes in result.get("anchors", {}).items():
            for mode in MODES:
                if "error" in modes.get(mode, {}):
                    lines.append(f"{name} {where} {mode}: {modes[mode]['error']}")
    return lines


def render_variants(report):
    """Markdown lines with every Weft variant's TFLOP/s per shape when some
    shape timed more than one (e.g. --schedules): the table above keeps only
    the fastest."""
    if not any(len(r.get("weft", [])) > 1 for r in report["results"]):
        return []
    out = ["", "Every Weft variant (TFLOP/s, fwd / fwd+bwd; ratio to the shape's first "
           "variant's forward):", "", "| variant | d | seq | causal | fwd | fwd+bwd | fwd / first |",
           "|---|---|---|---|---|---|---|"]
    for result in report["results"]:
        shape, variants = result["shape"], result.get("weft", [])
        first = variants[0].get("fwd", {}).get("tflops") if variants else None
        for v in variants:
            fwd = v.get("fwd", {}).get("tflops")
            ratio = f"{fwd / first:.3f}" if fwd and first else DASH
            out.append(f"| {v['config']} | {shape['head_dim']} | {shape['seq']} | "
                       f"{'yes' if shape['causal'] else 'no'} | "
                       f"{tflops_text(v, 'fwd')} | {tflops_text(v, 'fwdbwd')} | {ratio} |")
    return out


def render_markdown(report):
    prov = report["provenance"]
    s = report["settings"]
    out = [f"# Weft attention vs the anchors ({prov.get('date', '?')})", "",
           f"{prov.get('device', '?')}, PyTorch {prov.get('torch', '?')}, "
           f"Triton {prov.get('triton', '?')}; {s['dtype']}, batch x seq = {wa.TOKENS} tokens, "
           f"heads x head_dim = {wa.HIDDEN}. TFLOP/s count 4*b*h*s*s*d for the forward, half "
           f"when causal, 3.5x the forward for forward+backward; medians of "
           f"triton.testing.do_bench(warmup={s['do_bench']['warmup']}, "
           f"rep={s['do_bench']['rep']}). Weft: the fastest tiles of "
           f"`{s['kernels']}`" + (f" chosen by `{s['tuning']}`" if s.get("tuning") else "")
           + "; ratios are Weft's TFLOP/s over the anchor's.", "",
           f"Command: `{prov.get('command', '?')}`", "",
           "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(_cells(r)) + " |" for r in table_rows(report)]
    out += render_variants(report)
    missing = unavailable(report)
    if missing:
        out += ["", f"{DASH}: not measured:", ""] + [f"- {line}" for line in missing]
    return "\n".join(out) + "\n"


# ---- on the device ---------------------------------------------------------

def error_text(e):
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    return text[0][:300] if text else type(e).__name__


def anchor_fn(name, mode, q, k, v, dout, causal, flex=None, block_mask=None, dropout=0.0):
    """(callable, context) as attention_anchors.py times a backend and mode:
    do_bench runs inside the context (sdpa_kernel picks the SDPA backend)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if name == "flex":
        if mode == "fwd":
            return lambda: flex(q, k, v, block_mask=block_mask), contextlib.nullcontext()

        def flex_fwdbwd():
            flex(q, k, v, block_mask=block_mask).backward(dout)
        return flex_fwdbwd, contextlib.nullcontext()
    backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[name]

    def fwd():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=dropout)
    if mode == "fwd":
        return fwd, sdpa_kernel([backend])

    def fwdbwd():
        fwd().backward(dout)
    return fwdbwd, sdpa_kernel([backend])


class Bench:
    def __init__(self, opts, report, groups, tuning):
        self.opts, self.report, self.groups, self.tuning = opts, report, groups, tuning
        self.deadline = Deadline(opts.deadline)
        self.rt = wa.start_runtime()
        self.cache = wa.UnitCache(self.rt)
        self.lost = None

    def late(self):
        if self.lost:
            return f"not run: the CUDA context was lost ({self.lost})"
        if self.deadline.passed():
            return f"not run: the --deadline of {self.opts.deadline:g}s passed"
        return None

    def time_into(self, slot, shape, mode, fn, context=None):
        why = self.late()
        if why:
            slot[mode] = {"error": why}
            return
        try:
            with context or contextlib.nullcontext():
                slot[mode] = measured(shape, mode, wa.do_bench_ms(fn))
        except Exception as e:
            slot[mode] = {"error": error_text(e)}
            self.after_failure()

    def after_failure(self):
        try:
            check_context()
        except ContextLost as e:
            self.lost = error_text(e.__cause__ or e)

    def weft_and_sdpa(self, shape, result):
        """Pass 1 of a shape: Weft's variants (checked, then timed), SDPA."""
        import torch
        q, k, v, dout = wa.make_inputs(shape, self.opts.dtype, requires_grad=True)
        ref = wa.sdpa_reference(q, k, v, dout, shape.causal)
        variants, notes = weft_variants(self.groups, self.opts.dtype, shape.head_dim,
                                        shape.causal, self.tuning, self.opts.schedules)
        result["notes"] = notes
        for label, fwd_unit, bwd_unit in variants:
            record = {"config": label, "forward_unit": fwd_unit.name,
                      "backward_unit": bwd_unit.name,
                      "fwd_tiles": [fwd_unit.block_q, fwd_unit.block_k],
                      "fwd_mma": fwd_unit.mma, "fwd_schedule": fwd_unit.schedule,
                      "bwd_tiles": [bwd_unit.block_q, bwd_unit.block_k]}
            result["weft"].append(record)
            why = self.late()
            if why:
                record.update(fwd={"error": why}, fwdbwd={"error": why})
                continue
            try:
                weft = wa.WeftAttention(self.rt, self.cache, fwd_unit, bwd_unit, shape,
                                        q, k, v, dout)
                weft.forward_backward()
                torch.cuda.synchronize()
                # SDPA draws another mask: no comparison with dropout.
                errors, reasons = ({}, []) if self.opts.dropout else \
                    wa.sanity_errors(weft, ref, backward=True)
            except Exception as e:
                record.update(fwd={"error": error_text(e)}, fwdbwd={"error": error_text(e)})
                self.after_failure()
                continue
            record["sanity"] = {n: {"max_abs_err": e, "bound": b} for n, (e, b) in errors.items()}
            out_bad = [r for r in reasons if r.startswith("out")]
            if out_bad:
                record.update(fwd={"error": "not timed: " + out_bad[0]},
                              fwdbwd={"error": "not timed: " + out_bad[0]})
                continue
            self.time_into(record, shape, "fwd", weft.forward)
            if reasons:
                record["fwdbwd"] = {"error": "not timed: " + "; ".join(reasons)}
            else:
                self.time_into(record, shape, "fwdbwd", weft.forward_backward)
            del weft
        del ref
        for name in ("flash", "cudnn"):
            slot = result["anchors"].setdefault(name, {})
            for mode in MODES:
                self.time_into(slot, shape, mode, *anchor_fn(name, mode, q, k, v, dout,
                                                             shape.causal,
                                                             dropout=self.opts.dropout))
        del q, k, v, dout
        torch.cuda.empty_cache()

    def flex_pass(self, shape, result, flex, create_block_mask):
        """Pass 2 of a shape: FlexAttention (compiles per shape), same inputs."""
        import torch
        slot = result["anchors"].setdefault("flex", {})
        if isinstance(flex, str):
            slot.update({m: {"error": flex} for m in MODES})
            return
        q, k, v, dout = wa.make_inputs(shape, self.opts.dtype, requires_grad=True)
        block_mask = None
        try:
            if shape.causal:
                block_mask = create_block_mask(lambda b_, h_, qi, ki: qi >= ki, None, None,
                                               shape.seq, shape.seq, device="cuda")
        except Exception as e:
            slot.update({m: {"error": error_text(e)} for m in MODES})
        else:
            for mode in MODES:
                self.time_into(slot, shape, mode, *anchor_fn("flex", mode, q, k, v, dout,
                                                             shape.causal, flex, block_mask))
        del q, k, v, dout, block_mask
        torch.cuda.empty_cache()


def compiled_flex():
    """torch.compile(flex_attention) as the anchors, or the reason it is not
    there. dynamo's recompile limit (8) would silently fall back to eager
    after eight shapes; every shape here gets its own compile."""
    try:
        import torch
        import torch._dynamo
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 64)
        return torch.compile(flex_attention, dynamic=False), create_block_mask
    except Exception as e:
        return f"FlexAttention unavailable: {error_text(e)}", None


def run(opts, argv):
    units = [u for u in ku.load_units(opts.kernels) if u.dropout_p == opts.dropout]
    if not units:
        raise ku.UnitError(f"no units with dropout_p {opts.dropout:g} under {opts.kernels}")
    groups, notes = ku.group_units(units)
    tuning = load_tuning(opts.tuning) if opts.tuning else None
    report = {"kind": "weft attention benchmark", "provenance": wa.provenance(argv),
              "settings": {"kernels": opts.kernels, "tuning": opts.tuning, "dtype": opts.dtype,
                           "do_bench": wa.DO_BENCH, "seqs": opts.seqs,
                           "head_dims": opts.head_dims, "out_abs_tol": wa.OUT_ABS_TOL,
                           "grad_rel_tol": wa.GRAD_REL_TOL, "deadline": opts.deadline,
                           "flex": not opts.no_flex, "dropout": opts.dropout},
              "units": [{"name": u.name, "dir": u.directory, "config": ku.config_name(u.config_key),
                         "direction": u.direction} for u in units],
              "notes": notes, "results": []}
    shapes = wa.acceptance_shapes(opts.head_dims, opts.seqs)
    bench = Bench(opts, report, groups, tuning)
    print(f"{report['provenance'].get('device', '?')}: {len(shapes)} shapes, "
          f"{len(units)} units", flush=True)

    def save():
        results.write_json(opts.json, report)
        results.write_text(opts.markdown, render_markdown(report))

    for shape in shapes:
        result = {"name": shape.name, "shape": vars(shape),
                  "flops": {m: wa.flops(shape, m) for m in MODES}, "weft": [], "anchors": {}}
        report["results"].append(result)
        try:
            bench.weft_and_sdpa(shape, result)
        except Exception as e:
            result.setdefault("notes", []).append(f"harness error: {error_text(e)}")
            traceback.print_exc()
            bench.after_failure()
        print(f"{shape.name}: " + "; ".join(
            f"Weft {v['config']} fwd {tflops_text(v, 'fwd')} fwd+bwd {tflops_text(v, 'fwdbwd')}"
            for v in result["weft"]) + "; " + "; ".join(
            f"{n} fwd {tflops_text(m, 'fwd')} fwd+bwd {tflops_text(m, 'fwdbwd')}"
            for n, m in result["anchors"].items()), flush=True)
        save()
    if opts.no_flex:
        flex, create_block_mask = "skipped (--no-flex)", None
    else:
        flex, create_block_mask = compiled_flex()
    for shape, result in zip(shapes, report["results"]):
        try:
            bench.flex_pass(shape, result, flex, create_block_mask)
        except Exception as e:
            result["anchors"]["flex"] = {m: {"error": error_text(e)} for m in MODES}
            bench.after_failure()
        save()
    report["wall_seconds"] = bench.deadline.elapsed()
    save()
    return report


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    try:
        report = run(opts, [sys.argv[0]] + list(argv))
    except (ku.UnitError, RuntimeError, OSError, ImportError) as e:
        print(f"attention_bench: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # e.g. the runtime binding's WeftError at start
        traceback.print_exc()
        print(f"attention_bench: {error_text(e)}", file=sys.stderr)
        return 1
    print(render_text(report))
    for line in unavailable(report):
        print(f"{DASH} {line}")
    print(f"wall {report['wall_seconds']:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
