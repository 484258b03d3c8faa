"""What the GPU programs do around the shim: find it, run a child under it or without it, read what
the child wrote (its result JSON, the shim's statistics file), and, inside the child, switch the
shim's features and time paired blocks that alternate (docs/ab-method.md says why so).

The A/Bs (gpu/pytorch/ab.py, generate_ab.py, per_call.py, gpu/dlsym/dlsym_ab.py) and the checks
(checklib.py, torchrun_check.py) share it. Standard library only: the parents run without torch or
jax. The shim's switch and counters are read through the shipped module python/cudnn_fastpath, the
checkout's own copy, so that it matches the shim built from the same tree.
"""
import contextlib
import gc
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

GPU = Path(__file__).resolve().parent
REPO = GPU.parent
LAUNCHER = REPO / "scripts" / "cudnn-fastpath"

sys.path.insert(0, str(REPO / "python"))
import cudnn_fastpath  # noqa: E402

EXIT_NO_SHIM, EXIT_NO_GPU = 2, 77

# The shim's feature bits (shim_control.h), which number the A/Bs' conditions (--conditions 31).
SET_STREAM, PACKS, GRAPHS, LEGACY, CUBLAS = 1, 2, 4, 8, 16
BACKEND_ALL = SET_STREAM | PACKS | GRAPHS  # the backend path's features (the dlsym A/Bs)
ALL = BACKEND_ALL | LEGACY | CUBLAS  # every feature on
CONDITION_NAMES = {0: "off", SET_STREAM: "set-stream", PACKS: "packs", SET_STREAM | PACKS: "both",
                   BACKEND_ALL: "graphs",  # graphs: both, and steady executes replayed as CUDA graphs
                   BACKEND_ALL | LEGACY: "legacy", BACKEND_ALL | CUBLAS: "cublas", ALL: "all"}
_FEATURE_NAMES = {SET_STREAM: cudnn_fastpath.SET_STREAM, PACKS: cudnn_fastpath.VARIANT_PACKS,
                  GRAPHS: cudnn_fastpath.GRAPHS, LEGACY: cudnn_fastpath.LEGACY, CUBLAS: cudnn_fastpath.CUBLAS}

# Warm-up after each switch, in both arms alike. Replay captures an op at its third steady execute
# (legacy calls and cuBLAS as the backend's), and an op whose pointers alternate between two sets
# from one iteration to the next is two such ops: six iterations; eight leave a margin. Switching a
# replay off destroys its graphs, so every on block captures again. Warming up one arm only biased
# the pair (the dlsym A/Bs found it), so both arms warm up alike.
WARMUP = 8
MIN_ROUNDS = 10  # rounds of pairs run even past the deadline: fewer pairs say nothing
PROGRESS_S = 10  # a progress line at least this often


# ------------------------------------------------------------------------------------------------
# Parent side: run a child, read what it wrote

def find_shim(program):
    """The shim the launcher would preload, when --shim is not given."""
    done = subprocess.run([str(LAUNCHER), "--print-path"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{program}: no shim given and the launcher found none: {done.stderr.strip()}")
    return done.stdout.strip()


def clean_environment():
    """The caller's environment without any shim setting: each run gets only its own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUDNN_FASTPATH_") and k != "LD_PRELOAD"}
    env["PYTHONUNBUFFERED"] = "1"
    env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    return env


# How a program is started under the shim: by the environment, or by the launcher. Each returns
# (argv, environment additions); UNDER_SHIM below picks one. no_packs turns the variant-pack cache off,
# no_graphs graph replay, no_relocation the replay of calls whose tensors moved.
def via_environment(argv, shim, stats_file, verify, verbose=False, no_packs=False, no_graphs=False,
                    no_relocation=False):
    env = {"LD_PRELOAD": shim, "CUDNN_FASTPATH_STATS_FILE": stats_file}
    if no_graphs:
        env["CUDNN_FASTPATH_GRAPHS"] = "0"
    if no_relocation:
        env["CUDNN_FASTPATH_RELOCATE"] = "0"
    if verify:
        env["CUDNN_FASTPATH_VERIFY"] = "1"
    if verbose:
        env["CUDNN_FASTPATH_VERBOSE"] = "1"
    if no_packs:
        env["CUDNN_FASTPATH_VARIANT_PACKS"] = "0"
    return argv, env


def via_launcher(argv, shim, stats_file, verify, verbose=False, no_packs=False, no_graphs=False,
                 no_relocation=False):
    options = (["--stats-file", stats_file] + (["--verify"] if verify else []) + (["--verbose"] if verbose else [])
               + (["--no-variant-packs"] if no_packs else []) + (["--no-graphs"] if no_graphs else [])
               + (["--no-relocation"] if no_relocation else []))
    # CUDNN_FASTPATH_SHIM: the launcher preloads this very build, not whatever copy it would find.
    return [str(LAUNCHER), *options, "--", *argv], {"CUDNN_FASTPATH_SHIM": shim}


UNDER_SHIM = via_launcher  # or via_environment: LD_PRELOAD and the variables set directly


def add_parent_arguments(parser, work):
    """The options every A/B's parent takes: --shim, --work (default out/WORK in the checkout), --json
    and --markdown."""
    parser.add_argument("--shim", help="libcudnn_fastpath.so to preload (default: the launcher's choice)")
    parser.add_argument("--work", default=str(REPO / "out" / work),
                        help=f"folder for the children's files (default: out/{work} in the checkout, git-ignored)")
    parser.add_argument("--json", help="write the full report here")
    parser.add_argument("--markdown", help="write the report's markdown here")


def run_process(label, argv, env, timeout):
    """Runs one child, its output going to ours; (exit status or -1 for a timeout, seconds)."""
    print(f"+ [{label}] " + " ".join(argv), flush=True)
    start = time.monotonic()
    try:
        code = subprocess.run(argv, env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        code = -1
        print(f"{label}: killed after {timeout:.0f} s", flush=True)
    return code, round(time.monotonic() - start, 1)


def failure(code):
    """What a child's exit status says, for a child whose result names no error of its own."""
    return "timed out" if code == -1 else f"exit status {code} (its output is in the log)"


def reference_runs(count, work, stem, argv, env, timeout):
    """`count` runs of the child without the shim at all, the i-th given argv(i, result file) and
    writing work/STEM-reference-I.json; none after one that found no GPU. Each run: its label, exit
    status, seconds, and what it wrote."""
    runs = []
    for i in range(1, count + 1):
        label, result = f"reference {i} (no shim)", work / f"{stem}-reference-{i}.json"
        code, seconds = run_process(label, argv(i, result), env, timeout)
        runs.append({"label": label, "exit_code": code, "seconds": seconds, **read_json(result)})
        if code == EXIT_NO_GPU:
            break
    return runs


def shim_run(argv, shim, stats_pattern, env, timeout, result):
    """The child under the launcher with a statistics file: its exit status, seconds, and what it
    wrote to `result`."""
    argv, extra = UNDER_SHIM(argv, shim, stats_pattern, False)
    code, seconds = run_process("under the shim", argv, {**env, **extra}, timeout)
    return {"exit_code": code, "seconds": seconds, **read_json(result)}


def read_json(path):
    """The JSON a child wrote; {} when it wrote none (it failed before) or not all of it."""
    with contextlib.suppress(OSError, ValueError):
        return json.loads(Path(path).read_text())
    return {}


def read_stats(pattern):
    """The shim's statistics file of a child (`pattern` with %p for the pid, as the shim names it):
    with several (one per process that called cuDNN through the shim), the one that counted most;
    (its report or None, how many files there were)."""
    reports = []
    for f in sorted(glob.glob(pattern.replace("%p", "*"))):
        with contextlib.suppress(OSError, ValueError):
            reports.append(json.loads(Path(f).read_text()))
    if not reports:
        return None, 0
    return max(reports, key=lambda s: sum(v for k, v in s.items() if _number(v) and k != "pid")), len(reports)


def _number(value):
    return isinstance(value, int) and not isinstance(value, bool)


def write_report(args, report):
    """--json gets the report, --markdown its markdown."""
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    if args.markdown and report.get("markdown"):
        Path(args.markdown).write_text(report["markdown"])


# ------------------------------------------------------------------------------------------------
# Child side: the shim's switch and counters, and the paired blocks

def mask(names):
    """The bits of a set of cudnn_fastpath's feature names."""
    return sum(bit for bit, name in _FEATURE_NAMES.items() if name in names)


def switch():
    """(features, set_features) of the shim loaded in this process, as bits (set_features(mask)
    returns the features in effect afterwards), or None without a shim that has its switch."""
    if not cudnn_fastpath.loaded():
        return None

    def features():
        return mask(cudnn_fastpath.features())

    def set_features(asked):
        return mask(cudnn_fastpath.set_features([name for bit, name in _FEATURE_NAMES.items() if asked & bit]))
    return features, set_features


def shim_mapped():
    with open("/proc/self/maps") as maps:
        return any("libcudnn_fastpath" in line for line in maps)


def switch_or_explain(program, result, rerun="without --child", **fields):
    """switch(); without one, None after saying why on stderr and in the child's result file (with
    `fields`). `rerun`: how the program runs without its child mode."""
    found = switch()
    if found is None:
        if shim_mapped():
            why = "the shim is loaded but exports no cudnn_fastpath_set_features (an older build?)"
        else:
            why = f"the shim is not loaded (run under scripts/cudnn-fastpath, or {rerun})"
        print(f"{program}: {why}", file=sys.stderr)
        Path(result).write_text(json.dumps({**fields, "error": why}))
    return found


def counters_exported():
    """Whether the shim in this process exports cudnn_fastpath_stats (counting or not)."""
    return bool(cudnn_fastpath.stats())


def read_counters():
    """The shim's counters now, {name: count} (handles and live_handles among them); None without a
    shim that exports cudnn_fastpath_stats, or when it counts nothing (no statistics asked)."""
    try:
        counts = cudnn_fastpath.stats()
    except OSError:  # the shim refused the buffer: no counts to trust
        return None
    return counts if counts.pop("counting", False) else None


def paired_rounds(rounds, deadline, conditions, pair, rng, workloads=None, progress=None, every=None):
    """Rounds of paired blocks until `rounds` of them or `deadline` (a time.monotonic() value), at
    least MIN_ROUNDS. In a round each workload (in a shuffled order; without `workloads`, the one)
    and each of its conditions (shuffled) gets a pair, pair(workload, condition, order) -> {"off":
    ..., "on": ...}, whose blocks run in `order`: off first in even rounds, last in odd ones.
    progress(round, pairs, seconds) is called every `every` rounds and at least every PROGRESS_S.
    The garbage collector waits until the rounds are over. Returns (pairs, stopped by the deadline,
    seconds measured)."""
    gc.collect()
    gc.freeze()
    gc.disable()
    pairs, round_seconds, stopped = [], 0.0, False
    started = last_progress = time.monotonic()
    try:
        for r in range(rounds):
            if r >= MIN_ROUNDS and time.monotonic() + 1.2 * round_seconds > deadline:
                stopped = True
                break
            round_start = time.monotonic()
            on_first = r % 2 == 1
            for workload in (None,) if workloads is None else rng.sample(workloads, len(workloads)):
                for condition in rng.sample(conditions, len(conditions)):
                    order = (("on", condition), ("off", 0)) if on_first else (("off", 0), ("on", condition))
                    named = {"round": r} if workload is None else {"round": r, "workload": workload}
                    pairs.append({**named, "condition": condition, "on_first": on_first,
                                  **pair(workload, condition, order)})
            round_seconds = time.monotonic() - round_start
            if progress and ((every and (r + 1) % every == 0) or time.monotonic() - last_progress > PROGRESS_S):
                last_progress = time.monotonic()
                progress(r, pairs, last_progress - started)
        return pairs, stopped, time.monotonic() - started
    finally:
        gc.enable()
        gc.unfreeze()
