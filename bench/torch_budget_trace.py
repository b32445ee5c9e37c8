"""Where a budgeted run's torch.cuda.max_memory_allocated comes from: one
model of bench/torch_train_bench.py trained `--steps` steps under weft.compile's
memory_budget (`--budget-bytes`, as torch_train_bench's weft_budget mode
computes it) with torch's allocator history recorded, then the history
replayed: the tensors live at the peak, largest first, with the Python
frame that allocated each, against TorchBudget's items (parameters,
inputs, optimizer, calls, allocator) and Weft's planned arena.

  bench/torch_backend_gpu_check.sh bench ... is the usual entry; this one runs
  the same way on the GPU machine:
  PYTHONPATH=python python bench/torch_budget_trace.py --model llama \\
      --budget-bytes 3215035392 [--steps 3] [--json OUT.json]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_train_bench as bench  # noqa: E402


def frame_of(frames):
    """The innermost frame outside torch's own files (else the innermost)."""
    for f in frames:
        name = f.get("filename", "")
        if "/torch/" not in name and "<" not in name:
            return f"{os.path.basename(name)}:{f.get('line')} {f.get('name')}"
    return f"{frames[0].get('filename')}:{frames[0].get('line')}" if frames else "?"


def live_at_peak(trace):
    """Replays one device's allocator trace: the peak of allocated bytes and
    the allocations live at it ([(size, frame)])."""
    live, total, peak, at_peak = {}, 0, 0, []
    for event in trace:
        action, addr, size = event["action"], event["addr"], event["size"]
        if action == "alloc":
            live[addr] = (size, frame_of(event.get("frames", [])))
            total += size
            if total > peak:
                peak, at_peak = total, list(live.values())
        elif action == "free_completed" and addr in live:
            total -= live.pop(addr)[0]
    return peak, sorted(at_peak, key=lambda x: -x[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="llama")
    parser.add_argument("--budget-bytes", type=int, required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    import weft
    from weft import torch_gpu
    device = torch.device("cuda")
    base, batch, seq, _, labels = spec = bench.make(args.model)
    model = base.to(device).train()
    fused_state = 2 * sum(p.numel() * p.element_size() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=bench.LEARNING_RATES[labels], fused=True)
    forward = weft.compile(model, strict=True, memory_budget=args.budget_bytes,
                           optimizer_bytes=fused_state)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=200000)
    phases = []
    for step, (idx, targets) in enumerate(bench.batches(batch, seq, labels, args.steps, device)):
        for phase, run in (("forward", lambda: forward(idx, targets)), ("backward", None),
                           ("optimizer", None)):
            torch.cuda.synchronize()
            start = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            if phase == "forward":
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = run()
            elif phase == "backward":
                loss.backward()
            else:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            phases.append({"step": step, "phase": phase, "start_mib": start / 2**20,
                           "peak_mib": torch.cuda.max_memory_allocated() / 2**20})
            print(f"step {step} {phase:9s} start {start / 2**20:9.1f} MiB, peak "
                  f"{phases[-1]['peak_mib']:9.1f} MiB", flush=True)
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    trace = snapshot["device_traces"][device.index or 0]
    peak, tensors = live_at_peak(trace)
    print(f"replayed peak {peak / 2**20:.1f} MiB (budget {args.budget_bytes / 2**20:.1f} MiB); "
          f"arena {torch_gpu.RUNS.get('arena_bytes', 0) / 2**20:.1f} MiB", flush=True)
    by_frame = {}
    for size, frame in tensors:
        count, total = by_frame.get(frame, (0, 0))
        by_frame[frame] = (count + 1, total + size)
    rows = sorted(by_frame.items(), key=lambda kv: -kv[1][1])
    for frame, (count, total) in rows[:25]:
        print(f"  {total / 2**20:10.2f} MiB  x{count:<5d} {frame}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "budget_bytes": args.budget_bytes, "phases": phases,
                       "replayed_peak": peak, "arena_bytes": torch_gpu.RUNS.get("arena_bytes"),
                       "live_at_peak": [{"frame": k, "count": c, "bytes": b}
                                        for k, (c, b) in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
