"""weft.npz: the .npz convention (keys, dtype table, bf16 as bit patterns)."""
import numpy as np
import pytest
import torch

from weft import npz


def test_round_trip_every_dtype(tmp_path):
    tensors = {
        "arg0": torch.randn(2, 3, dtype=torch.float64),
        "arg1": torch.randn(4, dtype=torch.float32),
        "arg2": torch.randn(3, 2).to(torch.float16),
        "arg3": torch.randn(5, 2).to(torch.bfloat16),
        "arg4": torch.tensor([[1, -2], [3, 2**40]], dtype=torch.int64),
        "arg5": torch.tensor([True, False, True]),
        "arg6": torch.tensor(7, dtype=torch.int64),
        "arg7": torch.tensor(1.5, dtype=torch.bfloat16),
    }
    path = tmp_path / "t.npz"
    npz.save(path, tensors)
    back = npz.load(path)
    assert list(back) == list(tensors)
    for key, value in tensors.items():
        assert back[key].dtype == value.dtype and back[key].shape == value.shape
        assert torch.equal(back[key], value)


def test_stored_layout(tmp_path):
    path = tmp_path / "t.npz"
    npz.save(path, {"res0": torch.tensor([1.0, -2.5], dtype=torch.bfloat16),
                    "res1": np.zeros((2, 2), dtype=np.float32)})
    with np.load(path) as raw:
        assert raw["res0"].dtype == np.uint16
        assert raw["res0"].tolist() == [0x3F80, 0xC020]
        table = raw[npz.DTYPES_KEY]
        assert table.dtype.kind == "U" and table.ndim == 1
        assert table.tolist() == ["res0:bf16", "res1:f32"]


def test_bf16_bits_exact_against_torch():
    bits = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    wide = npz.bf16_bits_to_f32(bits)
    torch_wide = torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16).float().numpy()
    assert np.array_equal(wide.view(np.uint32), torch_wide.view(np.uint32))
    finite = np.isfinite(wide)
    assert np.array_equal(npz.f32_to_bf16_bits(wide[finite]), bits[finite])


def test_f32_to_bf16_rounds_to_nearest_even():
    rng = np.random.default_rng(0)
    values = rng.standard_normal(100000).astype(np.float32) * np.float32(1e3)
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8)], dtype=np.float32)
    values = np.concatenate([values, ties])
    ours = npz.f32_to_bf16_bits(values)
    theirs = torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(ours, theirs)
    assert npz.bf16_bits_to_f32(ours[-3:]).tolist() == [1.0, 1 + 2**-6, -1.0]


def test_ordered_keys():
    assert npz.ordered({"res1": 1, "res0": 0}, "res") == [0, 1]
    with pytest.raises(ValueError):
        npz.ordered({"res0": 0, "res2": 2}, "res")


def test_reserved_key(tmp_path):
    with pytest.raises(ValueError):
        npz.save(tmp_path / "t.npz", {npz.DTYPES_KEY: np.zeros(1)})
