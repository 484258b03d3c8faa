"""The analysis and the report of the in-process A/B (gpu/pytorch/ab.py's parent). Standard library only.

Per workload, condition and metric (one row): the paired summary of gpu/abstats.py (medians, mean
gain, its bootstrap 95% interval, the percentages), the mean time per iteration off and on, and,
from the shim's counters read around each timed block, the replayed ops per iteration (the sum of
every *_launches counter: backend_launches, legacy_*_launches, lt_matmul_launches, gemm_launches)
and the saving per replayed op.
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from abstats import judge_target, paired_summary, table_lines, us  # noqa: E402
import shimstats  # noqa: E402

from workloads import FLOORS, TARGETS  # noqa: E402

METRICS = {"cpu": "main-thread CPU time of the enqueue",
           # A training step's backward runs on autograd's own thread, which the main thread waits for.
           "cpu_all": "CPU time of every thread of the process during the enqueue",
           "wall": "wall time, synchronize included"}


def per_iteration(block, key):
    """A block's count per timed iteration (None for blocks from before the counters were read)."""
    return block[key] / block["timed"] if key in block and block.get("timed") else None


def replay_summary(pairs):
    """Replayed ops per timed iteration in the on and the off blocks (means; None when not counted)."""
    on = [per_iteration(p["on"], "launches") for p in pairs]
    off = [per_iteration(p["off"], "launches") for p in pairs]
    on, off = [v for v in on if v is not None], [v for v in off if v is not None]
    return (statistics.fmean(on) if on else None), (statistics.fmean(off) if off else None)


def analyse_condition(workload, condition, name, metric, pairs, capable, seed, resamples):
    """One row of the table: the pairs of one workload and condition, one metric. `capable`: the
    features the shim granted when asked for all of them (an older shim lacks some)."""
    key = f"{metric}_ns"
    off = [p["off"][key] for p in pairs]
    on = [p["on"][key] for p in pairs]
    expected = condition & capable
    if expected != condition:
        name += f" (granted {expected})"  # what this shim and its configuration could switch on
    row = {"workload": workload, "condition": name, "features": condition, "features_expected": expected,
           "metric": metric, "pairs": len(pairs),
           # Blocks where the shim did not grant what it could (see the child's switch).
           "features_not_as_asked": sum(p["off"]["in_effect"] != 0 or p["on"]["in_effect"] != expected
                                        for p in pairs)}
    # Per iteration, gain = off - on (positive: faster with the feature); nothing more without pairs.
    row.update(paired_summary(off, on, resamples, seed=f"{seed}/{workload}/{condition}/{metric}"))
    if not pairs:
        return row
    row["off_mean_ns"], row["on_mean_ns"] = statistics.fmean(off), statistics.fmean(on)
    replayed, replayed_off = replay_summary(pairs)
    if replayed is not None:
        row["replayed_per_iteration"], row["replayed_per_iteration_off"] = replayed, replayed_off
        if replayed > 0:
            row["saving_per_replayed_ns"] = row["gain_mean_ns"] / replayed
            row["saving_per_replayed_ci_ns"] = [row["ci_low_ns"] / replayed, row["ci_high_ns"] / replayed]
    return row


def analyse_workload(name, child, condition_names, seed, resamples):
    rows = []
    capable = child.get("features_capable")
    for condition in child.get("conditions", []):
        pairs = [p for p in child.get("pairs", []) if p["condition"] == condition]
        for metric in METRICS:
            if pairs and f"{metric}_ns" not in pairs[0]["off"]:
                continue  # a child from before the metric
            row = analyse_condition(name, condition, condition_names.get(condition, str(condition)), metric, pairs,
                                    condition if capable is None else capable, seed, resamples)
            floor = FLOORS.get((name, condition, metric))
            if floor is not None:
                row["floor_percent"] = floor
                row["floor_passed"] = "ci_low_percent" in row and row["ci_low_percent"] >= floor
            if metric == "cpu":
                target = TARGETS.get((name, condition))
                if target is not None:
                    judge_target(row, target)
            rows.append(row)
    return rows


def saving_lines(rows):
    """Per workload and condition: time per iteration off and on, the saving, the replayed ops per
    iteration and the saving per replayed op, CPU and wall side by side."""
    lines = ["| workload | features on | pairs | CPU µs/iter off → on | CPU saved µs/iter [95% CI] | "
             "wall µs/iter off → on | wall saved µs/iter [95% CI] | replayed ops/iter | "
             "CPU saved per replayed op, ns [95% CI] | wall saved per op, ns |",
             "| --- | --- | ---: | ---: | --- | ---: | --- | ---: | --- | ---: |"]
    by_key = {}
    for row in rows:
        by_key.setdefault((row["workload"], row["condition"]), {})[row["metric"]] = row
    for (workload, condition), metrics in by_key.items():
        cpu, wall = metrics.get("cpu", {}), metrics.get("wall", {})
        if "off_mean_ns" not in cpu or "off_mean_ns" not in wall:
            lines.append(f"| {workload} | {condition} | 0 | no data | | | | | | |")
            continue

        def times(r):
            return f"{us(r['off_mean_ns'])} → {us(r['on_mean_ns'])}"

        def saved(r):
            return f"{us(r['gain_mean_ns'], 2)} [{us(r['ci_low_ns'], 2)}, {us(r['ci_high_ns'], 2)}]"

        replayed = cpu.get("replayed_per_iteration")
        ops = "not counted" if replayed is None else f"{replayed:.1f}"
        if replayed is not None and cpu.get("replayed_per_iteration_off"):
            ops += f" (off: {cpu['replayed_per_iteration_off']:.1f})"
        per_op = per_op_wall = ""
        if "saving_per_replayed_ns" in cpu:
            low, high = cpu["saving_per_replayed_ci_ns"]
            per_op = f"{cpu['saving_per_replayed_ns']:.0f} [{low:.0f}, {high:.0f}]"
        if "saving_per_replayed_ns" in wall:
            per_op_wall = f"{wall['saving_per_replayed_ns']:.0f}"
        lines.append(f"| {workload} | {condition} | {cpu['pairs']} | {times(cpu)} | {saved(cpu)} | {times(wall)} | "
                     f"{saved(wall)} | {ops} | {per_op} | {per_op_wall} |")
    return lines


def census_text(census, timed_iterations):
    """Per timed iteration of the blocks with some features (the child's census): the calls of each
    family the shim saw (shimstats.calls: every replay family by its counters' names, new ones
    included, the backend's executes, the heuristic), then the counters that moved."""
    if not census:
        return "not counted (no cudnn_fastpath_stats in the process, or statistics off)"
    if not timed_iterations:
        return "no timed iteration"
    moved = {k: v / timed_iterations for k, v in census.items() if v}
    families = shimstats.replay_families(moved)
    keys = [k for k in moved if k.endswith("_launches") or k.startswith(("heuristic_", "pack_"))
            or any(k.startswith(f"{f}_") for f in families)
            or k == "library_calls"]
    calls = shimstats.calls_text(census, timed_iterations)
    return (f"calls per iteration: {calls or 'none counted (no replay on, or none reached the shim)'}; counters: "
            + (", ".join(f"{k} {moved[k]:g}" for k in keys) or "nothing replayed or cached"))


def workload_line(name, w):
    """The line under the tables for one workload: pairs, warm-up, outputs, the shim's counts."""
    if w.get("error"):
        return f"- {name}: NOT MEASURED: {w['error']}"
    stats = w.get("stats") or {}
    capable = w.get("features_capable")
    with_on = w["iterations_with"]
    line = (f"- {name} ({w['what']}): {w['rounds']} pairs per condition (asked {w['pairs_asked']}"
            f"{', stopped by the time budget' if w['stopped_by_deadline'] else ''}), K={w['timed']}, "
            f"warm-up {w['warmup']} in both arms, {w['measure_seconds']:.0f} s"
            + (f"; features granted when all were asked: {capable}" if capable is not None else "")
            + f"; iterations with set-stream on: {with_on['set_stream']}, packs: {with_on['packs']}, "
            f"graphs: {with_on.get('graphs', 0)}, legacy: {with_on.get('legacy', 0)}, cuBLAS: {with_on.get('cublas', 0)}"
            "; outputs "
            + ("not compared" if w.get("compared") is False
               else "identical in every block" if w["blocks_with_other_output"] == 0
               else f"DIFFERED from the reference in {w['blocks_with_other_output']} blocks"))
    for condition, entry in (w.get("census") or {}).items():
        line += (f". Per timed iteration with features {condition}: "
                 + census_text(entry.get("counts"), entry.get("iterations", 0)))
    if not stats:
        return line + ". Shim: NO STATISTICS FILE (it writes one at exit, in a process that called cuDNN)."
    return (line + f". Shim's counts (whole run): cudnnSetStream skipped={stats.get('skipped')}, "
            f"forwarded={stats.get('forwarded')}; variant packs proxied={stats.get('packs_proxied')}, "
            f"cache hits={stats.get('pack_hits')}, built={stats.get('pack_misses')}; "
            + shimstats.replay_text(stats) + ".")


def markdown(report):
    lines = ["## In-process A/B (gpu/pytorch/ab.py)", "",
             "One process per workload under the launcher. Each condition's block is paired with a block "
             "with every feature off (`cudnn_fastpath_set_features(0)`), order alternating from pair to pair; "
             "a block is a few warm-up iterations, then K timed iterations and one synchronize. "
             "Gain = off - on per iteration (positive: faster with the feature); the interval is a bootstrap "
             f"95% interval of the mean gain ({report['resamples']} resamples); percent = mean gain / mean off.", ""]
    lines += table_lines(report["rows"], "iter")
    lines += ["", "Per iteration, means: time off and on, the saving, the ops the shim replayed (the increase of "
              "every `*_launches` counter over the timed iterations of the on blocks, read with "
              "`cudnn_fastpath_stats`) and the saving per replayed op.", ""]
    lines += saving_lines(report["rows"])
    lines.append("")
    for name, w in report["workloads"].items():
        lines.append(workload_line(name, w))
    return "\n".join(lines) + "\n"
