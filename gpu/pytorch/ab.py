"""In-process A/B of the shim's features: one process per workload, the shim toggled between blocks.

    python3 ab.py [--shim LIB] [--work DIR] [--json FILE] [--markdown FILE] [--seconds S]
                  [--pairs N] [--workloads sdpa,eval16,...] [--conditions 1,2,3,7] [--seed N]
                  [--resamples N]

Parent mode (the default; standard library only, no torch): for each workload, runs this program
again as a child under scripts/cudnn-fastpath with a statistics file of its own, then reports, for
each condition (set-stream skip only = 1, pack cache only = 2, both = 3, both and graph replay =
7) against the shim forwarding everything (0): the median per-iteration time of the off blocks, the median and the mean
paired gain, a bootstrap 95% confidence interval of the mean gain and the gain in percent: the one
measure of what the shim saves (the shim itself measures no time; its statistics file gives exact
counts, quoted beside the table). --json gets everything, --markdown the table, which is also
printed last. Exit status: 0 if every workload ran (the targets never
change it), 2 if the shim or its switch is missing, 1 otherwise.

Child mode (--child WORKLOAD; under the launcher; imports torch): finds cudnn_fastpath_set_features
in the process, runs rounds of paired blocks until --pairs rounds or --deadline, and writes the raw
blocks to --result. docs/ab-method.md says why it is built this way and how to rerun it by hand.
"""
import argparse
import contextlib
import ctypes
import gc
import glob
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LAUNCHER = REPO / "scripts" / "cudnn-fastpath"

sys.path.insert(0, str(HERE.parent))
from abstats import bootstrap_mean_ci, paired_summary, percentile, table_lines, us  # noqa: E402,F401 (ab.percentile and ab.bootstrap_mean_ci stay importable)

# The shim's feature bits (cudnn_fastpath_set_features) and the conditions compared.
SET_STREAM, PACKS, GRAPHS = 1, 2, 4
ALL = SET_STREAM | PACKS | GRAPHS
CONDITION_NAMES = {0: "off", SET_STREAM: "set-stream", PACKS: "packs", SET_STREAM | PACKS: "both",
                   ALL: "graphs"}  # graphs: both, and steady executes replayed as CUDA graphs
ON_CONDITIONS = (SET_STREAM, PACKS, SET_STREAM | PACKS, ALL)  # each paired with 0 (--conditions picks)

SDPA_CALLS = 16  # cuDNN SDPA forward calls per sdpa iteration
# Warm-up iterations of a block with graph replay on. An op whose pointers alternate between two
# sets from one iteration to the next (a tensor the program still holds from the iteration before,
# as the A/B does with its output) is two triples, each run directly twice and captured at its third
# execute: six iterations. Three left half of eval16's convolutions on the H200 (2026-12-01) with a
# capture or a direct execute inside the timed iterations.
GRAPH_WARMUP = 8
# K timed iterations per block, after one warm-up iteration that absorbs the switch (the first
# cudnnSetStream after switching skipping on reaches cuDNN). Short blocks: the host's speed drifts
# slowly on these machines (blocks of 8 paired 80% correlated on the H200), so the closer the two
# blocks of a pair, the more of that drift the difference cancels, and the more pairs fit in the
# time. 2 x ~50 launches (eval16) or 2 x 16 calls (sdpa) stay well inside the GPU's launch queue.
WORKLOADS = {
    "eval16": {"timed": 2, "warmup": 1,
               "what": "one forward of the 16-layer conv+bn+ReLU network of workload.py, batch 1, 32x32, eval"},
    "sdpa": {"timed": 2, "warmup": 1,
             "what": f"{SDPA_CALLS} cuDNN SDPA forward calls, bf16 1x8x128x64, not causal"},
    # Graph replay's workloads (issue 19). Training steps change nothing between iterations
    # (learning rate 0) but are not compared with a reference: cuDNN's backward may differ run to run.
    "train16": {"timed": 2, "warmup": 1, "compare": False,
                "what": "one training step of the 16-layer network, fp32, batch 2 (forward, backward, SGD with lr 0)"},
    "sdpa_train": {"timed": 2, "warmup": 1, "compare": False,
                   "what": "cuDNN SDPA forward and backward, bf16 1x8x128x64, not causal"},
    "eval16_half": {"timed": 2, "warmup": 1,
                    "what": "eval16 in fp16, channels-last (the issue's prototype measured this layout)"},
    "eval16_big": {"timed": 2, "warmup": 1,
                   "what": f"one forward of the 16-layer network, batch {256}, 32x32, eval: the GPU is the bottleneck"},
}
BIG_BATCH = 256
# The issue's targets: percent faster (mean paired CPU-time gain over the mean off time) with the
# features on, and the 95% interval above zero. Reported, never turned into an exit status.
TARGETS = {("eval16", SET_STREAM | PACKS): 1.5, ("sdpa", SET_STREAM | PACKS): 3.0,
           ("eval16", ALL): 10.0, ("train16", ALL): 8.0, ("sdpa", ALL): 15.0}
# Not slower: the 95% interval's lower end, in percent of the off time, at least this.
FLOORS = {("sdpa_train", ALL, "cpu"): -1.0, ("sdpa_train", ALL, "wall"): -1.0, ("eval16_big", ALL, "wall"): -1.0}
METRICS = {"cpu": "main-thread CPU time of the enqueue", "wall": "wall time, synchronize included"}
MIN_ROUNDS = 10  # rounds run even past the deadline: fewer pairs say nothing
PROGRESS_S = 10  # a progress line at least this often (and every tenth of the rounds)
BOOTSTRAP_NS_PER_DRAW = 80  # pure-Python resampling cost, kept out of the children's time budget
STARTUP_GRACE_S = 90  # a child's start (torch, CUDA, cuDNN plans) and minimum rounds, past its deadline


# ------------------------------------------------------------------------------------------------
# Statistics (pure Python, used by the parent): gpu/abstats.py, shared with the dlsym A/Bs

def analyse_condition(workload, condition, metric, pairs, seed, resamples):
    """One row of the table: the pairs of one workload and condition, one metric."""
    key = f"{metric}_ns"
    off = [p["off"][key] for p in pairs]
    on = [p["on"][key] for p in pairs]
    row = {"workload": workload, "condition": CONDITION_NAMES[condition], "features": condition,
           "metric": metric, "pairs": len(pairs),
           # Blocks where the shim did not report the features asked for (see the child's switch).
           "features_not_as_asked": sum(p["off"]["in_effect"] != 0 or p["on"]["in_effect"] != condition
                                        for p in pairs)}
    # Per iteration, gain = off - on (positive: faster with the feature); nothing more without pairs.
    row.update(paired_summary(off, on, resamples, seed=f"{seed}/{workload}/{condition}/{metric}"))
    return row


def analyse_workload(name, child, seed, resamples):
    rows = []
    for condition in child.get("conditions", ON_CONDITIONS):
        pairs = [p for p in child.get("pairs", []) if p["condition"] == condition]
        for metric in METRICS:
            row = analyse_condition(name, condition, metric, pairs, seed, resamples)
            floor = FLOORS.get((name, condition, metric))
            if floor is not None:
                row["floor_percent"] = floor
                row["floor_passed"] = "ci_low_percent" in row and row["ci_low_percent"] >= floor
            if metric == "cpu":
                target = TARGETS.get((name, condition))
                if target is not None:
                    row["target_percent"] = target
                    row["target_passed"] = ("gain_percent" in row and row["gain_percent"] >= target
                                            and row["ci_low_ns"] > 0)
            rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------
# The report



def markdown(report):
    lines = ["## In-process A/B (gpu/pytorch/ab.py)", "",
             "One process per workload under the launcher. Each condition's block is paired with a block "
             "with every feature off (`cudnn_fastpath_set_features(0)`), order alternating from pair to pair; "
             "a block is a few warm-up iterations, then K timed iterations and one synchronize. "
             "Gain = off - on per iteration (positive: faster with the feature); the interval is a bootstrap "
             f"95% interval of the mean gain ({report['resamples']} resamples); percent = mean gain / mean off.", ""]
    lines += table_lines(report["rows"], "iter")
    lines.append("")
    for name, w in report["workloads"].items():
        if w.get("error"):
            lines.append(f"- {name}: NOT MEASURED: {w['error']}")
            continue
        stats = w.get("stats") or {}
        lines.append(
            f"- {name} ({w['what']}): {w['rounds']} pairs per condition (asked {w['pairs_asked']}"
            f"{', stopped by the time budget' if w['stopped_by_deadline'] else ''}), K={w['timed']}, "
            f"warm-up {w['warmup']}, {w['measure_seconds']:.0f} s; iterations with set-stream on: "
            f"{w['iterations_with']['set_stream']}, with packs on: {w['iterations_with']['packs']}, with graphs on: "
            f"{w['iterations_with'].get('graphs', 0)}; outputs "
            + ("not compared (training)" if w.get("compared") is False
               else "identical in every block" if w["blocks_with_other_output"] == 0
               else f"DIFFERED from the reference in {w['blocks_with_other_output']} blocks")
            + (f". Shim's counts: cudnnSetStream skipped={stats.get('skipped')}, forwarded={stats.get('forwarded')}; "
               f"variant packs proxied={stats.get('packs_proxied')}, cache hits={stats.get('pack_hits')}, "
               f"built={stats.get('pack_misses')}, evicted={stats.get('pack_evictions')}, "
               f"materialized={stats.get('packs_materialized')}; graph replay captured={stats.get('graphs_captured')}, "
               f"launches={stats.get('graph_launches')}, direct={stats.get('direct_executes')}, refused: "
               f"capturing={stats.get('graph_refusals_capturing')}, host pointer={stats.get('graph_refusals_host_pointer')}, "
               f"context={stats.get('graph_refusals_context')}, churn={stats.get('graph_refusals_churn')}, "
               f"failed={stats.get('graph_refusals_failed')}, full={stats.get('graph_refusals_full')}, "
               f"evicted={stats.get('graph_evictions')}."
               if stats else ". Shim: NO STATISTICS FILE (it writes one at exit, in a process that called cuDNN)."))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# Parent mode

def find_shim():
    """The shim the launcher would preload, when --shim is not given."""
    done = subprocess.run([str(LAUNCHER), "--print-path"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ab: no shim given and the launcher found none: {done.stderr.strip()}")
    return done.stdout.strip()


def read_stats(pattern):
    """The statistics file of the child (one per process that used cuDNN; the child is one)."""
    files = sorted(glob.glob(pattern.replace("%p", "*")))
    stats = [json.loads(Path(f).read_text()) for f in files]
    return max(stats, key=lambda s: s.get("set_stream_calls", 0)) if stats else None


def run_child(name, args, shim, work, deadline, hard_limit):
    """One workload in its own process under the launcher, measuring until deadline and killed at
    hard_limit (time.time() values); returns (child results, statistics)."""
    sys.path.insert(0, str(HERE))
    import check  # one place decides how programs run under the shim (and the clean environment)

    stats_pattern = str(work / f"ab-{name}.stats-%p.json")
    result_file = work / f"ab-{name}.child.json"
    for stale in glob.glob(stats_pattern.replace("%p", "*")) + [str(result_file)]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--result", str(result_file),
            "--deadline", f"{deadline:.3f}", "--pairs", str(args.pairs), "--seed", str(args.seed),
            "--conditions", args.conditions]
    argv, extra = check.UNDER_SHIM(argv, shim, stats_pattern, False)
    env = check.clean_environment()
    env.update(extra)
    print("+ " + " ".join(argv), flush=True)
    try:
        done = subprocess.run(argv, env=env, timeout=max(min(deadline + STARTUP_GRACE_S, hard_limit) - time.time(), 1))
        exit_code = done.returncode
    except subprocess.TimeoutExpired:
        exit_code = -1
    child = json.loads(result_file.read_text()) if result_file.exists() else {}
    child["exit_code"] = exit_code
    if exit_code != 0 and not child.get("error"):
        child["error"] = "timed out" if exit_code == -1 else f"exit status {exit_code} (its output is in the log)"
    return child, read_stats(stats_pattern)


def parent(args):
    names = [n for n in args.workloads.split(",") if n]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown or not names:
        raise SystemExit(f"ab: unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    shim = args.shim or find_shim()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    start = time.time()
    # The analysis runs after the children: its bootstrap (6 rows per workload) is kept out of
    # their share, up to a fifth of the budget.
    analysis_s = min(0.2 * args.seconds,
                     len(names) * 6 * args.resamples * args.pairs * BOOTSTRAP_NS_PER_DRAW / 1e9)
    deadline = start + args.seconds - analysis_s
    report = {"program": "gpu/pytorch/ab.py", "shim": shim, "seconds_budget": args.seconds,
              "pairs_asked": args.pairs, "seed": args.seed, "resamples": args.resamples,
              "conditions": {str(k): v for k, v in CONDITION_NAMES.items()}, "metrics": METRICS,
              "targets": [{"workload": w, "condition": CONDITION_NAMES[c], "metric": "cpu", "min_percent": p}
                          for (w, c), p in TARGETS.items()],
              "workloads": {}, "rows": []}
    status, measured = 0, []
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
            write_outputs(args, report)
            return 2
        measured.append((name, child, stats))
    print(f"ab: analysing ({args.resamples} bootstrap resamples per row)", flush=True)
    for name, child, stats in measured:
        pairs = child.pop("pairs", [])
        entry = {**child, "stats": stats}
        if child["exit_code"] != 0 or not pairs:
            entry["error"] = child.get("error") or "no pairs measured"
            status = 1
        else:
            rows = analyse_workload(name, {**child, "pairs": pairs}, args.seed, args.resamples)
            report["rows"] += rows
        entry["pairs"] = pairs  # raw data last, for whoever wants to analyse it again
        report["workloads"][name] = entry
    report["elapsed_s"] = round(time.time() - start, 1)
    report["passed"] = status == 0
    report["markdown"] = markdown(report)
    write_outputs(args, report)
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


def write_outputs(args, report):
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    if args.markdown and report.get("markdown"):
        Path(args.markdown).write_text(report["markdown"])


# ------------------------------------------------------------------------------------------------
# Child mode (torch from here on)

def load_switch():
    """The shim's run-time switch from the global scope, where LD_PRELOAD put the shim; None if absent."""
    process = ctypes.CDLL(None)
    try:
        get, put = process.cudnn_fastpath_features, process.cudnn_fastpath_set_features
    except AttributeError:
        return None
    get.restype, get.argtypes = ctypes.c_uint, []
    put.restype, put.argtypes = ctypes.c_uint, [ctypes.c_uint]
    return get, put


def shim_mapped():
    with open("/proc/self/maps") as maps:
        return any("libcudnn_fastpath" in line for line in maps)


def make_workload(name, torch, workload, device):
    """(step, context): step() runs one iteration and returns its outputs, inside context."""
    stack = contextlib.ExitStack()
    if name == "train16":
        net = workload.make_net(device).train()
        # Learning rate 0: every step does the same work on the same weights.
        optimizer = torch.optim.SGD(net.parameters(), lr=0.0, momentum=0.9)
        x = workload.make_inputs(1, 2, device)[0]
        target = torch.zeros(2, workload.CLASSES, device=device)

        def step():
            optimizer.zero_grad(set_to_none=True)
            out, _ = net(x)
            loss = torch.nn.functional.mse_loss(out, target)
            loss.backward()
            optimizer.step()
            return (loss.detach(),)
        return step, stack
    if name == "sdpa_train":
        q, k, v = workload.make_qkv(1, device, requires_grad=True)[0]
        upstream = torch.ones_like(q)
        stack.enter_context(workload.cudnn_attention())

        def step():
            for tensor in (q, k, v):
                tensor.grad = None
            out = workload.attention(q, k, v)
            out.backward(upstream)
            return (q.grad,)
        return step, stack
    stack.enter_context(torch.no_grad())
    if name in ("eval16", "eval16_big", "eval16_half"):
        net = workload.make_net(device).eval()
        x = workload.make_inputs(1, BIG_BATCH if name == "eval16_big" else 1, device)[0]
        if name == "eval16_half":
            net = net.half().to(memory_format=torch.channels_last)
            x = x.half().to(memory_format=torch.channels_last)

        def step():
            return net(x)  # (logits, features)
    else:
        q, k, v = workload.make_qkv(1, device)[0]
        stack.enter_context(workload.cudnn_attention())

        def step():
            # Each output is dropped at once, as in a model that consumes it: the next call gets
            # the same address (and the same variant-pack contents).
            for _ in range(SDPA_CALLS - 1):
                workload.attention(q, k, v)
            return (workload.attention(q, k, v),)
    return step, stack


def child(args):
    switch = load_switch()
    if switch is None:
        why = ("the shim is loaded but exports no cudnn_fastpath_set_features (an older build?)" if shim_mapped()
               else "the shim is not loaded (run under scripts/cudnn-fastpath, or run ab.py without --child)")
        print(f"ab: {why}", file=sys.stderr)
        Path(args.result).write_text(json.dumps({"workload": args.child, "error": why}))
        return 2
    features, set_features = switch

    import torch
    import workload  # the same network and attention sizes as check.py's runs

    if not torch.cuda.is_available():
        print("ab: SKIPPED: no CUDA device", file=sys.stderr)
        Path(args.result).write_text(json.dumps({"workload": args.child, "error": "no CUDA device"}))
        return 77
    spec = WORKLOADS[args.child]
    timed, warmup = spec["timed"], spec["warmup"]
    conditions = tuple(int(c) for c in args.conditions.split(",") if c)
    compared = spec.get("compare", True)
    device = torch.device("cuda")
    step, context = make_workload(args.child, torch, workload, device)
    iterations_by_features = {}  # features in effect -> iterations run with them (warm-ups included)

    def count(in_effect, iterations):
        iterations_by_features[in_effect] = iterations_by_features.get(in_effect, 0) + iterations

    def block(asked):
        """One block: switch, warm up, time K iterations; (features in effect, cpu ns, wall ns, outputs)."""
        in_effect = set_features(asked)
        # Switching graph replay off destroyed the shim's graphs: with it on, each op runs directly
        # twice and is captured at its third execute, all in the warm-up, so the timed iterations
        # are steady launches.
        warm = max(warmup, GRAPH_WARMUP) if in_effect & GRAPHS else warmup
        for _ in range(warm):
            step()
        torch.cuda.synchronize()  # the queue is empty when the timed loop starts
        wall_start = time.perf_counter_ns()
        cpu_start = time.thread_time_ns()
        for _ in range(timed):
            out = step()
        cpu_end = time.thread_time_ns()  # the enqueue only: before the synchronize
        torch.cuda.synchronize()
        wall_end = time.perf_counter_ns()
        count(in_effect, warm + timed)
        return {"in_effect": in_effect, "cpu_ns": (cpu_end - cpu_start) / timed,
                "wall_ns": (wall_end - wall_start) / timed}, out

    with context:
        # The first call starts cuDNN (and the shim reads its configuration): only then do the
        # features say what the environment asked for.
        step()
        torch.cuda.synchronize()
        features_at_start = features()
        count(features_at_start, 1)
        # The first calls build cuDNN plans (and SDPA kernels): outside any block, features off.
        count(set_features(0), 20)
        for _ in range(20):
            reference = step()
        torch.cuda.synchronize()
        reference = [t.clone() for t in reference]
        for asked in (*conditions, 0):  # each code path once, unrecorded (the pack cache fills)
            block(asked)

        def same_as_reference(out):
            return not compared or all(torch.equal(a, b) for a, b in zip(out, reference))

        # No garbage collection inside the timed loops: what exists now is frozen, the rest waits.
        gc.collect()
        gc.freeze()
        gc.disable()
        rng = random.Random(f"{args.seed}/{args.child}")
        pairs, other_output, round_seconds, stopped = [], 0, 0.0, False
        started = last_progress = time.monotonic()
        progress_every = max(1, args.pairs // 10)
        for r in range(args.pairs):
            if r >= MIN_ROUNDS and time.time() + 1.2 * round_seconds > args.deadline:
                stopped = True
                break
            round_start = time.monotonic()
            # Conditions in a random order within the round; off first in even rounds, last in odd.
            on_first = r % 2 == 1
            for condition in rng.sample(conditions, len(conditions)):
                order = (("on", condition), ("off", 0)) if on_first else (("off", 0), ("on", condition))
                measured = {}
                for which, asked in order:
                    measured[which], out = block(asked)
                    other_output += not same_as_reference(out)
                pairs.append({"round": r, "condition": condition, "on_first": on_first, **measured})
            round_seconds = time.monotonic() - round_start
            if (r + 1) % progress_every == 0 or time.monotonic() - last_progress > PROGRESS_S:
                last_progress = time.monotonic()
                gains = {CONDITION_NAMES[c]: statistics.fmean(p["off"]["cpu_ns"] - p["on"]["cpu_ns"]
                                                              for p in pairs if p["condition"] == c) / 1000
                         for c in conditions}
                print(f"ab {args.child}: {r + 1}/{args.pairs} rounds, {time.monotonic() - started:.0f} s; "
                      "mean CPU gain so far (µs/iter): " + ", ".join(f"{k} {v:+.2f}" for k, v in gains.items()),
                      flush=True)
        measure_seconds = time.monotonic() - started
        gc.enable()
        gc.unfreeze()
        set_features(features_at_start)

    rounds = len(pairs) // len(conditions)
    print(f"ab {args.child}: {rounds} rounds in {measure_seconds:.0f} s"
          + (" (stopped by the time budget)" if stopped else ""), flush=True)
    Path(args.result).write_text(json.dumps({
        "workload": args.child, "what": spec["what"], "timed": timed, "warmup": warmup,
        "pairs_asked": args.pairs, "rounds": rounds, "stopped_by_deadline": stopped,
        "measure_seconds": round(measure_seconds, 1), "features_at_start": features_at_start,
        "conditions": list(conditions), "compared": compared,
        "iterations_by_features": {str(k): v for k, v in sorted(iterations_by_features.items())},
        "iterations_with": {
            "set_stream": sum(v for k, v in iterations_by_features.items() if k & SET_STREAM),
            "packs": sum(v for k, v in iterations_by_features.items() if k & PACKS),
            "graphs": sum(v for k, v in iterations_by_features.items() if k & GRAPHS)},
        "blocks_with_other_output": other_output,
        "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                     "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name()},
        "pairs": pairs}))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shim", help="libcudnn_fastpath.so to preload (default: the launcher's choice)")
    parser.add_argument("--work", default=str(REPO / "out" / "ab"),
                        help="folder for the children's files (default: out/ab in the checkout, git-ignored)")
    parser.add_argument("--json", help="write the full report here")
    parser.add_argument("--markdown", help="write the table here")
    parser.add_argument("--seconds", type=float, default=150,
                        help="time budget of the whole run, children's start included (default 150)")
    parser.add_argument("--pairs", type=int, default=400,
                        help="pairs per workload and condition, fewer if --seconds runs out (default 400)")
    parser.add_argument("--workloads", default="sdpa,eval16,train16,sdpa_train,eval16_big",
                        help="comma-separated, run in this order")
    parser.add_argument("--conditions", default=",".join(str(c) for c in ON_CONDITIONS),
                        help="feature masks compared with 0, comma-separated (default 1,2,3,7)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=10_000)
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
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
