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
    the shim measures no time itself);
  - with --tracer (tests/tracer's libtracer_all.so, a small timing preload that wraps the whole
    API): inference and SDPA with the tracer alone, after the shim (as the launcher puts it when
    LD_PRELOAD already holds it) and before it: outputs identical to the runs without the shim; after
    the shim its cudnnSetStream count equals the shim's forwarded count and its executes the
    program's; before the shim its counts equal those of the run with the tracer alone.
--part graphs runs graph replay's checks instead (the shim replays steady cuDNN executes as CUDA
graphs, on by default): the program capturing its own CUDA graph, more image sizes than the shim's
caches hold, several threads with their own streams, each bit for bit against runs without the
shim and in verify mode; inference and cuDNN SDPA with graphs off (--no-graphs: identical, no
launch); and the graph counts of every run (graphs captured and launched where steady).
--part legacy runs the legacy cuDNN and cuBLAS replays' checks instead (check_legacy.py, on the
networks of workload_nets.py). --part relocation runs the checks of calls replayed after their tensors
moved and of the typed fp32 GEMMs instead (check_relocation.py, on the programs of
workload_relocation.py): greedy generation with HF transformers (token ids; the share of cuBLAS(Lt)
calls launched in steady state, relocated), a conv+BN network fed fresh inputs, a training loop whose
activations alternate between two allocations, the program's own CUDA graph around calls that would
be relocated (nothing launched by the shim while it captures), two streams, an fp32 MLP's forwards
and deterministic training steps (typed_gemm launched); each bit for bit against two runs without
the shim that agree, in verify mode (relocation_mismatches = 0) and with --no-relocation (relocated
= 0). Writes everything to --json and exits 1 if a check failed. Standard library only: it never
imports torch itself, the workloads do; checklib.py holds what the parts share.
"""
import argparse
import concurrent.futures
import json
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import shimstats  # noqa: E402  the replay counters, read by key
# What the parts share (checklib.py); how a program runs under the shim, UNDER_SHIM, is harness.py's.
from checklib import (PARALLEL_RUNS, Checks, Run, check_counts, check_graphs, check_packs,  # noqa: E402
                      graph_numbers, pack_numbers, run_all, same_bytes, within_spread)
from harness import UNDER_SHIM  # noqa: E402

INFER = ["infer", "--iters", "200"]
STREAMS = ["streams", "--iters", "200", "--switch-every", "5"]
TRAIN = ["train", "--steps", "5"]
SDPA = ["sdpa", "--iters", "100"]
SDPA_TRAIN = ["sdpa_train", "--steps", "8"]
CAPTURE = ["capture", "--iters", "50"]
SHAPES = ["shapes", "--sizes", "40", "--rounds", "3"]
THREADS = ["threads", "--threads", "4", "--iters", "100"]
SDPA_TRAIN_PLAIN_RUNS = 3  # the baseline's own run-to-run spread of the SDPA backward
TIME = ["time", "--chunks", "40", "--warmup", "50"]


def graphs_part(args, work, checks):
    """Graph replay's own cases: each against two runs without the shim that must agree first."""
    cases = {"capture": CAPTURE, "shapes": SHAPES, "threads": THREADS}
    plan = [(f"{name}-{kind}", wargs, shim) for name, wargs in cases.items()
            for kind, shim in (("plain-1", "none"), ("plain-2", "none"), ("shim", "stats"), ("verify", "verify"))]
    plan += [("infer-plain-1", INFER, "none"), ("infer-nographs", INFER, "nographs"),
             ("sdpa-plain-1", SDPA, "none"), ("sdpa-plain-2", SDPA, "none"), ("sdpa-nographs", SDPA, "nographs")]
    runs = run_all(args, work, plan, checks)
    for name in cases:
        plain = runs[f"{name}-plain-1"]
        plain_agree = plain.output_bytes() is not None and plain.output_bytes() == runs[f"{name}-plain-2"].output_bytes()
        same_bytes(checks, f"{name}: two runs without the shim agree", runs[f"{name}-plain-2"], plain)
        for kind in ("shim", "verify"):
            run = runs[f"{name}-{kind}"]
            same_bytes(checks, f"{run.name}: output identical to the runs without the shim", run, plain,
                       precondition=plain_agree)
            if run.stats and kind == "verify":
                checks.add(f"{run.name}: verify mode, no mismatch", run.stats.get("verify_mismatches") == 0,
                           f"verify_mismatches={run.stats.get('verify_mismatches')}")
            # shapes: more triples than the caches hold, so few or no captures; threads: on the H200
            # (2026-12-01) no triple of the four threads came back three times (6400 executes, all
            # direct): reported only, the outputs are what is judged.
            check_graphs(checks, run, steady=name == "capture")
    # The program's capture allocates from its graph's own pool: its executes are new triples, run
    # directly while they count, so a refusal for capturing is seen only when a triple reached its
    # capture inside the program's (the stub tests force that case): reported, not judged.
    capture_stats = runs["capture-shim"].stats or {}
    checks.add("capture-shim: executes refused inside the program's own capture (backend_refused_capturing)", None,
               graph_numbers(capture_stats) + " (informational)")
    sdpa_agree = runs["sdpa-plain-1"].output_bytes() == runs["sdpa-plain-2"].output_bytes()
    same_bytes(checks, "infer-nographs: output identical to the run without the shim", runs["infer-nographs"],
               runs["infer-plain-1"])
    same_bytes(checks, "sdpa-nographs: output identical to the run without the shim", runs["sdpa-nographs"],
               runs["sdpa-plain-1"], precondition=sdpa_agree)
    for name in ("infer-nographs", "sdpa-nographs"):
        check_graphs(checks, runs[name])
    return runs, {}


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
    runs = run_all(args, work, plan, checks)

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
    # Graph replay (on by default) in the steady runs; SDPA backward's by-value scalars may change
    # from call to call (then it is executed directly): reported only. In verify mode too.
    for name in ("infer-shim", "infer-verify", "streams-shim", "train-shim", "sdpa-shim", "sdpa-verify"):
        check_graphs(checks, runs[name])
    check_graphs(checks, runs["sdpa_train-shim"], steady=False)
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


def tracer_checks(args, work, checks, runs):
    """The workloads under a timing preload of the user's own, beside the shim."""
    plan = []
    for workload, wargs in (("infer", INFER), ("sdpa", SDPA)):
        plan += [(f"{workload}-tracer", wargs, "none", None), (f"{workload}-tracer-after", wargs, "stats", "after"),
                 (f"{workload}-tracer-before", wargs, "stats", "before")]
    traced = {name: Run(name, wargs, shim, work, args.shim, tracer=args.tracer, tracer_position=position)
              for name, wargs, shim, position in plan}
    with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        list(pool.map(Run.execute, traced.values()))
    for run in traced.values():
        run.log()
        checks.add(f"{run.name}: exit status 0, tracer report written", run.exit_code == 0 and run.tracer is not None,
                   "" if run.exit_code == 0 else (run.err.strip().splitlines() or ["?"])[-1])
    for workload in ("infer", "sdpa"):
        alone, plain = traced[f"{workload}-tracer"], runs[f"{workload}-plain-1"]
        plain_agree = plain.output_bytes() is not None and plain.output_bytes() == runs[f"{workload}-plain-2"].output_bytes()
        same_bytes(checks, f"{alone.name}: output identical to the run without any preload", alone, plain,
                   precondition=plain_agree)
        for position in ("after", "before"):
            run = traced[f"{workload}-tracer-{position}"]
            same_bytes(checks, f"{run.name}: output identical to the run without the shim", run, plain,
                       precondition=plain_agree)
            if run.tracer is None or alone.tracer is None or not run.stats:
                checks.add(f"{run.name}: tracer and shim reports", False, "a report is missing")
                continue
            stats = run.stats
            checks.add(f"{run.name}: the shim saw every cudnnSetStream of the program",
                       stats["set_stream_calls"] == alone.traced("cudnnSetStream"),
                       f"{stats['set_stream_calls']} intercepted, the tracer alone saw {alone.traced('cudnnSetStream')}")
            if position == "after":
                # After the shim the tracer sees what reaches cuDNN: the forwarded calls, and the
                # shim's own: each graph capture of a cuDNN op (a backend execute, or a legacy call:
                # the batch norms of this network) sets the handle's stream to the shim's and back,
                # and executes once under capture; an execute answered by a graph launch reaches nothing.
                captured, launched = stats.get("backend_captured", 0), stats.get("backend_launches", 0)
                legacy_captured = sum(shimstats.count(stats, f"{family}_captured")
                                      for family in shimstats.LEGACY_FAMILIES)
                checks.add(f"{run.name}: the tracer's cudnnSetStream calls = the shim's forwarded + 2 per capture",
                           run.traced("cudnnSetStream") == stats["forwarded"] + 2 * (captured + legacy_captured),
                           f"tracer {run.traced('cudnnSetStream')}, forwarded {stats['forwarded']}, "
                           f"captures {captured} (legacy calls {legacy_captured}), skipped {stats['skipped']}")
                expected = alone.traced("cudnnBackendExecute") - launched + captured
                checks.add(f"{run.name}: the tracer saw every execute the shim did not answer with a graph",
                           run.traced("cudnnBackendExecute") == expected,
                           f"{run.traced('cudnnBackendExecute')}: {alone.traced('cudnnBackendExecute')} alone, "
                           f"{launched} graph launches, {captured} captures")
            else:
                differing = {f: (run.traced(f), alone.traced(f)) for f in set(run.tracer) | set(alone.tracer)
                             if run.traced(f) != alone.traced(f)}
                checks.add(f"{run.name}: the tracer's counts = the program's calls (the run with the tracer alone)",
                           not differing, f"differing (with the shim, alone): {differing}" if differing else
                           f"{sum(v['calls'] for v in run.tracer.values())} calls")
            checks.add(f"{run.name}: the shim still skips", stats["skipped"] > 0,
                       f"skipped {stats['skipped']}, {pack_numbers(stats)}")
    return traced


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shim", required=True, help="path of libcudnn_fastpath.so")
    parser.add_argument("--work", required=True, help="folder for outputs and statistics files")
    parser.add_argument("--json", required=True, help="results file")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=0, help="time.time() not to go past")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--tracer", help="a timing preload to run beside the shim (tests/tracer's libtracer_all.so)")
    parser.add_argument("--part", choices=("core", "graphs", "legacy", "relocation"), default="core",
                        help="core: the checks above (default); graphs: graph replay's own cases; legacy: the "
                             "legacy cuDNN and cuBLAS replays' cases (check_legacy.py); relocation: calls "
                             "replayed after their tensors moved, and the typed fp32 GEMMs (check_relocation.py)")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(f"running under the shim by {UNDER_SHIM.__name__}")

    checks = Checks()
    start = time.monotonic()
    if args.part == "legacy":
        import check_legacy
        part = check_legacy.legacy_part
    elif args.part == "relocation":
        import check_relocation
        part = check_relocation.relocation_part
    else:
        part = graphs_part if args.part == "graphs" else correctness
    runs, comparisons = part(args, work, checks)
    if args.tracer and args.part == "core":
        runs.update(tracer_checks(args, work, checks, runs))
    print(f"correctness checks ({args.part}): {len(runs)} processes, {time.monotonic() - start:.0f} s")
    if args.part != "core":
        args.skip_timing = True  # the timing rounds belong to the core part
    first = next(iter(runs.values())).printed  # a run without the shim comes first in every part's plan
    versions = {k: first.get(k) for k in ("torch", "torch_cuda", "cudnn", "device")}
    results = {"part": args.part, "versions": versions, "under_shim_by": UNDER_SHIM.__name__, "checks": checks.items,
               "correctness_seconds": round(time.monotonic() - start, 1), **comparisons,
               "runs": [run.summary() for run in runs.values()]}
    Path(args.json).write_text(json.dumps(results, indent=2))  # in case the timing runs out of time
    results["timing"] = {"skipped": True} if args.skip_timing else timing(args, work)
    results["passed"] = not checks.failed()
    Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if checks.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
