"""Weft's collectives alone against torch.distributed + NCCL on the same
buffers in the same processes: all-reduce, reduce-scatter, all-gather,
all-to-all (torch's all_to_all_single) and a ring shift by one rank with
rotation (send/recv; torch's batch_isend_irecv) of bf16, 1 MB to 1 GB,
nccl-tests' bus bandwidth (as ../shared/anchors/nccl_anchors.py reports it;
alltoall: algbw (n - 1) / n, sendrecv: algbw). Weft's side is the runtime's
C API (weft_comm_init / weft_comm_collective / weft_comm_shift,
libweft_runtime.so via ctypes) on torch's current stream; its communicator's
NCCL id is broadcast by torch.

  torchrun --nproc-per-node N collective_bench.py LIBWEFT_RUNTIME.so [--json OUT]
"""
import argparse
import ctypes
import json
import os

import torch
import torch.distributed as dist

SIZES_MB = [1, 4, 16, 64, 256, 1024]
ITERS, WARMUP = 20, 5
ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL = 0, 1, 2, 3
WEFT_DTYPE_BF16, WEFT_REDUCE_SUM = 2, 0


def load_runtime(path):
    lib = ctypes.CDLL(path)
    lib.weft_last_error.restype = ctypes.c_char_p
    lib.weft_comm_init.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.weft_comm_collective.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                         ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                         ctypes.c_int, ctypes.c_void_p]
    # weft_comm_shift(comm, send, recv, count, dtype, shift, rotate, stream)
    lib.weft_comm_shift.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_void_p]
    lib.weft_comm_synchronize.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.weft_comm_free.argtypes = [ctypes.c_void_p]
    lib.weft_context_ensure.argtypes = [ctypes.c_int]
    return lib


def check(lib, status, what):
    if status:
        raise RuntimeError(f"{what}: status {status}: {lib.weft_last_error().decode()}")


def timed(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
    start.record()
    for _ in range(ITERS):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / ITERS / 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runtime")
    parser.add_argument("--json")
    args = parser.parse_args()
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.zeros(1, device="cuda")  # torch's context is current: the runtime keeps it
    lib = load_runtime(args.runtime)
    check(lib, lib.weft_context_ensure(torch.cuda.current_device()), "weft_context_ensure")
    uid = ctypes.create_string_buffer(128)
    if rank == 0:
        check(lib, lib.weft_nccl_unique_id(uid), "weft_nccl_unique_id")
    box = [uid.raw]
    dist.broadcast_object_list(box, src=0)
    uid = ctypes.create_string_buffer(box[0], 128)
    comm = ctypes.c_void_p()
    check(lib, lib.weft_comm_init(uid, n, rank, 120.0, ctypes.byref(comm)), "weft_comm_init")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def weft(kind, send, recv, count):
        def run():
            check(lib, lib.weft_comm_collective(comm, kind, send.data_ptr(), recv.data_ptr(),
                                                count, WEFT_DTYPE_BF16, WEFT_REDUCE_SUM, stream),
                  "weft_comm_collective")
        return run

    def weft_shift(send, recv, count):
        """The ring shift: send to rank + 1, receive from rank - 1, wrapping."""
        def run():
            check(lib, lib.weft_comm_shift(comm, send.data_ptr(), recv.data_ptr(), count,
                                           WEFT_DTYPE_BF16, 1, 1, stream),
                  "weft_comm_shift")
        return run

    def torch_shift(send, recv):
        def run():
            ops = [dist.P2POp(dist.isend, send, (rank + 1) % n),
                   dist.P2POp(dist.irecv, recv, (rank - 1) % n)]
            for request in dist.batch_isend_irecv(ops):
                request.wait()
        return run

    results = []
    for mb in SIZES_MB:
        numel = mb * (1 << 20) // 2
        x = torch.randn(numel, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        part = torch.empty(numel // n, device="cuda", dtype=torch.bfloat16)
        shard = x[: numel // n].clone()
        # Correctness first: Weft's results against torch's on the same inputs.
        ref_ar = x.clone()
        dist.all_reduce(ref_ar)
        weft(ALL_REDUCE, x, y, numel)()
        ref_rs = torch.empty_like(part)
        dist.reduce_scatter_tensor(ref_rs, x)
        out_rs = torch.empty_like(part)
        weft(REDUCE_SCATTER, x, out_rs, numel)()
        ref_ag = torch.empty_like(x)
        dist.all_gather_into_tensor(ref_ag, shard)
        out_ag = torch.empty_like(x)
        weft(ALL_GATHER, shard, out_ag, numel)()
        check(lib, lib.weft_comm_synchronize(comm, stream), "weft_comm_synchronize")
        same = {"all_reduce": torch.equal(y, ref_ar), "reduce_scatter": torch.equal(out_rs, ref_rs),
                "all_gather": torch.equal(out_ag, ref_ag)}
        del ref_ar, ref_rs, out_rs, ref_ag, out_ag
        # All-to-all: block j of x to rank j; the shift: x to rank + 1.
        ref_a2a = torch.empty_like(x)
        dist.all_to_all_single(ref_a2a, x)
        out_a2a = torch.empty_like(x)
        weft(ALL_TO_ALL, x, out_a2a, numel)()
        ref_sr, out_sr = torch.empty_like(x), torch.empty_like(x)
        if n > 1:  # a shift needs another rank
            torch_shift(x, ref_sr)()
            weft_shift(x, out_sr, numel)()
        check(lib, lib.weft_comm_synchronize(comm, stream), "weft_comm_synchronize")
        same["all_to_all"] = torch.equal(out_a2a, ref_a2a)
        same["send_recv"] = n > 1 and torch.equal(out_sr, ref_sr)
        del ref_a2a, out_a2a, ref_sr, out_sr
        ops = {
            "all_reduce": (lambda: dist.all_reduce(y), weft(ALL_REDUCE, x, y, numel),
                           2 * (n - 1) / n),
            "reduce_scatter": (lambda: dist.reduce_scatter_tensor(part, x),
                               weft(REDUCE_SCATTER, x, part, numel), (n - 1) / n),
            "all_gather": (lambda: dist.all_gather_into_tensor(y, shard),
                           weft(ALL_GATHER, shard, y, numel), (n - 1) / n),
            "all_to_all": (lambda: dist.all_to_all_single(y, x),
                           weft(ALL_TO_ALL, x, y, numel), (n - 1) / n),
            "send_recv": (torch_shift(x, y), weft_shift(x, y, numel), 1.0),
        }
        if n == 1:
            del ops["send_recv"]
        for name, (torch_fn, weft_fn, factor) in ops.items():
            t_torch, t_weft = timed(torch_fn), timed(weft_fn)
            size = numel * 2
            row = dict(op=name, MB=mb, torch_us=t_torch * 1e6, weft_us=t_weft * 1e6,
                       torch_busbw=size / t_torch / 1e9 * factor,
                       weft_busbw=size / t_weft / 1e9 * factor, same_as_torch=same[name])
            row["ratio"] = row["weft_busbw"] / row["torch_busbw"]
            results.append(row)
    check(lib, lib.weft_comm_synchronize(comm, stream), "weft_comm_synchronize")
    lib.weft_comm_free(comm)
    if rank == 0:
        for r in results:
            print(f"{r['op']:15s} {r['MB']:5d} MB  torch {r['torch_busbw']:7.1f}  weft "
                  f"{r['weft_busbw']:7.1f} GB/s busbw  ratio {r['ratio']:.3f}  "
                  f"same result {r['same_as_torch']}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(world=n, device=torch.cuda.get_device_name(), results=results), f,
                          indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
