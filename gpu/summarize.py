"""The last step of scripts/gpu-check: one results file, one markdown table, the table printed.

    python3 summarize.py --out DIR [--machine KEY=VALUE ...] [--step NAME=STATUS ...]
                         [--ctest LOG ...] [--bench JSON] [--pytorch JSON] [--check PART=JSON ...]
                         [--torchrun JSON] [--ab JSON] [--per-call JSON] [--generate JSON]
                         [--dlsym STEP=JSON ...]

Every input is optional: whatever ran is reported, whatever did not is said so. Standard library only.
"""
import argparse
import json
import re
from pathlib import Path


def read_json(path):
    try:
        return json.loads(Path(path).read_text()) if path else None
    except (OSError, ValueError) as error:
        return {"error": f"{path}: {error}"}


def ctest_summary(path):
    """'N tests passed, M failed, K skipped of T' from a ctest log."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return {"log": path, "summary": "no log"}
    # "100% tests passed, 0 tests failed out of 9" (CMake 3.25), "100% tests passed out of 9" (newer).
    total = re.search(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)", text)
    if not total:
        total = re.search(r"(\d+)% tests passed()() out of (\d+)", text)
    skipped = len(re.findall(r"\(Skipped\)$", text, flags=re.M))
    failed_names = re.findall(r"^\s*\d+ - (.+?) \((Failed|Timeout|Not Run|SEGFAULT|Subprocess aborted|Exception)\)",
                              text, flags=re.M)
    if not total:
        return {"log": path, "summary": "no summary line (did ctest run?)", "failed": failed_names}
    failed = int(total.group(2) or 0) if total.lastindex == 3 else 0
    count = int(total.group(total.lastindex))
    return {"log": path, "total": count, "failed": failed, "skipped": skipped,
            "passed": count - failed - skipped, "failed_tests": [name for name, _ in failed_names],
            "summary": f"{count - failed - skipped} passed, {failed} failed, {skipped} skipped of {count}"}


def us(ns):
    return f"{ns / 1000:.1f}"


def bench_table(bench):
    if not bench or "rows" not in bench:
        return ["(benchmark did not run)" + (f": {bench['error']}" if bench and "error" in bench else "")]
    lines = [f"ns per call, median (p10-p90) of {bench['rounds']} rounds x {bench['calls_per_round']} calls, "
             f"cuDNN directly and through {'the shim' if bench['through_shim'] else 'NO shim (not preloaded)'}:", "",
             "| call | cuDNN directly | through the shim | ratio |", "| --- | --- | --- | --- |"]
    for row in bench["rows"]:
        real = f"{row['real_ns']:.0f} ({row['real_p10']:.0f}-{row['real_p90']:.0f})"
        if "shim_ns" in row:
            shim = f"{row['shim_ns']:.1f} ({row['shim_p10']:.1f}-{row['shim_p90']:.1f})"
            lines.append(f"| `cudnnSetStream`, {row['call']} | {real} | {shim} | {row['shim_ns'] / row['real_ns']:.2f} |")
        else:
            lines.append(f"| `{row['call']}` | {real} | | |")
    return lines


def timing_table(timing):
    if timing and timing.get("skipped"):
        return ["(not run: the in-process A/B below measures the shim; GPU_CHECK_ROUNDS=N runs these "
                "process-to-process rounds as well)"]
    if not timing or not timing.get("rounds"):
        return ["(PyTorch timing did not run)"]
    lines = [f"Per-iteration time, batch 1, 16 conv+bn+ReLU blocks, eval; {timing['rounds']} rounds "
             f"(asked {timing['rounds_asked']}), each a process without and a process with the shim, "
             "order alternating; µs, median (min-max) over rounds:", "",
             "| per iteration | without shim | with shim | gain per round, median (min-max) | verdict |",
             "| --- | --- | --- | --- | --- |"]
    for metric, label in (("enqueue_ns", "host enqueue"), ("complete_ns", "to completion")):
        m = timing[metric]
        w, s, g = m["without"], m["with"], m["gain_per_round"]
        verdict = "inside the noise" if m["inside_noise"] else ("shim faster" if g["median"] > 0 else "shim slower")
        lines.append(f"| {label} | {us(w['median'])} ({us(w['min'])}-{us(w['max'])}) | "
                     f"{us(s['median'])} ({us(s['min'])}-{us(s['max'])}) | "
                     f"{g['median']:.0f} ns ({g['min']:.0f} to {g['max']:.0f}) | {verdict} |")
    calls = timing.get("set_stream_calls_per_iteration")
    if calls:
        lines += ["", f"{calls:g} cudnnSetStream calls per iteration (the shim's count)."]
    return lines


def ab_verdict(ab, status):
    """One line for the steps table: each workload's CPU-time gain (wall time where that is its
    measure), with the target where it has one."""
    if not ab:
        return status or "did not run"
    if ab.get("error"):
        return f"{status or 'FAILED'}: {ab['error']}"
    parts = []
    for row in ab.get("rows", []):
        if row["metric"] != "cpu" and "floor_percent" not in row:
            continue
        if "gain_percent" not in row:
            parts.append(f"{row['workload']} {row['condition']} {row['metric']}: no data")
            continue
        text = (f"{row['workload']} {row['condition']}{'' if row['metric'] == 'cpu' else ' ' + row['metric']} "
                f"{row['gain_percent']:+.2f}% [{row['ci_low_percent']:+.2f}, {row['ci_high_percent']:+.2f}]")
        if "target_percent" in row:
            text += f" (target {row['target_percent']:g}%: {'PASS' if row['target_passed'] else 'FAIL'})"
        if "floor_percent" in row:
            text += f" (not slower: {'PASS' if row['floor_passed'] else 'FAIL'})"
        parts.append(text)
    missing = [name for name, w in ab.get("workloads", {}).items() if w.get("error")]
    if missing:
        parts.append("not measured: " + ", ".join(missing))
    return (status + "; " if status and status != "ok" else "") + ("; ".join(parts) or "no rows")


def without_raw_pairs(ab):
    """The A/B report without its raw blocks (they stay in ab.json)."""
    if not ab or "workloads" not in ab:
        return ab
    return {**ab, "workloads": {name: {k: v for k, v in w.items() if k != "pairs"}
                                for name, w in ab["workloads"].items()}}


def dlsym_verdict(report, status):
    """One line for the steps table from the report of an A/B program of its own (gpu/dlsym's,
    generate_ab.py): its own summary line."""
    if not report:
        return status or "did not run"
    if report.get("error") and "summary_line" not in report:
        return f"{status or 'FAILED'}: {report['error']}"
    return (status + "; " if status and status != "ok" else "") + report.get("summary_line", "no summary")


def dlsym_without_raw_pairs(report):
    """A gpu/dlsym report without the child's raw blocks (they stay in its own json)."""
    if not report or "child" not in report:
        return report
    return {**report, "child": {k: v for k, v in report["child"].items() if k != "pairs"}}


def generate_without_raw(report):
    """generate_ab.py's report without each model's per-generate times (they stay in generate.json)."""
    if not report or "child" not in report:
        return report
    models = {name: {k: v for k, v in m.items() if k not in ("stretches", "pairs")}
              for name, m in report["child"].get("models", {}).items()}
    return {**report, "child": {**report["child"], "models": models}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--machine", action="append", default=[], help="KEY=VALUE")
    parser.add_argument("--step", action="append", default=[], help="NAME=STATUS")
    parser.add_argument("--ctest", action="append", default=[], help="NAME=LOG")
    parser.add_argument("--bench")
    parser.add_argument("--pytorch")
    parser.add_argument("--check", action="append", default=[],
                        help="PART=JSON: check.py --part PART's --json (graphs, legacy, relocation)")
    parser.add_argument("--torchrun")
    parser.add_argument("--ab", help="gpu/pytorch/ab.py's --json")
    parser.add_argument("--per-call", help="gpu/pytorch/per_call.py's --json")
    parser.add_argument("--generate", help="gpu/pytorch/generate_ab.py's --json")
    parser.add_argument("--dlsym", action="append", default=[], help="STEP=JSON: a gpu/dlsym A/B's --json")
    args = parser.parse_args()

    machine = {k: v for k, v in (item.split("=", 1) for item in args.machine) if v.strip()}
    steps = dict(item.split("=", 1) for item in args.step)
    ctest = {name: ctest_summary(log) for name, log in (item.split("=", 1) for item in args.ctest)}
    bench, pytorch, torchrun = read_json(args.bench), read_json(args.pytorch), read_json(args.torchrun)
    ab, per_call, generate = read_json(args.ab), read_json(args.per_call), read_json(args.generate)
    parts = {part: read_json(path) or {} for part, path in (item.split("=", 1) for item in args.check)}
    dlsym = {step: read_json(path) for step, path in (item.split("=", 1) for item in args.dlsym)}
    if pytorch and pytorch.get("versions"):
        machine.update({f"{k} (PyTorch)": v for k, v in pytorch["versions"].items() if v})

    checks = (pytorch or {}).get("checks", [])
    failed_checks = [c for c in checks if c["passed"] is False]
    judged = [c for c in checks if c["passed"] is not None]
    rows = [("build", steps.get("build", "?"))]
    for name, s in ctest.items():
        failed = s.get("failed_tests") or []
        listed = ", ".join(failed[:4]) + (f" and {len(failed) - 4} more" if len(failed) > 4 else "")
        rows.append((f"ctest {name}", s["summary"] + (f" (failed: {listed})" if failed else "")))
    rows.append(("PyTorch checks", f"{len(judged) - len(failed_checks)} of {len(judged)} passed" if checks
                 else steps.get("pytorch", "did not run")))
    rows += [(f"  FAILED: {c['check']}", c["detail"]) for c in failed_checks]
    for part, report in parts.items():
        part_checks = report.get("checks", [])
        part_judged = [c for c in part_checks if c["passed"] is not None]
        part_failed = [c for c in part_checks if c["passed"] is False]
        failed_checks = failed_checks + part_failed
        rows.append((f"PyTorch checks ({part})", f"{len(part_judged) - len(part_failed)} of {len(part_judged)} passed, "
                     f"{len(part_checks) - len(part_judged)} informational" if part_checks
                     else report.get("error") or "no checks (did it run?)"))
        rows += [(f"  FAILED: {c['check']}", c["detail"]) for c in part_failed]
    rows.append(("cudnnSetStream benchmark", steps.get("bench", "?")))
    for name in ("demo", "frontend bench", "frontend bench under the shim"):
        if name in steps:
            rows.append((name, steps[name]))
    rows.append(("in-process A/B (gain per workload, CPU time)", ab_verdict(ab, steps.get("ab"))))
    if per_call or "per_call" in steps:
        rows.append(("host time per call (per_call)", steps.get("per_call", "?")
                     + ("" if not per_call or per_call.get("graph_launch_ns") is None
                        else f"; a graph launch {per_call['graph_launch_ns']} ns")))
    if generate or "generate" in steps:
        rows.append(("greedy generation (generate_ab)", dlsym_verdict(generate, steps.get("generate"))))
    if "legacy_cpp" in steps:
        rows.append(("legacy cuDNN program (legacy_cpp)", steps["legacy_cpp"]))
    for step in ("jax", "frontend_py"):
        if step in dlsym or step in steps:
            title = ((dlsym.get(step) or {}).get("title") or step).split(":")[0]
            rows.append((f"{title} (dlsym A/B)", dlsym_verdict(dlsym.get(step), steps.get(step))))
    if torchrun:
        rows.append(("torchrun, 2 ranks", "passed" if not torchrun.get("failures") else "; ".join(torchrun["failures"])))
    else:
        rows.append(("torchrun, 2 ranks", steps.get("torchrun", "not run")))

    md = ["# gpu-check results", "", "| machine | |", "| --- | --- |"]
    md += [f"| {k} | {v} |" for k, v in machine.items()]
    md += ["", "| step | result |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in rows]
    if checks:
        md += ["", "## PyTorch checks", "", "| check | result | detail |", "| --- | --- | --- |"]
        md += [f"| {c['check']} | {({True: 'pass', False: 'FAIL', None: 'info'})[c['passed']]} | {c['detail']} |"
               for c in checks]
    for part, report in parts.items():
        if report.get("checks"):
            md += ["", f"## PyTorch checks ({part})", "", "| check | result | detail |", "| --- | --- | --- |"]
            md += [f"| {c['check']} | {({True: 'pass', False: 'FAIL', None: 'info'})[c['passed']]} | {c['detail']} |"
                   for c in report["checks"]]
    md += ["", "## cudnnSetStream cost", ""] + bench_table(bench)
    md += ["", "## PyTorch per-iteration time, process against process", ""] + timing_table((pytorch or {}).get("timing"))
    ab_markdown = (ab or {}).get("markdown") or "## In-process A/B\n\n(did not run)\n"
    md += [""] + ab_markdown.rstrip("\n").splitlines()
    if per_call and per_call.get("markdown"):
        md += [""] + per_call["markdown"].rstrip("\n").splitlines()
    if generate and generate.get("markdown"):
        md += [""] + generate["markdown"].rstrip("\n").splitlines()
    for report in dlsym.values():
        if report and report.get("markdown"):
            md += [""] + report["markdown"].rstrip("\n").splitlines()
    if torchrun and torchrun.get("ranks"):
        md += ["", "## torchrun ranks", "", "| rank | set_stream_calls | forwarded | handles | resolved_by |",
               "| --- | --- | --- | --- | --- |"]
        for r in torchrun["ranks"]:
            s = r["stats"]
            md.append(f"| {r['rank']['rank']} | {s['set_stream_calls']} | {s['forwarded']} | "
                      f"{s['handles']} | {s['resolved_by']} |")

    out = Path(args.out)
    (out / "summary.md").write_text("\n".join(md) + "\n")
    # A split run (GPU_CHECK_STEPS) is judged on the steps it ran: PyTorch checks are needed only
    # when the pytorch step ran.
    everything_passed = (not failed_checks and (bool(checks) or "pytorch" not in steps)
                         and not any("FAILED" in status or "NOT BUILT" in status for status in steps.values())
                         and all(s.get("failed", 1) == 0 for s in ctest.values())
                         and not (torchrun and torchrun.get("failures")))
    (out / "results.json").write_text(json.dumps(
        {"passed": everything_passed, "machine": machine, "steps": steps, "ctest": ctest,
         "bench": bench, "pytorch": pytorch, "checks": parts, "torchrun": torchrun, "ab": without_raw_pairs(ab),
         "per_call": {k: v for k, v in (per_call or {}).items() if k != "workloads"} | {
             "workloads": {n: {k: v for k, v in w.items() if k != "raw"}
                           for n, w in (per_call or {}).get("workloads", {}).items()}} if per_call else None,
         "generate": generate_without_raw(generate),
         "dlsym": {step: dlsym_without_raw_pairs(report) for step, report in dlsym.items()}}, indent=2))

    # The short table, printed last.
    print("\n".join(["", "=" * 72, "gpu-check summary (" + ", ".join(f"{k} {v}" for k, v in machine.items()) + ")", ""]
                    + [f"| {k} | {v} |" for k, v in rows] + [""] + bench_table(bench) + [""]
                    + timing_table((pytorch or {}).get("timing")) + [""] + ab_markdown.rstrip("\n").splitlines()))
    print("\nOVERALL: " + ("PASS" if everything_passed else "FAIL (see above)"))
    return 0 if everything_passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
