"""Weft's collectives alone against torch.distributed + NCCL on the same
buffers in the same processes: all-reduce, reduce-scatter, all-gather,
all-to-all (torch's all_to_all_single) and a ring shift by one rank with
rotation (send/recv; torch's batch_isend_irecv) of bf16, 1 MB to 1 GB,
nccl-tests' bus bandwidth (as ../shared/anchors/nccl_anchors.py reports it;
alltoall: algbw (n - 1) / n, sendrecv: algbw). Weft's side is the runtime's
C API (weft_comm_init / weft_comm_collective / weft_comm_shift,
libweft_runtime.so via ctypes) on torch's current stream; its communicator's
NCCL id is broadcast by torch. The engine column: all-gather and all-to-all
also on the copy engines (weft_comm_map_region: one 2 GiB region per rank
mapped into every other with CUDA IPC, the pulls by cuMemcpyDtoDAsync, the
ordering by flags in peer memory; what weft-run --collectives=copy-engine
does in a step's arena), checked bit for bit against torch's results; with
--engine nccl the column is left out.

  torchrun --nproc-per-node N collective_bench.py LIBWEFT_RUNTIME.so [--json OUT]
                                                  [--engine auto|copy-engine|nccl]
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
ENGINES = {"nccl": 1, "copy-engine": 2, "auto": 3}  # weft_collective_engine


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
    lib.weft_comm_map_region.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t,
                                         ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
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
    parser.add_argument("--engine", default="auto", choices=sorted(ENGINES))
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
    # The copy-engine region: the same size on every rank, its own allocation
    # (the caching allocator gives a request this large a segment of its own).
    region = None
    if args.engine != "nccl":
        region = torch.empty(2 * max(SIZES_MB) * (1 << 20) // 2, device="cuda",
                             dtype=torch.bfloat16)
        active = ctypes.c_int()
        check(lib, lib.weft_comm_map_region(comm, region.data_ptr(), region.numel() * 2,
                                            ENGINES[args.engine], ctypes.byref(active)),
              "weft_comm_map_region")
        if not active.value:
            region = None  # auto, and a rank could not: NCCL only
        elif rank == 0:
            print("copy-engine region mapped over", n, "ranks", flush=True)

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
        copy_engine = {}
        if region is not None:
            # In the region at the same offsets on every rank: the input
            # first, the output after the largest input.
            src, dst = region[:numel], region[numel: 2 * numel]
            src.copy_(x)
            ag_in = region[: numel // n]
            ag_in.copy_(shard)
            weft(ALL_GATHER, ag_in, dst, numel)()
            check(lib, lib.weft_comm_synchronize(comm, stream), "weft_comm_synchronize")
            ref = torch.empty_like(x)
            dist.all_gather_into_tensor(ref, shard)
            ce_same = {"all_gather": torch.equal(dst, ref)}
            src.copy_(x)
            weft(ALL_TO_ALL, src, dst, numel)()
            check(lib, lib.weft_comm_synchronize(comm, stream), "weft_comm_synchronize")
            dist.all_to_all_single(ref, x)
            ce_same["all_to_all"] = torch.equal(dst, ref)
            del ref
            copy_engine = {"all_gather": (weft(ALL_GATHER, ag_in, dst, numel), ce_same),
                           "all_to_all": (weft(ALL_TO_ALL, src, dst, numel), ce_same)}
        for name, (torch_fn, weft_fn, factor) in ops.items():
            t_torch, t_weft = timed(torch_fn), timed(weft_fn)
            size = numel * 2
            row = dict(op=name, MB=mb, torch_us=t_torch * 1e6, weft_us=t_weft * 1e6,
                       torch_busbw=size / t_torch / 1e9 * factor,
                       weft_busbw=size / t_weft / 1e9 * factor, same_as_torch=same[name],
                       engine="nccl")
            row["ratio"] = row["weft_busbw"] / row["torch_busbw"]
            results.append(row)
            if name in copy_engine:
                fn, ce_same = copy_engine[name]
                t_ce = timed(fn)
                results.append(dict(row, engine="copy-engine", weft_us=t_ce * 1e6,
                                    weft_busbw=size / t_ce / 1e9 * factor,
                                    ratio=size / t_ce / 1e9 * factor / row["torch_busbw"],
                                    same_as_torch=ce_same[name]))
    check(lib, lib.weft_comm_synchronize(comm, stream), "weft_comm_synchronize")
    lib.weft_comm_free(comm)
    if rank == 0:
        for r in results:
            print(f"{r['op']:15s} {r['engine']:11s} {r['MB']:5d} MB  torch "
                  f"{r['torch_busbw']:7.1f}  weft "
                  f"{r['weft_busbw']:7.1f} GB/s busbw  ratio {r['ratio']:.3f}  "
                  f"same result {r['same_as_torch']}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(world=n, device=torch.cuda.get_device_name(), results=results), f,
                          indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
