"""Host-side GEMM pieces on the CPU: the ctypes binding's structs against the
library (field by field, through the messages of weft_gemm_check), the
library-missing and no-driver paths, and the GPU check script
(test/gpu/gemm_check.py): its float64 reference against an explicit loop, its
verdicts, and whole cases run against a fake runtime that implements
weft_gemm_run's contract on CPU memory from the raw addresses it is given."""
import ctypes
import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from weft import runtime as rt

from script_modules import REPO, load_script
from weft.gpu.poison import Poisoned

gc = load_script("test/gpu/gemm_check.py")

needs_library = pytest.mark.skipif(
    not os.path.exists(rt.library_path()),
    reason=f"{rt.library_path()} is not built (ninja -C build weft_runtime_shared)")


def run_isolated(code, **env):
    environment = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                          capture_output=True, text=True, timeout=60)


# ---- the binding ------------------------------------------------------------

@needs_library
def test_struct_sizes_match_the_library():
    assert ctypes.sizeof(rt.GemmDesc) == rt.gemm_desc_size() == 72
    assert ctypes.sizeof(rt.GemmAlgo) == rt.gemm_algo_size() == 68


@needs_library
@pytest.mark.parametrize("field, value, expected", [
    ("m", -2, "m=-2 n=130 k=61"),
    ("n", 0, "m=77 n=0 k=61"),
    ("k", -9, "n=130 k=-9"),
    ("batch", 0, "batch must be >= 1, got 0"),
    ("trans_a", 5, "got 5 and 0"),
    ("trans_b", 3, "got 0 and 3"),
    ("dtype", 1, "dtype f32 (1) is not supported"),
    ("epilogue", 9, "epilogue 9 is not a weft_gemm_epilogue"),
    ("stride_a", 17, "stride_a=17 is smaller"),
    ("stride_b", 18, "stride_b=18 is smaller"),
    ("stride_c", 19, "stride_c=19 is smaller"),
    ("stride_d", 20, "stride_d=20 is smaller"),
])
def test_every_field_reaches_the_library(field, value, expected):
    # The C side reads each field where ctypes wrote it: a bad value set
    # through the Structure comes back named in the library's message.
    desc = rt.gemm_desc(77, 130, 61, "bf16", batch=3, beta=1.0)
    rt.gemm_check(desc)
    setattr(desc, field, value)
    with pytest.raises(rt.WeftError) as error:
        rt.gemm_check(desc)
    assert error.value.status == rt.ERROR_INVALID_ARGUMENT
    assert expected in error.value.message


def test_desc_defaults_and_names():
    desc = rt.gemm_desc(4, 5, 6, "f16", batch=2, trans_b=True, epilogue="bias_gelu", alpha=0.5)
    assert (desc.stride_a, desc.stride_b, desc.stride_c, desc.stride_d) == (24, 30, 20, 20)
    assert (desc.trans_a, desc.trans_b, desc.dtype, desc.epilogue) == (0, 1, 3, 3)
    assert desc.alpha == 0.5 and desc.beta == 0.0
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        rt.gemm_desc(1, 1, 1, "fp8")
    with pytest.raises(ValueError, match="epilogue 'relu'"):
        rt.gemm_desc(1, 1, 1, epilogue="relu")
    with pytest.raises(ValueError, match="m must be a 32-bit int"):
        rt.gemm_desc(2**31, 1, 1)


def test_algo_bytes_round_trip():
    raw = bytes(range(64))
    algo = rt.GemmAlgo.from_raw(raw)
    assert algo.raw() == raw and algo.valid == 1
    with pytest.raises(ValueError, match="64 bytes, got 63"):
        rt.GemmAlgo.from_raw(raw[:63])


@needs_library
def test_missing_cublaslt_names_the_path():
    done = run_isolated("""
        from weft import runtime as rt
        try:
            rt.gemm_library_version()
        except rt.WeftError as e:
            print(e.status_name)
            print(e.message)
    """, WEFT_CUBLASLT="/nonexistent/libcublasLt.so")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("WEFT_ERROR_LIBRARY_MISSING\n")
    assert "/nonexistent/libcublasLt.so: cannot open shared object file" in done.stdout


@needs_library
def test_select_without_a_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a driver library is present")
    except OSError:
        pass
    desc = rt.gemm_desc(64, 64, 64)
    with pytest.raises(rt.WeftError) as error:
        rt.gemm_select(desc)
    # cuBLASLt is installed here (loaded first); else its absence is named.
    assert error.value.status_name in ("WEFT_ERROR_DRIVER_MISSING", "WEFT_ERROR_LIBRARY_MISSING")


# ---- the GPU check script's host-side parts --------------------------------

def test_sweep_covers_the_brief():
    cases = gc.sweep()
    assert len(cases) == 2 * 4 * 4 * 2 * 4
    assert len({c.name for c in cases}) == len(cases)
    assert {(c.m, c.n, c.k) for c in cases} == set(gc.SHAPES)
    assert {(c.trans_a, c.trans_b) for c in cases} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    # bgrad_a has its own checks (batch 1 only): bias_grad_checks.
    assert {c.epilogue for c in cases} | {"bgrad_a"} == set(rt.GEMM_EPILOGUES)
    assert {c.batch for c in cases} == {1, 3}


def gelu_tanh(x):
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def loop_reference(case, inputs):
    """The case's op element by element from the flat buffers, in Python floats."""
    a, b = inputs["a"].double().tolist(), inputs["b"].double().tolist()
    c = inputs["c"].double().tolist() if inputs["c"] is not None else None
    bias = inputs["bias"].double().tolist() if inputs["bias"] is not None else None
    m, n, k = case.m, case.n, case.k
    out = torch.zeros(case.batch, m, n, dtype=torch.float64)
    for i in range(case.batch):
        for row in range(m):
            for col in range(n):
                total = 0.0
                for l in range(k):
                    x = a[i * case.stride("a") + (l * m + row if case.trans_a else row * k + l)]
                    y = b[i * case.stride("b") + (col * k + l if case.trans_b else l * n + col)]
                    total += x * y
                total *= case.alpha
                if c is not None:
                    total += case.beta * c[i * case.stride("c") + row * n + col]
                if bias is not None:
                    total += bias[col]
                out[i, row, col] = gelu_tanh(total) if case.gelu else total
    return out


@pytest.mark.parametrize("case", [
    gc.Case("bf16", 3, 5, 4, 0, 0, 1, "none"),
    gc.Case("f16", 3, 5, 4, 1, 0, 3, "bias_gelu"),
    gc.Case("bf16", 4, 2, 6, 0, 1, 3, "gelu"),
    gc.Case("f16", 2, 6, 3, 1, 1, 1, "bias"),
    gc.Case("bf16", 2, 6, 3, 1, 1, 1, "bias_gelu"),
])
def test_reference_matches_the_loop(case):
    inputs = gc.make_inputs(case, "cpu")
    expected = loop_reference(case, inputs)
    assert torch.allclose(gc.torch_op(case, inputs, torch.float64), expected, rtol=1e-12,
                          atol=1e-12)
    # The same-dtype op is the same op, rounded.
    assert torch.allclose(gc.torch_op(case, inputs, gc.DTYPES[case.dtype]).double(), expected,
                          rtol=0.05, atol=0.05)


def test_inputs_are_nan_in_the_pads_only():
    case = gc.Case("bf16", 3, 4, 5, 0, 0, 3, "bias")
    inputs = gc.make_inputs(case, "cpu")
    for operand in ("a", "b", "c"):
        flat = inputs[operand].view(case.batch, case.stride(operand))
        assert torch.isnan(flat[:, case.matrix(operand):]).all()
        assert torch.isfinite(flat[:, :case.matrix(operand)]).all()
    assert inputs["bias"].shape == (4,)
    # The epilogues of one product share their inputs.
    again = gc.make_inputs(case._replace(epilogue="gelu"), "cpu")
    assert torch.equal(inputs["a"].nan_to_num(), again["a"].nan_to_num())


class FakeGemmRuntime:
    """weft_gemm_select/run on CPU memory: reads the operands through the raw
    addresses and the desc's fields alone, as the C contract states, and
    writes D rounded once. `bug` injects one mistake to show the check fails."""
    WeftError = rt.WeftError
    ERROR_INVALID_ARGUMENT = rt.ERROR_INVALID_ARGUMENT
    GemmAlgo = rt.GemmAlgo
    gemm_desc = staticmethod(rt.gemm_desc)

    def __init__(self, bug=None):
        self.bug = bug

    def gemm_select(self, desc, workspace_limit):
        algo = rt.GemmAlgo()
        algo.valid = 1
        return algo, 0

    @staticmethod
    def memory(address, count, dtype):
        size = torch.tensor([], dtype=dtype).element_size()
        raw = (ctypes.c_char * (count * size)).from_address(address)
        return torch.frombuffer(raw, dtype=dtype)

    def gemm_run(self, desc, algo, a, b, c, d, bias, workspace, workspace_bytes, stream):
        assert algo.valid == 1
        dtype = {2: torch.bfloat16, 3: torch.float16}[desc.dtype]
        m, n, k, batch = desc.m, desc.n, desc.k, desc.batch

        def operand(address, rows, cols, stride):
            flat = self.memory(address, (batch - 1) * stride + rows * cols, dtype)
            return flat.as_strided((batch, rows, cols), (stride, cols, 1)).double()

        trans_b = desc.trans_b if self.bug != "ignore_trans_b" else 0
        op_a = operand(a, *((k, m) if desc.trans_a else (m, k)), desc.stride_a)
        op_b = operand(b, *((n, k) if trans_b else (k, n)), desc.stride_b)
        op_a = op_a.transpose(1, 2) if desc.trans_a else op_a
        op_b = op_b.transpose(1, 2) if trans_b else op_b
        out = desc.alpha * torch.matmul(op_a, op_b)
        if desc.beta != 0:
            out = out + desc.beta * operand(c, m, n, desc.stride_c)
        if desc.epilogue in (1, 3):
            out = out + self.memory(bias, n, dtype).double()
        if desc.epilogue in (2, 3):
            out = 0.5 * out * (1 + torch.tanh(math.sqrt(2 / math.pi) * (out + 0.044715 * out ** 3)))
        if desc.epilogue == 4:  # bgrad_a: bias[m] = sum over k of op(A)[m, k]
            assert batch == 1 and bias
            sums = op_a[0].sum(dim=1)
            if self.bug == "bgrad_columns":  # summed the other way (over m)
                sums = op_a[0].sum(dim=0)[:m] if m <= k else sums * 0
            self.memory(bias, m, dtype).copy_(sums.to(dtype))
        stride_d = desc.stride_d if batch > 1 else m * n
        if self.bug == "write_pads":
            self.memory(d, batch * stride_d, dtype).fill_(0)
        target = self.memory(d, (batch - 1) * stride_d + m * n, dtype)
        target = target.as_strided((batch, m, n), (stride_d, n, 1))
        if self.bug == "skip_last_row":
            out = out[:, :-1]
            target = target[:, :-1]
        if self.bug == "write_past_end":
            self.memory(d, batch * stride_d + 4, dtype)[-4:] = 0
        target.copy_(out.to(dtype))


SMALL_CASES = [gc.Case(dtype, 5, 7, 6, ta, tb, batch, epi)
               for dtype in ("bf16", "f16") for ta in (0, 1) for tb in (0, 1)
               for batch in (1, 3) for epi in gc.EPILOGUES]


@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda c: c.name)
def test_case_passes_with_a_correct_runtime(case):
    result = gc.run_case(FakeGemmRuntime(), case, "cpu", None, 0)
    assert result["passed"], result
    assert result["ratio"] <= gc.RATIO_BOUND


@pytest.mark.parametrize("bug, reason", [
    ("ignore_trans_b", "error"),
    ("skip_last_row", "NaN/inf in D"),
    ("write_pads", "pad elements between batches written"),
    ("write_past_end", "guard elements written"),
])
def test_case_fails_with_a_broken_runtime(bug, reason):
    case = gc.Case("bf16", 6, 6, 9, 0, 1, 3, "bias_gelu")
    result = gc.run_case(FakeGemmRuntime(bug), case, "cpu", None, 0)
    assert not result["passed"]
    assert any(reason in r for r in result["reasons"]), result["reasons"]
    assert "FAIL" in gc.format_row(result)


def test_judge_bound_is_relative_to_torch():
    case = gc.Case("bf16", 2, 2, 2, 0, 0, 1, "none")
    reference = torch.zeros(1, 2, 2, dtype=torch.float64)
    torch_out = torch.full((1, 2, 2), 0.01, dtype=torch.float64)
    d = Poisoned((4,), torch.bfloat16, "cpu")
    d.tensor.fill_(0.0195)  # bf16 rounds it to 0.01953125: 1.95 x torch's error
    assert gc.judge(case, d, reference, torch_out)["passed"]
    d.tensor.fill_(0.0205)  # 0.0205078125: 2.05 x
    verdict = gc.judge(case, d, reference, torch_out)
    assert not verdict["passed"]
    assert "> 2 x torch's" in verdict["reasons"][0]
    assert gc.max_abs_error(torch.tensor([float("nan")]), torch.zeros(1)) == math.inf


def test_list_runs_without_a_gpu():
    done = subprocess.run([sys.executable, os.path.join(REPO, "test", "gpu", "gemm_check.py"),
                           "--list", "--cases", "m77.*TN-b3-bias$"],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["bf16-m77-n130-k61-TN-b3-bias", "f16-m77-n130-k61-TN-b3-bias"]


# ---- the bias-gradient epilogue (bgrad_a) -----------------------------------

@needs_library
def test_bgrad_a_desc():
    # dW = dY^T X with db: trans_a, batch 1; the value is weft_gemm_epilogue's.
    desc = rt.gemm_desc(32, 24, 16, "bf16", trans_a=True, epilogue="bgrad_a")
    assert desc.epilogue == 4
    rt.gemm_check(desc)
    batched = rt.gemm_desc(32, 24, 16, "bf16", batch=2, trans_a=True, epilogue="bgrad_a")
    with pytest.raises(rt.WeftError) as error:
        rt.gemm_check(batched)
    assert "epilogue BGRAD_A needs batch=1, got batch=2" in error.value.message
    desc.epilogue = 8
    with pytest.raises(rt.WeftError) as error:
        rt.gemm_check(desc)
    assert "epilogue 8 is not a weft_gemm_epilogue (NONE=0, BIAS=1, GELU=2, BIAS_GELU=3, " \
           "BGRAD_A=4, GELU_AUX=5, GELU_AUX_BIAS=6, DGELU=7)" in error.value.message


@pytest.mark.parametrize("trans_a, trans_b", [(1, 0), (0, 0), (1, 1)])
def test_bgrad_case_passes_with_a_correct_runtime(trans_a, trans_b):
    result = gc.bias_grad_case(FakeGemmRuntime(), "bf16", 6, 5, 9, trans_a, trans_b, "cpu",
                               None, 0)
    assert result["passed"], result
    assert result["case"] == f"bf16-m6-n5-k9-{'TN'[1 - trans_a]}{'TN'[1 - trans_b]}-b1-bgrad_a"


def test_bgrad_case_fails_with_wrong_sums():
    result = gc.bias_grad_case(FakeGemmRuntime("bgrad_columns"), "f16", 6, 5, 9, 1, 0, "cpu",
                               None, 0)
    assert not result["passed"]
    assert any("db relative error" in r for r in result["reasons"]), result["reasons"]
    assert not any("dW" in r for r in result["reasons"])


def test_bgrad_checks_cover_the_layouts():
    # The compiler's layout (trans_a, not trans_b) is required; the GPU run
    # probes the other three to record what cuBLASLt offers.
    assert gc.BGRAD_LAYOUT == (1, 0)
    assert (16384, 4096, 4096) in gc.BGRAD_SHAPES
