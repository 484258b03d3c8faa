"""What gpu/pytorch/check.py and its parts share: how a workload process runs with and without the
shim (Run), the list of checks (Checks), and the judgments every part makes (same bytes, the shim's
counts, its caches and replays at work, a spread for results that are not deterministic).

Standard library only: it never imports torch; the workload programs do.
"""
import concurrent.futures
import glob
import hashlib
import itertools
import json
import math
import os
import subprocess
import sys
import time
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import shimstats  # noqa: E402  the replay counters, read by key
# How a program runs under the shim (UNDER_SHIM: the launcher) and the environment it starts from.
from harness import UNDER_SHIM, clean_environment, read_stats, via_environment  # noqa: E402

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workload.py"

RUN_TIMEOUT_S = 120  # one process (cuDNN builds the SDPA graphs at their first call)
PARALLEL_RUNS = 8  # processes at a time, all on the one GPU (the H200 machine has 16 cores)
PACK_KEYS = ("variant_packs", "packs_proxied", "pack_hits", "pack_misses", "pack_evictions", "packs_materialized")
GRAPH_KEYS = ("graphs", "backend_captured", "backend_launches", "backend_direct", "backend_refused_capturing",
              "backend_unknown", "backend_refused_context", "backend_refused_churn",
              "backend_refused_failed", "backend_refused_full", "backend_evicted")


def key_values(text):
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key and " " not in key:
            values[key] = value
    return values


# Replays switched off by their variables (the launcher's --no-legacy and --no-cublas set the same;
# a shim from before those replays ignores them).
OFF_VARIABLES = {"nolegacy": {"CUDNN_FASTPATH_LEGACY": "0"}, "nocublas": {"CUDNN_FASTPATH_CUBLAS": "0"}}


class Run:
    """One workload process. shim is 'none', 'stats', 'verify' (verify mode, with statistics),
    'nopacks' (statistics, the variant-pack cache off), 'nographs' (statistics, graph replay off),
    'nolegacy' or 'nocublas' (statistics, the legacy cuDNN or the cuBLAS replay off),
    'norelocation' (statistics, --no-relocation: calls replayed only with their captured tensors)."""

    def __init__(self, name, workload_args, shim, work, shim_library, tracer=None, tracer_position=None,
                 program=WORKLOAD):
        """tracer: a preload of the user's own, alone (shim 'none'), 'after' the shim (LD_PRELOAD
        already holds it when the launcher starts) or 'before' it (LD_PRELOAD set by hand).
        program: the workload program (workload.py, or workload_nets.py for the legacy part)."""
        self.name, self.shim = name, shim
        self.output = work / f"{name}.bin"
        self.stats_pattern = str(work / f"{name}.stats-%p.json")
        argv = [sys.executable, str(program), *workload_args]
        if workload_args[0] != "time":
            argv += ["--out", str(self.output)]
        env = clean_environment()
        self.tracer_report, self.tracer = work / f"{name}.tracer.json", None
        if tracer:
            env["CUDNN_TRACER_REPORT"] = str(self.tracer_report)
            env["LD_PRELOAD"] = tracer
        if tracer_position == "before":
            argv, extra = via_environment(argv, shim_library, self.stats_pattern, False, verbose=True)
            extra["LD_PRELOAD"] = f"{tracer} {shim_library}"
            env.update(extra)
        elif shim != "none":
            # Verbose (how libcudnn was found) except when timed: the log is the evidence.
            argv, extra = UNDER_SHIM(argv, shim_library, self.stats_pattern, shim == "verify",
                                     verbose=workload_args[0] != "time", no_packs=shim == "nopacks",
                                     no_graphs=shim == "nographs", no_relocation=shim == "norelocation")
            if tracer and UNDER_SHIM is via_environment:
                extra["LD_PRELOAD"] = f"{shim_library} {tracer}"
            env.update(extra)
            env.update(OFF_VARIABLES.get(shim, {}))
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
            # What it printed so far comes as bytes (text=True notwithstanding); the reason last, where
            # the exit status check reads its detail.
            self.out, partial = (text.decode(errors="replace") if isinstance(text, bytes) else (text or "")
                                 for text in (timeout.stdout, timeout.stderr))
            self.exit_code, self.err = -1, f"{partial}\ntimed out after {RUN_TIMEOUT_S} s"
        self.seconds = time.monotonic() - start
        self.printed = key_values(self.out)
        # One file per process that used cuDNN; the workload is one process.
        self.stats, files = read_stats(self.stats_pattern)
        if self.stats:
            self.stats["files"] = files
        if self.tracer_report.exists():
            self.tracer = json.loads(self.tracer_report.read_text())
        return self

    def traced(self, function):
        """Calls of `function` the tracer saw (0 if it reported none), None without a report."""
        return None if self.tracer is None else self.tracer.get(function, {}).get("calls", 0)

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
        if self.tracer is not None:
            print(f"    tracer: {json.dumps(self.tracer, sort_keys=True)}")

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


def graph_numbers(stats):
    return ", ".join(f"{key}={stats.get(key, 'missing')}" for key in GRAPH_KEYS)


def check_graphs(checks, run, steady=True):
    """Graph replay at work: steady executes captured and launched (or, with --no-graphs or in
    verify mode, what the shim says); steady=False: reported, not judged."""
    stats = run.stats
    if not stats:
        return
    if run.shim == "nographs":
        checks.add(f"{run.name}: graph replay off (--no-graphs): backend_launches = 0",
                   stats.get("backend_launches") == 0 and stats.get("graphs") is False, graph_numbers(stats))
        return
    if not steady:
        checks.add(f"{run.name}: graph replay", None, graph_numbers(stats) + " (informational)")
        return
    captured, launches = stats.get("backend_captured"), stats.get("backend_launches")
    checks.add(f"{run.name}: graph replay at work (backend_captured > 0, backend_launches > 0)",
               isinstance(captured, int) and captured > 0 and isinstance(launches, int) and launches > 0,
               graph_numbers(stats))


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


def run_all(args, work, plan, checks, program=WORKLOAD):
    """Runs every (name, workload arguments, shim) of `plan` with `program`; each one's exit status is a check."""
    runs = {name: Run(name, wargs, shim, work, args.shim, program=program) for name, wargs, shim in plan}
    # Separate processes, several at a time: results do not depend on timing (and these are not timed).
    with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        list(pool.map(Run.execute, runs.values()))
    for run in runs.values():
        run.log()
    for run in runs.values():
        checks.add(f"{run.name}: exit status 0", run.exit_code == 0,
                   "" if run.exit_code == 0 else (run.err.strip().splitlines() or ["?"])[-1])
    return runs


def agree(first, second):
    """Two runs wrote the same bytes (both wrote some)."""
    return first.output_bytes() is not None and first.output_bytes() == second.output_bytes()


def check_replay(checks, run, families, what):
    """The legacy cuDNN or cuBLAS replay at work in a steady run: launches > 0 in each of `families`
    (shimstats.FAMILIES). Not judged when the shim writes no counter of a family (a shim from before
    that replay), nor under nolegacy/nocublas, where launches must be 0 instead."""
    stats = run.stats
    if not stats:
        return  # the run's exit status or another check has said why
    numbers = shimstats.replay_text(stats)
    off = {"nolegacy": shimstats.LEGACY_FAMILIES, "nocublas": shimstats.BLAS_FAMILIES}.get(run.shim, ())
    for family in families:
        name = f"{run.name}: {family} replayed ({what})"
        if not shimstats.has_family(stats, family):
            checks.add(name, None, f"not judged: this shim writes no {family}_* counter; {numbers}")
        elif family in off:
            checks.add(f"{run.name}: {family} replay off ({run.shim}): {family}_launches = 0",
                       shimstats.count(stats, f"{family}_launches") == 0, numbers)
        else:
            checks.add(name, shimstats.count(stats, f"{family}_launches") > 0, numbers)

