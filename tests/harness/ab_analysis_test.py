"""The GPU harness's analysis, without a GPU (ctest: "harness: ..."): gpu/pytorch/ab.py's parent on
synthetic pairs (--from-json), the tables it writes, and gpu/summarize.py on its report; and every
script of gpu/ compiles.

Synthetic pairs with a known saving (120 us per iteration over 32 replayed ops: 3750 ns per op) must
come back as such; a block of an older report (no counters read, no features_capable) must still be
analysed; a condition the shim could not grant in full must say so. Standard library only.
"""
import json
import py_compile
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def workload(name, off_us, saving_us, replayed, condition=31, capable=31, counted=True, rounds=40, seed=0):
    rng = random.Random(seed)
    granted = condition & capable
    pairs = []
    for r in range(rounds):
        drift = rng.gauss(0, 3)
        off = {"in_effect": 0, "cpu_ns": (off_us + drift) * 1e3, "wall_ns": (off_us + 50 + drift) * 1e3, "timed": 2}
        on = {"in_effect": granted, "cpu_ns": (off_us - saving_us + drift) * 1e3,
              "wall_ns": (off_us + 50 - saving_us + drift) * 1e3, "timed": 2}
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
                                "conv_bn16_big": workload("conv_bn16_big", 5000, 0, 32, seed=3)}}
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
        markdown = (tmp / "ab.md").read_text()
        expect(any(line.startswith("| conv_bn16_fp32 | all | 40 | ") and line.endswith("| 32.0 | 3750 [3750, 3750] | 3750 |")
                   for line in markdown.splitlines()), "the saving table's conv row: 32 ops, 3750 ns each")
        expect("| eval16 | graphs | 40 |" in markdown and "not counted" in markdown, "the saving table's older row")
        done = subprocess.run([sys.executable, str(REPO / "gpu/summarize.py"), "--out", str(tmp), "--step", "build=ok",
                               "--step", "ab=ok", "--ab", str(tmp / "ab.json")], capture_output=True, text=True)
        summary = (tmp / "summary.md").read_text() if (tmp / "summary.md").exists() else ""
        expect("conv_bn16_fp32 all +13.3" in summary and "stack_bias all (granted 7) +15.0" in summary,
               "summarize.py quotes each workload's gain")
        expect("Per iteration, means" in summary, "summary.md holds the saving table")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} of the checks above failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
