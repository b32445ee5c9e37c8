"""What a long run on a lent GPU needs so that a limit or a fault costs only
the rest of the run: --deadline (what has not started by then is reported
as not run, instead of the device call's time limit losing every result)
and the check that the CUDA context still runs anything after a failure."""
import time


def add_deadline_option(parser, items):
    """--deadline SECONDS (absent: none); `items` names what is cut ("points")."""
    parser.add_argument("--deadline", type=float, default=None, metavar="SECONDS",
                        help=f"seconds; {items} not started by then are reported NOT RUN")


class Deadline:
    """A --deadline from now; None is no deadline."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.start = time.perf_counter()

    def elapsed(self):
        return time.perf_counter() - self.start

    def passed(self):
        return self.seconds is not None and self.elapsed() > self.seconds


class ContextLost(Exception):
    """The CUDA context is unusable (a sticky error such as an illegal address):
    nothing after it can run in this process."""


def check_context(device="cuda"):
    """Raises ContextLost when the device no longer runs anything (a CPU
    device always does)."""
    import torch
    if torch.device(device).type != "cuda":
        return
    try:
        torch.cuda.synchronize()
        if torch.ones(1, device=device).add_(1).item() != 2.0:
            raise RuntimeError("1 + 1 != 2 on the device")
    except Exception as e:
        raise ContextLost(str(e)) from e
