"""What the A/Bs of programs that look cuDNN up with dlsym share (jax_ab.py, frontend_py_ab.py).

Issue 20: XLA (JAX) and cudnn-frontend's Python package `cudnn` open libcudnn themselves and take
every function with dlsym on that library's handle, so before the shim answered dlsym they never
reached it. Each program here proves the reach and measures it, the way gpu/pytorch/ab.py does for
PyTorch (docs/ab-method.md):

Parent (standard library only; `parent()` below, around gpu/harness.py's children):
  1. runs the program's child twice without the shim at all (no launcher, no preload), each writing
     the bytes of its outputs; two runs that agree are the reference;
  2. runs the child under scripts/cudnn-fastpath with a statistics file of its own: it checks in the
     same process that the outputs with every feature on are the bytes computed with every feature off
     (`cudnn_fastpath.set_features(())`), writes them for the comparison with the reference, counts per
     call what the shim did (`cudnn_fastpath.stats()` before and after a stretch of calls), then times
     paired, alternating blocks with the features on and off until --seconds or --pairs
     (harness.paired_rounds);
  3. reports per workload and metric the median off time per call, the mean paired gain and its
     bootstrap 95% interval (gpu/abstats.py), PASS or MISS against the issue's targets, and the
     shim's counts that prove the reach (packs from the cache, graph launches, the dlsym_* counters,
     whatever keys the statistics file has).

Child (`child_reference()`, `child_ab()`): the program passes make(), which loads its framework and
returns (workloads, versions, notes) or raises Unavailable; child_ab() looks for the shim's switch
first. Each workload is an object with
  call()      one call of the program's own API (a jax.jit call, a graph.execute), not awaited;
  sync()      wait for the device (the call's result, or the whole device);
  snapshot()  the bytes of the outputs of the last call, on the host;
and the names `name`, `what` and `timed` (calls per timed block). Nothing here imports jax or torch.

Exit status of the parent: 0 when the A/B ran (the targets never change it), 1 when a child failed
or an output differed from the reference, 2 when the shim or its switch is missing, 77 when the child
found no GPU.
"""
import argparse
import glob
import hashlib
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import harness  # noqa: E402  the shim's whereabouts, switch and counters, the children, the paired rounds
from abstats import judge_target, paired_summary, table_lines  # noqa: E402
from harness import CONDITION_NAMES, EXIT_NO_GPU, EXIT_NO_SHIM, WARMUP  # noqa: E402

# Every feature of the backend path these programs take (7): legacy cuDNN and cuBLAS replay are
# PyTorch's workloads' (gpu/pytorch/ab.py); --conditions 31 asks for those too.
ALL = harness.BACKEND_ALL
METRICS = {"cpu": "main-thread CPU time of the call, not awaited",
           "wall": "wall time of the call with its result awaited",
           "proc": "CPU time of every thread of the process over the awaited call (informative: "
                   "shows work done on threads other than the caller's)"}
CENSUS_CALLS = 20  # calls over which the child counts what the shim did per call
PLAN_CALLS = 20  # calls with everything off before anything is measured (plans, lazy set-up)
# The statistics keys that show the reach, in the order printed; every dlsym_* key is added.
REACH_KEYS = ("set_stream_calls", "skipped", "forwarded", "packs_proxied", "pack_hits", "pack_misses",
              "packs_materialized", "backend_captured", "backend_launches", "backend_direct",
              "backend_unknown", "backend_refused_churn", "backend_refused_failed",
              "handles", "resolved_by", "cudnn_library", "cudnn_libraries",
              "cudnn_unseen")  # a libcudnn loaded that no call reached the shim through (docs/statistics.md)


class Program:
    """What one A/B program tells the harness about itself."""

    def __init__(self, name, title, script, workloads, targets, target_metrics, child_env=None):
        self.name = name  # file stem of its outputs: jax.json, frontend_py.md, ...
        self.title = title
        self.script = Path(script).resolve()
        self.workloads = workloads  # name -> what it is (the child says it again)
        self.targets = targets  # {(workload, metric): percent} for every feature on (ALL)
        self.target_metrics = target_metrics  # said in the report
        self.child_env = child_env or {}  # set in every child, unless the caller's environment has it

    def prepare(self, work):
        """Called once before the children run (the JAX program empties its compilation cache)."""

    def child_arguments(self, args):
        """The program's own options, passed on to each child."""
        return []


# ------------------------------------------------------------------------------------------------
# Arguments

def add_arguments(parser, program_name, default_seconds=90, default_pairs=2000, default_timed=None):
    harness.add_parent_arguments(parser, program_name)
    parser.add_argument("--seconds", type=float, default=default_seconds,
                        help=f"how long the A/B measures (default {default_seconds}); the processes' start, "
                             "the reference runs and the analysis come on top")
    parser.add_argument("--pairs", type=int, default=default_pairs,
                        help=f"rounds of pairs at most (default {default_pairs}), fewer if --seconds runs out")
    parser.add_argument("--conditions", default=str(ALL),
                        help="feature masks compared with 0, comma-separated (default 7: every feature)")
    parser.add_argument("--timed", type=int, default=default_timed,
                        help="calls per timed block (default: each workload's own)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--references", type=int, default=2,
                        help="runs without the shim to compare outputs with (default 2: they must agree first; 0: none)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="set in the run under the shim only (e.g. CUDNN_FASTPATH_DLSYM=0, the reach turned off)")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds a child may take beyond --seconds before it is killed (default 300)")
    # Child mode, set by the parent.
    parser.add_argument("--child", choices=("reference", "ab"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)


def check_arguments(parser, args):
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    if args.timed is not None and args.timed < 1:
        parser.error("--timed must be at least 1")
    try:
        conditions = [int(c) for c in args.conditions.split(",") if c]
    except ValueError:
        parser.error(f"--conditions: not a list of integers: {args.conditions!r}")
    if not conditions or any(c not in CONDITION_NAMES or c == 0 for c in conditions):
        parser.error(f"--conditions: each one of {', '.join(str(c) for c in CONDITION_NAMES if c)}")
    for item in args.env:
        if "=" not in item or not item.partition("=")[0]:
            parser.error(f"--env takes KEY=VALUE, not {item!r}")
    if args.references < 0:
        parser.error("--references must be 0 or more")
    if args.child and not (args.out and args.result):
        parser.error("--child needs --out and --result")


# ------------------------------------------------------------------------------------------------
# Parent mode

def child_environment(program, extra=()):
    env = harness.clean_environment()
    for key, value in program.child_env.items():
        env.setdefault(key, value)
    for item in extra:
        key, _, value = item.partition("=")
        env[key] = value
    return env


def describe_bytes(data):
    return None if data is None else {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()[:16]}


def compare_with_references(shim_bytes, references):
    """The cross-process check: the output under the shim against runs without it. Judged only when
    the references agree with each other (else the program itself is not reproducible across runs)."""
    outputs = [r.get("output") for r in references]
    result = {"references": len(references), "reference_outputs": [describe_bytes(o) for o in outputs],
              "shim_output": describe_bytes(shim_bytes)}
    if not references:
        return {**result, "passed": None, "detail": "not run (--references 0)"}
    if any(o is None for o in outputs) or shim_bytes is None:
        # A run that failed is reported as such (exit status 1); nothing to compare here.
        missing = [r["label"] for r in references if r.get("output") is None]
        missing += ["the run under the shim"] if shim_bytes is None else []
        return {**result, "passed": None, "detail": "no output from " + ", ".join(missing)}
    if any(o != outputs[0] for o in outputs[1:]):
        return {**result, "passed": None, "detail": "the runs without the shim differ from each other"}
    same = shim_bytes == outputs[0]
    return {**result, "passed": same,
            "detail": ("the run without the shim" if len(outputs) == 1 else
                       f"{len(outputs)} runs without the shim, which agree with each other")
                      + f"; {len(shim_bytes)} bytes, "
                      f"sha256 {hashlib.sha256(shim_bytes).hexdigest()[:16]} under the shim"
                      + ("" if same else f", {hashlib.sha256(outputs[0]).hexdigest()[:16]} without")}


def analyse(program, child, seed, resamples):
    """The table's rows: per workload, condition and metric, the paired summary and the target."""
    rows = []
    pairs = child.get("pairs", [])
    for workload in child.get("workload_order", list(program.workloads)):
        for condition in child.get("conditions", [ALL]):
            mine = [p for p in pairs if p["workload"] == workload and p["condition"] == condition]
            for metric in child.get("metrics", list(METRICS)):
                key = f"{metric}_ns"
                usable = [p for p in mine if key in p["off"] and key in p["on"]]
                row = {"workload": workload, "condition": CONDITION_NAMES[condition], "features": condition,
                       "metric": metric, "pairs": len(usable),
                       "features_not_as_asked": sum(p["off"]["in_effect"] != 0 or p["on"]["in_effect"] != condition
                                                    for p in usable)}
                row.update(paired_summary([p["off"][key] for p in usable], [p["on"][key] for p in usable],
                                          resamples, seed=f"{seed}/{program.name}/{workload}/{condition}/{metric}"))
                target = program.targets.get((workload, metric)) if condition == ALL else None
                if target is not None:
                    judge_target(row, target)
                rows.append(row)
    return rows


def reach(stats):
    """The statistics file's counts that show the shim reached the program, dlsym_* keys included."""
    if not stats:
        return {}
    keys = [k for k in REACH_KEYS if k in stats] + sorted(k for k in stats if k.startswith("dlsym"))
    return {k: stats[k] for k in keys}




def value_text(value):
    """A statistics value as one short phrase: a list of calling objects (dlsym_callers) by file name."""
    if isinstance(value, list) and all(isinstance(v, dict) and "object" in v for v in value):
        return "[" + ", ".join(
            Path(str(v["object"])).name + "".join(f" {k}={w}" for k, w in v.items() if k != "object")
            for v in value) + "]"
    return str(value)


def counts_text(counts):
    return ", ".join(f"{k}={value_text(v)}" for k, v in counts.items()) if counts else "none"


def census_text(census):
    """Per call, the counters that moved (the child's cudnn_fastpath_stats deltas)."""
    if not census:
        return "not counted (no cudnn_fastpath_stats in the process, or statistics off)"
    parts = []
    for asked, deltas in census.items():
        moved = {k: v for k, v in deltas.items() if v}
        parts.append(f"features {asked}: " + (", ".join(f"{k} {v:g}" for k, v in moved.items()) or "nothing counted"))
    if not any(v for deltas in census.values() for v in deltas.values()):
        parts.append("NO cuDNN CALL REACHED THE SHIM per call: its dlsym is not answered (CUDNN_FASTPATH_DLSYM=0, "
                     "a shim without it) or the program replays its own CUDA graphs (XLA's command buffers: "
                     "XLA_FLAGS=--xla_gpu_enable_command_buffer= turns them off)")
    return "; ".join(parts)


def verdict(passed):
    return {True: "identical", False: "DIFFERED", None: "not judged"}[passed]


def markdown(program, report):
    lines = [f"## {program.title}", ""]
    if report.get("error"):
        return "\n".join(lines + [f"NOT RUN: {report['error']}", ""])
    lines += [
        "One process under the launcher; each block with the features on is paired with a block with every "
        "feature off (`cudnn_fastpath_set_features(0)`), order alternating from pair to pair; a block is "
        f"{WARMUP} warm-up calls (in both arms alike), then K timed calls. Per call: `cpu` is "
        "the caller's thread CPU time of the call not awaited, `wall` the call with its result awaited, "
        "`proc` the CPU time of all the process's threads over the awaited call. Gain = off - on (positive: "
        f"faster with the features); bootstrap 95% interval of the mean gain ({report['resamples']} resamples); "
        f"percent = mean gain / mean off. Targets ({program.target_metrics}): the percent at least the target "
        "and the interval above zero.", ""]
    lines += table_lines(report["rows"], "call", missed="MISS")
    lines.append("")
    child = report.get("child", {})
    if child.get("error"):
        lines.append(f"- the run under the shim: {child['error']}")
    else:
        lines.append(f"- the run under the shim: {child.get('rounds', 0)} rounds (asked {child.get('pairs_asked')}"
                     f"{', stopped by the time budget' if child.get('stopped_by_deadline') else ''}) in "
                     f"{child.get('measure_seconds', 0):.0f} s; features at start {child.get('features_at_start')}")
    for name, w in child.get("workloads", {}).items():
        in_process = w.get("in_process", {})
        lines.append(
            f"- {name} ({w.get('what', '')}): K={w.get('timed')}; outputs in the same process, every feature on "
            f"against every feature off: {verdict(in_process.get('passed'))}"
            + (f" ({in_process['detail']})" if in_process.get("detail") else "")
            + f"; blocks whose output differed from the reference: {w.get('blocks_with_other_output', '-')}; "
            f"per call, counted by the shim in the process: {census_text(w.get('census'))}"
            + (f"; {'; '.join(f'{k}: {v}' for k, v in w['notes'].items())}" if w.get("notes") else ""))
    cross = report.get("cross_process", {})
    lines.append(f"- outputs against runs without the shim: {verdict(cross.get('passed'))}"
                 + (f" ({cross['detail']})" if cross.get("detail") else ""))
    stats = report.get("stats")
    counts = reach(stats)
    dlsym = {k: v for k, v in counts.items() if k.startswith("dlsym")}
    lines.append("- the shim's statistics file: " + (
        counts_text({k: v for k, v in counts.items() if not k.startswith("dlsym")})
        + "; dlsym: " + (counts_text(dlsym) if dlsym else "no dlsym_* key in the file (a shim without issue 20's counters)")
        if stats else "NO STATISTICS FILE (the shim writes one at exit, in a process that called cuDNN through it)"))
    if child.get("versions"):
        lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in child["versions"].items()))
    return "\n".join(lines) + "\n"


def summary_line(report):
    """One line for gpu-check's table: the targets, the outputs, the reach."""
    if report.get("error"):
        return f"NOT RUN: {report['error']}"
    parts = []
    if report.get("child", {}).get("error"):
        parts.append(f"FAILED: the run under the shim: {report['child']['error']}")
    for row in report.get("rows", []):
        if "target_percent" in row and "gain_percent" in row:
            parts.append(f"{row['workload']} {row['metric']} {row['gain_percent']:+.1f}% "
                         f"[{row['ci_low_percent']:+.1f}, {row['ci_high_percent']:+.1f}] "
                         f"(target {row['target_percent']:g}%: {'PASS' if row['target_passed'] else 'MISS'})")
    in_process = [w.get("in_process", {}).get("passed") for w in report.get("child", {}).get("workloads", {}).values()]
    parts.append("outputs: same process " + (verdict(False) if False in in_process else verdict(True) if in_process and all(in_process) else verdict(None))
                 + ", against no shim " + verdict(report.get("cross_process", {}).get("passed")))
    counts = reach(report.get("stats"))
    shown = {k: counts[k] for k in ("pack_hits", "backend_launches") if k in counts}
    for key, value in counts.items():  # the dlsym counters, and how many objects looked names up
        if key.startswith("dlsym") and isinstance(value, int) and not isinstance(value, bool):
            shown[key] = value
        elif key.startswith("dlsym") and isinstance(value, list):
            shown[key] = f"{len(value)} object(s)"
    parts.append("shim counts: " + (counts_text(shown) if report.get("stats") else "NO STATISTICS FILE"))
    return "; ".join(parts)


def parent(program, args):
    shim = args.shim or harness.find_shim(program.name)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    start = time.time()
    for stale in glob.glob(str(work / f"{program.name}-*")):
        if os.path.isfile(stale):
            os.unlink(stale)
    program.prepare(work)
    report = {"program": f"gpu/dlsym/{program.script.name}", "title": program.title, "shim": shim,
              "seconds": args.seconds, "pairs_asked": args.pairs, "seed": args.seed, "resamples": args.resamples,
              "conditions": args.conditions, "env_under_shim": args.env, "metrics": METRICS,
              "targets": [{"workload": w, "metric": m, "min_percent": p, "condition": CONDITION_NAMES[ALL]}
                          for (w, m), p in program.targets.items()],
              "rows": []}
    base = [sys.executable, str(program.script), *program.child_arguments(args)]
    if args.timed is not None:
        base += ["--timed", str(args.timed)]

    # 1. Without the shim at all: the reference outputs.
    def output(i):
        return work / f"{program.name}-reference-{i}.bin"
    references = harness.reference_runs(
        args.references, work, program.name,
        lambda i, result: [*base, "--child", "reference", "--out", str(output(i)), "--result", str(result)],
        child_environment(program), args.timeout)
    for i, entry in enumerate(references, 1):
        entry["output"] = output(i).read_bytes() if entry["exit_code"] == 0 and output(i).exists() else None

    # 2. Under the launcher, with a statistics file: correctness in the process, the census, the A/B.
    stats_pattern = str(work / f"{program.name}-stats-%p.json")
    out, result = work / f"{program.name}-shim.bin", work / f"{program.name}-shim.json"
    argv = [*base, "--child", "ab", "--out", str(out), "--result", str(result), "--seconds", str(args.seconds),
            "--pairs", str(args.pairs), "--seed", str(args.seed), "--conditions", args.conditions]
    child = harness.shim_run(argv, shim, stats_pattern, child_environment(program, args.env),
                             args.seconds + args.timeout, result)
    code = child["exit_code"]
    if code != 0 and not child.get("error"):
        child["error"] = harness.failure(code)
    shim_bytes = out.read_bytes() if code == 0 and out.exists() else None

    report["references"] = [{k: v for k, v in r.items() if k != "output"} | {"output": describe_bytes(r["output"])}
                            for r in references]
    stats, files = harness.read_stats(stats_pattern)
    report["stats"] = {**stats, "files": files} if stats else None
    status = 0
    if code in (EXIT_NO_SHIM, EXIT_NO_GPU) or any(r["exit_code"] == EXIT_NO_GPU for r in references):
        report["error"] = child.get("error") or next((r.get("error") for r in references if r.get("error")),
                                                     "no GPU for the program")
        status = code if code in (EXIT_NO_SHIM, EXIT_NO_GPU) else EXIT_NO_GPU
        report["child"] = child
    else:
        print(f"{program.name}: analysing ({args.resamples} bootstrap resamples per row)", flush=True)
        pairs = child.pop("pairs", [])
        report["rows"] = analyse(program, {**child, "pairs": pairs}, args.seed, args.resamples)
        report["child"] = {**child, "pairs": pairs}  # raw data last, for whoever wants to analyse it again
        report["cross_process"] = compare_with_references(shim_bytes, references)
        in_process = [w.get("in_process", {}).get("passed") for w in child.get("workloads", {}).values()]
        failed_refs = [r["label"] for r in references if r["exit_code"] != 0]
        if code != 0 or not pairs:
            status = 1
        if failed_refs:
            print(f"{program.name}: FAILED: {', '.join(failed_refs)}", flush=True)
            status = 1
        # A block whose output was not the reference's, in a program that repeats itself exactly.
        drifted = [name for name, w in child.get("workloads", {}).items()
                   if w.get("in_process", {}).get("passed") is True and w.get("blocks_with_other_output")]
        if False in in_process or report["cross_process"].get("passed") is False or drifted:
            print(f"{program.name}: FAILED: an output differed (see the report)", flush=True)
            status = 1
    report["elapsed_s"] = round(time.time() - start, 1)
    report["exit_status"] = status
    report["markdown"] = markdown(program, report)
    report["summary_line"] = summary_line(report)
    harness.write_report(args, report)
    print("\n" + report["markdown"])
    for row in report["rows"]:
        if "target_passed" in row:
            print(f"target: {row['workload']}, every feature on, {row['metric']} >= {row['target_percent']:g}% "
                  f"with the interval above zero: {'PASS' if row['target_passed'] else 'MISS'} "
                  + (f"({row['gain_percent']:.2f}%, interval [{row['ci_low_percent']:.2f}, {row['ci_high_percent']:.2f}])"
                     if "gain_percent" in row else "(no data)"))
    print(f"{program.name}: {report['summary_line']}")
    return status


# ------------------------------------------------------------------------------------------------
# Child mode (called by the program once it has made its workloads)

class Unavailable(Exception):
    """Raised by a program's make(): it cannot run here (no GPU: EXIT_NO_GPU; a package missing: 1)."""

    def __init__(self, why, exit_code=1):
        super().__init__(why)
        self.why, self.exit_code = why, exit_code


def write_result(path, payload):
    Path(path).write_text(json.dumps(payload))


def make_or_explain(args, make):
    """(workloads, versions, notes) from the program's make(), or the exit status after saying why not."""
    try:
        return make(), None
    except Unavailable as error:
        print(f"{Path(sys.argv[0]).name}: {'SKIPPED' if error.exit_code == EXIT_NO_GPU else 'FAILED'}: {error.why}",
              file=sys.stderr, flush=True)
        write_result(args.result, {"error": error.why})
        return None, error.exit_code


def warm(workload, calls):
    for _ in range(calls):
        workload.call()
    workload.sync()


def timed_calls(workload, calls):
    """Per call: the caller's thread CPU time of the call (not awaited), the wall time of the call
    with its result awaited, and every thread's CPU time over the same stretch (ns, per call)."""
    cpu = wall = proc = 0
    for _ in range(calls):
        wall_start = time.perf_counter_ns()
        proc_start = time.process_time_ns()
        cpu_start = time.thread_time_ns()
        workload.call()
        cpu_end = time.thread_time_ns()  # the enqueue only: before the wait
        workload.sync()
        proc_end = time.process_time_ns()
        wall_end = time.perf_counter_ns()
        cpu += cpu_end - cpu_start
        wall += wall_end - wall_start
        proc += proc_end - proc_start
    return {"cpu_ns": cpu / calls, "wall_ns": wall / calls, "proc_ns": proc / calls}


def outputs_bytes(workloads):
    """Every workload's last output, in order, as one byte string (what the parent compares)."""
    return b"".join(w.snapshot() for w in workloads)


def child_reference(args, make):
    """Without the shim: run each workload as the A/B's child does before it measures, write the outputs.
    make() returns (workloads, versions, notes) or raises Unavailable."""
    made, code = make_or_explain(args, make)
    if made is None:
        return code
    workloads, versions, _ = made
    for w in workloads:
        warm(w, PLAN_CALLS)
    for w in workloads:
        w.call()
        w.sync()
    Path(args.out).write_bytes(outputs_bytes(workloads))
    write_result(args.result, {"versions": versions, "shim_mapped": harness.shim_mapped()})
    return 0


def child_ab(args, make):
    """Under the shim: the in-process check, the census and the paired blocks (module docstring).
    The switch is looked for first, before make() loads a framework."""
    switch = harness.switch_or_explain(Path(sys.argv[0]).name, args.result)
    if switch is None:
        return EXIT_NO_SHIM
    features, set_features = switch
    made, code = make_or_explain(args, make)
    if made is None:
        return code
    workloads, versions, notes = made
    conditions = tuple(int(c) for c in args.conditions.split(",") if c)
    richest = max(conditions, key=lambda c: bin(c).count("1"))
    for w in workloads:
        if args.timed is not None:
            w.timed = args.timed
    by_name = {w.name: w for w in workloads}

    # The first call starts cuDNN (and the shim reads its configuration): only then do the features
    # say what the environment asked for.
    for w in workloads:
        w.call()
        w.sync()
    features_at_start = features()
    set_features(0)
    for w in workloads:  # plans, lazy set-up: outside any block, everything forwarded
        warm(w, PLAN_CALLS)

    # In the same process: every feature off twice (the program repeats itself), then on.
    reference, report = {}, {}
    for w in workloads:
        set_features(0)
        warm(w, 1)
        first = w.snapshot()
        warm(w, 1)
        second = w.snapshot()
        in_effect = set_features(richest)
        warm(w, WARMUP)
        warm(w, 1)
        on = w.snapshot()
        set_features(0)
        reference[w.name] = first
        if first != second:
            check_result = {"passed": None, "detail": "two calls with every feature off already differ"}
        else:
            check_result = {"passed": on == first,
                            "detail": f"features {in_effect}, {len(on)} bytes"
                                      + ("" if on == first else ", DIFFERENT BYTES")}
        report[w.name] = {"what": w.what, "timed": w.timed, "in_process": check_result,
                          "notes": (notes or {}).get(w.name, {})}
        print(f"{Path(sys.argv[0]).name} {w.name}: same process, features {in_effect} against 0: "
              f"{verdict(check_result['passed'])}", flush=True)

    # The output for the comparison with the runs without the shim: every feature on, steady.
    set_features(richest)
    for w in workloads:
        warm(w, WARMUP)
    Path(args.out).write_bytes(outputs_bytes(workloads))

    # What the shim does per call, counted by the shim (nothing timed here).
    for w in workloads:
        census = {}
        for asked in (richest, 0):
            in_effect = set_features(asked)
            warm(w, WARMUP)
            before = harness.read_counters()
            if before is None:
                break
            warm(w, CENSUS_CALLS)
            after = harness.read_counters()
            census[str(in_effect)] = {k: (after[k] - before[k]) / CENSUS_CALLS for k in after
                                      if k not in ("handles", "live_handles")}
        report[w.name]["census"] = census
        print(f"{Path(sys.argv[0]).name} {w.name}: per call: {census_text(census)}", flush=True)

    def block(w, asked):
        in_effect = set_features(asked)
        # Switching graph replay off destroyed the shim's graphs: with it on, each op runs directly
        # twice and is captured at its third execute, all in the warm-up. Both arms warm up alike:
        # with 8 calls before the on blocks and 1 before the off ones, JAX on the CPU (no cuDNN, the
        # shim idle) timed the on blocks 10% slower, the interval well away from zero.
        warm(w, WARMUP)
        measured = timed_calls(w, w.timed)
        measured["in_effect"] = in_effect
        return measured, w.snapshot() == reference[w.name]

    for w in workloads:  # each code path once, unrecorded
        for asked in (*conditions, 0):
            block(w, asked)

    other_output = {w.name: 0 for w in workloads}

    def pair(name, condition, order):
        measured = {}
        for which, asked in order:
            measured[which], same = block(by_name[name], asked)
            other_output[name] += not same
        return measured

    def progress(r, pairs, seconds):
        gains = []
        for name in by_name:
            mine = [p for p in pairs if p["workload"] == name and p["condition"] == richest]
            off = statistics.fmean(p["off"]["cpu_ns"] for p in mine)
            gain = statistics.fmean(p["off"]["cpu_ns"] - p["on"]["cpu_ns"] for p in mine)
            gains.append(f"{name} {100 * gain / off:+.1f}%")
        print(f"{Path(sys.argv[0]).name}: {r + 1} rounds, {seconds:.0f} s; mean CPU gain so far, "
              f"features {richest}: " + ", ".join(gains), flush=True)

    pairs, stopped, measure_seconds = harness.paired_rounds(
        args.pairs, time.monotonic() + args.seconds, conditions, pair,
        random.Random(f"{args.seed}/{Path(sys.argv[0]).name}"), workloads=list(by_name), progress=progress)
    set_features(features_at_start)
    rounds = len(pairs) // max(1, len(conditions) * len(workloads))
    for w in workloads:
        report[w.name]["blocks_with_other_output"] = other_output[w.name]
    print(f"{Path(sys.argv[0]).name}: {rounds} rounds in {measure_seconds:.0f} s"
          + (" (stopped by the time budget)" if stopped else ""), flush=True)
    write_result(args.result, {
        "workload_order": [w.name for w in workloads], "workloads": report, "conditions": list(conditions),
        "metrics": list(METRICS), "pairs_asked": args.pairs, "rounds": rounds, "stopped_by_deadline": stopped,
        "measure_seconds": round(measure_seconds, 1), "features_at_start": features_at_start,
        "counting": harness.read_counters() is not None, "versions": versions,
        "pairs": pairs})
    return 0

