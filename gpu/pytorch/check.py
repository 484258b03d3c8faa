"""Unmodified PyTorch under the shim: same bytes out, the counts the shim promises, the time it saves.

    python3 check.py --shim LIB --work DIR --json FILE [--rounds N] [--deadline SECONDS_SINCE_EPOCH]

Runs workload.py in separate processes, with and without the shim:
  - inference on one stream, on two streams switching every few iterations, a training step under
    deterministic settings, and cuDNN scaled-dot-product attention forward: outputs compared byte
    for byte with runs without the shim (two of which must first agree with each other), the shim's
    statistics file checked (calls intercepted, one call reaching cuDNN per handle and stream, how
    libcudnn was found, the variant-pack cache at work), the same runs in verify mode (no
    mismatch) and with the pack cache off (--no-variant-packs: identical, no pack proxied);
  - cuDNN SDPA backward, which is not deterministic: three runs without the shim give the spread
    the run with the shim must stay within (bit for bit if the three agree);
  - per-iteration time without and with the shim, alternated over --rounds rounds, in separate
    processes (unless --skip-timing; gpu/pytorch/ab.py, in one process, is the measure of the saving:
    the shim measures no time itself).
Writes everything to --json and exits 1 if a check failed. Standard library only: it never imports
torch itself, the workload does.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import time
from array import array
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORKLOAD = HERE / "workload.py"
LAUNCHER = REPO / "scripts" / "cudnn-fastpath"

INFER = ["infer", "--iters", "200"]
STREAMS = ["streams", "--iters", "200", "--switch-every", "5"]
TRAIN = ["train", "--steps", "5"]
SDPA = ["sdpa", "--iters", "100"]
SDPA_TRAIN = ["sdpa_train", "--steps", "8"]
SDPA_TRAIN_PLAIN_RUNS = 3  # the baseline's own run-to-run spread of the SDPA backward
TIME = ["time", "--chunks", "40", "--warmup", "50"]
RUN_TIMEOUT_S = 120  # one process (cuDNN builds the SDPA graphs at their first call)
PARALLEL_RUNS = 8  # processes at a time, all on the one GPU (the H200 machine has 16 cores)
PACK_KEYS = ("variant_packs", "packs_proxied", "pack_hits", "pack_misses", "pack_evictions", "packs_materialized")


# How a program is started under the shim: by the environment, or by the launcher. Each returns
# (argv, environment additions); UNDER_SHIM below picks one. no_packs turns the variant-pack cache off.
def via_environment(argv, shim, stats_file, verify, verbose=False, no_packs=False):
    env = {"LD_PRELOAD": shim, "CUDNN_FASTPATH_STATS_FILE": stats_file}
    if verify:
        env["CUDNN_FASTPATH_VERIFY"] = "1"
    if verbose:
        env["CUDNN_FASTPATH_VERBOSE"] = "1"
    if no_packs:
        env["CUDNN_FASTPATH_VARIANT_PACKS"] = "0"
    return argv, env


def via_launcher(argv, shim, stats_file, verify, verbose=False, no_packs=False):
    options = (["--stats-file", stats_file] + (["--verify"] if verify else []) + (["--verbose"] if verbose else [])
               + (["--no-variant-packs"] if no_packs else []))
    # CUDNN_FASTPATH_SHIM: the launcher preloads this very build, not whatever copy it would find.
    return [str(LAUNCHER), *options, "--", *argv], {"CUDNN_FASTPATH_SHIM": shim}


UNDER_SHIM = via_launcher  # or via_environment: LD_PRELOAD and the variables set directly


def clean_environment():
    """The caller's environment without any shim setting: each run gets only its own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUDNN_FASTPATH_") and k != "LD_PRELOAD"}
    env["PYTHONUNBUFFERED"] = "1"
    env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    return env


def key_values(text):
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key and " " not in key:
            values[key] = value
    return values


class Run:
    """One workload process. shim is 'none', 'stats', 'verify' (verify mode, with statistics) or
    'nopacks' (statistics, the variant-pack cache off)."""

    def __init__(self, name, workload_args, shim, work, shim_library):
        self.name, self.shim = name, shim
        self.output = work / f"{name}.bin"
        self.stats_pattern = str(work / f"{name}.stats-%p.json")
        argv = [sys.executable, str(WORKLOAD), *workload_args]
        if workload_args[0] != "time":
            argv += ["--out", str(self.output)]
        env = clean_environment()
        if shim != "none":
            # Verbose (how libcudnn was found) except when timed: the log is the evidence.
            argv, extra = UNDER_SHIM(argv, shim_library, self.stats_pattern, shim == "verify",
                                     verbose=workload_args[0] != "time", no_packs=shim == "nopacks")
            env.update(extra)
        self.argv, self.env = argv, env
        self.exit_code, self.out, self.err, self.seconds = None, "", "", 0.0
        self.printed, self.stats = {}, None

    def execute(self):
        for stale in glob.glob(self.stats_pattern.replace("%p", "*")):
            os.unlink(stale)
        start = time.monotonic()
        try:
            done = subprocess.run(self.argv, env=self.env, capture_output=True, text=True,
                                  timeout=RUN_TIMEOUT_S)
            self.exit_code, self.out, self.err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as timeout:
            self.exit_code, self.err = -1, f"timed out after {RUN_TIMEOUT_S} s\n{timeout.stderr or ''}"
        self.seconds = time.monotonic() - start
        self.printed = key_values(self.out)
        # One file per process that used cuDNN; the workload is one process.
        files = sorted(glob.glob(self.stats_pattern.replace("%p", "*")))
        stats = [json.loads(Path(f).read_text()) for f in files]
        if stats:
            self.stats = max(stats, key=lambda s: s.get("set_stream_calls", 0))
            self.stats["files"] = len(stats)
        return self

    def output_bytes(self):
        return self.output.read_bytes() if self.output.exists() else None

    def needed_forwards(self):
        """Calls that reached cuDNN: statistics forward nothing of their own, so exactly those that had to."""
        return self.stats["forwarded"]

    def log(self):
        print(f"--- {self.name}: exit {self.exit_code} in {self.seconds:.1f} s")
        print("    " + " ".join(self.argv))
        for line in (self.out + self.err).splitlines():
            print(f"    {line}")
        if self.stats:
            print(f"    stats: {json.dumps(self.stats, sort_keys=True)}")

    def summary(self):
        return {"name": self.name, "shim": self.shim, "exit_code": self.exit_code,
                "seconds": round(self.seconds, 2), "printed": self.printed, "stats": self.stats,
                "output_sha256": (hashlib.sha256(self.output_bytes()).hexdigest()
                                  if self.output_bytes() is not None else None)}


class Checks:
    def __init__(self):
        self.items = []

    def add(self, name, passed, detail=""):
        """passed: True, False, or None when it could not be judged (said why in detail)."""
        self.items.append({"check": name, "passed": passed, "detail": detail})
        mark = {True: "PASS", False: "FAIL", None: "INFO"}[passed]
        print(f"[{mark}] {name}" + (f": {detail}" if detail else ""))

    def failed(self):
        return any(item["passed"] is False for item in self.items)


def same_bytes(checks, name, run, reference, precondition=True):
    ours, theirs = run.output_bytes(), reference.output_bytes()
    if ours is None or theirs is None:
        checks.add(name, False, f"missing output ({run.name}: {ours is not None}, "
                                f"{reference.name}: {theirs is not None})")
    elif not precondition:
        checks.add(name, None, "not judged: two runs without the shim already differ")
    else:
        checks.add(name, ours == theirs,
                   f"{len(ours)} bytes, sha256 {hashlib.sha256(ours).hexdigest()[:16]}"
                   + ("" if ours == theirs else f" vs {hashlib.sha256(theirs).hexdigest()[:16]}"))


def check_counts(checks, run, extra_forwards=0, what="one per handle"):
    """The shim saw the calls, and only the first set per handle (plus stream changes) reached cuDNN."""
    stats = run.stats
    if not stats:
        checks.add(f"{run.name}: statistics file written", False, "no file: was the shim loaded?")
        return
    calls = stats["set_stream_calls"]
    checks.add(f"{run.name}: cudnnSetStream calls intercepted", calls > 0,
               f"{calls} calls, {stats['handles']} handle(s)")
    expected = stats["handles"] + extra_forwards
    checks.add(f"{run.name}: calls reaching cuDNN = {what}", run.needed_forwards() == expected,
               f"forwarded {stats['forwarded']}, expected {expected}; skipped {stats['skipped']}")
    if run.shim == "verify":
        checks.add(f"{run.name}: verify mode, no mismatch",
                   stats["verify"] is True and stats["verify_mismatches"] == 0,
                   f"verify={stats['verify']}, verify_mismatches={stats['verify_mismatches']}")


def pack_numbers(stats):
    return ", ".join(f"{key}={stats.get(key, 'missing')}" for key in PACK_KEYS)


def check_packs(checks, run):
    """The variant-pack cache at work (or, with --no-variant-packs, not at all)."""
    stats = run.stats
    if not stats:
        return  # check_counts has said that the file is missing
    if run.shim == "nopacks":
        checks.add(f"{run.name}: pack cache off (--no-variant-packs): packs_proxied = 0",
                   stats.get("packs_proxied") == 0, pack_numbers(stats))
        return
    proxied, hits = stats.get("packs_proxied"), stats.get("pack_hits")
    checks.add(f"{run.name}: pack cache at work (packs_proxied > 0, pack_hits > 0, packs_materialized reported)",
               isinstance(proxied, int) and proxied > 0 and isinstance(hits, int) and hits > 0
               and "packs_materialized" in stats, pack_numbers(stats))


def floats(data):
    values = array("f")
    values.frombytes(data)
    return values


def max_abs_difference(first, second):
    """The largest |a - b| over two float32 files of the same length (inf if the lengths differ or
    a NaN meets a number); positions that hold the same value cost one comparison."""
    a, b = floats(first), floats(second)
    if len(a) != len(b):
        return math.inf
    worst = 0.0
    for x, y in zip(a, b):
        if x != y:
            difference = abs(x - y)
            if difference != difference:  # NaN: equal only if both are NaN
                difference = 0.0 if (x != x and y != y) else math.inf
            worst = max(worst, difference)
    return worst


def within_spread(checks, name, run, plain_runs):
    """A non-deterministic result judged against the baseline's own spread: if the runs without the
    shim all agree, the shim's run must be identical; otherwise its largest difference to the first
    of them may not exceed the largest difference between two of them."""
    outputs = [r.output_bytes() for r in plain_runs]
    ours = run.output_bytes()
    if ours is None or any(o is None for o in outputs):
        checks.add(name, False, "missing output: " + ", ".join(
            f"{r.name}: {r.output_bytes() is not None}" for r in [run, *plain_runs]))
        return {"judged": False}
    plain_differences = {f"{plain_runs[i].name} vs {plain_runs[j].name}": max_abs_difference(outputs[i], outputs[j])
                         for i, j in itertools.combinations(range(len(outputs)), 2)}
    plain_spread = max(plain_differences.values())
    ours_difference = max_abs_difference(ours, outputs[0])
    plain_agree = all(o == outputs[0] for o in outputs)
    if plain_agree:
        passed = ours == outputs[0]
        detail = (f"the {len(outputs)} runs without the shim agree bit for bit; the shim's run is "
                  + ("identical" if passed else f"NOT identical (max abs difference {ours_difference:.3g})"))
    else:
        passed = ours_difference <= plain_spread
        detail = (f"the runs without the shim differ by up to {plain_spread:.3g} ("
                  + ", ".join(f"{k}: {v:.3g}" for k, v in plain_differences.items())
                  + f"); the shim's run differs from {plain_runs[0].name} by {ours_difference:.3g}")
    checks.add(name, passed, f"{len(ours)} bytes; {detail}")
    return {"judged": True, "plain_agree": plain_agree, "plain_max_abs_difference": plain_spread,
            "plain_differences": plain_differences, "shim_max_abs_difference": ours_difference,
            "shim_identical": ours == outputs[0], "passed": passed}


def correctness(args, work, checks):
    sdpa_train_plain = [f"sdpa_train-plain-{i + 1}" for i in range(SDPA_TRAIN_PLAIN_RUNS)]
    plan = [("infer-plain-1", INFER, "none"), ("infer-plain-2", INFER, "none"),
            ("infer-shim", INFER, "stats"), ("infer-verify", INFER, "verify"),
            ("infer-nopacks", INFER, "nopacks"),
            ("streams-plain", STREAMS, "none"), ("streams-shim", STREAMS, "stats"),
            ("streams-verify", STREAMS, "verify"),
            ("train-plain-1", TRAIN, "none"), ("train-plain-2", TRAIN, "none"),
            ("train-shim", TRAIN, "stats"), ("train-verify", TRAIN, "verify"),
            ("sdpa-plain-1", SDPA, "none"), ("sdpa-plain-2", SDPA, "none"),
            ("sdpa-shim", SDPA, "stats"), ("sdpa-verify", SDPA, "verify"), ("sdpa-nopacks", SDPA, "nopacks"),
            *((name, SDPA_TRAIN, "none") for name in sdpa_train_plain),
            ("sdpa_train-shim", SDPA_TRAIN, "stats")]
    runs = {name: Run(name, wargs, shim, work, args.shim) for name, wargs, shim in plan}
    # Separate processes, several at a time: results do not depend on timing (and these are not timed).
    with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        list(pool.map(Run.execute, runs.values()))
    for run in runs.values():
        run.log()
    for run in runs.values():
        checks.add(f"{run.name}: exit status 0", run.exit_code == 0,
                   "" if run.exit_code == 0 else (run.err.strip().splitlines() or ["?"])[-1])

    # Inference, one stream; with the pack cache and without it.
    plain = runs["infer-plain-1"]
    same_bytes(checks, "infer: two runs without the shim agree", runs["infer-plain-2"], plain)
    for name in ("infer-shim", "infer-verify", "infer-nopacks"):
        same_bytes(checks, f"{name}: output identical to the run without the shim", runs[name], plain)
        check_counts(checks, runs[name])
    for name in ("infer-shim", "infer-nopacks"):
        check_packs(checks, runs[name])
    shim_stats = runs["infer-shim"].stats or {}
    iterations = int(runs["infer-shim"].printed.get("iterations", "0") or 0)
    if shim_stats and iterations:
        checks.add("infer-shim: cudnnSetStream calls per iteration", None,
                   f"{shim_stats['set_stream_calls'] / iterations:g} (informational)")
    # PyTorch loads libcudnn as a dependency of a library opened RTLD_LOCAL: the shim finds it in the
    # dependencies of the calling object (libtorch_cuda), where that object's own calls would go.
    checks.add("infer-shim: libcudnn found in the caller's scope (PyTorch loads it locally)",
               shim_stats.get("resolved_by") == "caller_scope",
               f"resolved_by={shim_stats.get('resolved_by')}, cudnn_library={shim_stats.get('cudnn_library')}, "
               f"cudart_resolved_by={shim_stats.get('cudart_resolved_by')}")

    # Two streams: every change of stream must reach cuDNN, nothing else after the first set.
    plain = runs["streams-plain"]
    for name in ("streams-shim", "streams-verify"):
        same_bytes(checks, f"{name}: output identical to the run without the shim", runs[name], plain)
        changes = int(runs[name].printed.get("stream_changes", "-1"))
        check_counts(checks, runs[name], extra_forwards=changes,
                     what=f"the program's {changes} stream changes + one per handle")

    # Training: deterministic only if two runs without the shim agree; then the shim must not differ.
    plain = runs["train-plain-1"]
    plain_agree = plain.output_bytes() is not None and plain.output_bytes() == runs["train-plain-2"].output_bytes()
    same_bytes(checks, "train: two runs without the shim agree", runs["train-plain-2"], plain)
    configs = {run.name: run.printed.get("cublas_workspace_config") for run in runs.values()
               if run.name.startswith("train-")}
    checks.add("train: CUBLAS_WORKSPACE_CONFIG=:4096:8 in effect", all(v == ":4096:8" for v in configs.values()),
               ", ".join(f"{k}: {v}" for k, v in configs.items()))
    for name in ("train-shim", "train-verify"):
        same_bytes(checks, f"{name}: loss, gradients and weights identical to the run without the shim",
                   runs[name], plain, precondition=plain_agree)
        check_counts(checks, runs[name], what="one per handle (forward and autograd threads)")

    # cuDNN SDPA forward (no deterministic-algorithms setting: cuDNN SDPA refuses it). Judged only if
    # two runs without the shim agree.
    plain = runs["sdpa-plain-1"]
    plain_agree = plain.output_bytes() is not None and plain.output_bytes() == runs["sdpa-plain-2"].output_bytes()
    same_bytes(checks, "sdpa: two runs without the shim agree", runs["sdpa-plain-2"], plain)
    for name in ("sdpa-shim", "sdpa-verify", "sdpa-nopacks"):
        same_bytes(checks, f"{name}: cuDNN SDPA output identical to the run without the shim",
                   runs[name], plain, precondition=plain_agree)
        check_counts(checks, runs[name])
    for name in ("sdpa-shim", "sdpa-nopacks"):
        check_packs(checks, runs[name])

    # cuDNN SDPA backward: against the spread of the runs without the shim.
    sdpa_backward = within_spread(
        checks, "sdpa_train-shim: q/k/v gradients within the spread of the runs without the shim",
        runs["sdpa_train-shim"], [runs[name] for name in sdpa_train_plain])
    check_counts(checks, runs["sdpa_train-shim"], what="one per handle (forward and autograd threads)")

    # The packs of the other runs with statistics, for the record (not judged).
    for name in ("streams-shim", "train-shim", "sdpa_train-shim"):
        if runs[name].stats:
            checks.add(f"{name}: variant packs", None, pack_numbers(runs[name].stats) + " (informational)")
    return runs, {"sdpa_backward": sdpa_backward}


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "p25": statistics.quantiles(values, n=4)[0] if len(values) > 1 else values[0],
            "p75": statistics.quantiles(values, n=4)[2] if len(values) > 1 else values[0]}


def timing(args, work):
    """Without and with the shim, alternated (order swapped every round), separate processes."""
    rounds, per_round = [], None
    for r in range(args.rounds):
        if args.deadline and per_round and time.time() + 1.5 * per_round > args.deadline:
            print(f"timing: stopping after {r} rounds, the deadline is near")
            break
        start = time.monotonic()
        order = ["none", "stats"] if r % 2 == 0 else ["stats", "none"]
        result = {}
        for shim in order:
            run = Run(f"time-{r}-{shim}", TIME, shim, work, args.shim).execute()
            run.log()
            if run.exit_code != 0:
                print(f"timing: {run.name} failed; no more rounds")
                return summarize_timing(rounds, args.rounds)
            result[shim] = run
        enqueue = {k: float(v.printed["enqueue_ns_median"]) for k, v in result.items()}
        complete = {k: float(v.printed["complete_ns_median"]) for k, v in result.items()}
        stats = result["stats"].stats or {}
        iterations = int(result["stats"].printed["iterations"])
        rounds.append({"enqueue_ns": enqueue, "complete_ns": complete, "iterations": iterations,
                       "set_stream_calls": stats.get("set_stream_calls")})
        per_round = time.monotonic() - start
    return summarize_timing(rounds, args.rounds)


def summarize_timing(rounds, asked):
    if not rounds:
        return {"rounds": 0, "rounds_asked": asked}
    summary = {"rounds": len(rounds), "rounds_asked": asked, "per_round": rounds}
    for metric in ("enqueue_ns", "complete_ns"):
        plain = [r[metric]["none"] for r in rounds]
        shim = [r[metric]["stats"] for r in rounds]
        gain = [p - s for p, s in zip(plain, shim)]  # positive: faster with the shim
        summary[metric] = {"without": spread(plain), "with": spread(shim), "gain_per_round": spread(gain),
                           "inside_noise": min(gain) <= 0 <= max(gain)}
    summary["set_stream_calls_per_iteration"] = rounds[0]["set_stream_calls"] / rounds[0]["iterations"] \
        if rounds[0]["set_stream_calls"] else None
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shim", required=True, help="path of libcudnn_fastpath.so")
    parser.add_argument("--work", required=True, help="folder for outputs and statistics files")
    parser.add_argument("--json", required=True, help="results file")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=0, help="time.time() not to go past")
    parser.add_argument("--skip-timing", action="store_true")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(f"running under the shim by {UNDER_SHIM.__name__}")

    checks = Checks()
    start = time.monotonic()
    runs, comparisons = correctness(args, work, checks)
    print(f"correctness checks: {len(runs)} processes, {time.monotonic() - start:.0f} s")
    first = runs["infer-plain-1"].printed
    versions = {k: first.get(k) for k in ("torch", "torch_cuda", "cudnn", "device")}
    results = {"versions": versions, "under_shim_by": UNDER_SHIM.__name__, "checks": checks.items,
               "correctness_seconds": round(time.monotonic() - start, 1), **comparisons,
               "runs": [run.summary() for run in runs.values()]}
    Path(args.json).write_text(json.dumps(results, indent=2))  # in case the timing runs out of time
    results["timing"] = {"skipped": True} if args.skip_timing else timing(args, work)
    results["passed"] = not checks.failed()
    Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if checks.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
