"""check.py --part relocation: the shim's replay of calls whose tensors moved (relocation: a shape's
graph launched with its kernel arguments pointed at the call's tensors) and of cuBLAS's typed fp32
GEMMs (the typed_gemm family), on the programs of workload_relocation.py.

Each case runs its program twice without the shim (the two must agree byte for byte before the shim
is judged), under the shim with a statistics file, in verify mode (--verify: every relocated launch
compared with a fresh capture of the call) and with relocation off (--no-relocation), and compares
the bytes they write. The statistics say what the shim did: in verify mode relocation_mismatches = 0
and no "verify: the relocated graph of ... differs" line; with relocation off relocated = 0 and
relocations_proven = 0; under the shim relocated > 0 where the case makes tensors move for good
(generation, fresh inputs with every output kept, the fp32 MLP, two streams, the eager iterations
around the program's capture; the two alternating allocations are replayed by pointer once each
set has come three times: reported). The cases:
  - generate: greedy generation (HF transformers, random-weight Llama and GPT-2, bf16, 8 prompt
    lengths in turn): every generate()'s token ids; the share of the cuBLAS(Lt) calls launched in
    steady state, launches / (launches + direct), and relocated, reported per model and run;
  - fresh: the fp32 conv+BN network fed a ring of inputs, every output kept (cuDNN's legacy batch
    norm relocated): outputs;
  - alternate: a deterministic training loop whose activations alternate between two allocations:
    losses, last gradients, weights;
  - capture: the program's own CUDA graph around calls the shim would otherwise relocate: outputs;
    while the program's stream captured, nothing launched, captured or relocated by the shim, and
    calls refused for capturing (<family>_refused_capturing, backend_refused_capturing) > 0;
  - streams: one model on two streams in turn: outputs;
  - mlp: an fp32 MLP's forwards, then deterministic training steps (cublasSgemm_v2,
    cublasSgemmStridedBatched; CUBLAS_WORKSPACE_CONFIG=:4096:8): outputs, losses, gradients and
    weights; typed_gemm_launches > 0 over the steps' second half.
Without transformers the generation case is reported as not run. About 30 processes, PARALLEL_RUNS
at a time: the longest (generation in verify mode) some 30 to 60 s; the part about 2 minutes.
"""
import json
import subprocess
import sys

import shimstats
from checklib import HERE, agree, run_all, same_bytes

PROGRAM = HERE / "workload_relocation.py"
KINDS = (("plain-1", "none"), ("plain-2", "none"), ("shim", "stats"), ("verify", "verify"),
         ("norelocation", "norelocation"))
JUDGED = ("shim", "verify", "norelocation")
RELOCATION_KEYS = ("relocated", "relocation_updates", "relocations_proven", "relocations_refused",
                   "relocation_mismatches")
VERIFY_LINE = "verify: the relocated graph of"

# name -> (workload_relocation.py arguments, whether relocated > 0 is judged under the shim, the
# family whose steady launches must be > 0 (or None)). Generation first: its runs are the longest.
# (workload arguments, whether "relocation at work" is judged, the family judged replayed in steady
# state). capture and streams are not judged: on the H200 (2026-12-03) their batch norms' input (the
# ring) and output (each kept) advance by one stride together, as do their GEMMs' operands, so the
# proof cannot tell which tensor a moved word follows and refuses every shape ("tensors that moved
# alike"): they prove the program's own capture and the streams safe around relocation, not that it
# relocates.
CASES = {
    "generate": (["generate", "--models", "llama,gpt2", "--passes", "4", "--warmup", "2"], True, None),
    "fresh": (["fresh", "--iters", "48"], True, None),
    "alternate": (["alternate", "--steps", "30"], False, None),
    "capture": (["capture", "--iters", "20", "--passes", "4"], False, None),
    "streams": (["streams", "--iters", "60"], False, None),
    "mlp": (["mlp", "--iters", "30", "--steps", "30"], True, "typed_gemm"),
}
GENERATE_MODELS = ("llama", "gpt2")


def relocation_numbers(stats):
    return ", ".join(f"{key}={stats.get(key, 'missing')}" for key in RELOCATION_KEYS)


def printed_counts(run, key):
    """The counters a workload printed as JSON on `key=`, or None."""
    text = run.printed.get(key)
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def blas_share(counts):
    """(launched share of the cuBLAS(Lt) calls: launches / (launches + direct), launches, direct,
    captured) over every family but cuDNN's legacy_* ones (by the counters' names)."""
    families = shimstats.blas_families(counts)
    launched = sum(shimstats.count(counts, f"{f}_launches") for f in families)
    direct = sum(shimstats.count(counts, f"{f}_direct") for f in families)
    captured = sum(shimstats.count(counts, f"{f}_captured") for f in families)
    return (launched / (launched + direct) if launched + direct else None), launched, direct, captured


def steady_text(counts):
    """Per family over a steady stretch: launches, captured, direct; and the relocation counters."""
    if counts is None:
        return "no counters printed"
    parts = [shimstats.calls_text(counts) or "no replayed call"]
    parts.append(", ".join(f"{key} {shimstats.count(counts, key)}" for key in RELOCATION_KEYS[:4]))
    return "; ".join(parts)


def has_transformers():
    done = subprocess.run([sys.executable, "-c", "import importlib.util, sys; "
                           "sys.exit(importlib.util.find_spec('transformers') is None)"], capture_output=True)
    return done.returncode == 0


def relocation_part(args, work, checks):
    cases = dict(CASES)
    if not has_transformers():
        del cases["generate"]
        checks.add("generate: greedy generation", None, f"not run: {sys.executable} cannot import transformers")
    plan = [(f"{name}-{kind}", wargs, shim) for name, (wargs, _, _) in cases.items() for kind, shim in KINDS]
    runs = run_all(args, work, plan, checks, program=PROGRAM)
    report = {}
    for name, (_, judge_relocated, steady_family) in cases.items():
        plain = runs[f"{name}-plain-1"]
        plain_agree = agree(plain, runs[f"{name}-plain-2"])
        same_bytes(checks, f"{name}: two runs without the shim agree", runs[f"{name}-plain-2"], plain)
        for kind in JUDGED:
            run = runs[f"{name}-{kind}"]
            same_bytes(checks, f"{run.name}: output identical to the runs without the shim", run, plain,
                       precondition=plain_agree)
            stats = run.stats
            if not stats:
                checks.add(f"{run.name}: statistics file written", False, "no file: was the shim loaded?")
                continue
            if "relocated" not in stats:
                checks.add(f"{run.name}: relocation counters", None,
                           "not judged: this shim writes no relocation counter; " + shimstats.replay_text(stats))
                continue
            numbers = relocation_numbers(stats) + "; " + shimstats.replay_text(stats)
            if kind == "verify":
                logged = VERIFY_LINE in run.err or VERIFY_LINE in run.out
                checks.add(f"{run.name}: verify mode, every relocated launch like a fresh capture "
                           "(relocation_mismatches = 0, verify_mismatches = 0, no mismatch line)",
                           stats.get("verify") is True and stats.get("relocation_mismatches") == 0
                           and stats.get("verify_mismatches") == 0 and not logged,
                           f"verify={stats.get('verify')}, verify_mismatches={stats.get('verify_mismatches')}, "
                           f"mismatch line {'logged' if logged else 'absent'}; {numbers}")
            if kind == "norelocation":
                checks.add(f"{run.name}: relocation off (--no-relocation): relocated = 0, relocations_proven = 0",
                           stats.get("relocated") == 0 and stats.get("relocations_proven") == 0, numbers)
            elif judge_relocated:
                # In verify mode too: each of those launches was compared with a fresh capture.
                checks.add(f"{run.name}: relocation at work (relocated > 0)",
                           shimstats.count(stats, "relocated") > 0, numbers)
            elif kind == "shim":
                checks.add(f"{run.name}: relocation", None, numbers + " (informational)")
            steady = printed_counts(run, "steady_counts")
            if kind == "shim" and name != "generate":
                checks.add(f"{run.name}: calls in the second half", None, steady_text(steady) + " (informational)")
            if steady_family:
                launched = shimstats.count(steady, f"{steady_family}_launches")
                checks.add(f"{run.name}: {steady_family} replayed in steady state ({steady_family}_launches > 0 "
                           "over the second half of the training steps)",
                           steady is not None and launched > 0, steady_text(steady))
        if name == "generate":
            report["generate"] = generation_shares(checks, runs)
        if name == "capture":
            report["capture"] = program_capture(checks, runs)
        for kind in ("shim", "norelocation"):
            if name != "generate" and runs[f"{name}-{kind}"].stats:
                report.setdefault("steady", {})[f"{name}-{kind}"] = printed_counts(runs[f"{name}-{kind}"],
                                                                                 "steady_counts")
    return runs, {"relocation": report}


def generation_shares(checks, runs):
    """Per model and run: the share of the cuBLAS(Lt) calls launched in the steady passes, relocated."""
    shares = {}
    for kind in JUDGED:
        run = runs[f"generate-{kind}"]
        for model in GENERATE_MODELS:
            counts = printed_counts(run, f"{model}_steady_counts")
            if counts is None:
                if run.exit_code == 0 and run.stats:
                    checks.add(f"{run.name}: {model}'s steady counters", False, "not printed")
                continue
            share, launched, direct, captured = blas_share(counts)
            relocated = shimstats.count(counts, "relocated")
            shares[f"{model}-{kind}"] = {"share": share, "launches": launched, "direct": direct,
                                         "captured": captured, "relocated": relocated}
            checks.add(f"{run.name}: {model}, cuBLAS(Lt) calls launched in steady state "
                       "(launches / (launches + direct))", None,
                       (f"{share:.1%}" if share is not None else "no call")
                       + f" ({launched} launched, {direct} direct, {captured} captured); relocated {relocated}; "
                       f"{shimstats.calls_text(counts)} (informational)")
    return shares


def program_capture(checks, runs):
    """While the program's stream captured: nothing launched, captured or relocated by the shim, and
    calls refused for capturing."""
    found = {}
    for kind in JUDGED:
        run = runs[f"capture-{kind}"]
        if run.exit_code != 0 or not run.stats:
            continue
        counts = printed_counts(run, "capture_counts")
        if counts is None:
            checks.add(f"{run.name}: the shim's counters during the program's capture", False, "not printed")
            continue
        launched = shimstats.launches(counts)
        captured = sum(v for k, v in counts.items() if k.endswith("_captured"))  # backend_captured among them
        refused = {k: v for k, v in counts.items()
                   if k.endswith("_refused_capturing") or k == "backend_refused_capturing"}
        relocated = shimstats.count(counts, "relocated")
        found[kind] = {"launched": launched, "captured": captured, "relocated": relocated, "refused": refused}
        detail = (f"launched {launched}, captured {captured}, relocated {relocated}, refused for capturing {refused}; "
                  f"{shimstats.calls_text(counts)}")
        checks.add(f"{run.name}: nothing launched, captured or relocated by the shim during the program's capture",
                   launched == 0 and captured == 0 and relocated == 0, detail)
        checks.add(f"{run.name}: calls refused for capturing during the program's capture (*_refused_capturing > 0)",
                   sum(refused.values()) > 0, detail)
        eager = printed_counts(run, "eager_counts")
        checks.add(f"{run.name}: the eager iterations before the capture", None,
                   steady_text(eager) + " (informational)")
    return found
