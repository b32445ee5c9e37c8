"""Host-side parts of bench/tp_sp_bench.py (and bench/tp_sp_phases.py): which
gradient-check instances a tp splits, weft-run's per-rank lines, the memory
equation, the markdown rows, and run --dry-run's commands for tp 2 and 4."""
import json
import re
import os
import types

from script_modules import REPO, load_script

b = load_script("bench/tp_sp_bench.py")
ph = b.ph
MIB = 2**20


def test_instances_follow_the_head_counts():
    assert b.small_model(2) == ("small", b.SMALL)
    name, config = b.small_model(4)
    assert name == "small_h4" and config["heads"] == config["kv_heads"] == 4
    assert config["hidden"] // config["heads"] == b.SMALL["hidden"] // b.SMALL["heads"]
    # LLaMA's 16 query / 4 kv heads split at 4; at 8 its kv heads are replicated.
    assert [n for n, _ in b.models_at(4, False)] == ["small_h4", "llama"]
    assert b.fits(b.LLAMA, 8) and not b.fits(b.LLAMA, 32)
    assert [n for n, _ in b.models_at(2, True)] == ["small", "llama", "mid"]


def test_rank_lines():
    out = ("[rank 1] step 1/2 loss 21.5 (40.0 ms)\n[rank 0] step 1/2 loss 21.5 (41.0 ms)\n"
           "[rank 0] step 2/2 loss 21.4 (39.0 ms)\n"
           '[rank 0] memory-json: {"planned": 1, "before": 2}\n')
    assert ph.rank_steps(out, 0) == [(21.5, 41.0), (21.4, 39.0)]
    assert ph.rank_steps(out, 1) == [(21.5, 40.0)]
    assert ph.rank_memory(out) == {0: {"planned": 1, "before": 2}}
    assert ph.rank_steps("step 1/1 (7.5 ms)\n") == [(None, 7.5)]
    startup = ("[rank 1] start-up: load 3.25 s (package, rendezvous, communicators, modules, "
               "GEMM algorithms), state 0.50 s\n"
               "start-up: load 1.00 s (package, rendezvous, communicators, modules, "
               "GEMM algorithms), state 2.00 s\n")
    assert ph.rank_startup(startup) == {1: (3.25, 0.5), 0: (1.0, 2.0)}


def rank(context=1000, nccl=300, planned=3000, extra_arena=2, load=4, buffers=480):
    """--print-memory's record of a rank (MiB), the GPU's total 80000 MiB."""
    before = context + nccl
    after_arena = before + planned + extra_arena
    return {k: v * MIB for k, v in dict(
        planned=planned, before=before, after_arena=after_arena, after_load=after_arena + load,
        peak=after_arena + load + buffers, total=80000, context=context, nccl_init=nccl).items()}


def test_memory_equation_terms_and_gap():
    # 400 MiB of the GPU in use before the launch (another process): not this run's.
    rows = ph.memory_equation({0: rank()}, [(80000 - 400) * MIB])
    r = rows[0]
    assert (r["context"], r["nccl_init"], r["planned"], r["load"], r["nccl_buffers"]) == \
        (600 * MIB, 300 * MIB, 3000 * MIB, 4 * MIB, 480 * MIB)
    assert r["in_use"] == (600 + 300 + 3002 + 4 + 480) * MIB
    # The gap is the arena's allocation over the plan: the baseline cancels.
    assert abs(r["gap"] - 2 / 4386) < 1e-12
    assert ph.memory_equation({0: rank()}, [80000 * MIB])[0]["in_use"] == 4786 * MIB
    # A one-GPU record has no communicators: the context is all before the arena.
    one = {k: v for k, v in rank(nccl=0, buffers=0).items() if k not in ("context", "nccl_init")}
    r = ph.memory_equation({0: one}, None)[0]
    assert r["context"] == 1000 * MIB and r["nccl_init"] == 0 and r["baseline_used"] is None
    assert ph.equation_rows("tp2", {0: rows[0]})[0].startswith("| tp2 | 0 | 600.0 | 300.0 |")


def test_markdown_ratios_and_efficiency():
    eq = ph.memory_equation({0: rank()}, None)
    weft = {k: {"ms": ms, "planned_gib": 1.0, "in_use_gib": 1.5, "equation": eq}
            for k, ms in (("one", 80.0), ("tp2", 44.0), ("tp2sp", 45.0))}
    torch = {"runs": {"tp_compiled": {"ms": 50.0, "peak_gib": 4.0},
                      "tp_sp_compiled_async": {"ms": 48.0, "peak_gib": 3.4},
                      "tp_sp": {"error": "x"}}}
    md = ph.markdown({"tps": [2], "weft": weft, "torch": {"2": torch},
                      "megatron": {"2": {"runs": {"tp": {"ms": 70.0, "peak_gib": 5.0}}}}},
                     {"tp_compiled": {"ms": 90.0}}, "stored")
    assert "| Weft TP, tp = 2 | 2 | 44.00 | 1.00 | 1.50 | 0.880 | 90.9 % |" in md
    assert "| Weft TP+SP, tp = 2 | 2 | 45.00 | 1.00 | 1.50 | 0.938 | 88.9 % |" in md
    assert ("| PyTorch TP compiled, tp = 2 | 2 | 50.00 | – | 4.00 (max allocated) | – | "
            "90.0 % |") in md
    assert "Megatron-core tp, tp = 2 | 2 | 70.00" in md and "error" not in md


def test_dry_run_prints_every_phase_at_tp_4_then_2(tmp_path, capsys):
    models = {"2": ["small", "llama"], "4": ["small_h4", "llama"]}
    configs = {"anchor": b.ANCHOR, "small": b.SMALL, "small_h4": b.small_model(4)[1],
               "llama": b.LLAMA}
    (tmp_path / "config.json").write_text(json.dumps(
        {"tps": [2, 4], "tp": 4, "models": models, "configs": configs}))
    (tmp_path / "torch_one_anchor.json").write_text(json.dumps(
        {"runs": {"tp_compiled": {"ms": 78.9}}}))
    args = types.SimpleNamespace(dir=str(tmp_path), budget=540, only=None, with_phases="launch",
                                 tp=None, out=None, dry_run=True)
    assert b.run(args) == 0
    out = capsys.readouterr().out
    runs = [l for l in out.splitlines() if l.startswith("DRY")]
    assert any("CUDA_VISIBLE_DEVICES=0,1,2,3" in l and "anchor_tp4sp.weftpkg --nproc-per-node 4"
               in l and "--print-memory" in l for l in runs)
    assert any("small_h4_tp4sp.weftpkg --nproc-per-node 4" in l for l in runs)
    assert any("tp_sp_anchors.py --seq 8192" in l and "--nproc-per-node 2" in l for l in runs)
    assert any("collective_bench.py" in l and "--nproc-per-node 4" in l for l in runs)
    assert "megatron tp4" in out and "launch tp4" in out
    assert out.index("time tp4") < out.index("time tp2") < out.index("torch tp4")
    # One-GPU timing once; nothing written to DIR.
    assert sum("anchor_one.weftpkg" in l for l in runs) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "torch_one_anchor.json"]


def test_dry_run_of_chosen_variants(tmp_path, capsys):
    """--variants keeps the named packages of the grad and time phases, and
    the one-GPU time only when 'one' is named."""
    models = {"2": ["small", "llama"]}
    configs = {"anchor": b.ANCHOR, "small": b.SMALL, "llama": b.LLAMA}
    (tmp_path / "config.json").write_text(json.dumps(
        {"tps": [2], "tp": 2, "models": models, "configs": configs}))
    (tmp_path / "torch_one_anchor.json").write_text(json.dumps(
        {"runs": {"tp_compiled": {"ms": 78.9}}}))
    args = types.SimpleNamespace(dir=str(tmp_path), budget=540, only="time", with_phases=None,
                                 tp=None, out=None, dry_run=True, variants="tp2sp,tp2spnolf")
    assert b.run(args) == 0
    runs = [l for l in capsys.readouterr().out.splitlines() if l.startswith("DRY")]
    timed = sorted(re.search(r"(anchor_\w+)\.weftpkg", l).group(1) for l in runs)
    assert timed == ["anchor_tp2sp", "anchor_tp2spnolf"], runs


def test_dry_run_of_sm_margins(tmp_path, capsys):
    """--gemm-sm-margins times each chosen package again with weft-run
    --gemm-sm-margin N, and the table names the margin beside the variant."""
    (tmp_path / "config.json").write_text(json.dumps(
        {"tps": [2], "tp": 2, "models": {"2": ["small"]},
         "configs": {"anchor": b.ANCHOR, "small": b.SMALL}}))
    (tmp_path / "torch_one_anchor.json").write_text(json.dumps(
        {"runs": {"tp_compiled": {"ms": 78.9}}}))
    args = types.SimpleNamespace(dir=str(tmp_path), budget=540, only="time", with_phases=None,
                                 tp=None, out=None, dry_run=True, variants="tp2,tp2sp",
                                 gemm_sm_margins="8,16")
    assert b.run(args) == 0
    runs = [l for l in capsys.readouterr().out.splitlines() if l.startswith("DRY")]
    timed = sorted((re.search(r"(anchor_\w+)\.weftpkg", l).group(1),
                    (re.search(r"--gemm-sm-margin (\d+)", l) or [None, "-"])[1]) for l in runs)
    assert timed == [("anchor_tp2", "-"), ("anchor_tp2", "16"), ("anchor_tp2", "8"),
                     ("anchor_tp2sp", "-"), ("anchor_tp2sp", "16"), ("anchor_tp2sp", "8")], runs
    eq = ph.memory_equation({0: rank()}, None)
    weft = {k: {"ms": ms, "planned_gib": 1.0, "in_use_gib": 1.5, "equation": eq}
            for k, ms in (("one", 80.0), ("tp2sp", 45.0), ("tp2sp@m8", 44.0))}
    md = ph.markdown({"tps": [2], "weft": weft, "torch": {}})
    assert "| Weft TP+SP, --gemm-sm-margin 8, tp = 2 | 2 | 44.00 |" in md


def test_adamw_reference_is_the_interpreters_step(tmp_path):
    """tp_sp_adam's float64 PyTorch run (AdamW at weft-compile's defaults,
    blocks recomputed, attention a few heads at a time) takes the inputs in
    the order of weft's AdamW step (batch, step counter, seed) and matches
    the reference interpreter's three steps of the same state, for the
    anchor's architecture and a LLaMA-style GQA block."""
    import subprocess
    import torch
    from harness import tool_path
    from weft import npz
    adam = load_script("bench/tp_sp_adam.py")
    gsb = b.gsb
    tiny = dict(b.ANCHOR, layers=2, hidden=64, heads=2, kv_heads=2, seq=32, ffn_hidden=128,
                dtype="f64")
    llama = dict(tiny, norm="rmsnorm", mlp="swiglu", rope=True, heads=8, kv_heads=2)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    for name, config in (("gpt", tiny), ("llama", llama)):
        ir, step = tmp_path / f"{name}.mlir", tmp_path / f"{name}_step.mlir"
        gsb.generate(config, str(ir), env)
        subprocess.run([tool_path("weft-compile"), str(ir), "--entry", "forward", "--train",
                        "--optimizer=adamw", "-o", str(step)], check=True)
        state, data = adam.step_inputs(config, str(tmp_path), name)
        start, batch = npz.load(state), npz.load(data)
        n, current, losses = len(start), dict(start), []
        for i in range(n):  # the moments: weft-run --init-state's zeros
            current[f"arg{n + i}"] = current[f"arg{2 * n + i}"] = torch.zeros_like(start[f"arg{i}"])
        counter = f"arg{3 * n + len(batch) - 2}"
        for s in range(adam.STEPS):
            inputs = {**current, **batch, f"arg{3 * n}": batch[f"arg{3 * n}"][s],
                      counter: batch[counter][s]}
            npz.save(tmp_path / "in.npz", {k: v.double() if v.is_floating_point() else v
                                           for k, v in inputs.items()})
            subprocess.run([tool_path("weft-run"), str(step), "--entry", "forward_step",
                            "--inputs", str(tmp_path / "in.npz"), "--outputs",
                            str(tmp_path / "out.npz")], check=True)
            out = npz.load(tmp_path / "out.npz")
            losses.append(float(out["res0"]))
            current = {f"arg{i}": out[f"res{i + 1}"] for i in range(3 * n)}
        ref_losses, params = adam.torch_steps(config, state, data, f64=True)
        assert ref_losses == torch.tensor(losses).tolist() or max(
            abs(a - b) for a, b in zip(ref_losses, losses)) < 1e-12
        for i, p in enumerate(params):
            update = p - start[f"arg{i}"].double()
            assert (current[f"arg{i}"].double() - p).abs().max() <= 1e-8 * update.abs().max()
        # The rule rejects an update off by more than 2x torch bf16's error.
        ref = {"f64_losses": ref_losses, "bf_losses": ref_losses,
               "f64": [torch.ones(3)], "bf": [torch.ones(3) * 1.01]}
        assert adam.compare(ref, ref_losses, [torch.ones(3) * 1.015], None)["ok"]
        assert not adam.compare(ref, ref_losses, [torch.ones(3) * 1.03], None)["ok"]


def test_dry_run_of_the_copy_engine_phase(tmp_path, capsys):
    """The ce phase: the anchor on both engines (and its copy-engine-chunked
    package), the small model's tpTsp and tpTspc2 on both engines."""
    models = {"4": ["small_h4", "llama"]}
    configs = {"anchor": b.ANCHOR, "small_h4": b.small_model(4)[1], "llama": b.LLAMA}
    (tmp_path / "config.json").write_text(json.dumps(
        {"tps": [4], "tp": 4, "models": models, "configs": configs}))
    (tmp_path / "torch_one_anchor.json").write_text(json.dumps(
        {"runs": {"tp_compiled": {"ms": 78.9}}}))
    args = types.SimpleNamespace(dir=str(tmp_path), budget=540, only="ce", with_phases=None,
                                 tp=None, out=None, dry_run=True)
    assert b.run(args) == 0
    runs = [l for l in capsys.readouterr().out.splitlines() if l.startswith("DRY")]
    for package, engine in [("tp4", "nccl"), ("tp4sp", "nccl"), ("tp4sp", "copy-engine"),
                            ("tp4spce", "copy-engine"), ("tp4spce", "nccl")]:
        assert sum(f"anchor_{package}.weftpkg --nproc-per-node 4" in l and
                   f"--collectives {engine}" in l for l in runs) == 1, (package, engine)
    for variant in ("tp4sp", "tp4spc2"):
        for engine in ("nccl", "copy-engine"):
            assert any(f"small_h4_{variant}.weftpkg --nproc-per-node 4" in l and
                       f"small_h4_{variant}_{engine}_out.npz.json" in l and
                       f"--collectives {engine}" in l for l in runs), (variant, engine)


def test_dry_run_of_the_copy_engine_faults(tmp_path, capsys):
    models = {"2": ["small"]}
    (tmp_path / "config.json").write_text(json.dumps(
        {"tps": [2], "tp": 2, "models": models, "configs": {"anchor": b.ANCHOR, "small": b.SMALL}}))
    (tmp_path / "torch_one_anchor.json").write_text(json.dumps(
        {"runs": {"tp_compiled": {"ms": 78.9}}}))
    args = types.SimpleNamespace(dir=str(tmp_path), budget=540, only="cefault", with_phases=None,
                                 tp=None, out=None, dry_run=True)
    assert b.run(args) == 0
    out = capsys.readouterr().out
    assert "DRY [kill_test_ce]" in out and "DRY [hang_test_ce]" in out
