#!/usr/bin/env python3
"""Why a kind's relocated calls run directly: one relocation workload of workloads.py (moving_mix by
default: each kind's calls on a ring of fresh inputs, outputs kept a while) for a number of steps in
one process under the shim, then the shim's counters. Run it under the launcher with --verbose, which
makes the shim say, once per shape and alignment, why calls went by pointer (a fresh capture that
differed, and where):

    scripts/cudnn-fastpath --verbose -- python3 gpu/pytorch/relocation_probe.py [--workload W] [--steps N]

Prints the counters that moved (JSON, one line) after a warm-up of --warmup steps and after the rest."""
import argparse
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def read_counts():
    """The shim's counters by name (docs/statistics.md's ctypes recipe), or {} without the shim."""
    process = ctypes.CDLL(None)
    try:
        read, names = process.cudnn_fastpath_stats, process.cudnn_fastpath_stats_fields
    except AttributeError:
        return {}
    names.restype = ctypes.c_char_p
    fields = names().decode().split()

    class Stats(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32) for n in ("size", "counting", "version", "reserved")] + \
                   [(n, ctypes.c_uint64) for n in fields]
    s = Stats()
    if read(ctypes.byref(s), ctypes.sizeof(s)) != 0:
        return {}
    return {n: getattr(s, n) for n in fields}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="moving_mix")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    import torch
    import workloads
    if not torch.cuda.is_available():
        print("relocation_probe: SKIPPED: no CUDA device", file=sys.stderr)
        return 0
    step, context = workloads.make_workload(args.workload, torch.device("cuda"))
    with context:
        start = read_counts()
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        warm = read_counts()
        for _ in range(args.steps - args.warmup):
            step()
        torch.cuda.synchronize()
        end = read_counts()
    moved = lambda a, b: {k: b[k] - a.get(k, 0) for k in b if b[k] != a.get(k, 0)}
    print(json.dumps({"workload": args.workload, "warmup": moved(start, warm), "after": moved(warm, end)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
