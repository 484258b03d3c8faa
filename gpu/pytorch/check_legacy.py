"""check.py --part legacy: the shim's replay of cuDNN's legacy calls (PyTorch's batch norm) and of
cuBLAS (cublasLtMatmul, cublasGemmEx), on the networks of workload_nets.py.

Each case runs its program twice without the shim (the two must agree byte for byte before the shim
is judged; three times for a result that is not deterministic, whose spread then bounds the
shim's run), under the shim with a statistics file, and in verify mode; the outputs are compared byte
for byte, and the statistics file says what the shim did: in steady runs the replay of the families
each case exercises launched graphs (legacy_bn for the batch norms, lt_matmul and gemm for the
matmuls; not judged with a shim that writes no such counter), no verify mismatch. The cases: the
fp32 conv+BN network in eval and its deterministic training step (batch norm forward and backward),
an autocast training step (fp16 activations, fp32 batch norm), the transformer stack in eval and
training, with and without biases (training with cuDNN's attention is not deterministic: judged
against the spread; with PyTorch's math attention it is, and its batched matmuls are
cublasGemmStridedBatchedEx), the program capturing its own CUDA graph of each, several threads with
their own streams, more shapes than the caches hold, and a 2-layer LSTM (cuDNN's RNN API, which the
shim must leave as it is). With the legacy replay off (CUDNN_FASTPATH_LEGACY=0) and the cuBLAS one
off (CUDNN_FASTPATH_CUBLAS=0): identical outputs and no launch of that family.
"""
import shimstats
from checklib import agree, check_graphs, check_replay, same_bytes, within_spread, run_all, HERE

PROGRAM = HERE / "workload_nets.py"
PLAIN = (("plain-1", "none"), ("plain-2", "none"))
PLAIN3 = PLAIN + (("plain-3", "none"),)
JUDGED = (("shim", "stats"), ("verify", "verify"))
NO_LEGACY, NO_CUBLAS = (("nolegacy", "nolegacy"),), (("nocublas", "nocublas"),)

# The transformer's training runs take 40 steps: its first steps run on addresses of their own
# (PyTorch's allocator settling, the optimizer's state made), the steps after alternate two sets,
# and a family that backed off in the warm-up needs some more steps to find that its calls repeat
# (replay/admission.h's sampled keys; in 10 steps the backward GEMMs were never replayed, run 33).
# name -> (workload_nets.py arguments, judged runs besides the shim's and verify mode's, families
# replayed when steady, what they are, whether the result is deterministic (False: judged against
# the spread of three runs without the shim)).
CASES = {
    "convbn_eval": (["convbn", "--mode", "eval", "--iters", "40"], NO_LEGACY,
                    ("legacy_bn",), "batch norm inference", True),
    "convbn_train": (["convbn", "--mode", "train", "--iters", "10"], (), ("legacy_bn",),
                     "batch norm forward training and backward", True),
    "convbn_autocast": (["convbn", "--mode", "autocast", "--iters", "10"], (), ("legacy_bn",),
                        "batch norm of fp16 activations, fp32 parameters", True),
    "stack_bias": (["stack", "--iters", "20"], NO_CUBLAS, ("lt_matmul",),
                   "addmm: cublasLtMatmul", True),
    "stack_nobias": (["stack", "--no-bias", "--iters", "20"], NO_CUBLAS, ("gemm",),
                     "matmul: cublasGemmEx", True),
    "stack_bias_train": (["stack", "--train", "--iters", "40"], (), ("lt_matmul", "gemm"),
                         "forward addmm, backward matmuls", False),
    "stack_nobias_train": (["stack", "--train", "--no-bias", "--iters", "40"], (), ("gemm",),
                           "matmuls forward and backward", False),
    "stack_train_math": (["stack", "--train", "--attention", "math", "--iters", "40"], (), ("lt_matmul", "gemm"),
                         "addmm and the math attention's batched matmuls, deterministic", True),
    "capture_convbn": (["capture", "--net", "convbn", "--iters", "20"], (), ("legacy_bn",),
                       "eager iterations after the program's own graph", True),
    "capture_convbn_train": (["capture", "--net", "convbn_train", "--iters", "10"], (), ("legacy_bn",),
                             "eager steps after the program's own graph", True),
    "capture_stack_bias": (["capture", "--net", "stack_bias", "--iters", "10"], (), ("lt_matmul",),
                           "eager iterations after the program's own graph", True),
    "capture_stack_nobias": (["capture", "--net", "stack_nobias", "--iters", "10"], (), ("gemm",),
                             "eager iterations after the program's own graph", True),
    "capture_stack_train_math": (["capture", "--net", "stack_train_math", "--iters", "40"], (),
                                 ("lt_matmul", "gemm"), "eager steps after the program's own graph", True),
    "threads_convbn": (["threads", "--net", "convbn", "--threads", "4", "--iters", "25"], (), (), "", True),
    "threads_stack": (["threads", "--net", "stack", "--threads", "4", "--iters", "10"], (), (), "", True),
    "shapes_convbn": (["shapes", "--net", "convbn", "--sizes", "40", "--rounds", "3"], (), (), "", True),
    "shapes_stack_bias": (["shapes", "--net", "stack", "--sizes", "300", "--rounds", "2"], (), (), "", True),
    "shapes_stack_nobias": (["shapes", "--net", "stack", "--no-bias", "--sizes", "300", "--rounds", "2"], (),
                            (), "", True),
    "lstm": (["lstm", "--iters", "20", "--steps", "5"], (), (), "", True),
}


def legacy_part(args, work, checks):
    plan = [(f"{name}-{kind}", wargs, shim) for name, (wargs, extra, _, _, exact) in CASES.items()
            for kind, shim in (PLAIN if exact else PLAIN3) + extra + JUDGED]
    runs = run_all(args, work, plan, checks, program=PROGRAM)
    spreads = {}
    for name, (_, extra, families, what, exact) in CASES.items():
        plain = runs[f"{name}-plain-1"]
        others = [kind for kind, _ in JUDGED + extra]
        if exact:
            plain_agree = agree(plain, runs[f"{name}-plain-2"])
            same_bytes(checks, f"{name}: two runs without the shim agree", runs[f"{name}-plain-2"], plain)
            for kind in others:
                same_bytes(checks, f"{name}-{kind}: output identical to the runs without the shim", runs[f"{name}-{kind}"],
                           plain, precondition=plain_agree)
        else:
            baseline = [runs[f"{name}-{kind}"] for kind, _ in PLAIN3]
            for kind in others:
                spreads[f"{name}-{kind}"] = within_spread(
                    checks, f"{name}-{kind}: within the spread of the runs without the shim", runs[f"{name}-{kind}"],
                    baseline)
        for kind in others:
            run = runs[f"{name}-{kind}"]
            if run.stats and kind == "verify":
                checks.add(f"{run.name}: verify mode, no mismatch", run.stats.get("verify_mismatches") == 0,
                           f"verify_mismatches={run.stats.get('verify_mismatches')}")
            if families:
                check_replay(checks, run, families, what)
            elif run.stats:
                # Threads (PyTorch's allocator gives each thread's ops other addresses), more shapes
                # than the caches hold, the LSTM: what the shim did is reported, the outputs judged.
                checks.add(f"{run.name}: replays", None, shimstats.replay_text(run.stats) + " (informational)")
        if name in ("convbn_eval", "stack_bias", "stack_nobias"):
            # The conv network's convolutions are the backend's graph replay; the stack's attention too.
            check_graphs(checks, runs[f"{name}-shim"])
        if name == "stack_bias":
            heuristics(checks, runs[f"{name}-shim"], runs[f"{name}-nocublas"])
    for name in CASES:
        if name.startswith("capture"):
            # The program's own capture: cuBLAS and the legacy calls refused inside it (the shim
            # executes directly while the stream captures), reported: a refusal is seen only for an
            # op whose replay reached its capture inside the program's.
            stats = runs[f"{name}-shim"].stats or {}
            refused = {k: v for k, v in stats.items() if k.endswith("_refused_capturing") or k == "backend_refused_capturing"}
            checks.add(f"{name}-shim: executes refused inside the program's own capture", None,
                       f"{refused or 'no such counter'} (informational)")
    return runs, {"spreads": spreads}


def heuristics(checks, run, off):
    """cublasLtMatmulAlgoGetHeuristic answered from the cache (PyTorch asks before every addmm)."""
    for r, expect_cached in ((run, True), (off, False)):
        stats = r.stats or {}
        if "heuristic_cached" not in stats:
            checks.add(f"{r.name}: heuristic cache", None, "not judged: this shim writes no heuristic_cached counter")
            continue
        cached, stored = shimstats.count(stats, "heuristic_cached"), shimstats.count(stats, "heuristic_stored")
        checks.add(f"{r.name}: heuristics " + ("answered from the cache (heuristic_cached > 0)" if expect_cached
                                               else "all asked of cuBLASLt with the replay off (heuristic_cached = 0)"),
                   cached > 0 if expect_cached else cached == 0, f"heuristic_cached={cached}, heuristic_stored={stored}")
