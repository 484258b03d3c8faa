#!/usr/bin/env python3
"""Why a kind's relocated calls run directly: one relocation workload of workloads.py (moving_mix by
default: each kind's calls on a ring of fresh inputs, outputs kept a while) for a number of steps in
one process under the shim, then the shim's counters (counted with --stats). Run it with --verbose, which
makes the shim say, once per shape and alignment, why calls went by pointer (a fresh capture that
differed, and where):

    scripts/cudnn-fastpath --stats --verbose -- python3 gpu/pytorch/relocation_probe.py [--workload W] [--steps N]

Prints the counters that moved (JSON, one line) after a warm-up of --warmup steps and after the rest."""
import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
import harness  # noqa: E402  the shim's counters (harness.read_counters)
from shimstats import delta  # noqa: E402


def moved(before, after):
    """The counters that moved from `before` to `after` (harness.read_counters() readings, or None)."""
    return {k: v for k, v in delta(before, after).items() if v != 0}


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
        start = harness.read_counters()
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        warm = harness.read_counters()
        for _ in range(args.steps - args.warmup):
            step()
        torch.cuda.synchronize()
        end = harness.read_counters()
    print(json.dumps({"workload": args.workload, "warmup": moved(start, warm), "after": moved(warm, end)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
