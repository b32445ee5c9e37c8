"""Output buffers for the kernels under test: filled with NaN before the launch
so an element the kernel never writes stays NaN, and optionally surrounded by
guard bytes holding a sentinel so a write past either end shows."""
import torch

GUARD_FRONT_BYTES = 256  # keeps the tensor 256-byte aligned, as cudaMalloc's own
GUARD_BACK_BYTES = 64 << 10
SENTINEL = 1536.0  # 1.5 x 2^10: exact in bf16, f16 and f32
INT_POISON = -21846  # 0xAAAA as an i16


class Poisoned:
    """`tensor` (contiguous, NaN-filled) lives inside `buffer` with guards of
    SENTINEL around it when guarded; without guards it is its own allocation,
    so compute-sanitizer's memcheck sees the allocation's true end."""

    def __init__(self, shape, dtype, device, guarded=True):
        numel = 1
        for n in shape:
            numel *= n
        size = torch.tensor([], dtype=dtype).element_size()
        self.front = GUARD_FRONT_BYTES // size if guarded else 0
        self.back = GUARD_BACK_BYTES // size if guarded else 0
        self.buffer = torch.full((self.front + numel + self.back,), SENTINEL, dtype=dtype,
                                 device=device)
        self.tensor = self.buffer[self.front:self.front + numel].view(shape)
        # Integers have no NaN: a bit pattern a kernel is unlikely to compute
        # (every i16 is a valid low half, so its checker grades values).
        self.tensor.fill_(float("nan") if dtype.is_floating_point else INT_POISON)

    def guard_violations(self):
        """How many guard elements no longer hold the sentinel."""
        if not self.front and not self.back:
            return 0
        head = self.buffer[:self.front]
        tail = self.buffer[self.buffer.numel() - self.back:]
        return int((head != SENTINEL).sum()) + int((tail != SENTINEL).sum())
