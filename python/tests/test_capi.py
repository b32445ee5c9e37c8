"""The compiler's C API through python/weft/capi.py: a package compiled in
memory is byte for byte weft-compile's for the same options, and errors come
back as exceptions carrying the diagnostics (file:line:col, the option and its
allowed values), never a crash."""
import os
import subprocess

import pytest

from harness import REPO, tool
from weft import capi

MODEL = os.path.join(REPO, "test", "Tools", "weft-run", "Inputs", "gpt_mean_square_bf16.mlir")

# (C API options, the weft-compile flags that say the same)
CASES = {
    "adamw": (dict(optimizer="adamw", tuning_table="none"),
              ["--optimizer=adamw", "--tuning-table=none"]),
    # weight_copies=auto: TrainingCompiler's search over split, carried and
    # converted copies, the same trials in both.
    "auto_copies": (dict(optimizer="adamw", weight_copies="auto", tuning_table="none"),
                    ["--optimizer=adamw", "--weight-copies=auto", "--tuning-table=none"]),
    "fused_budget": (dict(optimizer="adamw", fuse_elementwise=True, remat="budget",
                          memory_budget="4.5MiB"),
                     ["--optimizer=adamw", "--fuse-elementwise", "--remat=budget",
                      "--memory-budget=4.5MiB"]),
    # Parameters bound by the caller: the package's BOUND section.
    "bound_params": (dict(bind_arguments="params", tuning_table="none"),
                     ["--bind-arguments=params", "--tuning-table=none"]),
}


@pytest.fixture
def context():
    try:
        capi.load()
    except OSError as error:
        pytest.skip(str(error))
    with capi.Context() as ctx:
        yield ctx


def model_text():
    with open(MODEL) as f:
        return f.read()


@pytest.mark.parametrize("case", sorted(CASES))
def test_package_matches_weft_compile(context, case, tmp_path):
    options, flags = CASES[case]
    module = context.parse(model_text(), name=MODEL)
    package = module.compile_training_step("forward", **options)
    reference = tmp_path / "step.weftpkg"
    subprocess.run([tool("weft-compile"), MODEL, "--entry", "forward", "--train",
                    "--target=sm_90a", "--emit=package", *flags, "-o", str(reference)],
                   check=True, capture_output=True)
    assert package == reference.read_bytes()
    # The step was built on a copy: the module is still the forward graph.
    assert "forward_step" not in str(module)


def test_parse_error_carries_location(context):
    text = model_text().replace("= weft.", "= weft.bogus_", 1)
    with pytest.raises(capi.CompileError) as error:
        context.parse(text, name="gpt.mlir")
    assert error.value.status == capi.ERROR_PARSE
    assert "gpt.mlir:" in error.value.diagnostics
    assert "error: custom op 'weft.bogus_" in error.value.diagnostics
    # The location is line:col of the bad op.
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "weft.bogus_" in row)
    col = text.splitlines()[line - 1].index("weft.bogus_") + 1
    assert f"gpt.mlir:{line}:{col}: error:" in error.value.diagnostics


def test_bad_option_names_allowed_values(context):
    module = context.parse(model_text())
    with pytest.raises(ValueError) as error:
        module.compile_training_step("forward", remat="sometimes")
    assert isinstance(error.value, capi.InvalidOptionError)
    assert ("remat must be one of none, full, selective, block, uniform, budget; "
            "got 'sometimes'") in str(error.value)
    with pytest.raises(ValueError, match="target must be a GPU architecture"):
        module.compile_training_step("forward", target="h100")
    with pytest.raises(ValueError, match="no function @backward with a body"):
        module.compile_training_step("backward")
    with pytest.raises(ValueError, match="unknown option 'budget'"):
        module.compile_training_step("forward", budget="1GiB")


def test_budget_too_small_is_a_compile_error(context):
    module = context.parse(model_text(), name="gpt.mlir")
    with pytest.raises(capi.CompileError) as error:
        module.compile_training_step("forward", optimizer="adamw", memory_budget="1KiB",
                                     tuning_table="none")
    assert error.value.status == capi.ERROR_COMPILE
    assert "exceeds the memory budget of 1024 bytes" in error.value.diagnostics


def test_bound_parameters_leave_the_arena(context):
    """bind_arguments=params: the arena shrinks by at least the parameters'
    bytes minus what their gradients' plan can reuse, and the package marks
    each parameter argument bound (weft-run --check counts them)."""
    module = context.parse(model_text(), name=MODEL)
    plain = module.compile_training_step("forward", tuning_table="none")
    bound = module.compile_training_step("forward", tuning_table="none", bind_arguments="params")
    from weft import runtime as rt
    try:
        steps = [rt.prepare_step(p, 90) for p in (plain, bound)]
    except OSError as error:
        pytest.skip(str(error))
    params = [b for b in steps[0].buffers() if b.role == "parameter" and b.arg >= 0]
    bound_buffers = [b for b in steps[1].buffers() if b.bound]
    assert sorted(b.arg for b in bound_buffers) == sorted(b.arg for b in params)
    assert all(b.offset == 0 for b in bound_buffers)
    arenas = [s.memory_info()["planned_bytes"] for s in steps]
    # Parameters live through the whole step: none of their bytes was reused.
    assert arenas[0] - arenas[1] >= sum(b.size for b in params) - 256 * len(params)
    for step in steps:
        step.free()
    with pytest.raises(capi.InvalidOptionError, match="bind-arguments must be none, params or "
                                                      "all; got 'some'"):
        module.compile_training_step("forward", bind_arguments="some")


def test_version():
    try:
        assert capi.version() == "0.5.0"
    except OSError as error:
        pytest.skip(str(error))
