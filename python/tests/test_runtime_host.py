"""The runtime's host-only parts through the ctypes binding (python/weft/runtime.py):
image checks on PTX and ptxas-made cubins, argument checks, and the driver
paths a machine without a GPU can reach (missing driver, the toolkit's stub)."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from weft import runtime as rt

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INPUTS = os.path.join(REPO, "unittests", "Runtime", "Inputs")
PTXAS = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
STUB = "/usr/local/cuda/lib64/stubs/libcuda.so"

pytestmark = pytest.mark.skipif(
    not os.path.exists(rt.library_path()),
    reason=f"{rt.library_path()} is not built (ninja -C build weft_runtime_shared)")


def ptx(name):
    with open(os.path.join(INPUTS, name), "rb") as f:
        return f.read() + b"\0"


def assemble(tmp_path, name, arch):
    if not os.access(PTXAS, os.X_OK):
        pytest.skip("ptxas not found")
    out = tmp_path / f"{name}.{arch}.cubin"
    subprocess.run([PTXAS, f"-arch={arch}", os.path.join(INPUTS, name), "-o", str(out)],
                   check=True)
    return out.read_bytes()


def driver_library_present():
    try:
        import ctypes
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def run_isolated(code, **env):
    """Runs `code` in a fresh interpreter: the runtime loads the driver once
    per process, so each driver library gets its own."""
    environment = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                          capture_output=True, text=True, timeout=60)


def test_version():
    assert rt.version() == "0.5.0"


def test_ptx_inputs():
    assert rt.image_check(ptx("add_one_sm80.ptx")) == ("ptx", 80)
    info = rt.image_inspect(ptx("fence_sm90a.ptx"))
    assert (info.kind, info.sm, info.arch_specific) == ("ptx", 90, True)


def test_ptxas_cubins_sm80_and_sm90a(tmp_path):
    sm80 = assemble(tmp_path, "add_one_sm80.ptx", "sm_80")
    sm90a = assemble(tmp_path, "fence_sm90a.ptx", "sm_90a")
    assert rt.image_check(sm80) == ("cubin", 80)
    assert rt.image_check(sm90a) == ("cubin", 90)
    # CUDA 13's ptxas writes ELF ABI 8 (sm in e_flags bits 8..15).
    assert rt.image_inspect(sm80).elf_abi_version == 8
    with pytest.raises(rt.WeftError) as error:
        rt.image_check(sm80[:len(sm80) - 16])
    assert error.value.status == rt.ERROR_INVALID_IMAGE
    assert f"ends past the image's {len(sm80) - 16} bytes" in error.value.message


def test_invalid_images():
    with pytest.raises(rt.WeftError) as error:
        rt.image_check(ptx("add_one_sm80.ptx")[:-1])  # without its NUL
    assert error.value.status == rt.ERROR_INVALID_IMAGE
    assert error.value.status_name == "WEFT_ERROR_INVALID_IMAGE"
    assert "NUL" in error.value.message
    elf = bytearray(b"\x7fELF\x02\x01\x01" + bytes(57))
    elf[18] = 62  # e_machine EM_X86_64
    with pytest.raises(rt.WeftError, match=r"e_machine 62 is not EM_CUDA \(190\)"):
        rt.image_check(bytes(elf))


def test_check_arch():
    sm90a = rt.image_inspect(ptx("fence_sm90a.ptx"))
    rt.check_arch(sm90a, 90)
    with pytest.raises(rt.WeftError) as error:
        rt.check_arch(sm90a, 100)
    assert error.value.status == rt.ERROR_ARCH_MISMATCH
    assert "sm_90a" in error.value.message and "sm_100" in error.value.message
    assert rt.status_to_cu_result(rt.ERROR_ARCH_MISMATCH) == 209  # CUDA_ERROR_NO_BINARY_FOR_GPU


def test_launch_argument_checks():
    fake_fn = 0x1000  # never reaches the driver: the checks fail first
    with pytest.raises(rt.WeftError) as error:
        rt.launch(fake_fn, (1, 0, 1), (128, 1, 1), 0, None, [])
    assert error.value.status == rt.ERROR_INVALID_ARGUMENT
    assert "grid (1, 0, 1)" in error.value.message
    with pytest.raises(rt.WeftError, match="2048 threads"):
        rt.launch(fake_fn, (1, 1, 1), (2048, 1, 1), 0, None, [("i32", 1)])
    with pytest.raises(ValueError, match="unknown kind 'int'"):
        rt.launch(fake_fn, (1, 1, 1), (32, 1, 1), 0, None, [("int", 3)])
    with pytest.raises(ValueError, match="does not fit i32"):
        rt.launch(fake_fn, (1, 1, 1), (32, 1, 1), 0, None, [("i32", 2**31)])


def test_pack_args():
    import ctypes
    pointers, keep = rt.pack_args([("ptr", 0x7f0000001000), ("i32", -5), ("f32", 1.5)])
    assert ctypes.c_uint64.from_address(pointers[0]).value == 0x7f0000001000
    assert ctypes.c_int32.from_address(pointers[1]).value == -5
    assert ctypes.c_float.from_address(pointers[2]).value == 1.5
    assert len(keep) == 3


def test_tensor_map_checks():
    with pytest.raises(rt.WeftError) as error:
        rt.tensor_map_encode_tiled("bf16", 0x7f0000001008, [256, 128], [512], [64, 64], 128)
    assert error.value.status == rt.ERROR_INVALID_ARGUMENT
    assert "global address 0x7f0000001008 is not 16-byte aligned" in error.value.message
    with pytest.raises(rt.WeftError, match=r"box\[1\] = 300"):
        rt.tensor_map_encode_tiled("bf16", 0x7f0000001000, [256, 128], [512], [64, 300], 128)


@pytest.mark.skipif(driver_library_present(), reason="libcuda.so.1 is installed here")
def test_driver_missing():
    result = run_isolated("""
        from weft import runtime as rt
        try:
            rt.init()
        except rt.WeftError as e:
            print(e.status, e.cu_result, e.message)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{rt.ERROR_DRIVER_MISSING} 0 "), result.stdout
    assert "libcuda.so.1" in result.stdout


@pytest.mark.skipif(not os.path.exists(STUB), reason=f"{STUB} not found")
def test_stub_driver_reports_cuda_error():
    result = run_isolated("""
        from weft import runtime as rt
        for call in (rt.init, lambda: rt.context_ensure(0)):
            try:
                call()
            except rt.WeftError as e:
                print(e.status_name, e.cu_result, e.message)
    """, WEFT_LIBCUDA=STUB)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    for line in lines:
        assert line.startswith("WEFT_ERROR_CUDA 34 cuInit(0) failed: CUDA_ERROR_STUB_LIBRARY"), line
