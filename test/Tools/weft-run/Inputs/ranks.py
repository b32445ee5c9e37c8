"""Starts one weft-run per rank with the torchrun environment (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT on a free port) and prints
each rank's exit status and stderr, for tests of the multi-GPU rendezvous
that need no GPU. Each rank's arguments follow its own `--`:

  ranks.py WEFT_RUN -- ARGS-OF-RANK-0 -- ARGS-OF-RANK-1 ...
"""
import os
import socket
import subprocess
import sys


def main():
    weft_run, rest = sys.argv[1], sys.argv[2:]
    groups, current = [], None
    for arg in rest:
        if arg == "--":
            current = []
            groups.append(current)
        else:
            current.append(arg)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank, args in enumerate(groups):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(len(groups)),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([weft_run] + args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    for rank, p in enumerate(procs):
        out, err = p.communicate(timeout=120)
        err = err.replace("fnv1a64", "DIGEST")
        print("rank %d exit %d" % (rank, p.returncode))
        for line in (out + err).splitlines():
            print("rank %d: %s" % (rank, line))


if __name__ == "__main__":
    main()
