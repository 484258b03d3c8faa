"""Where the eval16 workload spends the host time that a plain nn.Sequential of the same 32 cuDNN
ops does not (issue 28, item 4).

    python3 eval16_profile.py [--seconds S] [--json FILE] [--markdown FILE]
    python3 eval16_profile.py --only VARIANT [--iters N]     # one variant, untimed, for --stats-file

Run it under the shim (scripts/cudnn-fastpath or LD_PRELOAD) to compare every feature off (0)
with every feature on (31) as well; without the shim it measures the variants alone. One process:
whole processes of the same program differ by more than what is looked for (docs/ab-method.md,
"Why one process"). The variants, each eval16 with one thing changed:

    eval16            models.py's Net (16 conv+bn+ReLU, the mean, a Linear head), torch.no_grad(),
                      each iteration's outputs kept until the next (ab.py's eval16)
    eval16_drop       its outputs dropped at once
    eval16_inference  torch.inference_mode() instead of torch.no_grad()
    eval16_features   the 16 blocks alone (no mean, no head)
    sequential        models.conv_bn_stack, inference_mode, output dropped (ab.py's conv_bn16_fp32)

Rounds until --seconds: in each, every (variant, features) pair in a shuffled order runs a block
(8 untimed iterations after the switch, then 2 timed: main-thread CPU time); the blocks of one
round are paired. Reported: the median CPU time per iteration of each pair, and each variant's
mean paired difference from eval16 with a bootstrap 95% interval. Then torch.profiler's table of
one eval16 iteration (features off), its ops by self CPU time.
"""
import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import harness  # noqa: E402  the shim's switch
from abstats import bootstrap_mean_ci  # noqa: E402
from harness import ALL, WARMUP  # noqa: E402

import models  # noqa: E402  first: it sets CUBLAS_WORKSPACE_CONFIG before cuBLAS starts
import torch  # noqa: E402

TIMED = 2


def feature_switch():
    """The shim's set_features (a mask in, the features in effect out), or None without the shim."""
    switch = harness.switch()
    return switch[1] if switch else None


def variants(device):
    """name -> (context factory, step, whether the step's output is kept)."""
    net = models.make_net(device).eval()
    x = models.make_inputs(1, 1, device)[0]
    plain = models.conv_bn_stack(device).eval()
    y = models.images(1, 1, device)[0]
    return {
        "eval16": (torch.no_grad, lambda: net(x), True),
        "eval16_drop": (torch.no_grad, lambda: net(x), False),
        "eval16_inference": (torch.inference_mode, lambda: net(x), True),
        "eval16_features": (torch.no_grad, lambda: net.features(x), True),
        "sequential": (torch.inference_mode, lambda: plain(y), False),
    }


def iterations(step, keep, count):
    """`count` iterations, each output kept until the next one's (keep) or dropped at once."""
    out = None
    for _ in range(count):
        if keep:
            out = step()
        else:
            step()
    return out


def block(context, step, keep):
    """Warm-up, then the timed iterations' main-thread CPU time, in us per iteration."""
    with context():
        out = iterations(step, keep, WARMUP)
        torch.cuda.synchronize()
        start = time.thread_time_ns()
        out = iterations(step, keep, TIMED)
        end = time.thread_time_ns()
        torch.cuda.synchronize()
        del out
    return (end - start) / TIMED / 1000.0


def profile_table(context, step, rows=12):
    from torch.profiler import ProfilerActivity, profile
    with context():
        for _ in range(WARMUP):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(TIMED):
                step()
        torch.cuda.synchronize()
    table = []
    for e in sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)[:rows]:
        table.append({"op": e.key, "calls_per_iteration": e.count / TIMED,
                      "self_cpu_us_per_iteration": e.self_cpu_time_total / TIMED,
                      "cpu_us_per_iteration": e.cpu_time_total / TIMED})
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", metavar="VARIANT",
                        help="run VARIANT alone for --iters iterations and time nothing (for the shim's statistics file)")
    parser.add_argument("--iters", type=int, default=200)
    args = parser.parse_args()
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = False
    set_features = feature_switch()
    conditions = (0, ALL) if set_features else (None,)
    runs = variants(device)
    if args.only:
        context, step, keep = runs[args.only]
        with context():
            iterations(step, keep, args.iters)
        torch.cuda.synchronize()
        return 0
    for name, (context, step, keep) in runs.items():  # cuDNN's plans, the shim's start
        block(context, step, keep)
    rng = random.Random(args.seed)
    samples = {(v, c): [] for v in runs for c in conditions}
    deadline = time.monotonic() + args.seconds
    rounds = 0
    while time.monotonic() < deadline or rounds < 5:
        order = list(samples)
        rng.shuffle(order)
        for v, c in order:
            if c is not None:
                set_features(c)
            samples[(v, c)].append(block(*runs[v]))
        rounds += 1
    report = {"rounds": rounds, "under_shim": bool(set_features), "medians_us": {}, "differences_us": {}}
    for (v, c), values in samples.items():
        report["medians_us"][f"{v}@{c}"] = statistics.median(values)
    for c in conditions:
        base = samples[("eval16", c)]
        for v in runs:
            if v == "eval16":
                continue
            diffs = [a - b for a, b in zip(samples[(v, c)], base)]
            low, high = bootstrap_mean_ci(diffs, resamples=2000, seed=args.seed)
            report["differences_us"][f"{v}@{c}"] = {"mean": statistics.fmean(diffs), "low": low, "high": high}
    if set_features:
        set_features(0)
    report["profile_eval16"] = profile_table(*runs["eval16"][:2])
    if set_features:
        set_features(ALL)

    lines = [f"eval16's host time by variant, {rounds} paired rounds, CPU us per iteration "
             f"({'under the shim: features 0 and 31' if set_features else 'no shim'})", "",
             "| variant | " + " | ".join(f"median @{c} | vs eval16 @{c} [95% CI]" for c in conditions) + " |",
             "| --- |" + " --- | --- |" * len(conditions)]
    for v in runs:
        cells = []
        for c in conditions:
            d = report["differences_us"].get(f"{v}@{c}")
            cells += [f"{report['medians_us'][f'{v}@{c}']:.1f}",
                      "-" if d is None else f"{d['mean']:+.1f} [{d['low']:+.1f}, {d['high']:+.1f}]"]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    lines += ["", "torch.profiler, one eval16 iteration, features off: ops by self CPU time", "",
              "| op | calls | self CPU us | CPU us |", "| --- | --- | --- | --- |"]
    for row in report["profile_eval16"]:
        lines.append(f"| {row['op']} | {row['calls_per_iteration']:g} | {row['self_cpu_us_per_iteration']:.1f} | "
                     f"{row['cpu_us_per_iteration']:.1f} |")
    text = "\n".join(lines)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
