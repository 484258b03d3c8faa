"""Greedy generation (HF transformers) under the shim: a steady-state and a long-block A/B, ids, replays.

Host time per generate() with every feature on against every feature off, in long steady stretches
and in long blocks; its token ids; how many of its GEMMs the shim replays.

    python3 generate_ab.py [--shim LIB] [--work DIR] [--json FILE] [--markdown FILE] [--seconds S]
                           [--models llama,gpt2,llama_gqa,gpt2_12] [--references N] [--stretches R] [--seed N]
                           [--resamples N] [--timeout S]
    python3 generate_ab.py --from-json generate.json [--json FILE] [--markdown FILE]   # the analysis again

Two small models with random weights (nothing is downloaded), bf16, batch 1: a Llama (4 layers,
hidden 512, 8 heads, vocabulary 32000; no biases: its Linears are cublasGemmEx) and a GPT-2 (the
same sizes; Conv1D with biases: cublasLtMatmul), and issue 49's two (llama_gqa: 8 layers, 768 wide,
12 query and 4 key/value heads, vocabulary 8192; gpt2_12: 12 layers, 768 wide); workloads.py's
MODELS has them all. One generate() is a greedy generation of 32 new
tokens from a prompt whose length changes from call to call (8 lengths, 5 to 47 tokens, in a fixed
order); its KV cache grows, and its activations move, every token.

Why not ab.py: one generate() is one long step (tens of ms), and switching a feature off destroys
the shim's graphs and empties its caches, so blocks of two iterations after a short warm-up would
measure the shim catching up after every switch. Here, per model, in one process under the launcher:
  1. token ids: every prompt with every feature off (after two passes of warm-up), then every prompt
     with every feature on after a warm-up pass: the ids must be the same; and every timed generate
     below is compared with them too. A run without the shim (--references, default 1) must give the
     same ids as the run under it;
  2. steady state: --stretches rounds of two long stretches, every feature on and every feature off,
     order alternating from round to round; a stretch is a warm-up pass over the prompts after the
     switch, then N timed generates (N from the time one takes, to fit the model's share of the
     budget). The i-th timed generate of one stretch is paired with the i-th of the other (the same
     prompt). The shim's counters read around the timed generates of the on stretches give the
     share of the GEMMs replayed in steady state;
  3. long blocks: pairs of blocks, on and off, order alternating, each of BLOCK_WARMUP generates after
     the switch and BLOCK_TIMED timed ones (the same prompts in both blocks of a pair), until the
     model's share of --seconds is spent (at least MIN_PAIRS pairs, --timeout permitting).
Per generate: `cpu`, the main thread's CPU time of the generate() call, as ab.py measures (generate()
waits for the GPU every token to check whether to stop: that wait is in it, in both arms), and
`wall`, the call and a synchronize. Reported per model and measure (steady, blocks): the mean per
generate off and on, the paired gain with its bootstrap 95% interval (gpu/abstats.py) and the
ratio on/off; the share of the cuBLAS and cuBLASLt calls replayed, launches / (launches + captured
+ direct) over every replay family but cuDNN's legacy_* ones (counters by name, so a family the shim
adds later counts without a change here; a capture counts as not replayed); the calls per generate
of each family; whether the ids matched. Targets, printed beside them: at least 90% replayed in the
steady state, and at least 6% less CPU time per generate with the interval above zero and every steady
round's own gain above zero (issue 49; the pairs' interval alone ignores a host whose speed moved
between a round's two stretches, which moves all of that round's pairs together). They never
change the exit status: 0 when every model ran and no id differed, 1 otherwise, 2 when the shim or
its switch is missing, 77 without a GPU. docs/ab-method.md has the rest of the method.
"""
import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
import harness  # noqa: E402  the shim's whereabouts and switch, the children, the statistics file
import shimstats  # noqa: E402
from abstats import judge_target, paired_summary, table_lines  # noqa: E402
from harness import ALL, CONDITION_NAMES, EXIT_NO_GPU, EXIT_NO_SHIM  # noqa: E402
from workloads import MODELS, NEW_TOKENS, PROMPT_LENGTHS, Generation  # noqa: E402

BLOCK_WARMUP, BLOCK_TIMED = 2, 4  # generates per long block after the switch, and timed
MIN_PAIRS = 6  # long-block pairs run even past the model's share of the budget (not past --timeout's)
STEADY_SHARE = 0.45  # of a model's time: the steady stretches; the long blocks get the rest
STRETCH_MIN, STRETCH_MAX = 8, 96  # timed generates per stretch
REPLAYED_TARGET = 90.0  # percent of the cuBLAS(Lt) calls replayed in steady state (issue 49)
GAIN_TARGET = 6.0  # percent less CPU time per generate, the interval above zero (issue 49)


# ------------------------------------------------------------------------------------------------
# Child mode (torch and transformers from here on)

def versions(torch):
    import transformers
    return {"torch": torch.__version__, "transformers": transformers.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name()}


def start_child(args):
    """torch and the device, or an exit status after writing why not."""
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as error:
        write_json(args.result, {"error": f"cannot import: {error}"})
        print(f"generate_ab: FAILED: {error}", file=sys.stderr)
        return None, 1
    if not torch.cuda.is_available():
        write_json(args.result, {"error": "no CUDA device"})
        print("generate_ab: SKIPPED: no CUDA device", file=sys.stderr)
        return None, EXIT_NO_GPU
    return torch, 0


def for_each_model(args, torch, measure, result):
    """measure(name, deadline) for each model with an even share of the time left; a model that fails
    is reported and the next one runs. The result is written after each model."""
    names = [n for n in args.models.split(",") if n]
    for i, name in enumerate(names):
        deadline = time.time() + (args.deadline - time.time()) / (len(names) - i)
        try:
            result["models"][name] = measure(name, deadline)
        except Exception as error:  # noqa: BLE001  reported, and the next model runs
            traceback.print_exc()
            result["models"][name] = {"error": f"{type(error).__name__}: {error}"}
        gc.collect()
        torch.cuda.empty_cache()
        write_json(args.result, result)
    return 0 if all("error" not in m for m in result["models"].values()) else 1


def child_reference(args):
    """Without the shim: each model's token ids for every prompt, after the same warm-up as the A/B's."""
    torch, code = start_child(args)
    if torch is None:
        return code
    device = torch.device("cuda")
    result = {"versions": versions(torch), "shim_mapped": harness.shim_mapped(), "models": {}}

    def measure(name, deadline):
        g = Generation(name, torch, device)
        g.passes(2)
        return {"ids": [g.new_tokens(i, g.run(i)) for i in range(len(g.prompts))]}
    return for_each_model(args, torch, measure, result)


def child_ab(args):
    switch = harness.switch_or_explain("generate_ab", args.result)
    if switch is None:
        return EXIT_NO_SHIM
    features, set_features = switch
    torch, code = start_child(args)
    if torch is None:
        return code
    device = torch.device("cuda")
    result = {"versions": versions(torch), "counted": harness.counters_exported(), "models": {}}
    read = harness.read_counters

    def moved(before, after):
        return {k: v for k, v in shimstats.delta(before, after).items() if v} if before and after else None

    def measure(name, deadline):
        g = Generation(name, torch, device)
        prompts = range(len(g.prompts))
        # The first calls start cuDNN and cuBLAS (the shim reads its configuration then), build
        # plans and heuristics: every feature off.
        g.run(0)
        entry = {"what": MODELS[name], "features_at_start": features()}
        entry["capable"] = set_features(ALL)
        set_features(0)
        g.passes(2)
        start = time.perf_counter()
        reference = [g.run(i).clone() for i in prompts]
        torch.cuda.synchronize()
        entry["generate_s"] = (time.perf_counter() - start) / len(reference)
        # In the same process: every feature on, after a warm-up pass, against every feature off.
        entry["in_effect_on"] = set_features(ALL)
        g.passes(1)
        on_ids = [g.new_tokens(i, g.run(i)) for i in prompts]
        entry["ids_on"] = on_ids
        entry["ids_off"] = [g.new_tokens(i, out) for i, out in enumerate(reference)]
        entry["same_in_process"] = on_ids == entry["ids_off"]
        set_features(0)

        def stretch(asked, order, warm, timed):
            """Switch, `warm` generates, then `timed` timed ones: per generate cpu and wall, the ids that
            differed from the reference, the counters that moved over the timed ones."""
            gc.collect()  # outside the timing: the collector is off while measuring
            in_effect = set_features(asked)
            for k in range(warm):
                g.run(order(k + timed))
            torch.cuda.synchronize()
            before = read()
            cpu, wall, other = [], [], 0
            for k in range(timed):
                out, c, w = g.timed(order(k))
                cpu.append(c)
                wall.append(w)
                other += not torch.equal(out, reference[order(k)])
            return {"in_effect": in_effect, "cpu_ns": cpu, "wall_ns": wall, "other_ids": other,
                    "counts": moved(before, read())}

        gc.collect()
        gc.freeze()
        gc.disable()
        try:
            # Steady state: long stretches, on and off, order alternating from round to round.
            left = deadline - time.time()
            timed = int(STEADY_SHARE * left / (2 * args.stretches) / entry["generate_s"]) - len(g.prompts)
            timed = min(max(timed, STRETCH_MIN), STRETCH_MAX)
            entry["stretch"] = {"warmup": len(g.prompts), "timed": timed}
            entry["stretches"] = []
            for r in range(args.stretches):
                if r and time.time() > args.hard_deadline:
                    break
                arms = (("on", ALL), ("off", 0)) if r % 2 == 0 else (("off", 0), ("on", ALL))
                entry["stretches"].append({which: stretch(asked, lambda k: k % len(g.prompts), len(g.prompts), timed)
                                           for which, asked in arms})
                print(f"generate_ab {name}: steady round {r + 1}/{args.stretches}, {timed} generates a stretch",
                      flush=True)
            # Long blocks until the model's deadline.
            entry["block"] = {"warmup": BLOCK_WARMUP, "timed": BLOCK_TIMED}
            entry["pairs"] = []
            pair_s = 2 * (BLOCK_WARMUP + BLOCK_TIMED) * entry["generate_s"]
            while ((len(entry["pairs"]) < MIN_PAIRS and time.time() + pair_s < args.hard_deadline)
                   or time.time() + pair_s < deadline):
                k = len(entry["pairs"])
                arms = (("on", ALL), ("off", 0)) if k % 2 == 1 else (("off", 0), ("on", ALL))
                pair = {"on_first": k % 2 == 1}
                for which, asked in arms:
                    block = stretch(asked, lambda j: (k * BLOCK_TIMED + j) % len(g.prompts), BLOCK_WARMUP,
                                    BLOCK_TIMED)
                    pair[which] = {**block, "cpu_ns": statistics.fmean(block["cpu_ns"]),
                                   "wall_ns": statistics.fmean(block["wall_ns"])}
                entry["pairs"].append(pair)
        finally:
            gc.enable()
            gc.unfreeze()
            set_features(entry["features_at_start"])
        print(f"generate_ab {name}: {len(entry['pairs'])} pairs of long blocks", flush=True)
        return entry
    return for_each_model(args, torch, measure, result)


# ------------------------------------------------------------------------------------------------
# The analysis (standard library only)

def summary_rows(model, measure, off, on, expected, not_as_asked, args):
    """The table's rows (cpu, wall) of one model and measure: paired off and on times (ns)."""
    rows = []
    for metric in ("cpu", "wall"):
        row = {"workload": f"{model} {measure}", "condition": CONDITION_NAMES.get(expected, str(expected)),
               "metric": metric, "pairs": len(off[metric]), "features_not_as_asked": not_as_asked}
        row.update(paired_summary(off[metric], on[metric], args.resamples,
                                  seed=f"{args.seed}/{model}/{measure}/{metric}"))
        if "gain_percent" in row:
            row["off_mean_ns"], row["on_mean_ns"] = statistics.fmean(off[metric]), statistics.fmean(on[metric])
            row["ratio"] = row["on_mean_ns"] / row["off_mean_ns"]
            row["ratio_ci"] = [1 - row["ci_high_percent"] / 100, 1 - row["ci_low_percent"] / 100]
        if metric == "cpu":
            judge_target(row, GAIN_TARGET)
        rows.append(row)
    return rows


def summed(blocks):
    total = {}
    for block in blocks:
        for key, value in (block.get("counts") or {}).items():
            total[key] = total.get(key, 0) + value
    return total


def replay(blocks, generates):
    """What the shim did over the timed generates of `blocks` (on): the share of the cuBLAS(Lt)
    calls replayed, each family's, and the calls per generate."""
    counts = summed(blocks)
    if not any(b.get("counts") is not None for b in blocks):
        return {"counted": False}
    families = shimstats.blas_families(counts)
    share, seen = shimstats.replayed_share(counts, families)
    return {"counted": True, "share_percent": None if share is None else 100 * share, "blas_calls": seen,
            "families": {f: shimstats.replayed_share(counts, [f])[0] for f in families},
            "calls_per_generate": shimstats.calls(counts, generates) if generates else {}}


def round_gain(stretches):
    """One steady round's gain, in percent of its off stretch's mean CPU time per generate. The pairs'
    interval treats every pair as independent, but a host whose speed drifts between the two stretches
    of a round moves all of that round's pairs together (run 82, llama_gqa: rounds +4.5%, +23.6% and
    -5.0%, the pairs' interval [+3.1, +16.3]); the rounds tell it."""
    on, off = statistics.fmean(stretches["on"]["cpu_ns"]), statistics.fmean(stretches["off"]["cpu_ns"])
    return 100 * (off - on) / off


def analyse_model(name, entry, references, args):
    """The rows and the findings of one model."""
    expected = ALL & entry.get("capable", ALL)
    found = {"what": entry.get("what", MODELS.get(name, "")), "rows": []}
    stretches, pairs = entry.get("stretches", []), entry.get("pairs", [])
    off = {m: [v for s in stretches for v in s["off"][f"{m}_ns"]] for m in ("cpu", "wall")}
    on = {m: [v for s in stretches for v in s["on"][f"{m}_ns"]] for m in ("cpu", "wall")}
    flagged = sum(s["off"]["in_effect"] != 0 or s["on"]["in_effect"] != expected for s in stretches)
    found["rows"] += summary_rows(name, "steady", off, on, expected, flagged, args)
    off = {m: [p["off"][f"{m}_ns"] for p in pairs] for m in ("cpu", "wall")}
    on = {m: [p["on"][f"{m}_ns"] for p in pairs] for m in ("cpu", "wall")}
    flagged = sum(p["off"]["in_effect"] != 0 or p["on"]["in_effect"] != expected for p in pairs)
    found["rows"] += summary_rows(name, "blocks", off, on, expected, flagged, args)
    found["rounds"] = [round_gain(s) for s in stretches if s["on"]["cpu_ns"] and s["off"]["cpu_ns"]]
    found["rounds_agree"] = bool(found["rounds"]) and all(g > 0 for g in found["rounds"])
    for row in found["rows"]:  # the steady target asks every round's gain too (round_gain)
        if row["workload"].endswith(" steady") and row.get("target_passed") and not found["rounds_agree"]:
            row["target_passed"], row["rounds_disagree"] = False, True
    found["steady_replay"] = replay([s["on"] for s in stretches], sum(len(s["on"]["cpu_ns"]) for s in stretches))
    found["steady_off_calls"] = shimstats.calls(summed([s["off"] for s in stretches]))
    found["blocks_replay"] = replay([p["on"] for p in pairs], BLOCK_TIMED * len(pairs))
    share = found["steady_replay"].get("share_percent")
    found["replayed_passed"] = share is not None and share >= REPLAYED_TARGET
    found["other_ids"] = {arm: sum(s[arm]["other_ids"] for s in stretches) + sum(p[arm]["other_ids"] for p in pairs)
                          for arm in ("on", "off")}
    found["timed_generates"] = 2 * (sum(len(s["on"]["cpu_ns"]) for s in stretches) + BLOCK_TIMED * len(pairs))
    found["same_in_process"] = entry.get("same_in_process")
    found["against_no_shim"] = against_references(entry.get("ids_on"), [r.get("models", {}).get(name, {}).get("ids")
                                                                       for r in references])
    return found


def against_references(ids, references):
    """The ids under the shim (every feature on) against the runs without it: True, False, or None when
    not judged (no run, a run failed, or the runs without the shim differ from each other)."""
    if not references:
        return {"passed": None, "detail": "not run (--references 0)"}
    if ids is None or any(r is None for r in references):
        return {"passed": None, "detail": "a run gave no ids (see the log)"}
    if any(r != references[0] for r in references[1:]):
        return {"passed": None, "detail": "the runs without the shim differ from each other"}
    return {"passed": ids == references[0], "detail": f"{len(references)} run(s) without the shim, "
            f"{sum(len(i) for i in ids)} new tokens over {len(ids)} prompts"}


def verdict(passed):
    return {True: "identical", False: "DIFFERED", None: "not judged"}[passed]


def percent(value):
    return "-" if value is None else f"{value:.1f}%"


def model_line(name, entry, found, rows):
    """The line under the table for one model: times, ratios, replays, calls, ids."""
    rows = {(r["workload"].split()[1], r["metric"]): r for r in rows}

    def ratio(measure):
        r = rows.get((measure, "cpu"), {})
        if "ratio" not in r:
            return f"{measure}: no data"
        return (f"{measure}: {r['off_mean_ns'] / 1e6:.2f} → {r['on_mean_ns'] / 1e6:.2f} ms CPU per generate, on/off "
                f"{r['ratio']:.3f} [{r['ratio_ci'][0]:.3f}, {r['ratio_ci'][1]:.3f}] over {r['pairs']} pairs")
    steady, blocks = found["steady_replay"], found["blocks_replay"]
    if steady.get("counted"):
        shares = ", ".join(f"{f} {percent(None if s is None else 100 * s)}" for f, s in steady["families"].items())
        calls = "; ".join(f"{f} {n['calls']:g} (" + ", ".join(f"{k} {v:g}" for k, v in n.items() if k != "calls") + ")"
                          for f, n in steady["calls_per_generate"].items())
        replayed = (f"cuBLAS(Lt) calls replayed in steady state: {percent(steady['share_percent'])} of "
                    f"{steady['blas_calls']} ({shares or 'no cuBLAS call counted'}; target >= {REPLAYED_TARGET:g}%: "
                    f"{'PASS' if found['replayed_passed'] else 'MISS'}), in the long blocks "
                    f"{percent(blocks.get('share_percent'))}; calls per generate with every feature on: {calls or 'none'}")
    else:
        replayed = "replay NOT COUNTED (no cudnn_fastpath_stats in the process, or statistics off)"
    stretch, block = entry.get("stretch", {}), entry.get("block", {})
    rounds = ", ".join(f"{g:+.1f}%" for g in found["rounds"])
    return (f"- {name} ({found['what']}): {ratio('steady')} ({len(entry.get('stretches', []))} rounds of two stretches, "
            f"{stretch.get('warmup')} warm-up + {stretch.get('timed')} timed generates each; the rounds' gains "
            f"{rounds or 'none'}); {ratio('blocks')} "
            f"({block.get('warmup')} warm-up + {block.get('timed')} timed generates a block); {replayed}; token ids: "
            f"every feature on against off in the process {verdict(found['same_in_process'])}, timed generates that "
            f"differed {found['other_ids']['on']} on and {found['other_ids']['off']} off of {found['timed_generates']}, "
            f"against no shim {verdict(found['against_no_shim']['passed'])} ({found['against_no_shim']['detail']})")


def steady_verdict(row, found):
    """The steady target's verdict: the pairs' interval and every round a gain (analyse_model)."""
    if row["target_passed"]:
        return "PASS"
    if row.get("rounds_disagree"):
        return "MISS, the rounds disagree: " + ", ".join(f"{g:+.1f}%" for g in found["rounds"])
    return "MISS"


def analyse(report, args):
    """Rows, findings, markdown and the summary line from the children's raw results; the exit status."""
    child, references = report.get("child", {}), report.get("references", [])
    report["rows"], report["findings"] = [], {}
    title = "## Greedy generation under the shim (gpu/pytorch/generate_ab.py)"
    if report.get("error"):
        report["markdown"] = f"{title}\n\nNOT RUN: {report['error']}\n"
        report["summary_line"] = f"NOT RUN: {report['error']}"
        return 1
    status, parts, model_lines = 0, [], []
    if child.get("error"):
        status = 1
        parts.append(f"FAILED: the run under the shim: {child['error']}")
    failed_refs = [r.get("label") for r in references if r.get("exit_code") != 0]
    if failed_refs:
        status = 1
        parts.append("FAILED: " + ", ".join(failed_refs))
    for name in [n for n in report.get("models", "").split(",") if n] or list(child.get("models", {})):
        entry = child.get("models", {}).get(name)
        if entry is None or entry.get("error"):
            status = 1
            why = entry["error"] if entry else "not measured (the run under the shim ended before it)"
            report["findings"][name] = {"error": why}
            parts.append(f"{name} FAILED: {why}")
            model_lines.append(f"- {name}: FAILED: {why}")
            continue
        found = analyse_model(name, entry, references, args)
        rows = found.pop("rows")
        report["rows"] += rows
        report["findings"][name] = found
        if (found["same_in_process"] is False or found["against_no_shim"]["passed"] is False
                or found["other_ids"]["on"] or found["other_ids"]["off"]):
            status = 1
        model_lines.append(model_line(name, entry, found, rows))
        steady = next((r for r in rows if r["workload"] == f"{name} steady" and r["metric"] == "cpu"), {})
        ids_differed = found["same_in_process"] is False or found["other_ids"]["on"] or found["other_ids"]["off"]
        parts.append(f"{name} steady cpu "
                     + (f"{steady['gain_percent']:+.1f}% [{steady['ci_low_percent']:+.1f}, "
                        f"{steady['ci_high_percent']:+.1f}] (target {GAIN_TARGET:g}%: "
                        f"{steady_verdict(steady, found)})" if "gain_percent" in steady else "no data")
                     + f", replayed {percent(found['steady_replay'].get('share_percent'))} (target "
                     f"{REPLAYED_TARGET:g}%: {'PASS' if found['replayed_passed'] else 'MISS'}), ids "
                     f"{'DIFFERED' if ids_differed else verdict(found['same_in_process'])} in the process, "
                     f"{verdict(found['against_no_shim']['passed'])} against no shim")
    lines = [title, "",
             f"HF `generate()`, greedy, {NEW_TOKENS} new tokens, {len(PROMPT_LENGTHS)} prompt lengths "
             f"({min(PROMPT_LENGTHS)} to {max(PROMPT_LENGTHS)} tokens) in a fixed order, bf16, "
             "random weights, one process under the launcher. Steady: long stretches with every feature on and off, "
             "order alternating, each timed generate paired with the same prompt's in the other stretch of the round; "
             "blocks: pairs of long blocks (whole generates, a warm-up after each switch in both arms). Per generate: "
             "`cpu` the main thread's CPU time of the call, `wall` the call and a synchronize; gain = off - on, "
             f"bootstrap 95% interval of the mean ({args.resamples} resamples). Targets: >= {GAIN_TARGET:g}% less CPU "
             f"time per generate with the interval above zero (steady: and every round's gain); >= "
             f"{REPLAYED_TARGET:g}% of the cuBLAS(Lt) calls "
             "replayed in steady state (launches / (launches + captured + direct)).", ""]
    lines += table_lines(report["rows"], "generate", missed="MISS") + [""] + model_lines
    lines.append(f"- the run under the shim: exit {child.get('exit_code')} in {child.get('seconds')} s; "
                 + ", ".join(f"{k} {v}" for k, v in (child.get("versions") or {}).items()))
    stats = report.get("stats")
    lines.append("- the shim's statistics file (whole run): "
                 + (shimstats.replay_text(stats) if stats else "NO STATISTICS FILE"))
    report["markdown"] = "\n".join(lines) + "\n"
    report["summary_line"] = "; ".join(parts) or "no model measured"
    return status


# ------------------------------------------------------------------------------------------------
# Parent mode

def write_json(path, payload):
    if path:
        Path(path).write_text(json.dumps(payload, indent=1))


def parent(args):
    unknown = [n for n in args.models.split(",") if n and n not in MODELS]
    if unknown or not args.models:
        raise SystemExit(f"generate_ab: unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    shim = args.shim or harness.find_shim("generate_ab")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for stale in work.glob("generate-*"):
        with contextlib.suppress(OSError):
            stale.unlink()
    start = time.time()
    report = {"program": "gpu/pytorch/generate_ab.py", "title": "Greedy generation under the shim", "shim": shim,
              "seconds": args.seconds, "models": args.models, "seed": args.seed, "resamples": args.resamples,
              "targets": {"gain_percent": GAIN_TARGET, "replayed_percent": REPLAYED_TARGET}}
    base = [sys.executable, str(Path(__file__).resolve()), "--models", args.models]
    # 1. Without the shim at all: the token ids to compare with.
    report["references"] = harness.reference_runs(
        args.references, work, "generate",
        lambda i, result: [*base, "--child", "reference", "--result", str(result),
                           "--deadline", f"{time.time() + args.timeout:.3f}"],
        harness.clean_environment(), args.timeout)
    # 2. Under the launcher, with a statistics file.
    stats_pattern = str(work / "generate-stats-%p.json")
    result = work / "generate-shim.json"
    # The models share --seconds; minimum rounds may run past it, but stop a minute before the kill.
    now = time.time()
    argv = [*base, "--child", "ab", "--result", str(result), "--deadline", f"{now + args.seconds:.3f}",
            "--hard-deadline", f"{now + args.seconds + max(args.timeout - 60, 0):.3f}", "--stretches",
            str(args.stretches)]
    child = harness.shim_run(argv, shim, stats_pattern, harness.clean_environment(), args.seconds + args.timeout,
                             result)
    code = child["exit_code"]
    if code != 0 and not child.get("error") and not any(m.get("error") for m in child.get("models", {}).values()):
        child["error"] = harness.failure(code)
    report["child"] = child
    report["stats"] = harness.read_stats(stats_pattern)[0]
    if code in (EXIT_NO_SHIM, EXIT_NO_GPU):
        report["error"] = child.get("error") or "no shim or no GPU"
    return finish(args, report, start, code if code in (EXIT_NO_SHIM, EXIT_NO_GPU) else None)


def finish(args, report, start, forced=None):
    status = analyse(report, args)
    report["elapsed_s"] = round(time.time() - start, 1)
    report["exit_status"] = forced if forced is not None else status
    harness.write_report(args, report)
    print("\n" + report["markdown"])
    print(f"generate_ab: {report['summary_line']}")
    return report["exit_status"]


def from_json(args):
    report = harness.read_json(args.from_json)
    if not report:
        raise SystemExit(f"generate_ab: cannot read {args.from_json}")
    report["resamples"], report["seed"] = args.resamples, args.seed
    return finish(args, report, time.time(), report.get("exit_status") if report.get("error") else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="docs/ab-method.md describes the method; the module docstring the steps.")
    harness.add_parent_arguments(parser, "generate")
    parser.add_argument("--seconds", type=float, default=120,
                        help="how long the run under the shim takes, its start included, shared by the models "
                             "(default 120; a model's minimum rounds may run past it, never past --timeout); the "
                             "runs without the shim (about 30 s each) and the analysis come on top")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--references", type=int, default=1,
                        help="runs without the shim whose token ids are compared (default 1; 0: none)")
    parser.add_argument("--stretches", type=int, default=3,
                        help="rounds of two steady stretches, on and off (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds a process may take beyond --seconds before it is killed (default 300)")
    parser.add_argument("--from-json", help="analyse this earlier --json report again; runs nothing")
    # Child mode, set by the parent.
    parser.add_argument("--child", choices=("reference", "ab"), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--hard-deadline", type=float, default=float("inf"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.references < 0 or args.stretches < 1:
        parser.error("--references must be 0 or more and --stretches at least 1")
    if args.child:
        if not args.result:
            parser.error("--child needs --result")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        return child_reference(args) if args.child == "reference" else child_ab(args)
    if args.from_json:
        return from_json(args)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
