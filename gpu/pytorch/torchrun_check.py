"""A two-process torchrun job (one GPU each) under the shim, and each rank's statistics.

    python3 torchrun_check.py --shim LIB --dir DIR [--nproc 2]   # launches torchrun, then reports

Each rank runs the inference network of workload.py (models.py's Net) on its own GPU and all-reduces its output
through NCCL; the shim, preloaded into every rank, writes one statistics file per process. The
report joins them to the ranks by pid and checks each rank as check.py checks one process. Needs
two GPUs: gpu-check runs it only when it sees them.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rank_main(directory, iterations):
    import torch
    import torch.distributed as dist

    import models

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)  # before NCCL starts, so that each rank owns its GPU
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = torch.device("cuda", local_rank)
    net = models.make_net(device).eval()
    x = models.make_inputs(1, 1, device)[0]
    with torch.no_grad():
        for _ in range(iterations):
            out, _ = net(x)
        reduced = out.clone()
        dist.all_reduce(reduced)  # every rank computed the same: the sum is exactly world_size times it
    exact = bool(torch.equal(reduced, out * dist.get_world_size()))
    Path(directory, f"rank-{rank}.json").write_text(json.dumps(
        {"rank": rank, "pid": os.getpid(), "device": local_rank, "iterations": iterations,
         "allreduce_exact": exact}))
    dist.destroy_process_group()


def launch(args):
    sys.path.insert(0, str(HERE.parent))
    import harness  # one place decides how programs run under the shim

    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in list(directory.glob("rank-*.json")) + list(directory.glob("stats-*.json")):
        stale.unlink()
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={args.nproc}",
            str(Path(__file__).resolve()), "--rank-dir", str(directory), "--iters", str(args.iters)]
    argv, extra = harness.UNDER_SHIM(argv, args.shim, str(directory / "stats-%p.json"), False)
    env = harness.clean_environment()
    env.update(extra)
    print("+ " + " ".join(argv), flush=True)
    done = subprocess.run(argv, env=env, timeout=240)
    return report(directory, args.nproc, done.returncode)


def report(directory, nproc, exit_code):
    ranks = sorted((json.loads(p.read_text()) for p in directory.glob("rank-*.json")), key=lambda r: r["rank"])
    failures = [] if exit_code == 0 else [f"torchrun exited {exit_code}"]
    if len(ranks) != nproc:
        failures.append(f"{len(ranks)} of {nproc} ranks reported")
    print("| rank | pid | set_stream_calls | forwarded | handles | skipped | resolved_by | all-reduce exact |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    results = []
    for rank in ranks:
        stats_path = directory / f"stats-{rank['pid']}.json"
        stats = json.loads(stats_path.read_text()) if stats_path.exists() else None
        if stats is None:
            failures.append(f"rank {rank['rank']}: no statistics file")
            continue
        needed = stats["forwarded"]  # statistics forward nothing of their own
        print(f"| {rank['rank']} | {rank['pid']} | {stats['set_stream_calls']} | {needed} | {stats['handles']} | "
              f"{stats['skipped']} | {stats['resolved_by']} | {rank['allreduce_exact']} |")
        if stats["set_stream_calls"] == 0 or needed != stats["handles"]:
            failures.append(f"rank {rank['rank']}: {needed} calls reached cuDNN for {stats['handles']} handle(s)")
        if not rank["allreduce_exact"]:
            failures.append(f"rank {rank['rank']}: all-reduce result differs")
        results.append({"rank": rank, "stats": stats})
    Path(directory, "torchrun-report.json").write_text(json.dumps({"ranks": results, "failures": failures}, indent=2))
    for failure in failures:
        print(f"FAIL: {failure}")
    print("torchrun check: " + ("passed" if not failures else "FAILED"))
    return 0 if not failures else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shim", help="path of libcudnn_fastpath.so (launch mode)")
    parser.add_argument("--dir", help="folder for the ranks' files (launch mode)")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--rank-dir", help=argparse.SUPPRESS)  # set by launch() for the ranks
    args = parser.parse_args()
    if args.rank_dir:
        rank_main(args.rank_dir, args.iters)
        return 0
    if not (args.shim and args.dir):
        parser.error("--shim and --dir are needed")
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
