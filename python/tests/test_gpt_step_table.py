"""Host-side logic of bench/gpt_step_bench.py (bench/gpt_step_table.py):
budgets from a memory report, component sums, torch kernel classes and the
SDPA backend, matching a torch.compile budget to a peak, the `budget` policy
against the cheapest fixed one, and the markdown, on made-up numbers."""
import pytest

from script_modules import load_script

t = load_script("bench/gpt_step_table.py")

REPORT = {"peak_bytes": 1000, "categories": {"parameters": 100, "optimizer_state": 200}}


def test_budgets_leave_fractions_of_the_activations():
    # 100 f32 masters + 200 moments + 50 for their bf16 copies.
    assert t.resident_bytes(REPORT) == 350
    assert t.budgets(REPORT) == {1.0: 1000, 0.5: 675, 0.3: 545}


def test_budgets_refuse_a_peak_at_the_resident_state():
    with pytest.raises(ValueError, match="not above the resident"):
        t.budgets({"peak_bytes": 350, "categories": REPORT["categories"]})


def timing():
    return {"entries": [
        {"kind": "gemm", "name": "gemm", "segment": "forward", "ms": 2.0},
        {"kind": "launch", "name": "weft_attn_forward_bf16_d128", "segment": "forward", "ms": 1.0},
        {"kind": "launch", "name": "weft_fused_gelu_35", "segment": "forward", "ms": 0.5},
        {"kind": "launch", "name": "weft_attn_backward_dq_bf16", "segment": "backward", "ms": 1.5},
        {"kind": "gemm", "name": "gemm", "segment": "backward", "ms": 4.0},
        {"kind": "event", "name": "record_event", "segment": "backward", "ms": 0.0},
        {"kind": "launch", "name": "weft_fused_convert_adamw_84", "segment": "optimizer", "ms": 0.7},
    ]}


def test_weft_breakdown_sums_components_and_gaps():
    b = t.weft_breakdown(timing(), wall_ms=10.0)
    assert b["gemm"] == 6.0 and b["attention"] == 2.5 and b["elementwise"] == 0.5
    assert b["optimizer"] == pytest.approx(0.7)
    assert b["kernels"] == pytest.approx(9.7) and b["gaps"] == pytest.approx(0.3)


@pytest.mark.parametrize("name,component", [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "gemm"),
    ("nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT", "gemm"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>", "attention"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop", "attention"),
    ("triton_per_fused_native_layer_norm_0", "other"),
    ("void at::native::vectorized_elementwise_kernel<4>", "other"),
])
def test_torch_kernel_classes(name, component):
    assert t.torch_component(name) == component


def test_torch_breakdown_per_step_and_backend():
    kernels = {"sm90_xmma_gemm_x": 30.0, "flash_fwd_kernel": 6.0, "triton_poi_fused_add": 3.0}
    assert t.torch_breakdown(kernels, 3) == {"gemm": 10.0, "attention": 2.0, "other": 1.0}
    assert t.sdpa_backend(kernels) == "flash"
    assert t.sdpa_backend(["cudnn_generated_fort_native_sdpa"]) == "cudnn"
    assert t.sdpa_backend(["fmha_cutlassF_bf16_aligned"]) == "efficient"
    assert t.sdpa_backend(["gemm"]).startswith("math")


def test_match_torch_budget_takes_the_fastest_run_not_above_target():
    sweep = [{"budget": 1.0, "peak_bytes": 900, "ms": 10}, {"budget": 0.5, "peak_bytes": 600, "ms": 11},
             {"budget": 0.2, "peak_bytes": 500, "ms": 13}, {"budget": 0.0, "error": "x"}]
    assert t.match_torch_budget(sweep, 650) == (sweep[1], True)
    assert t.match_torch_budget(sweep, 2000) == (sweep[0], True)
    # torch's peak is not monotonic in the budget: a slower run with a larger
    # peak that still fits is not the match.
    slow = sweep + [{"budget": 0.1, "peak_bytes": 950, "ms": 15}]
    assert t.match_torch_budget(slow, 2000) == (sweep[0], True)
    # Nothing fits: the smallest peak, marked as not meeting the target.
    assert t.match_torch_budget(sweep, 100) == (sweep[2], False)
    assert t.match_torch_budget([{"budget": 0.0, "error": "x"}], 100) == (None, False)


def test_budget_policy_against_the_cheapest_fixed_policy():
    runs = [{"policy": "budget", "ms": 40.0}, {"policy": "full", "ms": 48.0},
            {"policy": "selective", "ms": 41.0}, {"policy": "none", "ms": None}]
    c = t.budget_vs_fixed(runs)
    assert c == {"cheapest_fixed": "selective", "cheapest_fixed_ms": 41.0, "budget_ms": 40.0,
                 "budget_le_fixed": True, "same_package_as": []}
    runs[0]["ms"] = 42.0
    assert t.budget_vs_fixed(runs)["budget_le_fixed"] is False
    # The fixed policies whose package is the budget policy's, byte for byte.
    runs[0]["sha256"] = runs[2]["sha256"] = "abc"
    runs[1]["sha256"] = "def"
    assert t.budget_vs_fixed(runs)["same_package_as"] == ["selective"]
    assert t.budget_vs_fixed([{"policy": "budget", "ms": 1.0}])["budget_le_fixed"] is None


def test_markdown_has_every_budget_and_policy():
    gib = 2 ** 30
    runs = [{"policy": "budget", "ms": 40.0, "optimizer_ms": 3.0, "planned_above_resident": 2 * gib,
             "breakdown": t.weft_breakdown(timing(), 10.0)},
            {"policy": "none", "ms": None, "error": "does not fit"}]
    results = {"model": "m", "resident_bytes": 9 * gib, "activation_bytes": 3 * gib,
               "torch": {"eager": {"ms": 39.0, "peak_bytes": 2 * gib}},
               "budgets": [{"fraction": 0.5, "runs": runs, "choice": t.budget_vs_fixed(runs),
                            "torch_compile": {"ms": 41.0, "budget": 0.5, "peak_bytes": gib,
                                              "breakdown": {"gemm": 5.0, "attention": 2.0,
                                                            "other": 1.0}}}]}
    md = t.markdown(results)
    assert "| 50 % | budget | 40.00 | 3.00 | 2.00 |" in md
    assert "| 50 % | none | – (does not fit)" in md
    assert "| 50 % | 40.00 | – | – | None |" in md
    assert "| 50 % | 6.00 | 2.50 | 0.50 | 0.30 | 0.70 | 5.00 | 2.00 | 1.00 | 1.20 | 0.50 |" in md
