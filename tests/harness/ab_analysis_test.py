"""The GPU harness's analysis, without a GPU (ctest: "harness: ..."): gpu/pytorch/ab.py's parent on
synthetic pairs (--from-json), the tables it writes, and gpu/summarize.py on its report;
gpu/pytorch/generate_ab.py's analysis on a synthetic run; gpu/harness.py's parts that need no child
(no shim here: no switch, no counters; the statistics file chosen; the order of the paired rounds);
and every script of gpu/ compiles.

Synthetic pairs with a known saving (120 us per iteration over 32 replayed ops: 3750 ns per op) must
come back as such; a block of an older report (no counters read, no features_capable) must still be
analysed; a condition the shim could not grant in full must say so; a load that never repeats 2%
slower must fail its floor; a replay family the harness has never heard of (sgemm) must show in the
calls per iteration. Synthetic generations (off 10 ms, 8% saved, 90 of 100 GEMMs a generate
replayed) must come back as such, and a differing token id must fail the run. Standard library only.
"""
import json
import py_compile
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def workload(name, off_us, saving_us, replayed, condition=31, capable=31, counted=True, rounds=40, seed=0,
             other_threads_us=None):
    """other_threads_us: (off, on) CPU time of the other threads per iteration, which makes the pairs
    carry cpu_all_ns (a child from before that metric has none)."""
    rng = random.Random(seed)
    granted = condition & capable
    pairs = []
    for r in range(rounds):
        drift = rng.gauss(0, 3)
        off = {"in_effect": 0, "cpu_ns": (off_us + drift) * 1e3, "wall_ns": (off_us + 50 + drift) * 1e3, "timed": 2}
        on = {"in_effect": granted, "cpu_ns": (off_us - saving_us + drift) * 1e3,
              "wall_ns": (off_us + 50 - saving_us + drift) * 1e3, "timed": 2}
        if other_threads_us is not None:
            off["cpu_all_ns"] = off["cpu_ns"] + other_threads_us[0] * 1e3
            on["cpu_all_ns"] = on["cpu_ns"] + other_threads_us[1] * 1e3
        if counted:
            off["launches"], on["launches"] = 0, 2 * replayed
        pairs.append({"round": r, "condition": condition, "on_first": r % 2 == 1, "off": off, "on": on})
    entry = {"workload": name, "what": f"synthetic {name}", "timed": 2, "warmup": 8, "pairs_asked": rounds,
             "rounds": rounds, "stopped_by_deadline": False, "measure_seconds": 1.0, "conditions": [condition],
             "compared": True, "blocks_with_other_output": 0, "exit_code": 0, "pairs": pairs,
             "iterations_with": {"set_stream": 1, "packs": 1, "graphs": 1}, "stats": {"skipped": 1, "forwarded": 1}}
    if counted:
        entry["features_capable"] = capable
        entry["census"] = {str(granted): {"iterations": 2 * rounds, "counts": {"legacy_bn_launches": 32 * rounds}}}
    return entry


def generation(saving_percent=8.0, stretches=3, timed=16, pairs=8, seed=4, on_drift=()):
    """A synthetic generate_ab.py model entry: per generate 10 ms off, saving_percent less on; the on
    stretch of round r `on_drift[r]` times slower (a host whose speed moved between the stretches)."""
    rng = random.Random(seed)

    def arm(on, count, drift=1.0):
        times = [10e6 * (1 - saving_percent / 100 * on) * drift + rng.gauss(0, 5e4) for _ in range(count)]
        counts = {"gemm_launches": 90 * count, "gemm_direct": 6 * count, "gemm_captured": 4 * count,
                  "legacy_bn_launches": 5 * count} if on else {"skipped": count}
        return {"in_effect": 31 if on else 0, "cpu_ns": times, "wall_ns": [t + 1e5 for t in times], "other_ids": 0,
                "counts": counts}
    mean = statistics.fmean
    return {"what": "synthetic", "capable": 31, "same_in_process": True, "ids_on": [[1, 2], [3, 4]],
            "stretch": {"warmup": 8, "timed": timed}, "block": {"warmup": 2, "timed": 4},
            "stretches": [{"on": arm(1, timed, on_drift[r] if r < len(on_drift) else 1.0), "off": arm(0, timed)}
                          for r in range(stretches)],
            "pairs": [{k: {**b, "cpu_ns": mean(b["cpu_ns"]), "wall_ns": mean(b["wall_ns"])}
                       for k, b in (("on", arm(1, 4)), ("off", arm(0, 4)))} for _ in range(pairs)]}


def check_generate(tmp, expect):
    """generate_ab.py --from-json on synthetic runs: the rows, the replayed share, the ids."""
    report = {"program": "gpu/pytorch/generate_ab.py", "models": "llama,gpt2", "seed": 1,
              "references": [{"label": "reference 1 (no shim)", "exit_code": 0,
                              "models": {"llama": {"ids": [[1, 2], [3, 4]]}, "gpt2": {"ids": [[1, 2], [3, 4]]}}}],
              "child": {"exit_code": 0, "seconds": 100, "models": {"llama": generation(), "gpt2": generation(seed=5)}}}
    (tmp / "gen.json").write_text(json.dumps(report))
    done = subprocess.run([sys.executable, str(REPO / "gpu/pytorch/generate_ab.py"), "--from-json", str(tmp / "gen.json"),
                           "--json", str(tmp / "gen-out.json"), "--resamples", "300"], capture_output=True, text=True)
    expect(done.returncode == 0, f"generate_ab.py --from-json exits 0 ({done.returncode}: {done.stderr[-500:]})")
    if done.returncode != 0:
        return
    out = json.loads((tmp / "gen-out.json").read_text())
    rows = {(r["workload"], r["metric"]): r for r in out["rows"]}
    steady = rows[("llama steady", "cpu")]
    expect(abs(steady["gain_percent"] - 8) < 0.5 and steady["target_passed"] and steady["pairs"] == 48,
           f"llama steady: 8% saved over 48 pairs, target passed ({steady.get('gain_percent')}, {steady['pairs']})")
    expect(abs(steady["ratio"] - 0.92) < 0.005, f"on/off ratio 0.92 ({steady['ratio']})")
    expect(rows[("gpt2 blocks", "cpu")]["pairs"] == 8, "gpt2's 8 pairs of long blocks")
    found = out["findings"]["llama"]
    expect(abs(found["steady_replay"]["share_percent"] - 90) < 1e-9 and found["replayed_passed"],
           f"90% of the GEMMs replayed, captures counted as not ({found['steady_replay'].get('share_percent')})")
    expect(found["steady_replay"]["calls_per_generate"].get("gemm", {}).get("calls") == 100
           and "legacy_bn" not in found["steady_replay"]["families"],
           "100 GEMMs a generate; cuDNN's legacy_bn not in the cuBLAS share")
    expect(found["against_no_shim"]["passed"] is True and "ids identical" in out["summary_line"],
           f"ids identical in the process and against no shim: {out['summary_line']}")
    expect("(target 6%: PASS)" in out["summary_line"] and found["rounds_agree"] and len(found["rounds"]) == 3,
           f"every round gains: the steady target passed ({found['rounds']})")
    # One round's on stretch 30% slower: the pairs' interval still clears 6% (20% saved in the other
    # two), but that round lost: the target is missed, and the summary says why.
    report["child"]["models"]["gpt2"] = generation(saving_percent=20.0, seed=5, on_drift=(1.0, 1.3, 1.0))
    (tmp / "gen.json").write_text(json.dumps(report))
    done = subprocess.run([sys.executable, str(REPO / "gpu/pytorch/generate_ab.py"), "--from-json", str(tmp / "gen.json"),
                           "--json", str(tmp / "gen-out.json"), "--resamples", "300"], capture_output=True, text=True)
    out = json.loads((tmp / "gen-out.json").read_text())
    gpt2 = {(r["workload"], r["metric"]): r for r in out["rows"]}[("gpt2 steady", "cpu")]
    rounds = out["findings"]["gpt2"]["rounds"]
    expect(done.returncode == 0 and not gpt2["target_passed"] and gpt2["ci_low_percent"] > 6 and -5 < rounds[1] < -3 and min(rounds[0], rounds[2]) > 19
           and "(target 6%: MISS, the rounds disagree: " in out["summary_line"].split("gpt2 steady")[1]
           and "CI > 0: MISS (a round lost) |" in out["markdown"],
           f"a round that lost misses the target though the pairs' interval clears it: {out['summary_line']}")
    report["child"]["models"]["gpt2"] = generation(seed=5)
    report["child"]["models"]["gpt2"]["ids_on"] = [[1, 2], [3, 5]]
    (tmp / "gen.json").write_text(json.dumps(report))
    done = subprocess.run([sys.executable, str(REPO / "gpu/pytorch/generate_ab.py"), "--from-json", str(tmp / "gen.json"),
                           "--resamples", "100"], capture_output=True, text=True)
    expect(done.returncode == 1 and "DIFFERED against no shim" in done.stdout,
           f"an id that differs from the run without the shim fails the run ({done.returncode})")


def check_harness(tmp, expect):
    """gpu/harness.py without a shim in the process: its switch and counters, the statistics file it
    takes among several, the order of the paired blocks."""
    sys.path.insert(0, str(REPO / "gpu"))
    import harness
    expect(harness.switch() is None and harness.read_counters() is None and not harness.counters_exported(),
           "no shim in this process: no switch, no counters")
    expect(harness.mask({"set_stream", "graphs", "cublas"}) == 21, "cudnn_fastpath's feature names as bits")
    (tmp / "s.stats-7.json").write_text(json.dumps({"pid": 900000, "skipped": 3, "verify": False}))
    (tmp / "s.stats-8.json").write_text(json.dumps({"pid": 8, "skipped": 40, "forwarded": 2}))
    (tmp / "s.stats-9.json").write_text("{not json")  # a file the shim was still writing
    stats, files = harness.read_stats(str(tmp / "s.stats-%p.json"))
    expect(files == 2 and stats and stats["pid"] == 8, f"the statistics file that counted most, pid aside ({stats})")
    expect(harness.read_stats(str(tmp / "none-%p.json")) == (None, 0), "no statistics file: None")
    blocks = []

    def pair(workload, condition, order):
        blocks.append([which for which, _ in order])
        return {which: {"in_effect": asked} for which, asked in order}
    pairs, stopped, _ = harness.paired_rounds(4, float("inf"), (31, 7), pair, random.Random(1))
    expect(len(pairs) == 8 and not stopped and "workload" not in pairs[0]
           and all(b == (["off", "on"] if p["round"] % 2 == 0 else ["on", "off"]) for p, b in zip(pairs, blocks))
           and all(p["on"]["in_effect"] == p["condition"] and p["off"]["in_effect"] == 0 for p in pairs),
           "paired rounds: each condition once a round, off first in even rounds, last in odd ones")
    pairs, _, _ = harness.paired_rounds(2, float("inf"), (31,), pair, random.Random(1), workloads=["a", "b"])
    expect(sorted(p["workload"] for p in pairs) == ["a", "a", "b", "b"], "paired rounds: every workload each round")
    pairs, stopped, _ = harness.paired_rounds(100, 0, (31,), pair, random.Random(1))
    expect(stopped and len(pairs) == harness.MIN_ROUNDS, "a deadline passed: the minimum rounds, then stop")


def check_per_call(expect):
    """gpu/pytorch/per_call.py's table: the baseline shim's columns where --baseline-shim ran, and only there."""
    sys.path.insert(0, str(REPO / "gpu/pytorch"))
    import per_call
    row = {"calls_per_iteration": 2, "none": 50.0, "off": 80.0, "on": 70.0, "base_off": 95.0, "base_on": 90.0}
    report = {"graph_launch_ns": 2000, "workloads": {"linear_rows": {"functions": {"cublasSetMathMode": row}}}}
    lines = per_call.table(report)
    expect(lines[0].endswith("| baseline shim, all off | baseline shim, all on |") and
           lines[2] == "| linear_rows | `cublasSetMathMode` | 2 | 50 | 80 | 70 |  | -20 | -1930 | 95 | 90 |",
           f"per_call's baseline columns ({lines[2] if len(lines) > 2 else lines})")
    del row["base_off"], row["base_on"]
    lines = per_call.table(report)
    expect("baseline" not in lines[0] and lines[2].endswith("| -20 | -1930 |"), "no baseline run, no baseline columns")


def main():
    failures = []

    def expect(condition, what):
        print(("ok: " if condition else "FAILED: ") + what)
        if not condition:
            failures.append(what)

    with tempfile.TemporaryDirectory() as compiled:  # nothing written into the checkout
        for script in sorted((REPO / "gpu").rglob("*.py")):
            try:
                py_compile.compile(str(script), doraise=True, cfile=str(Path(compiled) / "x.pyc"))
            except py_compile.PyCompileError as error:
                expect(False, f"{script.relative_to(REPO)} compiles: {error}")
    expect(not failures, "every script of gpu/ compiles")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        report = {"program": "gpu/pytorch/ab.py", "shim": "synthetic", "seconds_budget": 1, "pairs_asked": 40,
                  "workloads": {"conv_bn16_fp32": workload("conv_bn16_fp32", 900, 120, 32),
                                "stack_bias": workload("stack_bias", 2000, 300, 90, capable=7, seed=1),
                                "eval16": workload("eval16", 1000, 80, 16, condition=7, counted=False, seed=2),
                                "conv_bn16_big": workload("conv_bn16_big", 5000, 0, 32, seed=3),
                                "linear_rows": workload("linear_rows", 1000, -20, 0, seed=4),
                                # A training step: the backward's thread saves 200 us the main thread does not see.
                                "mlp_fp32_train": workload("mlp_fp32_train", 2000, 50, 23, seed=5,
                                                           other_threads_us=(1500, 1300))}}
        report["workloads"]["conv_bn16_fp32"]["census"]["31"]["counts"].update(
            {"sgemm_direct": 17 * 80, "lt_matmul_launches": 8 * 80})  # 80 timed iterations
        (tmp / "in.json").write_text(json.dumps(report))
        done = subprocess.run([sys.executable, str(REPO / "gpu/pytorch/ab.py"), "--from-json", str(tmp / "in.json"),
                               "--json", str(tmp / "ab.json"), "--markdown", str(tmp / "ab.md"), "--resamples", "300"],
                              capture_output=True, text=True)
        expect(done.returncode == 0, f"ab.py --from-json exits 0 ({done.returncode}: {done.stderr[-500:]})")
        if done.returncode != 0:
            return 1
        out = json.loads((tmp / "ab.json").read_text())
        rows = {(r["workload"], r["metric"]): r for r in out["rows"]}
        conv = rows[("conv_bn16_fp32", "cpu")]
        expect(abs(conv["gain_mean_ns"] - 120e3) < 1, f"conv_bn16_fp32 saves 120 us per iteration ({conv['gain_mean_ns']})")
        expect(abs(conv["replayed_per_iteration"] - 32) < 1e-9, "32 replayed ops per iteration")
        expect(abs(conv["saving_per_replayed_ns"] - 3750) < 1, f"3750 ns per replayed op ({conv['saving_per_replayed_ns']})")
        expect(conv["features_not_as_asked"] == 0, "no pair flagged")
        stack = rows[("stack_bias", "cpu")]
        expect(stack["condition"] == "all (granted 7)" and stack["features_not_as_asked"] == 0,
               f"a shim that grants 7 of 31: '{stack['condition']}', no pair flagged")
        old = rows[("eval16", "cpu")]
        expect("replayed_per_iteration" not in old and old["target_percent"] == 10.0 and not old["target_passed"],
               "an older report: analysed, no counters, eval16's 10% target missed at 8%")
        big = rows[("conv_bn16_big", "wall")]
        expect(big.get("floor_passed") is True, "conv_bn16_big's wall-time floor holds at no change")
        train_all = rows.get(("mlp_fp32_train", "cpu_all"), {})
        expect(abs(train_all.get("gain_mean_ns", 0) - 250e3) < 1,
               f"mlp_fp32_train's CPU time of every thread: 250 us saved ({train_all.get('gain_mean_ns')})")
        expect(("conv_bn16_fp32", "cpu_all") not in rows, "a child without the metric has no row of it")
        rows_cpu = rows[("linear_rows", "cpu")]
        expect(rows_cpu.get("floor_passed") is False and rows_cpu["floor_percent"] == -0.5,
               f"linear_rows 2% slower fails its -0.5% floor ({rows_cpu.get('ci_low_percent')})")
        markdown = (tmp / "ab.md").read_text()
        expect(any(line.startswith("| conv_bn16_fp32 | all | 40 | ") and line.endswith("| 32.0 | 3750 [3750, 3750] | 3750 |")
                   for line in markdown.splitlines()), "the saving table's conv row: 32 ops, 3750 ns each")
        expect("| eval16 | graphs | 40 |" in markdown and "not counted" in markdown, "the saving table's older row")
        expect("calls per iteration: legacy_bn 16 (launches 16, captured 0, direct 0); sgemm 17 (launches 0, "
               "captured 0, direct 17); lt_matmul 8 (launches 8, captured 0, direct 0)" in markdown,
               "the calls per iteration of each family, sgemm (unknown to the harness) included")
        done = subprocess.run([sys.executable, str(REPO / "gpu/summarize.py"), "--out", str(tmp), "--step", "build=ok",
                               "--step", "ab=ok", "--ab", str(tmp / "ab.json")], capture_output=True, text=True)
        summary = (tmp / "summary.md").read_text() if (tmp / "summary.md").exists() else ""
        expect("conv_bn16_fp32 all +13.3" in summary and "stack_bias all (granted 7) +15.0" in summary,
               "summarize.py quotes each workload's gain")
        expect("Per iteration, means" in summary, "summary.md holds the saving table")
        check_generate(tmp, expect)
        check_harness(tmp, expect)
        check_per_call(expect)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} of the checks above failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
