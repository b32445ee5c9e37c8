"""Host-side parts of the attention benchmark (bench/attention_bench.py) and
the autotuner (scripts/autotune-attention) on the CPU: arguments, FLOP
counting, the table and markdown from fake timings, choosing tiles, which
units a run times, and `prepare` / `install` with the real weft-compile."""
import json
import os
import shutil
import subprocess

import pytest

from script_modules import REPO, load_script
from weft.gpu import attention_timing as wa
from weft.gpu import kernel_units as ku
from weft.gpu import results

ab = load_script("bench/attention_bench.py")

WEFT_COMPILE = os.path.join(os.environ.get("WEFT_BUILD_DIR", os.path.join(REPO, "build")),
                            "bin", "weft-compile")
HAVE_COMPILER = os.access(WEFT_COMPILE, os.X_OK) and (
    shutil.which("ptxas") or os.access("/usr/local/cuda/bin/ptxas", os.X_OK))


at = load_script("scripts/autotune-attention")


def test_shapes_and_flops_follow_the_anchors():
    shapes = wa.acceptance_shapes()
    # 2 head dims x 5 sequence lengths x causal or not.
    assert len(shapes) == 20
    s1k = next(s for s in shapes if s.head_dim == 128 and s.seq == 1024 and not s.causal)
    assert (s1k.batch, s1k.heads) == (16, 16)
    d64 = next(s for s in shapes if s.head_dim == 64 and s.seq == 16384 and s.causal)
    assert (d64.batch, d64.heads) == (1, 32)
    fwd = 4 * 16 * 16 * 1024 * 1024 * 128
    assert wa.flops(s1k, "fwd") == fwd
    assert wa.flops(s1k, "fwdbwd") == fwd * 3.5
    causal = wa.Shape(128, 1024, 16, 16, True)
    assert wa.flops(causal, "fwd") == fwd // 2
    # 1 ms of the 1024-token forward is 34.4 TFLOP/s.
    assert wa.tflops(s1k, "fwd", 1.0) == pytest.approx(fwd / 1e9)


def test_bench_arguments():
    opts = ab.parse_args(["--kernels", "K", "--quick"])
    assert opts.seqs == list(ab.QUICK_SEQS) and opts.head_dims == [128, 64]
    for bad in (["--kernels", "K", "--seqs", "1000"], ["--kernels", "K", "--head-dims", "96"],
                ["--kernels", "K", "--deadline", "0"], ["--quick"]):
        with pytest.raises(SystemExit) as e:
            ab.parse_args(bad)
        assert e.value.code == 2


def test_bench_reports_missing_kernels_directory(tmp_path, capsys):
    assert ab.main(["--kernels", str(tmp_path / "none")]) == 1
    assert f"kernels directory {tmp_path / 'none'} does not exist" in capsys.readouterr().err


def fake_report():
    shape = wa.Shape(128, 4096, 4, 16, True)
    weft = [{"config": "q64k64", "fwd": ab.measured(shape, "fwd", 2.0),
             "fwdbwd": ab.measured(shape, "fwdbwd", 8.0)},
            {"config": "q128k64", "fwd": ab.measured(shape, "fwd", 1.0),
             "fwdbwd": {"error": "not timed: dq: max abs error 0.5 against SDPA flash exceeds 0.02"}}]
    anchors = {"flash": {"fwd": ab.measured(shape, "fwd", 2.0),
                         "fwdbwd": ab.measured(shape, "fwdbwd", 4.0)},
               "cudnn": {"fwd": ab.measured(shape, "fwd", 0.5),
                         "fwdbwd": ab.measured(shape, "fwdbwd", 2.0)},
               "flex": {"fwd": {"error": "OutOfMemoryError: CUDA out of memory"},
                        "fwdbwd": {"error": "OutOfMemoryError: CUDA out of memory"}}}
    return {"provenance": {"date": "2026-11-22T00:00:00+00:00", "device": "FAKE H100",
                           "torch": "2.11.0", "triton": "3.6.0", "command": "bench --fake"},
            "settings": {"kernels": "build/k", "tuning": None, "dtype": "bf16",
                         "do_bench": wa.DO_BENCH},
            "results": [{"name": shape.name, "shape": vars(shape), "weft": weft,
                         "anchors": anchors, "notes": []}]}


def test_table_from_fake_timings():
    rows = ab.table_rows(fake_report())
    fwd, fwdbwd = rows
    # The fastest Weft forward (q128k64, 1 ms) against flash at 2 ms: 2x;
    # against cuDNN at 0.5 ms: 0.5x; flex has no number and so no ratio.
    assert fwd["weft"][0] == "q128k64"
    assert fwd["ratios"]["flash"] == pytest.approx(2.0)
    assert fwd["ratios"]["cudnn"] == pytest.approx(0.5)
    assert "flex" not in fwd["ratios"]
    # q128k64's fwd+bwd was not timed, so q64k64's 8 ms counts: half of flash.
    assert fwdbwd["weft"][0] == "q64k64"
    assert fwdbwd["ratios"]["flash"] == pytest.approx(0.5)
    text = ab.render_text(fake_report())
    assert "2.00" in text and "0.50" in text and ab.DASH in text


def test_markdown_and_json_writing(tmp_path):
    report = fake_report()
    md = ab.render_markdown(report)
    assert "FAKE H100" in md and "PyTorch 2.11.0" in md and "Triton 3.6.0" in md
    assert "`bench --fake`" in md
    table = [line for line in md.splitlines() if line.startswith("| 128 | 4096 | yes |")]
    assert len(table) == 2
    assert "| 2.00 | 0.50 | \u2013 |" in table[0]
    # Two Weft variants of a shape: each one's numbers, beside the first's.
    assert "| q64k64 | 128 | 4096 | yes | 137 | 120 | 1.000 |" in md
    assert "| q128k64 | 128 | 4096 | yes | 275 | \u2013 | 2.000 |" in md
    # Every dash has its reason under the table.
    assert "flex d128-s4096-b4-h16-causal fwd: OutOfMemoryError" in md
    assert "Weft q128k64 d128-s4096-b4-h16-causal fwdbwd: not timed: dq" in md
    path = tmp_path / "sub" / "bench.json"
    report["results"][0]["weft"][0]["sanity"] = {"out": {"max_abs_err": float("inf")}}
    results.write_json(str(path), report)
    back = json.loads(path.read_text())
    assert back["results"][0]["weft"][0]["sanity"]["out"]["max_abs_err"] == "inf"
    assert back["results"][0]["anchors"]["flash"]["fwd"]["ms"] == 2.0
    assert not os.path.exists(str(path) + ".tmp")


def unit(direction, bq, bk, causal=False, d=128, mma="warp", stages=2, schedule="serial"):
    return ku.Unit(name=f"u_{direction}_{bq}_{bk}" + ku.mma_suffix(mma, "_", stages, schedule),
                   directory="x", direction=direction, dtype="bf16", head_dim=d, causal=causal,
                   block_q=bq, block_k=bk, arch="sm_90a", cubin_path="x.cubin", kernels=[],
                   mma=mma, stages=stages, schedule=schedule)


def test_which_weft_units_a_run_times():
    units = [unit("forward", 64, 64), unit("backward", 64, 64), unit("forward", 128, 64),
             unit("backward", 128, 64), unit("backward", 64, 128), unit("forward", 64, 32)]
    groups, _ = ku.group_units(units)
    variants, notes = ab.weft_variants(groups, "bf16", 128, False)
    assert [v[0] for v in variants] == ["q64k64", "q128k64"]
    assert notes == ["bf16-d128-full-q64k32: no backward unit",
                     "bf16-d128-full-q64k128: no forward unit"]
    tuning = {("sm_90a", "bf16", 128, False): ((128, 64), (64, 128))}
    variants, notes = ab.weft_variants(groups, "bf16", 128, False, tuning)
    (label, fwd, bwd), = variants
    assert label == "tuned fwd q128k64 / bwd q64k128"
    assert (fwd.block_q, fwd.block_k, bwd.block_q, bwd.block_k) == (128, 64, 64, 128)
    # A tile the table names but the directory lacks is reported, not guessed.
    tuning = {("sm_90a", "bf16", 128, False): ((128, 128), (64, 64))}
    variants, notes = ab.weft_variants(groups, "bf16", 128, False, tuning)
    assert variants == [] and "forward q128k128 unit is not in the kernels directory" in notes[0]
    # No entry: 64/64, as weft-compile.
    variants, _ = ab.weft_variants(groups, "bf16", 128, False, {})
    assert variants[0][0] == "tuned q64k64"


def test_choose_fastest_eligible_tiles_per_direction():
    rows = [{"block_q": 64, "block_k": 64, "fwd_ms": 2.0, "bwd_ms": 5.0},
            {"block_q": 128, "block_k": 64, "fwd_ms": 1.5, "bwd_ms": 6.0},
            {"block_q": 128, "block_k": 128, "fwd_skip": "spills: 8 B", "bwd_ms": 4.0},
            {"block_q": 64, "block_k": 32, "fwd_ms": 0.1, "fwd_skip": "wrong: out",
             "bwd_skip": "not judged"}]
    fwd, bwd = at.choose(rows)
    assert (fwd["block_q"], fwd["block_k"], fwd["ms"]) == (128, 64, 1.5)
    assert (bwd["block_q"], bwd["block_k"], bwd["ms"]) == (128, 128, 4.0)
    entry = at.table_entry("sm_90a", "bf16", 128, True, rows)
    assert entry["shape"] == {"batch": 4, "heads": 16, "seq": 4096}
    # Causal forward at s=4096: 4*4*16*4096^2*128/2 FLOP in 1.5 ms.
    assert entry["forward"]["tflops"] == pytest.approx(4 * 4 * 16 * 4096**2 * 128 / 2 / 1.5e9)
    assert entry["backward"]["tflops"] == pytest.approx(2.5 * 4 * 4 * 16 * 4096**2 * 128 / 2 / 4e9)
    assert at.table_entry("sm_90a", "bf16", 128, True, rows[3:]) is None


def test_spills_are_recorded():
    unit_json = {"kernels": [{"name": "dkdv", "registers": 255, "spill_store_bytes": 16,
                              "spill_load_bytes": 24}, {"name": "dq", "registers": 200}]}
    status = at.direction_status(unit_json)
    assert status["status"] == "spills"
    assert status["reason"] == "dkdv spills 16 B stores / 24 B loads"
    assert at.direction_status({"kernels": [{"name": "f", "registers": 1}]})["status"] == "ok"


def test_autotune_arguments(tmp_path, capsys):
    assert at.main(["prepare", str(tmp_path), "--only", "nothing-like-this"]) == 1
    assert "matches no candidate" in capsys.readouterr().err
    assert at.main(["run", str(tmp_path), "--out", str(tmp_path / "t.json")]) == 1
    assert "candidates.json" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        at.parse_args(["run", str(tmp_path)])  # --out is required
    # Warp (head_dim 64 and 128): block_q {64, 128} x block_k {32, 64, 128};
    # warpgroup (head_dim 64, 128 and 256): block_q {64, 128} x block_k
    # {64, 128} x stages {2, 3}.
    keys = at.candidate_keys()
    assert len(keys) == 2 * 2 * 2 * 2 * 3 + 2 * 3 * 2 * 2 * 2 * 2
    assert {k[1] for k in keys if k[5] == "warp"} == {64, 128}
    assert {k[1] for k in keys if k[5] == "warpgroup"} == {64, 128, 256}
    assert len(set(keys)) == len(keys)
    wgmma = [k for k in keys if k[5] == "warpgroup"]
    assert {k[3] for k in wgmma} == {64, 128} and {k[4] for k in wgmma} == {64, 128}
    assert {k[6] for k in wgmma} == {2, 3} and {k[6] for k in keys if k[5] == "warp"} == {2}
    assert [ku.config_name(k) for k in at.candidate_keys("bf16-d64-causal-q128k64")] == [
        "bf16-d64-causal-q128k64", "bf16-d64-causal-q128k64-wgmma",
        "bf16-d64-causal-q128k64-wgmma-s3"]
    command = at.compile_command("wc", "IR", "DIR", ("bf16", 64, True, 128, 64, "warpgroup", 3))
    assert "--attention-stages=3" in command
    assert "--attention-mma=warpgroup" in command and "--block-q=128" in command


@pytest.mark.skipif(not HAVE_COMPILER, reason="needs build/bin/weft-compile and ptxas")
def test_prepare_compiles_then_reuses(tmp_path, capsys):
    # "$": a name ending there, not a longer one that starts with it (as a
    # wgmma candidate's -wgmma-s3 twin does).
    only = "bf16-d64-causal-q128k32"
    manifest = at.prepare(str(tmp_path), only + "$")
    (record,) = manifest["candidates"]
    assert record["forward"]["status"] == "ok" and not record["reused"]
    units = ku.load_units(str(tmp_path / only))
    assert sorted((u.direction, u.block_q, u.block_k, u.causal) for u in units) == [
        ("backward", 128, 32, True), ("forward", 128, 32, True)]
    assert not [f for f in os.listdir(tmp_path / only) if f.endswith((".c", ".h"))]
    stamp = (tmp_path / only / "stamp").read_text()
    (record,) = at.prepare(str(tmp_path), only + "$")["candidates"]
    assert record["reused"] and (tmp_path / only / "stamp").read_text() == stamp
    assert json.loads((tmp_path / "candidates.json").read_text())["candidates"][0]["name"] == only


@pytest.mark.skipif(not HAVE_COMPILER, reason="needs build/bin/weft-compile and ptxas")
def test_install_checks_the_table_with_weft_compile(tmp_path, monkeypatch):
    entry = {"arch": "sm_90a", "dtype": "bf16", "head_dim": 64, "causal": True,
             "forward": {"block_q": 128, "block_k": 32, "ms": 1.0, "tflops": 1.0},
             "backward": {"block_q": 64, "block_k": 128, "ms": 2.0, "tflops": 1.0}}
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"format_version": 1, "entries": [entry]}))
    target = tmp_path / "bench" / "attention_tuning.json"
    target.parent.mkdir()
    monkeypatch.setattr(at, "TABLE", str(target))
    at.install(str(good))
    assert json.loads(target.read_text())["entries"][0]["forward"]["block_q"] == 128
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format_version": 1, "entries": [
        dict(entry, backward={"block_q": 96, "block_k": 64})]}))
    with pytest.raises(at.TuneError, match=r"entries\[0\] \(sm_90a bf16 d64 causal\) backward"):
        at.install(str(bad))
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"format_version": 1, "entries": [], "notes": ["x"]}))
    with pytest.raises(at.TuneError, match="nothing was measured"):
        at.install(str(empty))


@pytest.mark.skipif(not HAVE_COMPILER, reason="needs build/bin/weft-compile and ptxas")
def test_weft_compile_reads_the_table_from_the_environment(tmp_path):
    """The autotuner's table format is the one weft-compile reads."""
    rows = [{"block_q": 128, "block_k": 32, "fwd_ms": 1.0, "bwd_ms": 3.0},
            {"block_q": 64, "block_k": 128, "fwd_ms": 2.0, "bwd_ms": 2.0}]
    table = {"format_version": at.TABLE_FORMAT_VERSION,
             "entries": [at.table_entry("sm_90a", "f16", 128, False, rows)]}
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    ir = tmp_path / "a.mlir"
    ir.write_text(at.config_ir("f16", 128, False))
    env = dict(os.environ, WEFT_TUNING_TABLE=str(path))
    subprocess.run([WEFT_COMPILE, str(ir), "--emit=kernels", "-o", str(tmp_path / "u")],
                   check=True, env=env)
    fwd = json.loads((tmp_path / "u" / "tune_attention_0.json").read_text())["config"]
    bwd = json.loads((tmp_path / "u" / "tune_attention_grad_0.json").read_text())["config"]
    assert (fwd["block_q"], fwd["block_k"]) == (128, 32)
    assert (bwd["block_q"], bwd["block_k"]) == (64, 128)


def test_choose_each_direction_over_both_mma_kinds():
    rows = [{"block_q": 64, "block_k": 64, "mma": "warp", "fwd_ms": 2.0, "bwd_ms": 5.0},
            {"block_q": 128, "block_k": 64, "fwd_ms": 1.8, "bwd_ms": 6.0},
            {"block_q": 128, "block_k": 64, "mma": "warpgroup", "stages": 2, "fwd_ms": 1.5,
             "fwdbwd_ms": 6.5, "bwd_ms": 4.5},
            # A skipped direction is never chosen, however fast.
            {"block_q": 64, "block_k": 128, "mma": "warpgroup", "stages": 3, "fwd_ms": 1.9,
             "bwd_ms": 0.1, "bwd_skip": "failed: shared memory"},
            {"block_q": 64, "block_k": 128, "mma": "warpgroup", "fwd_ms": 0.5,
             "fwd_skip": "spills: 8 B", "bwd_ms": 4.0}]
    fwd, bwd = at.choose(rows)
    # A wgmma pick names its stages (2 where its row has none), a warp pick none.
    assert fwd == {"block_q": 128, "block_k": 64, "mma": "warpgroup", "stages": 2, "ms": 1.5}
    assert bwd == {"block_q": 64, "block_k": 128, "mma": "warpgroup", "stages": 2, "ms": 4.0}
    assert at.row_label(fwd) == "q128k64 wgmma" and at.row_label(bwd) == "q64k128 wgmma"
    # Slower wgmma: the warp kernels win in both directions and say so.
    fwd, bwd = at.choose([dict(rows[2], fwd_ms=3.0, bwd_ms=9.0)] + rows[:2])
    assert fwd == {"block_q": 128, "block_k": 64, "mma": "warp", "ms": 1.8}
    assert bwd == {"block_q": 64, "block_k": 64, "mma": "warp", "ms": 5.0}
    # A 3-stage wgmma forward, when fastest, is picked and labelled so.
    fwd, _ = at.choose(rows + [dict(rows[2], stages=3, fwd_ms=1.4)])
    assert fwd == {"block_q": 128, "block_k": 64, "mma": "warpgroup", "stages": 3, "ms": 1.4}
    assert at.row_label(fwd) == "q128k64 wgmma s3"
    # No eligible backward: no entry.
    assert at.choose(rows[3:4])[1] is None
    assert at.table_entry("sm_90a", "bf16", 64, False, rows[3:4]) is None
    entry = at.table_entry("sm_90a", "bf16", 64, False, rows)
    assert entry["forward"]["mma"] == "warpgroup" and entry["backward"]["mma"] == "warpgroup"
    assert entry["forward"]["stages"] == 2 and entry["backward"]["stages"] == 2
    text = at.render_table({"entries": [entry]})
    assert "forward q128k64 wgmma 1.500 ms" in text and "backward q64k128 wgmma 4.000 ms" in text


def test_bench_labels_and_tunes_the_mma_kind(tmp_path):
    units = [unit("forward", 128, 64), unit("backward", 128, 64),
             unit("forward", 128, 64, mma="warpgroup"), unit("backward", 64, 128),
             unit("forward", 64, 64, mma="warpgroup")]
    groups, notes = ku.group_units(units)
    assert not notes
    variants, notes = ab.weft_variants(groups, "bf16", 128, False)
    # The wgmma forward times with the warp backward of its tiles, and says so.
    assert [v[0] for v in variants] == ["q128k64", "fwd q128k64 wgmma / bwd q128k64"]
    assert variants[1][1].mma == "warpgroup" and variants[1][2].mma == "warp"
    # q64k64 wgmma has no backward of its tiles in the directory.
    assert notes == ["bf16-d128-full-q64k64-wgmma: no backward unit",
                     "bf16-d128-full-q64k128: no forward unit"]
    table = tmp_path / "t.json"
    entry = {"arch": "sm_90a", "dtype": "bf16", "head_dim": 128, "causal": False,
             "forward": {"block_q": 128, "block_k": 64, "mma": "warpgroup"},
             "backward": {"block_q": 64, "block_k": 128}}
    old = dict(entry, head_dim=64, forward={"block_q": 64, "block_k": 64})
    table.write_text(json.dumps({"entries": [entry, old]}))
    tuning = ab.load_tuning(str(table))
    # Stages 2 where the entry has none (every warp forward, older wgmma ones).
    assert tuning[("sm_90a", "bf16", 128, False)] == ((128, 64, "warpgroup", 2),
                                                      (64, 128, "warp", 2))
    assert tuning[("sm_90a", "bf16", 64, False)] == ((64, 64, "warp", 2), (64, 128, "warp", 2))
    (label, fwd, bwd), = ab.weft_variants(groups, "bf16", 128, False, tuning)[0]
    assert label == "tuned fwd q128k64 wgmma / bwd q64k128"
    assert (fwd.mma, fwd.block_q, bwd.mma, bwd.block_q) == ("warpgroup", 128, "warp", 64)
    # The table's wgmma forward missing from the directory is named as such.
    tuning[("sm_90a", "bf16", 128, False)] = ((128, 128, "warpgroup", 2), (64, 128))
    variants, notes = ab.weft_variants(groups, "bf16", 128, False, tuning)
    assert variants == [] and "forward q128k128 wgmma unit is not in" in notes[0]
    # So is one of other stages than the directory's.
    table.write_text(json.dumps({"entries": [dict(
        entry, forward=dict(entry["forward"], stages=3))]}))
    tuning = ab.load_tuning(str(table))
    assert tuning[("sm_90a", "bf16", 128, False)] == ((128, 64, "warpgroup", 3),
                                                      (64, 128, "warp", 2))
    variants, notes = ab.weft_variants(groups, "bf16", 128, False, tuning)
    assert variants == [] and "forward q128k64 wgmma s3 unit is not in" in notes[0]
    # A wgmma backward in the table needs its wgmma unit, not the warp one.
    table.write_text(json.dumps({"entries": [dict(
        entry, backward=dict(entry["backward"], mma="warpgroup"))]}))
    tuning = ab.load_tuning(str(table))
    variants, notes = ab.weft_variants(groups, "bf16", 128, False, tuning)
    assert variants == [] and "backward q64k128 wgmma unit is not in" in notes[0]
    assert wa.config_label((128, 64), (128, 64), "warpgroup", 2, "warpgroup") == "q128k64 wgmma"
    assert wa.config_label((128, 64), (128, 64), "warpgroup") == \
        "fwd q128k64 wgmma / bwd q128k64"
    assert wa.config_label((128, 64), (64, 128), "warpgroup", 3, "warpgroup", 2) == \
        "fwd q128k64 wgmma s3 / bwd q64k128 wgmma"
    assert wa.config_label((128, 64), (128, 64)) == "q128k64"


@pytest.mark.skipif(not HAVE_COMPILER, reason="needs build/bin/weft-compile and ptxas")
def test_prepare_a_wgmma_candidate(tmp_path):
    # "$": the 2-stage candidate, not its -wgmma-s3 twin.
    only = "bf16-d64-causal-q128k64-wgmma"
    (record,) = at.prepare(str(tmp_path), only + "$")["candidates"]
    assert record["mma"] == "warpgroup" and record["forward"]["status"] == "ok"
    assert record["stages"] == 2
    units = {u.direction: u for u in ku.load_units(str(tmp_path / only))}
    # Both directions are the Hopper kernels, compiled apart.
    assert units["forward"].mma == "warpgroup" and units["backward"].mma == "warpgroup"
    assert units["forward"].stages == 2 and units["backward"].stages == 2
    kernel = units["forward"].kernels[0]
    assert kernel.name.endswith("_wgmma_s2")
    # It reads q, k, v through TMA tensor maps; one warpgroup per 64 query
    # rows plus the producer's.
    assert kernel.tensor_maps == {"q": ("q_len", "q_heads", 128), "k": ("k_len", "kv_heads", 64),
                                  "v": ("k_len", "kv_heads", 64)}
    assert kernel.threads == 128 + 128 // 64 * 128
    groups, _ = ku.group_units(list(units.values()))
    assert set(groups[("bf16", 64, True, 128, 64, "warpgroup", 2)]) == {"forward", "backward"}


@pytest.mark.skipif(not HAVE_COMPILER, reason="needs build/bin/weft-compile and ptxas")
def test_install_and_weft_compile_take_the_forward_mma(tmp_path, monkeypatch):
    rows = [{"block_q": 128, "block_k": 64, "mma": "warpgroup", "fwd_ms": 1.0},
            {"block_q": 64, "block_k": 128, "mma": "warp", "fwd_ms": 2.0, "bwd_ms": 2.0}]
    table = {"format_version": at.TABLE_FORMAT_VERSION,
             "entries": [at.table_entry("sm_90a", "bf16", 64, True, rows)]}
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    target = tmp_path / "bench" / "attention_tuning.json"
    target.parent.mkdir()
    monkeypatch.setattr(at, "TABLE", str(target))
    at.install(str(path))
    ir = tmp_path / "a.mlir"
    ir.write_text(at.config_ir("bf16", 64, True))
    subprocess.run([WEFT_COMPILE, str(ir), "--emit=kernels", "-o", str(tmp_path / "u"),
                    f"--tuning-table={target}"], check=True)
    fwd = json.loads((tmp_path / "u" / "tune_attention_0.json").read_text())
    bwd = json.loads((tmp_path / "u" / "tune_attention_grad_0.json").read_text())
    assert fwd["config"]["mma"] == "warpgroup" and fwd["kernels"][0]["name"].endswith("_wgmma_s2")
    assert fwd["config"]["stages"] == 2 and "stages" not in bwd["config"]
    assert (bwd["config"]["mma"], bwd["config"]["block_q"]) == ("warp", 64)
    bad = tmp_path / "bad.json"
    entry = dict(table["entries"][0])
    entry["backward"] = dict(entry["backward"], mma="tensor")
    bad.write_text(json.dumps({"format_version": 1, "entries": [entry]}))
    with pytest.raises(at.TuneError, match=r"backward: \"mma\" must be \"warp\" or"):
        at.install(str(bad))


def test_time_a_wgmma_candidate_with_fake_kernels(monkeypatch):
    """run's per-candidate step without a GPU: a wgmma candidate times its
    forward, backward and forward+backward (both Hopper units of its
    directory); wrong gradients cost only its backward; a candidate whose
    backward weft-compile refused still times its forward alone."""
    torch = pytest.importorskip("torch")
    units = [unit("forward", 128, 64, True, 64, mma="warpgroup"),
             unit("backward", 128, 64, True, 64, mma="warpgroup")]
    built = []

    class FakeWeft:
        def __init__(self, rt, cache, fwd, bwd, shape, *inputs):
            built.append((fwd.name, bwd.name if bwd is not None else None))

        def forward(self):
            return "fwd"

        def backward(self):
            return "bwd"

        def forward_backward(self):
            return "fwdbwd"

    reasons = []
    monkeypatch.setattr(ku, "load_units", lambda root: units)
    monkeypatch.setattr(wa, "WeftAttention", FakeWeft)
    monkeypatch.setattr(wa, "sanity_errors", lambda weft, ref, backward: (
        {"out": (0.001, 0.02), "dq": (0.001, 0.02)}, list(reasons)))
    monkeypatch.setattr(wa, "do_bench_ms", lambda fn: {"fwd": 1.0, "bwd": 2.0,
                                                       "fwdbwd": 3.0}[fn()])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    record = {"dtype": "bf16", "head_dim": 64, "causal": True, "block_q": 128, "block_k": 64,
              "mma": "warpgroup", "stages": 2, "dir": "x", "forward": {"status": "ok"},
              "backward": {"status": "ok"}}
    row = at.time_candidate(None, None, "root", record, None, (), None)
    assert built == [("u_forward_128_64_wgmma", "u_backward_128_64_wgmma")]
    assert (row["mma"], row["stages"], row["fwd_ms"], row["bwd_ms"], row["fwdbwd_ms"]) == \
        ("warpgroup", 2, 1.0, 2.0, 3.0)
    assert "bwd_skip" not in row and "fwd_skip" not in row
    reasons.append("dq err 0.5 > 0.02")
    row = at.time_candidate(None, None, "root", record, None, (), None)
    assert row["fwd_ms"] == 1.0 and row["bwd_skip"].startswith("wrong: dq")
    assert "fwdbwd_ms" not in row and "bwd_ms" not in row
    # A backward that did not compile (e.g. its shared memory): forward only.
    del units[1]
    reasons.clear()
    refused = dict(record, backward={"status": "failed", "reason": "needs 262200 bytes"})
    row = at.time_candidate(None, None, "root", refused, None, (), None)
    assert built[-1] == ("u_forward_128_64_wgmma", None)
    assert row["fwd_ms"] == 1.0 and row["bwd_skip"] == "failed: needs 262200 bytes"
    assert "fwdbwd_ms" not in row and "bwd_ms" not in row
    # The same on a warp candidate: no stages in its row.
    units[:] = [unit("forward", 128, 64, True, 64), unit("backward", 128, 64, True, 64)]
    row = at.time_candidate(None, None, "root", dict(record, mma="warp"), None, (), None)
    assert row["fwd_ms"] == 1.0 and row["bwd_ms"] == 2.0 and "stages" not in row


def test_bench_times_the_forward_schedules_side_by_side(tmp_path):
    # One directory with the serial, overlap and ping-pong forwards of one
    # tile config and a single (serial) backward: three variants, each
    # forward paired with that backward; the table's "schedule" picks one.
    fwd = [unit("forward", 128, 128, mma="warpgroup", stages=3, schedule=s)
           for s in ("serial", "overlap", "pingpong")]
    bwd3 = unit("backward", 128, 128, mma="warpgroup", stages=3)
    groups, notes = ku.group_units(fwd + [bwd3])
    assert not notes
    variants, notes = ab.weft_variants(groups, "bf16", 128, False)
    assert not notes
    assert sorted(v[0] for v in variants) == [
        "fwd q128k128 wgmma s3 ov / bwd q128k128 wgmma s3",
        "fwd q128k128 wgmma s3 pp / bwd q128k128 wgmma s3", "q128k128 wgmma s3"]
    assert {v[1].schedule for v in variants} == {"serial", "overlap", "pingpong"}
    assert all(v[2] is bwd3 for v in variants)
    # The tuned tiles (forward s3, backward s2, as the shipped table), once
    # per schedule with --schedules.
    bwd = unit("backward", 128, 128, mma="warpgroup")
    groups, notes = ku.group_units(fwd + [bwd])
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"entries": [
        {"arch": "sm_90a", "dtype": "bf16", "head_dim": 128, "causal": False,
         "forward": {"block_q": 128, "block_k": 128, "mma": "warpgroup", "stages": 3,
                     "schedule": "overlap"},
         "backward": {"block_q": 128, "block_k": 128, "mma": "warpgroup"}}]}))
    tuning = ab.load_tuning(str(table))
    assert tuning[("sm_90a", "bf16", 128, False)][0] == (128, 128, "warpgroup", 3, "overlap")
    variants, notes = ab.weft_variants(groups, "bf16", 128, False, tuning)
    assert not notes and len(variants) == 1
    assert variants[0][0] == "tuned fwd q128k128 wgmma s3 ov / bwd q128k128 wgmma"
    assert variants[0][1].schedule == "overlap" and variants[0][2] is bwd
    variants, notes = ab.weft_variants(groups, "bf16", 128, False, tuning,
                                       ["serial", "overlap", "pingpong"])
    assert not notes
    assert [v[0] for v in variants] == [
        f"tuned fwd q128k128 wgmma s3{tag} / bwd q128k128 wgmma" for tag in ("", " ov", " pp")]
    assert [v[1].schedule for v in variants] == ["serial", "overlap", "pingpong"]
    variants, notes = ab.weft_variants(ku.group_units(fwd[:1] + [bwd])[0], "bf16", 128, False,
                                       tuning, ["serial", "pingpong"])
    assert [v[1].schedule for v in variants] == ["serial"]
    assert notes == ["bf16 d128 full: the table's forward q128k128 wgmma s3 pp unit is not in "
                     "the kernels directory"]


def test_autotune_tries_the_forward_schedules():
    # --schedules: a forward-only twin of every wgmma candidate per schedule,
    # ping-pong at block_q 128 only; the default sweep is unchanged.
    base = at.candidate_keys()
    keys = at.candidate_keys(schedules=("overlap", "pingpong"))
    wgmma = [k for k in base if k[5] == "warpgroup"]
    assert len(keys) == len(base) + len(wgmma) + len([k for k in wgmma if k[3] == 128])
    assert [ku.config_name(k) for k in at.candidate_keys(
        "bf16-d128-full-q128k128-wgmma-s3", ("overlap", "pingpong"))] == [
        "bf16-d128-full-q128k128-wgmma-s3", "bf16-d128-full-q128k128-wgmma-s3-ov",
        "bf16-d128-full-q128k128-wgmma-s3-pp"]
    assert not [k for k in keys if ku.key_schedule(k) == "pingpong" and k[3] != 128]
    command = at.compile_command("wc", "IR", "DIR", keys[-1])
    assert "--attention-schedule=pingpong" in command
    assert not [a for a in at.compile_command("wc", "IR", "DIR", base[-1]) if "schedule" in a]
    # The fastest forward may be a schedule's (its row has no backward).
    rows = [{"block_q": 128, "block_k": 128, "mma": "warpgroup", "stages": 3, "fwd_ms": 1.1,
             "bwd_ms": 4.0},
            {"block_q": 128, "block_k": 128, "mma": "warpgroup", "stages": 3,
             "schedule": "overlap", "fwd_ms": 1.0, "bwd_skip": "skipped: serial twin's"}]
    fwd, bwd = at.choose(rows)
    assert fwd == {"block_q": 128, "block_k": 128, "mma": "warpgroup", "stages": 3,
                   "schedule": "overlap", "ms": 1.0}
    assert bwd == {"block_q": 128, "block_k": 128, "mma": "warpgroup", "stages": 3, "ms": 4.0}
    assert at.row_label(fwd) == "q128k128 wgmma s3 ov"
    fwd, _ = at.choose([rows[0], dict(rows[1], fwd_ms=1.2)])
    assert "schedule" not in fwd


@pytest.mark.skipif(not HAVE_COMPILER, reason="needs build/bin/weft-compile and ptxas")
def test_prepare_a_schedule_candidate(tmp_path):
    only = "bf16-d64-causal-q128k128-wgmma-pp"
    (record,) = at.prepare(str(tmp_path), only + "$", schedules=("pingpong",))["candidates"]
    assert record["schedule"] == "pingpong" and record["forward"]["status"] == "ok"
    assert record["backward"]["status"] == "skipped"
    (unit,) = ku.load_units(str(tmp_path / only))
    assert unit.direction == "forward" and unit.schedule == "pingpong"
    assert unit.kernels[0].name == "weft_attn_forward_bf16_d64_causal_q128_k128_wgmma_s2_pp"
    assert ku.config_name(unit.config_key) == only


def test_autotune_merges_a_partial_table():
    # install --merge: the new run's entries replace the installed ones of
    # the same configuration and join the rest; a note names the run.
    def entry(dtype, d, causal, bq):
        return {"arch": "sm_90a", "dtype": dtype, "head_dim": d, "causal": causal,
                "forward": {"block_q": bq, "block_k": 64}, "backward": {"block_q": bq,
                                                                        "block_k": 64}}
    installed = {"entries": [entry("bf16", 64, False, 128), entry("bf16", 256, False, 64)],
                 "notes": ["old"], "provenance": {"date": "2026-11-22"}}
    new = {"entries": [entry("bf16", 256, False, 128), entry("f16", 256, True, 128)],
           "provenance": {"date": "2026-11-28T10:00:00", "command": "run --only d256",
                          "device": "NVIDIA H100"}}
    merged = at.merge_tables(installed, new, "/x/d256.json")
    assert [(e["dtype"], e["head_dim"], e["causal"], e["forward"]["block_q"])
            for e in merged["entries"]] == [("bf16", 64, False, 128), ("bf16", 256, False, 128),
                                           ("f16", 256, True, 128)]
    assert merged["provenance"] == installed["provenance"] and merged["notes"][0] == "old"
    assert "2026-11-28: bf16 d256 full, f16 d256 causal merged from d256.json" in \
        merged["notes"][-1] and "NVIDIA H100" in merged["notes"][-1]
