"""weft.philox against Random123's known-answer vectors and weft's rule."""
import numpy as np
import pytest

from weft import philox

# Random123 tests/kat_vectors, the three "philox4x32 10" lines:
# counter[4] key[2] -> result[4].
KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_known_answers(counter, key, expected):
    assert tuple(int(w) for w in philox.philox4x32(counter, key)) == expected


def test_vectorized_matches_scalar():
    counters = np.array([[0, 1, 2**32 - 1], [5, 0, 7], [0, 0, 3], [0, 9, 0]], dtype=np.uint32)
    words = philox.philox4x32(counters, (11, 22))
    for j in range(3):
        scalar = philox.philox4x32(tuple(int(c) for c in counters[:, j]), (11, 22))
        assert [int(w[j]) for w in words] == [int(w) for w in scalar]


def test_draw_rule():
    seed, rng_id = 2**40 + 123, 2**32 + 7   # only the low 32 bits are the key
    for idx in [0, 1, 2, 3, 4, 5, 1023]:
        block = philox.philox4x32((idx // 4, 0, 0, 0), (123, 7))
        assert int(philox.draws(seed, rng_id, 1, start=idx)[0]) == int(block[idx % 4])


def test_draw_rule_high_counter_word():
    idx = 4 * (2**32 + 5) + 2  # idx / 4 needs the counter's second word
    block = philox.philox4x32((5, 1, 0, 0), (1, 2))
    assert int(philox.draws(1, 2, 1, start=idx)[0]) == int(block[2])


def test_negative_seed_is_twos_complement():
    assert np.array_equal(philox.draws(-1, 3, 16), philox.draws(2**32 - 1, 3, 16))


def test_threshold_and_scale():
    assert philox.threshold(0.0) == 0
    assert philox.threshold(0.5) == 2**31
    assert philox.threshold(0.1) == 429496729  # floor(0.1 * 2^32)
    x = np.ones(4096)
    y = philox.dropout(x, 0.25, 5, 6)
    assert set(np.unique(y)) <= {0.0, 1 / 0.75}
    assert abs((y != 0).mean() - 0.75) < 0.034  # 5 sd of 4096 Bernoulli(0.75)
    assert np.array_equal(philox.dropout(x, 0.0, 5, 6), x)


def test_keep_mask_is_row_major_over_the_whole_tensor():
    mask = philox.keep_mask((3, 5, 7), 0.5, 9, 4)
    flat = philox.draws(9, 4, 105) >= np.uint32(2**31)
    assert np.array_equal(mask.reshape(-1), flat)
