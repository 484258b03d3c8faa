"""In-process A/B of the shim's features: one process per workload, the shim toggled between blocks.

    python3 ab.py [--shim LIB] [--work DIR] [--json FILE] [--markdown FILE] [--seconds S]
                  [--pairs N] [--workloads conv_bn16_fp32,stack_bias,...] [--conditions 31] [--seed N]
                  [--resamples N]
    python3 ab.py --from-json ab.json [--json FILE] [--markdown FILE]     # analyse a report again

Parent mode (the default; standard library only, no torch): for each workload, runs this program
again as a child under scripts/cudnn-fastpath with a statistics file of its own, then reports, for
each condition (every feature on = 31 by default; also set-stream skip only = 1, pack cache only =
2, both = 3, both and graph replay = 7, and legacy cuDNN replay = 15 or cuBLAS replay = 23 on top
of 7) against the shim forwarding everything (0): the median per-iteration time of the off blocks,
the median and the mean paired gain, a bootstrap 95% confidence interval of the mean gain and the
gain in percent (the one measure of what the shim saves: the shim itself measures no time), then
the mean time per iteration off and on, the saving, the ops the shim replayed per iteration (its
counters read around each timed block) and the saving per replayed op. --json gets everything,
--markdown the tables, which are also printed last. Exit status: 0 if every workload ran (the
targets never change it), 2 if the shim or its switch is missing, 1 otherwise.

Child mode (--child WORKLOAD; under the launcher; imports torch): finds the shim's switch in the
process (cudnn_fastpath.set_features), runs rounds of paired blocks until --pairs rounds or
--deadline (gpu/harness.py), and writes the raw blocks to --result. docs/ab-method.md says why it is
built this way and how to rerun it by hand; workloads.py holds the workloads, ab_report.py the analysis.
"""
import argparse
import contextlib
import glob
import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

sys.path[:0] = [str(HERE.parent), str(HERE)]
import harness  # noqa: E402  the shim's whereabouts and switch, the children, the paired rounds
from abstats import bootstrap_mean_ci, percentile  # noqa: E402,F401 (ab.percentile and ab.bootstrap_mean_ci stay importable)
from ab_report import METRICS, analyse_workload, markdown  # noqa: E402
from harness import ALL, CONDITION_NAMES, CUBLAS, GRAPHS, LEGACY, PACKS, SET_STREAM  # noqa: E402
from shimstats import delta, launches  # noqa: E402
from workloads import DEFAULT_WORKLOADS, FLOORS, TARGETS, WORKLOADS  # noqa: E402,F401

ON_CONDITIONS = (ALL,)  # each paired with 0 (--conditions picks others)
PLAN_ITERATIONS = 20  # iterations with every feature off before any block (a workload's "plans" may ask more)
BOOTSTRAP_NS_PER_DRAW = 80  # pure-Python resampling cost, kept out of the children's time budget
STARTUP_GRACE_S = 90  # a child's start (torch, CUDA, cuDNN plans) and minimum rounds, past its deadline


# ------------------------------------------------------------------------------------------------
# Parent mode

def run_child(name, args, shim, work, deadline, hard_limit):
    """One workload in its own process under the launcher, measuring until deadline and killed at
    hard_limit (time.time() values); returns (child results, statistics)."""
    stats_pattern = str(work / f"ab-{name}.stats-%p.json")
    result_file = work / f"ab-{name}.child.json"
    for stale in glob.glob(stats_pattern.replace("%p", "*")) + [str(result_file)]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--result", str(result_file),
            "--deadline", f"{deadline:.3f}", "--pairs", str(args.pairs), "--seed", str(args.seed),
            "--conditions", args.conditions]
    argv, extra = harness.UNDER_SHIM(argv, shim, stats_pattern, False)
    exit_code, _ = harness.run_process(f"{name} under the shim", argv, {**harness.clean_environment(), **extra},
                                       max(min(deadline + STARTUP_GRACE_S, hard_limit) - time.time(), 1))
    child = harness.read_json(result_file)
    child["exit_code"] = exit_code
    if exit_code != 0 and not child.get("error"):
        child["error"] = harness.failure(exit_code)
    return child, harness.read_stats(stats_pattern)[0]


def parse_conditions(text):
    conditions = tuple(int(c) for c in text.split(",") if c)
    unknown = [c for c in conditions if c not in CONDITION_NAMES or c == 0]
    if unknown or not conditions:
        raise SystemExit(f"ab: --conditions takes masks of {', '.join(str(c) for c in CONDITION_NAMES if c)}")
    return conditions


def new_report(args, shim):
    return {"program": "gpu/pytorch/ab.py", "shim": shim, "seconds_budget": args.seconds,
            "pairs_asked": args.pairs, "seed": args.seed, "resamples": args.resamples,
            "conditions": {str(k): v for k, v in CONDITION_NAMES.items()}, "metrics": METRICS,
            "targets": [{"workload": w, "condition": CONDITION_NAMES[c], "metric": "cpu", "min_percent": p}
                        for (w, c), p in TARGETS.items()],
            "floors": [{"workload": w, "condition": CONDITION_NAMES[c], "metric": m, "min_ci_low_percent": p}
                       for (w, c, m), p in FLOORS.items()],
            "workloads": {}, "rows": []}


def parent(args):
    names = [n for n in args.workloads.split(",") if n]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown or not names:
        raise SystemExit(f"ab: unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    conditions = parse_conditions(args.conditions)
    shim = args.shim or harness.find_shim("ab")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    start = time.time()
    # The analysis runs after the children: its bootstrap (2 rows per workload and condition) is
    # kept out of their share, up to a fifth of the budget.
    analysis_s = min(0.2 * args.seconds, len(names) * 2 * len(conditions) * args.resamples * args.pairs
                     * BOOTSTRAP_NS_PER_DRAW / 1e9)
    deadline = start + args.seconds - analysis_s
    report = new_report(args, shim)
    measured = []
    for i, name in enumerate(names):
        # The time left is shared out evenly among the workloads still to run; a child that needs
        # less (it stops at --pairs rounds) leaves its share to the next.
        child_deadline = time.time() + (deadline - time.time()) / (len(names) - i)
        child, stats = run_child(name, args, shim, work, child_deadline, start + args.seconds + STARTUP_GRACE_S)
        if child["exit_code"] == 2:
            # The shim is not loaded or has no switch: the child said so in one line.
            report["error"] = child.get("error", "the shim's switch is missing")
            report["passed"] = False
            report["markdown"] = f"## In-process A/B (gpu/pytorch/ab.py)\n\nNOT RUN: {report['error']}\n"
            harness.write_report(args, report)
            return 2
        measured.append((name, child, stats))
    return finish(args, report, measured, start)


def from_json(args):
    """--from-json: the analysis and the report again, from an earlier report's raw blocks."""
    old = json.loads(Path(args.from_json).read_text())
    report = {**{k: v for k, v in old.items() if k not in ("workloads", "rows", "markdown")},
              "seed": args.seed, "resamples": args.resamples, "workloads": {}, "rows": [],
              "analysed_from": args.from_json}
    measured = [(name, {k: v for k, v in w.items() if k != "stats"}, w.get("stats"))
                for name, w in old.get("workloads", {}).items()]
    return finish(args, report, measured, time.time())


def finish(args, report, measured, start):
    """Analyses every workload's pairs, writes --json and --markdown, prints the tables and targets."""
    status = 0
    print(f"ab: analysing ({args.resamples} bootstrap resamples per row)", flush=True)
    for name, child, stats in measured:
        pairs = child.pop("pairs", [])
        entry = {**child, "stats": stats}
        if child.get("exit_code", 0) != 0 or not pairs:
            entry["error"] = child.get("error") or "no pairs measured"
            status = 1
        else:
            report["rows"] += analyse_workload(name, {**child, "pairs": pairs}, CONDITION_NAMES, args.seed,
                                               args.resamples)
        entry["pairs"] = pairs  # raw data last, for whoever wants to analyse it again
        report["workloads"][name] = entry
    report["elapsed_s"] = round(time.time() - start, 1)
    report["passed"] = status == 0
    report["markdown"] = markdown(report)
    harness.write_report(args, report)
    print("\n" + report["markdown"])
    for row in report["rows"]:
        if "target_passed" in row:
            print(f"target: {row['workload']}, {row['condition']}, {row['metric']} >= {row['target_percent']:g}% "
                  f"with the interval above zero: {'PASS' if row['target_passed'] else 'FAIL'} "
                  f"({row.get('gain_percent', float('nan')):.2f}%)")
        if "floor_passed" in row:
            print(f"target: {row['workload']}, {row['condition']}, {row['metric']} not slower (interval's lower end "
                  f">= {row['floor_percent']:g}%): {'PASS' if row['floor_passed'] else 'FAIL'} "
                  f"({row.get('ci_low_percent', float('nan')):.2f}%)")
    return status


# ------------------------------------------------------------------------------------------------
# Child mode (torch from here on)

class Census:
    """What the shim did over the timed iterations, per features in effect: its counters read with
    cudnn_fastpath_stats just before and just after each block's timed loop (outside it)."""

    def __init__(self):
        self.by_features = {}  # features in effect -> {"iterations": timed iterations, "counts": {...}}

    @staticmethod
    def read():
        return harness.read_counters()

    def add(self, in_effect, before, after, iterations):
        """Adds one block's counts; returns the ops replayed in it (None when not counted)."""
        if before is None or after is None:
            return None
        moved = delta(before, after)
        entry = self.by_features.setdefault(str(in_effect), {"iterations": 0, "counts": {}})
        entry["iterations"] += iterations
        for key, value in moved.items():
            if value:  # the counters that moved, and only those
                entry["counts"][key] = entry["counts"].get(key, 0) + value
        return launches(moved)


def child(args):
    switch = harness.switch_or_explain("ab", args.result, "run ab.py without --child", workload=args.child)
    if switch is None:
        return harness.EXIT_NO_SHIM
    features, set_features = switch

    import torch
    import workloads

    if not torch.cuda.is_available():
        print("ab: SKIPPED: no CUDA device", file=sys.stderr)
        Path(args.result).write_text(json.dumps({"workload": args.child, "error": "no CUDA device"}))
        return harness.EXIT_NO_GPU
    spec = WORKLOADS[args.child]
    timed, warmup, drop = spec["timed"], spec["warmup"], spec.get("drop", False)
    conditions = parse_conditions(args.conditions)
    compared = spec.get("compare", True)
    step, context = workloads.make_workload(args.child, torch.device("cuda"))
    census = Census()
    iterations_by_features = {}  # features in effect -> iterations run with them (warm-ups included)

    def count(in_effect, iterations):
        iterations_by_features[in_effect] = iterations_by_features.get(in_effect, 0) + iterations

    def block(asked):
        """One block: switch, warm up, time K iterations; (measures, outputs to compare)."""
        in_effect = set_features(asked)
        # Switching a replay off destroyed its graphs: with it on, each op runs directly twice and
        # is captured at its third execute, all in the warm-up, so the timed iterations are steady
        # launches; the off arm warms up as long (docs/ab-method.md).
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()  # the queue is empty when the timed loop starts
        before = census.read()
        out = None
        wall_start = time.perf_counter_ns()
        cpu_start = time.thread_time_ns()
        process_start = time.process_time_ns()
        if drop:
            for _ in range(timed):
                step()  # the output is dropped at once
        else:
            for _ in range(timed):
                out = step()
        cpu_end = time.thread_time_ns()  # the enqueue only: before the synchronize
        process_end = time.process_time_ns()
        torch.cuda.synchronize()
        wall_end = time.perf_counter_ns()
        replayed = census.add(in_effect, before, census.read(), timed)
        if drop and compared:
            out = step()  # one more, untimed, for the comparison
        count(in_effect, warmup + timed + (drop and compared))
        measures = {"in_effect": in_effect, "cpu_ns": (cpu_end - cpu_start) / timed,
                    "cpu_all_ns": (process_end - process_start) / timed,
                    "wall_ns": (wall_end - wall_start) / timed, "timed": timed}
        if replayed is not None:
            measures["launches"] = replayed
        return measures, out

    with context:
        # The first call starts cuDNN (and the shim reads its configuration): only then do the
        # features say what the environment asked for.
        step()
        torch.cuda.synchronize()
        features_at_start = features()
        count(features_at_start, 1)
        # What this shim grants when asked for everything (an older build knows fewer features,
        # the configuration may forbid some): the features a block can have.
        capable = set_features(ALL)
        # The first calls build cuDNN plans (and SDPA kernels, cuBLAS heuristics; for a workload
        # that cycles through shapes, those of every shape): outside any block, features off.
        plans = spec.get("plans", PLAN_ITERATIONS)
        count(set_features(0), plans)
        for _ in range(plans):
            reference = step()
        torch.cuda.synchronize()
        # A step whose output depends on which of its inputs it took says which (workloads.py):
        # one reference per input, every feature off.
        variant, variants = getattr(step, "which", lambda: None), getattr(step, "variants", 1)
        references = {variant(): [t.clone() for t in reference]}
        for _ in range(variants - 1):
            references[variant()] = [t.clone() for t in step()]
        count(0, variants - 1)
        del reference
        for asked in (*conditions, 0):  # each code path once, unrecorded (the caches fill)
            block(asked)

        def same_as_reference(out):
            """The output of the step just run against its input's reference."""
            reference = references.get(variant())
            return not compared or (reference is not None
                                    and all(torch.equal(a, b) for a, b in zip(out, reference)))

        other_output = 0

        def pair(_, condition, order):
            """Both blocks from the same inputs (workloads.positioned); the pair after goes on."""
            nonlocal other_output
            measured = {}
            mark = step.tell() if hasattr(step, "tell") else None
            for which, asked in order:
                if mark is not None:
                    step.seek(mark)
                measured[which], out = block(asked)
                other_output += not same_as_reference(out)
                del out
            return measured

        def progress(r, pairs, seconds):
            gains = {CONDITION_NAMES[c]: statistics.fmean(p["off"]["cpu_ns"] - p["on"]["cpu_ns"]
                                                          for p in pairs if p["condition"] == c) / 1000
                     for c in conditions}
            print(f"ab {args.child}: {r + 1}/{args.pairs} rounds, {seconds:.0f} s; "
                  "mean CPU gain so far (µs/iter): " + ", ".join(f"{k} {v:+.2f}" for k, v in gains.items()),
                  flush=True)

        census.by_features.clear()  # counted from the measured rounds on
        pairs, stopped, measure_seconds = harness.paired_rounds(
            args.pairs, time.monotonic() + (args.deadline - time.time()), conditions, pair,
            random.Random(f"{args.seed}/{args.child}"), progress=progress, every=max(1, args.pairs // 10))
        set_features(features_at_start)

    rounds = len(pairs) // len(conditions)
    print(f"ab {args.child}: {rounds} rounds in {measure_seconds:.0f} s"
          + (" (stopped by the time budget)" if stopped else ""), flush=True)
    with_bit = {name: sum(v for k, v in iterations_by_features.items() if k & bit)
                for name, bit in (("set_stream", SET_STREAM), ("packs", PACKS), ("graphs", GRAPHS),
                                  ("legacy", LEGACY), ("cublas", CUBLAS))}
    Path(args.result).write_text(json.dumps({
        "workload": args.child, "what": spec["what"], "timed": timed, "warmup": warmup, "drop": drop,
        "pairs_asked": args.pairs, "rounds": rounds, "stopped_by_deadline": stopped,
        "measure_seconds": round(measure_seconds, 1), "features_at_start": features_at_start,
        "features_capable": capable, "conditions": list(conditions), "compared": compared,
        "iterations_by_features": {str(k): v for k, v in sorted(iterations_by_features.items())},
        "iterations_with": with_bit, "census": census.by_features,
        "blocks_with_other_output": other_output,
        "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                     "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name()},
        "pairs": pairs}))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_parent_arguments(parser, "ab")
    parser.add_argument("--seconds", type=float, default=150,
                        help="time budget of the whole run, children's start included (default 150)")
    parser.add_argument("--pairs", type=int, default=400,
                        help="pairs per workload and condition, fewer if --seconds runs out (default 400)")
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS),
                        help=f"comma-separated, run in this order (default {','.join(DEFAULT_WORKLOADS)}; "
                             f"also {','.join(w for w in WORKLOADS if w not in DEFAULT_WORKLOADS)})")
    parser.add_argument("--conditions", default=",".join(str(c) for c in ON_CONDITIONS),
                        help="feature masks compared with 0, comma-separated (default 31, every feature; "
                             "also 1, 2, 3, 7, 15, 23)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--from-json", help="analyse the raw blocks of this earlier --json report again; runs nothing")
    # Child mode, set by the parent.
    parser.add_argument("--child", choices=sorted(WORKLOADS), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=math.inf, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    if args.child:
        if not args.result:
            parser.error("--child needs --result")
        return child(args)
    if args.from_json:
        return from_json(args)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
