"""Host time per call as PyTorch sees it, with the shim and without: a timing tracer placed before
the shim (tests/tracer's libtracer_all.so) times each cuDNN and cuBLAS call the program makes.

    python3 per_call.py --shim LIB --tracer LIB [--launch-cost BIN_OR_TABLE] [--work DIR] [--json FILE]
                        [--markdown FILE] [--workloads conv_bn16_fp32,bn16_train,stack_bias,stack_nobias]
                        [--blocks N] [--driver-tracer LIB] [--no-relocation-arm] [--baseline-shim LIB] [--verbose]

Parent (standard library only): per workload (workloads.py's), two processes of this program
again as a child: one with the tracer alone (no shim: what each call costs without it), one with
LD_PRELOAD="tracer shim" and a statistics file, whose child alternates blocks with every feature on
(31) and every feature off (0, each call forwarded by the shim) in one process. Each block warms up
8 iterations after the switch, then times K iterations: the tracer's tracer_count and tracer_ns read
before and after give, per function, the calls the program made and their time (the forwarded call
as the program sees it: the shim's work and a replay's graph launch included; calls nested inside
another traced call are the tracer's to count apart). Reported per workload and function: calls
per iteration, the median over blocks of the mean ns per call without the shim, with the shim off,
with it on, and the shim's saving per call; beside them, a graph launch's own cost
(bench/gpu/replay_launch_cost: cuGraphLaunch of one empty kernel on the legacy default stream,
PyTorch's), which a replayed call cannot go below. The shim's counters per on block say how many
ops it replayed. --json gets everything, --markdown the table. Exit status 0 when every process ran,
1 otherwise, 77 without a GPU.

--verbose runs the shim's processes with CUDNN_FASTPATH_VERBOSE=1.

--driver-tracer LIB (tests/tracer's libtracer_driver.so) is placed after the shim in the shim's process:
it times the driver's graph calls the shim makes (cuGraphLaunch, cuGraphExecKernelNodeSetParams_v2,
cuStreamIsCapturing, ...), so that a replayed call's time splits into the driver's and the shim's own
(docs/graph-costs.md). --no-relocation-arm adds a third process, the shim with CUDNN_FASTPATH_RELOCATE=0,
whose "on" blocks are the table's "on, no relocation" column. --baseline-shim LIB adds another process,
the same as the shim's with another build of it (the last commit's, say), whose off and on blocks are
the table's last two columns: two builds on one host, a process apart.
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
import harness  # noqa: E402  the shim's switch and counters, the children, the clean environment
from harness import ALL, WARMUP  # noqa: E402
from shimstats import delta, launches, replay_text  # noqa: E402

DEFAULT_WORKLOADS = ("conv_bn16_fp32", "bn16_train", "stack_bias", "stack_nobias", "mlp_fp32_train")
TIMED, PLAN_ITERATIONS = 4, 20
OFF = 0
# The calls reported, in this order (any the tracer saw and this list lacks come after them).
FUNCTIONS = (
    "cudnnBackendExecute", "cudnnBatchNormalizationForwardInference", "cudnnBatchNormalizationForwardTrainingEx",
    "cudnnBatchNormalizationBackwardEx", "cudnnConvolutionForward", "cudnnConvolutionBiasActivationForward",
    "cudnnActivationForward", "cudnnPoolingForward", "cudnnSoftmaxForward", "cudnnAddTensor", "cudnnOpTensor",
    "cudnnScaleTensor", "cudnnTransformTensor", "cudnnLRNCrossChannelForward",
    "cublasLtMatmul", "cublasLtMatmulAlgoGetHeuristic", "cublasGemmEx", "cublasGemmEx_64",
    "cublasGemmStridedBatchedEx", "cublasGemmStridedBatchedEx_64", "cublasSgemm_v2", "cublasSgemmStridedBatched",
    "cudnnSetStream", "cublasSetStream_v2", "cublasSetWorkspace_v2", "cublasSetMathMode",
    "cudnnBackendCreateDescriptor", "cudnnBackendSetAttribute", "cudnnBackendFinalize", "cudnnBackendDestroyDescriptor",
    "cudnnCreateTensorDescriptor", "cudnnSetTensorNdDescriptor", "cudnnSetTensor4dDescriptor",
    "cudnnDestroyTensorDescriptor", "cudnnDeriveBNTensorDescriptor",
    "cublasLtMatmulDescCreate", "cublasLtMatmulDescSetAttribute", "cublasLtMatmulDescDestroy",
    "cublasLtMatrixLayoutCreate", "cublasLtMatrixLayoutSetAttribute", "cublasLtMatrixLayoutDestroy",
    "cublasLtMatmulPreferenceCreate", "cublasLtMatmulPreferenceSetAttribute", "cublasLtMatmulPreferenceDestroy")
# The driver's graph calls, as the driver tracer after the shim sees them.
DRIVER_FUNCTIONS = (
    "cuGraphLaunch", "cuGraphExecKernelNodeSetParams_v2", "cuGraphExecMemsetNodeSetParams", "cuStreamIsCapturing",
    "cuStreamGetCtx", "cuCtxGetCurrent", "cuPointerGetAttribute", "cuStreamBeginCapture_v2", "cuStreamEndCapture",
    "cuGraphInstantiateWithFlags", "cuGraphExecDestroy", "cuGraphDestroy", "cuGraphGetNodes",
    "cuGraphKernelNodeGetParams_v2")
RUN_TIMEOUT_S = 300


# ------------------------------------------------------------------------------------------------
# Child mode (torch from here on)

def tracer_reader(library=None, functions=FUNCTIONS):
    """(name -> (calls, ns)) of the preloaded tracer (the first, or the one at `library`), or None when
    there is none."""
    try:
        process = ctypes.CDLL(library) if library else ctypes.CDLL(None)
        count, ns = process.tracer_count, process.tracer_ns
    except (AttributeError, OSError):
        return None
    for f in (count, ns):
        f.restype, f.argtypes = ctypes.c_uint64, [ctypes.c_char_p]
    return lambda: {name: (count(name.encode()), ns(name.encode())) for name in functions}


def child(args):
    read = tracer_reader()
    if read is None:
        print("per_call: no tracer preloaded (tracer_count and tracer_ns not found)", file=sys.stderr)
        return 2
    driver = tracer_reader(args.driver_tracer, DRIVER_FUNCTIONS) if args.driver_tracer else None
    if args.driver_tracer and driver is None:
        print(f"per_call: the driver tracer {args.driver_tracer} cannot be read", file=sys.stderr)
        return 2
    shim = harness.switch()
    switch = shim[1] if shim else None  # set_features; none in the process with the tracer alone
    import torch
    import workloads

    if not torch.cuda.is_available():
        print("per_call: SKIPPED: no CUDA device", file=sys.stderr)
        return harness.EXIT_NO_GPU
    step, context = workloads.make_workload(args.child, torch.device("cuda"))
    arms = ("on", "off") if switch is not None else ("none",)
    blocks = {arm: [] for arm in arms}
    with context:
        if switch is not None:
            switch(OFF)
        for _ in range(PLAN_ITERATIONS):  # cuDNN plans, cuBLAS heuristics, lazy set-up: not measured
            step()
        torch.cuda.synchronize()
        for r in range(args.blocks):
            for arm in (arms if r % 2 == 0 else arms[::-1]):
                in_effect = switch(ALL if arm == "on" else OFF) if switch is not None else None
                for _ in range(WARMUP):
                    step()
                torch.cuda.synchronize()
                before, shim_before = read(), harness.read_counters()
                driver_before = driver() if driver else None
                for _ in range(TIMED):
                    step()
                after, shim_after = read(), harness.read_counters()
                driver_after = driver() if driver else None
                torch.cuda.synchronize()
                moved = {n: (after[n][0] - before[n][0], after[n][1] - before[n][1]) for n in FUNCTIONS
                         if after[n][0] != before[n][0]}
                block = {"in_effect": in_effect, "calls": moved}
                if driver:
                    block["driver"] = {n: (driver_after[n][0] - driver_before[n][0],
                                           driver_after[n][1] - driver_before[n][1]) for n in DRIVER_FUNCTIONS
                                       if driver_after[n][0] != driver_before[n][0]}
                if shim_before is not None and shim_after is not None:
                    block["replayed"] = launches(delta(shim_before, shim_after))
                blocks[arm].append(block)
        if switch is not None:
            switch(ALL)
    Path(args.result).write_text(json.dumps({"workload": args.child, "timed": TIMED, "blocks": blocks,
                                             "device": torch.cuda.get_device_name(), "torch": torch.__version__}))
    return 0


# ------------------------------------------------------------------------------------------------
# Parent mode

def run_child(name, args, with_shim, relocate=True, shim=None):
    work = Path(args.work)
    label = f"{name}-{('shim' if relocate else 'shim-norelocation') if with_shim else 'alone'}"
    if shim is not None:
        label += "-baseline"
    result, stats = work / f"{label}.json", work / f"{label}.stats-%p.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--result", str(result),
            "--blocks", str(args.blocks)]
    env = harness.clean_environment()
    env["CUDNN_TRACER_REPORT"] = str(work / f"{label}.tracer.json")
    if with_shim:
        # The tracer before the shim, set by hand (the launcher would put the shim first); the driver
        # tracer, if any, after it.
        preload = f"{args.tracer} {shim or args.shim}" + (f" {args.driver_tracer}" if args.driver_tracer else "")
        env.update({"LD_PRELOAD": preload, "CUDNN_FASTPATH_STATS_FILE": stats})
        if args.driver_tracer:
            argv += ["--driver-tracer", args.driver_tracer]
            env["CUDNN_TRACER_DRIVER_REPORT"] = str(work / f"{label}.driver.json")
        if not relocate:
            env["CUDNN_FASTPATH_RELOCATE"] = "0"
        if args.verbose:
            env["CUDNN_FASTPATH_VERBOSE"] = "1"
    else:
        env["LD_PRELOAD"] = args.tracer
    code, _ = harness.run_process(f"{label}, LD_PRELOAD={env['LD_PRELOAD']}", argv, env, RUN_TIMEOUT_S)
    child = harness.read_json(result) if code == 0 else {}
    child["stats"] = harness.read_stats(str(stats))[0]
    child["exit_code"] = code
    return child


def per_call(blocks, function, part="calls"):
    """Median over blocks of the mean ns per call of `function`, and its calls per timed iteration."""
    means = [b[part][function][1] / b[part][function][0] for b in blocks if function in b.get(part, {})]
    calls = [b.get(part, {}).get(function, (0, 0))[0] for b in blocks]
    return (statistics.median(means) if means else None), (statistics.fmean(calls) if calls else 0)


def per_iteration_ns(blocks, function, part="calls"):
    """Median over blocks of the ns per timed iteration that `function` took."""
    totals = [b.get(part, {}).get(function, (0, 0))[1] / TIMED for b in blocks]
    return statistics.median(totals) if totals else None


def launch_cost(path):
    """cuGraphLaunch's median ns per call on the legacy default stream, from replay_launch_cost (run
    here, or the table it printed); None when there is none."""
    if not path:
        return None, "not given"
    p = Path(path)
    if p.is_file() and os.access(p, os.X_OK) and not p.suffix == ".md":
        done = subprocess.run([str(p), "--rounds", "100", "--calls", "200"], capture_output=True, text=True)
        text = done.stdout
    else:
        text = p.read_text() if p.is_file() else ""
    m = re.search(r"\| legacy default stream \| cuGraphLaunch[^|]*\| (\d+) \|", text)
    return (int(m.group(1)), text) if m else (None, text or f"{path}: nothing read")


def table(report):
    launch = report.get("graph_launch_ns")
    # The baseline shim's columns (--baseline-shim) only where it ran.
    base = any("base_on" in row for w in report["workloads"].values() for row in (w.get("functions") or {}).values())
    lines = ["| workload | function | calls/iter | ns/call, no shim | shim, all off | shim, all on | "
             "on, no relocation | saved per call, ns (no shim - on) | on - a graph launch, ns |"
             + (" baseline shim, all off | baseline shim, all on |" if base else ""),
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if base else "")]
    for name, w in report["workloads"].items():
        if w.get("error"):
            lines.append(f"| {name} | NOT MEASURED: {w['error']} | | | | | | | |")
            continue
        for function, row in w["functions"].items():
            def ns(key):
                return "" if row.get(key) is None else f"{row[key]:.0f}"
            saved = "" if row.get("none") is None or row.get("on") is None else f"{row['none'] - row['on']:.0f}"
            over = "" if launch is None or row.get("on") is None else f"{row['on'] - launch:.0f}"
            lines.append(f"| {name} | `{function}` | {row['calls_per_iteration']:g} | {ns('none')} | {ns('off')} | "
                         f"{ns('on')} | {ns('fixed')} | {saved} | {over} |"
                         + (f" {ns('base_off')} | {ns('base_on')} |" if base else ""))
    if any(w.get("driver") for w in report["workloads"].values()):
        lines += ["", "The driver's graph calls the shim made, every feature on (the driver tracer after the shim):", "",
                  "| workload | driver function | calls/iter | ns/call | ns/iter |", "| --- | --- | ---: | ---: | ---: |"]
        for name, w in report["workloads"].items():
            for function, row in (w.get("driver") or {}).items():
                lines.append(f"| {name} | `{function}` | {row['calls_per_iteration']:g} | {row['ns_per_call']:.0f} | "
                             f"{row['ns_per_iteration']:.0f} |")
    return lines


def markdown(report):
    launch = report.get("graph_launch_ns")
    lines = ["## Host time per call (gpu/pytorch/per_call.py)", "",
             "A timing tracer before the shim (tests/tracer's libtracer_all.so) times each call as PyTorch sees it: "
             "without the shim (the tracer alone, its own process), and in one process under the shim with every "
             f"feature off (0) and every feature on (31), blocks alternating, {WARMUP} warm-up and {TIMED} timed "
             "iterations each; medians over blocks of the mean ns per call. A graph launch's own cost "
             "(bench/gpu/replay_launch_cost, cuGraphLaunch of one empty kernel, legacy default stream): "
             + (f"{launch} ns." if launch is not None else "not measured."), ""]
    lines += table(report)
    lines.append("")
    for name, w in report["workloads"].items():
        if not w.get("error"):
            lines.append(f"- {name}: {w['blocks']} blocks per arm; ops the shim replayed per on block: "
                         f"{w['replayed_per_iteration']} per iteration; shim's counts: {w['shim_counts']}")
    return "\n".join(lines) + "\n"


def parent(args):
    from workloads import WORKLOADS  # plain data: no torch in the parent

    names = [n for n in args.workloads.split(",") if n]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown or not names:
        raise SystemExit(f"per_call: unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    launch, launch_text = launch_cost(args.launch_cost)
    report = {"program": "gpu/pytorch/per_call.py", "shim": args.shim, "tracer": args.tracer,
              "graph_launch_ns": launch, "launch_cost_output": launch_text, "workloads": {}}
    status, start = 0, time.monotonic()
    for name in names:
        alone, shimmed = run_child(name, args, False), run_child(name, args, True)
        fixed = run_child(name, args, True, relocate=False) if args.no_relocation_arm else None
        base = run_child(name, args, True, shim=args.baseline_shim) if args.baseline_shim else None
        if harness.EXIT_NO_GPU in (alone["exit_code"], shimmed["exit_code"]):
            print("per_call: SKIPPED: no CUDA device")
            return harness.EXIT_NO_GPU
        if alone["exit_code"] != 0 or shimmed["exit_code"] != 0 or "on" not in shimmed.get("blocks", {}):
            report["workloads"][name] = {"error": f"exit status {alone['exit_code']} alone, {shimmed['exit_code']} "
                                                  "under the shim" + ("" if "on" in shimmed.get("blocks", {}) else
                                                                      " (no switch: is the shim preloaded?)")}
            status = 1
            continue
        arms = {"none": alone["blocks"]["none"], "off": shimmed["blocks"]["off"], "on": shimmed["blocks"]["on"]}
        if fixed is not None and "on" in fixed.get("blocks", {}):
            arms["fixed"] = fixed["blocks"]["on"]
        if base is not None and "on" in base.get("blocks", {}):
            arms["base_off"], arms["base_on"] = base["blocks"]["off"], base["blocks"]["on"]
        seen = {f for blocks in arms.values() for b in blocks for f in b["calls"]}
        functions = {}
        for function in [f for f in FUNCTIONS if f in seen]:
            row = {"calls_per_iteration": per_call(arms["none"], function)[1] / TIMED}
            for arm, blocks in arms.items():
                row[arm] = per_call(blocks, function)[0]
                row[f"calls_per_iteration_{arm}"] = per_call(blocks, function)[1] / TIMED
            functions[function] = row
        driver = {}
        for function in DRIVER_FUNCTIONS:
            mean, calls = per_call(arms["on"], function, "driver")
            if mean is not None:
                driver[function] = {"calls_per_iteration": calls / TIMED, "ns_per_call": mean,
                                    "ns_per_iteration": per_iteration_ns(arms["on"], function, "driver")}
        replayed = [b["replayed"] / TIMED for b in arms["on"] if "replayed" in b]
        report["workloads"][name] = {"functions": functions, "blocks": len(arms["on"]), "driver": driver,
                                     "replayed_per_iteration": statistics.fmean(replayed) if replayed else "not counted",
                                     "shim_counts": replay_text(shimmed.get("stats")), "raw": {"alone": alone,
                                                                                                "shim": shimmed}}
    report["elapsed_s"] = round(time.monotonic() - start, 1)
    report["markdown"] = markdown(report)
    harness.write_report(args, report)
    print("\n" + report["markdown"])
    return status


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shim", help="libcudnn_fastpath.so")
    parser.add_argument("--tracer", help="tests/tracer's libtracer_all.so")
    parser.add_argument("--launch-cost", help="bench/gpu/replay_launch_cost, or the table it printed")
    parser.add_argument("--work", default=str(HERE.parents[1] / "out" / "per_call"))
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS))
    parser.add_argument("--blocks", type=int, default=40, help="blocks per arm (default 40)")
    parser.add_argument("--driver-tracer", help="tests/tracer's libtracer_driver.so, placed after the shim")
    parser.add_argument("--baseline-shim", help="another build of the shim, timed in a process of its own after "
                                                "the shim's: its columns beside the shim's")
    parser.add_argument("--no-relocation-arm", action="store_true",
                        help="also the shim with CUDNN_FASTPATH_RELOCATE=0 (a third process)")
    parser.add_argument("--verbose", action="store_true",
                        help="the shim's processes with CUDNN_FASTPATH_VERBOSE=1: its lines (relocation's verdicts "
                             "with the times they compared, say) in the output")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if not args.shim or not args.tracer:
        parser.error("--shim and --tracer are needed")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
