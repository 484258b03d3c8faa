#!/usr/bin/env python3
"""graph_probe: what a captured cuBLAS/cuDNN call costs and whether its graph can be relocated.

For each call kind (cuBLASLt matmul with a bias, cublasGemmEx, cublasGemmStridedBatchedEx,
cublasSgemm_v2, cublasSgemmStridedBatched, cuDNN legacy batch norm inference and training, cuDNN
backend convolution, and cuDNN SDPA through PyTorch), on one GPU:

1. capture cost, host microseconds, medians over --reps repetitions (direct call and graph chain
   alternating in order): the direct call; stream capture of one call on a non-blocking stream of our
   own (cuStreamBeginCapture_v2 THREAD_LOCAL, the call, cuStreamEndCapture); cuGraphInstantiateWithFlags;
   the first cuGraphLaunch; steady cuGraphLaunch. C = (capture + instantiate + first - direct) /
   (direct - steady). Device memory per instantiated graph (cuMemGetInfo around 100 instantiations).
2. update cost: cuGraphExecKernelNodeSetParams_v2 per kernel node (same params, one pointer word
   changed) and the cuGraphLaunch right after it.
3. kernel-argument diffs: the call captured twice on tensors that moved by different deltas; per
   kernel node the words that point into the call's tensors, the words that differ, whether each
   differing word moved by exactly its tensor's move, 128-byte TMA tensor maps and
   cuTensorMapReplaceAddress, and whether capture 1's graph patched to capture 2's tensors
   (cuGraphExecKernelNodeSetParams_v2) writes bit-identical outputs to capture 2's direct call.

"lib" kinds call the library through ctypes with our own handles (the figure the shim sees);
"torch" kinds call the PyTorch op on the same stream (what the program sees, PyTorch's own host work
included). Timings capture with the driver directly, never through torch.cuda.graph.

  graph_probe.py --out DIR [--reps N] [--only NAME,...] [--budget SECONDS]
  graph_probe.py --self-test            # the pure analysis code, no GPU, no torch

Writes DIR/graph-probe.json (every figure) and DIR/graph-probe.md (the tables), rewritten after
each kind, so a run stopped half-way still leaves what it measured.
"""
import argparse
import ctypes as C
import datetime
import faulthandler
import functools
import glob
import json
import os
import platform
import statistics
import time
import traceback

ns = time.perf_counter_ns
VP = C.c_void_p

# ---------------------------------------------------------------------------------------------
# Pure analysis (no GPU): kernel-argument words against the call's tensors.


def owner(word, tensors):
    """Name of the tensor whose span [ptr, ptr + span) holds `word`; else one that ends at `word`."""
    for name, ptr, span in tensors:
        if ptr <= word < ptr + span:
            return name
    for name, ptr, span in tensors:
        if word == ptr + span:
            return name
    return None


M32 = 0xFFFFFFFF


def low32_owner(half, tensors):
    """Tensors whose pointer's low 32 bits, plus an offset within the tensor, give `half`."""
    return [name for name, ptr, span in tensors if (half - (ptr & M32)) & M32 <= span]


def analyze_words(bA, bB, tA, tB, max_listed=8):
    """Compare one kernel node's packed argument bytes from two captures.

    tA, tB: [(name, ptr, span_bytes)] in the same order for capture 1 and 2. Returns (report,
    patched) where patched is capture 1's bytes with every word that points into a tensor moved by
    that tensor's move (the relocation rule); report['rule_reproduces'] says whether that equals
    capture 2's bytes exactly.
    """
    deltas = {na: pb - pa for (na, pa, _), (_, pb, _) in zip(tA, tB)}
    counts = {}
    for d in deltas.values():
        counts[d] = counts.get(d, 0) + 1
    n = min(len(bA), len(bB)) // 8
    rep = {
        "bytes": len(bA), "words": n, "ptr_words_1": 0, "ptr_words_2": 0, "diff_words": 0,
        "diff_explained": 0, "ptr_words_unmoved": 0, "per_tensor": {}, "unexplained": [],
    }
    patched = bytearray(bA)
    for i in range(n):
        o = 8 * i
        wa = int.from_bytes(bA[o:o + 8], "little")
        wb = int.from_bytes(bB[o:o + 8], "little")
        oa = owner(wa, tA)
        ob = owner(wb, tB)
        if oa is not None:
            rep["ptr_words_1"] += 1
            rep["per_tensor"][oa] = rep["per_tensor"].get(oa, 0) + 1
            patched[o:o + 8] = ((wa + deltas[oa]) % (1 << 64)).to_bytes(8, "little")
        if ob is not None:
            rep["ptr_words_2"] += 1
        if wa != wb:
            rep["diff_words"] += 1
            cands = [na for na, pa, sp in tA
                     if pa <= wa <= pa + sp and deltas[na] != 0 and wb - wa == deltas[na]]
            if len(cands) == 1 and counts[deltas[cands[0]]] == 1:
                rep["diff_explained"] += 1
            elif len(rep["unexplained"]) < max_listed:
                rep["unexplained"].append({"offset": o, "word1": hex(wa), "word2": hex(wb),
                                           "in_1": oa, "in_2": ob, "candidates": cands})
        elif oa is not None and deltas[oa] != 0:
            rep["ptr_words_unmoved"] += 1
    # Differing words the 8-byte rule leaves: a 32-bit half that is a pointer's low half moved by
    # its tensor's move (mod 2^32), and the moves of the rest (an unseen buffer shows as one delta).
    patched32 = bytearray(patched)
    rep["diff_low32_halves"] = 0
    rep["unexplained_deltas"] = {}
    for i in range(n):
        o = 8 * i
        if bA[o:o + 8] == bB[o:o + 8]:
            continue
        wa = int.from_bytes(bA[o:o + 8], "little")
        wb = int.from_bytes(bB[o:o + 8], "little")
        cands = [na for na, pa, sp in tA if pa <= wa <= pa + sp and deltas[na] != 0 and wb - wa == deltas[na]]
        if len(cands) == 1 and counts[deltas[cands[0]]] == 1:
            continue
        if owner(wa, tA) is not None:
            continue
        if 0 < wa >> 40 < 0x80 and 0 < wb >> 40 < 0x80:  # a full pointer into memory the call does not name
            key = f"{wb - wa:#x}"
            rep["unexplained_deltas"][key] = rep["unexplained_deltas"].get(key, 0) + 1
            continue
        for h in (0, 4):
            ha = int.from_bytes(bA[o + h:o + h + 4], "little")
            hb = int.from_bytes(bB[o + h:o + h + 4], "little")
            if ha == hb:
                continue
            m = [na for na in low32_owner(ha, tA) if deltas[na] and (hb - ha) & M32 == deltas[na] & M32]
            if len(m) == 1:
                rep["diff_low32_halves"] += 1
                patched32[o + h:o + h + 4] = hb.to_bytes(4, "little")
            else:
                key = f"{(hb - ha) & M32:#x} (32-bit half)"
                rep["unexplained_deltas"][key] = rep["unexplained_deltas"].get(key, 0) + 1
    rep["rule32_reproduces"] = bytes(patched32) == bytes(bB)
    rep["tail_differs"] = bytes(bA[8 * n:]) != bytes(bB[8 * n:])
    rep["length_differs"] = len(bA) != len(bB)
    rep["all_diffs_explained"] = (rep["diff_words"] == rep["diff_explained"]
                                  and not rep["tail_differs"] and not rep["length_differs"])
    rep["rule_reproduces"] = bytes(patched) == bytes(bB)
    return rep, bytes(patched)


def deltas_unique(tA, tB):
    ds = [pb - pa for (_, pa, _), (_, pb, _) in zip(tA, tB) if pb != pa]
    return len(ds) == len(set(ds))


def tma_windows(layout, nbytes):
    """Candidate tensor-map windows: (offset, exact) for 128-byte params at a 64-aligned offset
    (exact) and 64-aligned 128-byte windows inside larger params (embedded)."""
    out = []
    if not layout:
        return out
    for off, size in layout:
        if size == 128 and off % 64 == 0:
            out.append((off, True))
        elif size > 128:
            o = (off + 63) // 64 * 64
            while o + 128 <= off + size and o + 128 <= nbytes:
                out.append((o, False))
                o += 64
    return out


def median_us(v):
    return round(statistics.median(v) / 1000.0, 3) if v else None


def c_ratio(t):
    """Launches that repay one capture: (capture + instantiate + first - direct) / (direct - steady)."""
    try:
        num = t["capture"] + t["instantiate"] + t["first_launch"] - t["direct"]
        den = t["direct"] - t["steady_launch"]
        if den <= 0:
            return None
        return round(num / den, 2)
    except (KeyError, TypeError):
        return None


# ---------------------------------------------------------------------------------------------
# Markdown


def fmt(x, nd=2):
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def render_markdown(res):
    L = []
    m = res.get("meta", {})
    L.append("# graph-probe results\n")
    for k in ("date", "gpu", "driver", "cuda_driver_api", "torch", "cudnn", "cublas", "cublasLt",
              "python", "reps", "warmup_seconds", "torch_keep_graph", "total_seconds"):
        if k in m:
            L.append(f"- {k}: {m[k]}")
    L.append("")
    L.append("## Kinds\n")
    L.append("| kind | level | family | shape | seconds | errors |")
    L.append("|" + " --- |" * 6)
    for name, r in res.get("kinds", {}).items():
        L.append(f"| {name} | {r.get('level', '-')} | {r.get('family', '-')} | {r.get('shape', '-')} | "
                 f"{fmt(r.get('seconds'))} | {len(r.get('errors', []))} |")
    L.append("")
    L.append("## Capture cost (host us, medians)\n")
    L.append("C = (capture + instantiate + first launch - direct) / (direct - steady launch). "
             "lib: the library called through ctypes (ctypes' own argument cost, `ovh`, left in; "
             "`C net` takes it out of each call); torch: the PyTorch op, its own host work in both "
             "direct and capture; `C lib` puts the library's own direct call (the lib kind's, net) in the "
             "denominator, which is what a replay saves under PyTorch. mem: device bytes per instantiated "
             "graph, and after its first launch.\n")
    L.append("| kind | level | direct | begin | call in capture | end | capture | instantiate | first launch "
             "| steady launch | C | C net | C lib | ovh direct | mem/graph inst | mem/graph launched |")
    L.append("|" + " --- |" * 16)
    for name, r in res.get("kinds", {}).items():
        t = r.get("timing") or {}
        mem = r.get("memory") or {}
        L.append("| " + " | ".join([
            name, r.get("level", "-"), fmt(t.get("direct")), fmt(t.get("begin")), fmt(t.get("call_captured")),
            fmt(t.get("end")), fmt(t.get("capture")), fmt(t.get("instantiate")), fmt(t.get("first_launch")),
            fmt(t.get("steady_launch")), fmt(r.get("C")), fmt(r.get("C_net")), fmt(r.get("C_lib_direct")),
            fmt((r.get("overhead") or {}).get("direct")),
            fmt(mem.get("per_graph_instantiated")), fmt(mem.get("per_graph_launched"))]) + " |")
    L.append("")
    L.append("## Kernel arguments: capture 1 against capture 2 (tensors moved by distinct deltas)\n")
    L.append("Per kernel node: params (count/bytes), words pointing into the call's tensors (capture 1), "
             "differing words, differing words each explained by exactly one tensor's move, the relocation "
             "rule (move every pointer word by its tensor's move) reproducing capture 2's bytes, 128-byte "
             "params differing / reproduced by cuTensorMapReplaceAddress (plus embedded 64-aligned windows "
             "reproduced), kernel name.\n")
    L.append("| kind | node | params | ptr words | differ | explained | rule reproduces | + 32-bit halves "
             "| other moves | TMA 128B diff/repro | embedded repro | kernel |")
    L.append("|" + " --- |" * 12)
    for name, r in res.get("kinds", {}).items():
        g = r.get("graph") or {}
        for i, nd in enumerate(g.get("kernel_nodes", [])):
            a = nd.get("args") or {}
            tm = nd.get("tma") or {}
            L.append("| " + " | ".join([
                name if i == 0 else "", str(i),
                f"{nd.get('n_params', '-')}/{nd.get('param_bytes', '-')}", fmt(a.get("ptr_words_1")),
                fmt(a.get("diff_words")), fmt(a.get("diff_explained")), fmt(a.get("rule_reproduces")),
                f"{fmt(a.get('diff_low32_halves'))} / {fmt(a.get('rule32_reproduces'))}",
                ", ".join(f"{k} x{v}" for k, v in (a.get("unexplained_deltas") or {}).items()) or "-",
                f"{tm.get('exact_differing', '-')}/{tm.get('exact_reproduced', '-')}",
                fmt(tm.get("embedded_reproduced")), "`" + (nd.get("name") or "?")[:60] + "`"]) + " |")
    L.append("")
    L.append("## Relocation: capture 1's exec patched to capture 2's tensors, launched\n")
    L.append("| kind | node types | deltas unique | every kernel node reproduced | patched nodes | "
             "output = direct call on capture 2's tensors | capture 2's own graph = direct |")
    L.append("|" + " --- |" * 7)
    for name, r in res.get("kinds", {}).items():
        g = r.get("graph") or {}
        rl = r.get("relocation") or {}
        types = ", ".join(f"{k} {v}" for k, v in (g.get("node_types") or {}).items())
        L.append("| " + " | ".join([
            name, types or "-", fmt(g.get("deltas_unique")), fmt(g.get("all_nodes_reproduced")),
            fmt(rl.get("patched_nodes")), fmt(rl.get("relocated_identical")),
            fmt(rl.get("graph2_identical"))]) + " |")
    L.append("")
    ms = [(n, x) for n, r in res.get("kinds", {}).items() for x in (r.get("graph") or {}).get("memset_nodes", [])]
    if ms:
        L.append("Memset nodes: " + "; ".join(
            f"{n}: {x.get('bytes')} B of {x.get('value')} at {x.get('dst_1')} / {x.get('dst_2')}, in {x.get('dst_in')}, "
            f"kernel words into it {x.get('kernel_words_into_it')}" for n, x in ms) + "\n")
    L.append("## Update cost per kernel node (host us, medians)\n")
    L.append("| kind | node | SetParams same | launch after | SetParams one word changed | launch after |")
    L.append("|" + " --- |" * 6)
    for name, r in res.get("kinds", {}).items():
        for i, u in enumerate(r.get("update") or []):
            L.append("| " + " | ".join([
                name if i == 0 else "", str(u.get("kernel")), fmt(u.get("set_same")),
                fmt(u.get("launch_after_same")), fmt(u.get("set_changed")),
                fmt(u.get("launch_after_changed"))]) + " |")
    L.append("")
    errs = [(n, e) for n, r in res.get("kinds", {}).items() for e in r.get("errors", [])]
    if errs or res.get("errors"):
        L.append("## Errors\n")
        for e in res.get("errors", []):
            L.append(f"- (global) {e}")
        for n, e in errs:
            L.append(f"- {n}: {e}")
        L.append("")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------------------------------------
# Self-test of the pure parts (runs anywhere).


def self_test():
    tA = [("x", 0x7f0000000000, 1000), ("y", 0x7f0000100000, 2000), ("ws", 0x7f0000200000, 4096)]
    tB = [("x", 0x7f0000000000 + 0x10000, 1000), ("y", 0x7f0000100000 + 0x20300, 2000),
          ("ws", 0x7f0000200000, 4096)]
    w = lambda v: v.to_bytes(8, "little")
    bA = w(0x7f0000000000 + 16) + w(5) + w(0x7f0000100000) + w(0x7f0000200000 + 8) + b"\x01\x02"
    bB = w(0x7f0000010000 + 16) + w(5) + w(0x7f0000120300) + w(0x7f0000200000 + 8) + b"\x01\x02"
    rep, patched = analyze_words(bA, bB, tA, tB)
    assert rep["ptr_words_1"] == 3, rep
    assert rep["diff_words"] == 2 and rep["diff_explained"] == 2, rep
    assert rep["rule_reproduces"] and rep["all_diffs_explained"], rep
    assert rep["ptr_words_unmoved"] == 0
    # an unexplained change: a non-pointer word differs
    bB2 = bB[:8] + w(6) + bB[16:]
    rep2, _ = analyze_words(bA, bB2, tA, tB)
    assert rep2["diff_words"] == 3 and rep2["diff_explained"] == 2 and not rep2["rule_reproduces"], rep2
    # shared delta: ambiguous
    tB3 = [("x", tA[0][1] + 0x10000, 1000), ("y", tA[1][1] + 0x10000, 2000), tA[2]]
    bB3 = w(0x7f0000010000 + 16) + w(5) + w(0x7f0000110000) + w(0x7f0000200000 + 8) + b"\x01\x02"
    rep3, _ = analyze_words(bA, bB3, tA, tB3)
    assert rep3["diff_explained"] == 0 and rep3["rule_reproduces"], rep3
    assert not deltas_unique(tA, tB3) and deltas_unique(tA, tB)
    # a pointer word that did not move
    bB4 = bA[:8] + bB[8:]
    rep4, _ = analyze_words(bA, bB4, tA, tB)
    assert rep4["ptr_words_unmoved"] == 1, rep4
    # a 32-bit low half of x's pointer packed beside a float, as cuDNN's nchwToNhwc kernel has it
    packA = (0x7f0000000000 + 16 & 0xFFFFFFFF) | (0x3f800000 << 32)
    packB = (0x7f0000010000 + 16 & 0xFFFFFFFF) | (0x3f800000 << 32)
    rep5, _ = analyze_words(w(packA), w(packB), tA, tB)
    assert rep5["diff_words"] == 1 and rep5["diff_explained"] == 0 and not rep5["rule_reproduces"], rep5
    assert rep5["diff_low32_halves"] == 1 and rep5["rule32_reproduces"], rep5
    # an unseen buffer that moved: reported by its delta
    rep6, _ = analyze_words(w(0x7f0000900000), w(0x7f0000940000), tA, tB)
    assert rep6["unexplained_deltas"] == {"0x40000": 1}, rep6
    assert owner(0x7f0000000000 + 1000, tA) == "x" and owner(0x7f0000000000 + 999, tA) == "x"
    assert tma_windows([(0, 8), (64, 128), (192, 8)], 200) == [(64, True)]
    assert tma_windows([(0, 400)], 400) == [(o, False) for o in (0, 64, 128, 192, 256)]
    assert tma_windows([(8, 300)], 308) == [(64, False), (128, False)]
    t = {"direct": 10.0, "capture": 20.0, "instantiate": 30.0, "first_launch": 5.0, "steady_launch": 2.0}
    assert c_ratio(t) == round(45.0 / 8.0, 2)
    assert c_ratio(dict(t, steady_launch=11.0)) is None
    fake = {"meta": {"date": "x"}, "kinds": {"k": {
        "level": "lib", "timing": t, "C": 5.6, "graph": {"node_types": {"kernel": 1}, "kernel_nodes": [
            {"n_params": 2, "param_bytes": 16, "args": rep, "tma": {}, "name": "k"}]},
        "relocation": {"relocated_identical": True}, "update": [{"kernel": "k", "set_same": 1.0}],
        "errors": ["e"]}}}
    md = render_markdown(fake)
    assert "| k | lib |" in md and "## Errors" in md
    print("self-test: ok")


# ---------------------------------------------------------------------------------------------
# ctypes bindings


class CudaError(RuntimeError):
    pass


class KNP(C.Structure):  # CUDA_KERNEL_NODE_PARAMS_v2 (72 bytes, kernelParams at 40)
    _fields_ = [("func", VP), ("gridDimX", C.c_uint), ("gridDimY", C.c_uint), ("gridDimZ", C.c_uint),
                ("blockDimX", C.c_uint), ("blockDimY", C.c_uint), ("blockDimZ", C.c_uint),
                ("sharedMemBytes", C.c_uint), ("kernelParams", VP), ("extra", VP), ("kern", VP),
                ("ctx", VP)]


class MSP(C.Structure):  # CUDA_MEMSET_NODE_PARAMS (40 bytes)
    _fields_ = [("dst", C.c_uint64), ("pitch", C.c_size_t), ("value", C.c_uint),
                ("elementSize", C.c_uint), ("width", C.c_size_t), ("height", C.c_size_t)]


class HeurResult(C.Structure):  # cublasLtMatmulHeuristicResult_t (96 bytes)
    _fields_ = [("algo", C.c_uint64 * 8), ("workspaceSize", C.c_size_t), ("state", C.c_int),
                ("wavesCount", C.c_float), ("reserved", C.c_int * 4)]


assert C.sizeof(KNP) == 72 and KNP.kernelParams.offset == 40 and KNP.ctx.offset == 64
assert C.sizeof(MSP) == 40 and C.sizeof(HeurResult) == 96

NODE_TYPES = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty",
              6: "wait_event", 7: "event_record", 8: "sema_signal", 9: "sema_wait",
              10: "mem_alloc", 11: "mem_free", 12: "batch_mem_op", 13: "conditional"}


def bind(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


I, U, SZ, I64, F, D = C.c_int, C.c_uint, C.c_size_t, C.c_int64, C.c_float, C.c_double


class Driver:
    def __init__(self, path="libcuda.so.1"):
        lib = C.CDLL(path)
        b = functools.partial(bind, lib)
        self.getErrorName = b("cuGetErrorName", I, I, VP)
        self.driverGetVersion = b("cuDriverGetVersion", I, VP)
        self.streamCreate = b("cuStreamCreate", I, VP, U)
        self.streamSynchronize = b("cuStreamSynchronize", I, VP)
        self.streamIsCapturing = b("cuStreamIsCapturing", I, VP, VP)
        self.beginCapture = b("cuStreamBeginCapture_v2", I, VP, I)
        self.endCapture = b("cuStreamEndCapture", I, VP, VP)
        self.instantiate = b("cuGraphInstantiateWithFlags", I, VP, VP, C.c_ulonglong)
        self.launch = b("cuGraphLaunch", I, VP, VP)
        self.graphDestroy = b("cuGraphDestroy", I, VP)
        self.execDestroy = b("cuGraphExecDestroy", I, VP)
        self.getNodes = b("cuGraphGetNodes", I, VP, VP, VP)
        self.nodeGetType = b("cuGraphNodeGetType", I, VP, VP)
        self.kernelNodeGetParams = b("cuGraphKernelNodeGetParams_v2", I, VP, VP)
        self.execKernelNodeSetParams = b("cuGraphExecKernelNodeSetParams_v2", I, VP, VP, VP)
        self.memsetNodeGetParams = b("cuGraphMemsetNodeGetParams", I, VP, VP)
        self.execMemsetNodeSetParams = b("cuGraphExecMemsetNodeSetParams", I, VP, VP, VP, VP)
        self.funcGetParamInfo = b("cuFuncGetParamInfo", I, VP, SZ, VP, VP)
        self.kernelGetParamInfo = b("cuKernelGetParamInfo", I, VP, SZ, VP, VP)
        self.funcGetName = b("cuFuncGetName", I, VP, VP)
        self.kernelGetName = b("cuKernelGetName", I, VP, VP)
        self.tensorMapReplaceAddress = b("cuTensorMapReplaceAddress", I, VP, VP)
        self.memGetInfo = b("cuMemGetInfo_v2", I, VP, VP)
        self.ctxGetCurrent = b("cuCtxGetCurrent", I, VP)

    def name(self, r):
        p = C.c_char_p()
        if self.getErrorName(r, C.addressof(p)) == 0 and p.value:
            return p.value.decode()
        return f"CUresult {r}"

    def ck(self, r, what):
        if r != 0:
            raise CudaError(f"{what}: {self.name(r)}")


def find_loaded(prefix):
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and os.path.basename(parts[-1]).startswith(prefix):
                    return parts[-1]
    except OSError:
        pass
    return None


def find_lib(prefix, globs):
    p = find_loaded(prefix)
    if p:
        return p
    for g in globs:
        hits = sorted(glob.glob(g))
        if hits:
            return hits[0]
    return prefix.rstrip(".") + ".so"


class Cublas:
    def __init__(self, path, lt_path):
        lib = C.CDLL(path)
        b = functools.partial(bind, lib)
        self.path, self.lt_path = path, lt_path
        self.create = b("cublasCreate_v2", I, VP)
        self.setStream = b("cublasSetStream_v2", I, VP, VP)
        self.setWorkspace = b("cublasSetWorkspace_v2", I, VP, VP, SZ)
        self.getVersion = b("cublasGetVersion_v2", I, VP, VP)
        self.gemmEx = b("cublasGemmEx", I, VP, I, I, I, I, I, VP, VP, I, I, VP, I, I, VP, VP, I, I, I, I)
        self.gemmStridedBatchedEx = b("cublasGemmStridedBatchedEx", I, VP, I, I, I, I, I, VP, VP, I, I,
                                      C.c_longlong, VP, I, I, C.c_longlong, VP, VP, I, I, C.c_longlong,
                                      I, I, I)
        self.sgemm = b("cublasSgemm_v2", I, VP, I, I, I, I, I, VP, VP, I, VP, I, VP, VP, I)
        self.sgemmStridedBatched = b("cublasSgemmStridedBatched", I, VP, I, I, I, I, I, VP, VP, I,
                                     C.c_longlong, VP, I, C.c_longlong, VP, VP, I, C.c_longlong, I)
        lt = C.CDLL(lt_path)
        b = functools.partial(bind, lt)
        self.ltCreate = b("cublasLtCreate", I, VP)
        self.ltGetVersion = b("cublasLtGetVersion", SZ)
        self.ltMatmul = b("cublasLtMatmul", I, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP,
                          SZ, VP)
        self.ltMatmulDescCreate = b("cublasLtMatmulDescCreate", I, VP, I, I)
        self.ltMatmulDescSetAttribute = b("cublasLtMatmulDescSetAttribute", I, VP, I, VP, SZ)
        self.ltMatrixLayoutCreate = b("cublasLtMatrixLayoutCreate", I, VP, I, C.c_uint64, C.c_uint64,
                                      C.c_int64)
        self.ltPrefCreate = b("cublasLtMatmulPreferenceCreate", I, VP)
        self.ltPrefSetAttribute = b("cublasLtMatmulPreferenceSetAttribute", I, VP, I, VP, SZ)
        self.ltHeuristic = b("cublasLtMatmulAlgoGetHeuristic", I, VP, VP, VP, VP, VP, VP, VP, I, VP, VP)


class Cudnn:
    def __init__(self, path):
        lib = C.CDLL(path)
        b = functools.partial(bind, lib)
        self.path = path
        self.getVersion = b("cudnnGetVersion", SZ)
        self.getErrorString = b("cudnnGetErrorString", C.c_char_p, I)
        self.create = b("cudnnCreate", I, VP)
        self.setStream = b("cudnnSetStream", I, VP, VP)
        self.createTensorDescriptor = b("cudnnCreateTensorDescriptor", I, VP)
        self.setTensor4dDescriptor = b("cudnnSetTensor4dDescriptor", I, VP, I, I, I, I, I, I)
        self.deriveBN = b("cudnnDeriveBNTensorDescriptor", I, VP, VP, I)
        self.bnInference = b("cudnnBatchNormalizationForwardInference", I, VP, I, VP, VP, VP, VP, VP, VP,
                             VP, VP, VP, VP, VP, D)
        self.bnTrainWsSize = b("cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize", I, VP, I, I,
                               VP, VP, VP, VP, VP, VP)
        self.bnTrainReserveSize = b("cudnnGetBatchNormalizationTrainingExReserveSpaceSize", I, VP, I, I,
                                    VP, VP, VP)
        self.bnTrainEx = b("cudnnBatchNormalizationForwardTrainingEx", I, VP, I, I, VP, VP, VP, VP, VP, VP,
                           VP, VP, VP, VP, VP, D, VP, VP, D, VP, VP, VP, VP, SZ, VP, SZ)
        self.bkCreate = b("cudnnBackendCreateDescriptor", I, I, VP)
        self.bkSet = b("cudnnBackendSetAttribute", I, VP, I, I, C.c_int64, VP)
        self.bkGet = b("cudnnBackendGetAttribute", I, VP, I, I, C.c_int64, VP, VP)
        self.bkFinalize = b("cudnnBackendFinalize", I, VP)
        self.bkExecute = b("cudnnBackendExecute", I, VP, VP, VP)

    def ck(self, r, what):
        if r != 0:
            s = self.getErrorString(r)
            raise CudaError(f"{what}: cudnn status {r} {s.decode() if s else ''}")


class CublasStatus:
    @staticmethod
    def ck(r, what):
        if r != 0:
            raise CudaError(f"{what}: cublas status {r}")


def check_symbols():
    """Resolve every bound symbol against the libraries found here (no GPU needed)."""
    cu13 = glob.glob("/usr/local/cuda/lib64/libcublas.so.*") or ["libcublas.so.13"]
    Driver(os.environ.get("GRAPH_PROBE_LIBCUDA", "libcuda.so.1"))
    Cublas(find_lib("libcublas.so", ["/usr/local/cuda/lib64/libcublas.so.13"]),
           find_lib("libcublasLt.so", ["/usr/local/cuda/lib64/libcublasLt.so.13"]))
    Cudnn(find_lib("libcudnn.so", ["/usr/local/cuda/lib64/libcudnn.so.9"]))
    print("symbols: ok", cu13[0])


# ---------------------------------------------------------------------------------------------
# The probe proper (needs torch and a GPU).


class Probe:
    def __init__(self, args):
        import torch
        self.torch = torch
        self.args = args
        self.deadline = time.monotonic() + args.budget
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        self.drv = Driver()
        s = VP()
        self.drv.ck(self.drv.streamCreate(C.addressof(s), 1), "cuStreamCreate(NON_BLOCKING)")
        self.s = s.value
        self.ext = torch.cuda.ExternalStream(self.s)
        torch.cuda.synchronize()
        torch.cuda.set_stream(self.ext)
        # Make torch load cuBLAS, cuBLASLt and cuDNN before we look for them.
        a = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
        torch.nn.functional.linear(a, a, a[0])
        torch.mm(a.float(), a.float())
        x = torch.randn(1, 8, 8, 8, device="cuda")
        torch.nn.functional.conv2d(x, torch.randn(8, 8, 3, 3, device="cuda"), padding=1)
        self.sync()
        sp = os.path.dirname(os.path.dirname(torch.__file__))
        self.blas = Cublas(find_lib("libcublas.so", [f"{sp}/nvidia/cu13/lib/libcublas.so.*",
                                                     f"{sp}/nvidia/cublas/lib/libcublas.so.*"]),
                           find_lib("libcublasLt.so", [f"{sp}/nvidia/cu13/lib/libcublasLt.so.*",
                                                       f"{sp}/nvidia/cublas/lib/libcublasLt.so.*"]))
        self.dnn = Cudnn(find_lib("libcudnn.so", [f"{sp}/nvidia/cudnn/lib/libcudnn.so.9"]))
        # The ctypes cost of an argument list: libc's abs() called through a prototype with the same
        # argument types (extra arguments are ignored under the x86-64 SysV convention).
        self.abs_addr = C.cast(C.CDLL(None).abs, VP).value
        self._bh = None
        self._lt = None
        self._dh = None
        self.kept = []

    # -- helpers
    def sync(self):
        self.drv.ck(self.drv.streamSynchronize(self.s), "cuStreamSynchronize")

    def left(self):
        return self.deadline - time.monotonic()

    def overhead_fn(self, f, args):
        proto = C.CFUNCTYPE(C.c_int, *f.argtypes)(self.abs_addr)
        return functools.partial(proto, *args)

    def blas_handle(self):
        if self._bh is None:
            h = VP()
            CublasStatus.ck(self.blas.create(C.addressof(h)), "cublasCreate")
            CublasStatus.ck(self.blas.setStream(h, self.s), "cublasSetStream")
            self.blas_ws = self.torch.empty(32 << 20, dtype=self.torch.uint8, device="cuda")
            CublasStatus.ck(self.blas.setWorkspace(h, self.blas_ws.data_ptr(), 32 << 20), "cublasSetWorkspace")
            self._bh = h.value
        return self._bh

    def lt_handle(self):
        if self._lt is None:
            h = VP()
            CublasStatus.ck(self.blas.ltCreate(C.addressof(h)), "cublasLtCreate")
            self._lt = h.value
            self.lt_ws = self.torch.empty(1 << 20, dtype=self.torch.uint8, device="cuda")
        return self._lt

    def dnn_handle(self):
        if self._dh is None:
            h = VP()
            self.dnn.ck(self.dnn.create(C.addressof(h)), "cudnnCreate")
            self.dnn.ck(self.dnn.setStream(h, self.s), "cudnnSetStream")
            self._dh = h.value
        return self._dh

    # -- capture
    def capture(self, call):
        """Capture one call; returns (graph, value the call returned). Ends a broken capture."""
        d = self.drv
        d.ck(d.beginCapture(self.s, 1), "cuStreamBeginCapture_v2")
        g = VP()
        try:
            rv = call()
        except BaseException:
            d.endCapture(self.s, C.addressof(g))
            if g.value:
                d.graphDestroy(g)
            raise
        r = d.endCapture(self.s, C.addressof(g))
        if r != 0:
            if g.value:
                d.graphDestroy(g)
            raise CudaError(f"cuStreamEndCapture: {d.name(r)}")
        return g.value, rv

    def instantiate(self, g):
        e = VP()
        self.drv.ck(self.drv.instantiate(C.addressof(e), g, 0), "cuGraphInstantiateWithFlags")
        return e.value

    # -- graph reading
    def nodes(self, g):
        d = self.drv
        n = C.c_size_t(0)
        d.ck(d.getNodes(g, None, C.addressof(n)), "cuGraphGetNodes(count)")
        arr = (VP * max(n.value, 1))()
        d.ck(d.getNodes(g, C.addressof(arr), C.addressof(n)), "cuGraphGetNodes")
        out = []
        for i in range(n.value):
            t = C.c_int()
            d.ck(d.nodeGetType(arr[i], C.addressof(t)), "cuGraphNodeGetType")
            out.append((arr[i], t.value))
        return out

    def param_layout(self, p):
        d = self.drv
        layout = []
        for i in range(4096):
            off, size = C.c_size_t(), C.c_size_t()
            if p.func:
                r = d.funcGetParamInfo(p.func, i, C.addressof(off), C.addressof(size))
            elif p.kern:
                r = d.kernelGetParamInfo(p.kern, i, C.addressof(off), C.addressof(size))
            else:
                r = 1
            if r != 0:
                break
            layout.append((off.value, size.value))
        return layout

    def kernel_node(self, node):
        """Params struct, layout, packed argument bytes, launch form and name of a kernel node."""
        d = self.drv
        p = KNP()
        d.ck(d.kernelNodeGetParams(node, C.addressof(p)), "cuGraphKernelNodeGetParams_v2")
        layout = self.param_layout(p)
        name = C.c_char_p()
        if p.func and d.funcGetName(C.addressof(name), p.func) == 0 and name.value:
            kname = name.value.decode(errors="replace")
        elif p.kern and d.kernelGetName(C.addressof(name), p.kern) == 0 and name.value:
            kname = name.value.decode(errors="replace")
        else:
            kname = None
        raw = None
        form = None
        if p.kernelParams:
            form = "kernelParams"
            if layout:
                nbytes = max(o + s for o, s in layout)
                buf = bytearray(nbytes)
                for i, (o, s) in enumerate(layout):
                    ptr = VP.from_address(p.kernelParams + 8 * i).value
                    buf[o:o + s] = C.string_at(ptr, s)
                raw = bytes(buf)
        elif p.extra:
            form = "extra"
            bufptr, sizeptr, i = None, None, 0
            while i < 64:
                key = VP.from_address(p.extra + 8 * i).value or 0
                if key == 0:
                    break
                val = VP.from_address(p.extra + 8 * (i + 1)).value
                if key == 1:
                    bufptr = val
                elif key == 2:
                    sizeptr = val
                i += 2
            if bufptr and sizeptr:
                size = C.c_size_t.from_address(sizeptr).value
                packed = C.string_at(bufptr, size)
                if layout:
                    buf = bytearray(max(max(o + s for o, s in layout), 0))
                    for o, s in layout:
                        buf[o:o + s] = packed[o:o + s]
                    raw = bytes(buf)
                else:
                    raw = packed
        return {"params": p, "layout": layout, "bytes": raw, "form": form, "name": kname}

    def params_with_bytes(self, p, layout, data, keep):
        """A copy of params p whose arguments are `data` (packed by layout); keep holds the buffers."""
        q = KNP()
        C.memmove(C.addressof(q), C.addressof(p), C.sizeof(KNP))
        buf = C.create_string_buffer(bytes(data), max(len(data), 1))
        keep.append(buf)
        if layout:
            ptrs = (VP * len(layout))(*[C.addressof(buf) + o for o, _ in layout])
            keep.append(ptrs)
            q.kernelParams = C.addressof(ptrs)
            q.extra = None
        else:
            size = C.c_size_t(len(data))
            ext = (VP * 5)(1, C.addressof(buf), 2, C.addressof(size), 0)
            keep.extend([size, ext])
            q.kernelParams = None
            q.extra = C.addressof(ext)
        return q, buf

    # -- tensors
    def span(self, t):
        if t.numel() == 0:
            return 0
        return (sum((s - 1) * st for s, st in zip(t.shape, t.stride())) + 1) * t.element_size()

    def carve(self, specs, tag):
        """Tensors as views of one buffer. specs: [(name, shape, dtype, channels_last)]. Capture 2's
        set ('b') puts 512*(i+1) more bytes before tensor i than capture 1's, so every tensor moves by
        its own delta."""
        torch = self.torch
        offs, o = [], 256
        for i, (name, shape, dtype, cl) in enumerate(specs):
            o += 512 * (i + 1) if tag == "b" else 0
            o = (o + 255) // 256 * 256
            offs.append(o)
            n = 1
            for x in shape:
                n *= x
            o += n * torch.empty((), dtype=dtype).element_size() + 256
        buf = torch.empty(o + 256, dtype=torch.uint8, device="cuda")
        out = {}
        for (name, shape, dtype, cl), off in zip(specs, offs):
            es = torch.empty((), dtype=dtype).element_size()
            n = 1
            for x in shape:
                n *= x
            flat = buf[off:off + n * es].view(dtype)
            if cl:
                N, Cc, H, W = shape
                out[name] = flat.view(N, H, W, Cc).permute(0, 3, 1, 2)
            else:
                out[name] = flat.view(shape)
        out["_buf"] = buf
        return out

    def fill(self, ts, seed):
        g = self.torch.Generator(device="cuda")
        g.manual_seed(seed)
        for k, t in ts.items():
            if k.startswith("_") or not t.is_floating_point():
                continue
            t.copy_(self.torch.randn(t.shape, generator=g, device="cuda", dtype=t.dtype) * 0.5)


# ---------------------------------------------------------------------------------------------
# Call kinds. Each: make(tag) -> set (dict of tensors and state); bind(set) -> zero-argument call
# (lib: returns a status, checked by .ck; torch: returns the output tensors); tensors(set, rv) ->
# [(name, ptr, span)]; outputs(set, rv) -> tensors to compare; state(set) -> tensors reset before
# each compared run.


class Kind:
    level = "lib"
    family = ""
    shape = ""
    moving_outputs = False

    def __init__(self, probe, name):
        self.p = probe
        self.name = name

    def ck(self, rv):
        pass

    def overhead(self, st):
        return None

    def state(self, st):
        return []

    def tensors(self, st, rv):
        return [(k, t.data_ptr(), self.p.span(t)) for k, t in st.items()
                if not k.startswith("_") and hasattr(t, "data_ptr") and t.numel() > 0] + self.fixed()

    def fixed(self):
        return []


class LibKind(Kind):
    def bind(self, st):
        f, args = self.fn_args(st)
        st["_f"], st["_args"] = f, args
        return functools.partial(f, *args)

    def overhead(self, st):
        return self.p.overhead_fn(st["_f"], st["_args"])

    def ck(self, rv):
        if rv != 0:
            raise CudaError(f"{self.name}: status {rv}")


class LtLinearBias(LibKind):
    family = "cublasLtMatmul"

    def __init__(self, probe, name, M, K=768, N=768):
        super().__init__(probe, name)
        self.M, self.K, self.N = M, K, N
        self.shape = f"bf16 {M}x{K} @ {K}x{N}^T + bias"
        p, b = probe, probe.blas
        self.h = p.lt_handle()
        bf16 = 14
        self.layouts = []
        for rows, cols, ld in ((K, N, K), (K, M, K), (N, M, N)):
            l = VP()
            CublasStatus.ck(b.ltMatrixLayoutCreate(C.addressof(l), bf16, rows, cols, ld), "MatrixLayoutCreate")
            self.layouts.append(l.value)
        pref = VP()
        CublasStatus.ck(b.ltPrefCreate(C.addressof(pref)), "PreferenceCreate")
        wsz = C.c_uint64(1 << 20)
        CublasStatus.ck(b.ltPrefSetAttribute(pref, 1, C.addressof(wsz), 8), "PreferenceSetAttribute")
        self.pref = pref.value
        self.alpha, self.beta = C.c_float(1.0), C.c_float(0.0)
        self.algo = None

    def make(self, tag):
        M, K, N = self.M, self.K, self.N
        bf = self.p.torch.bfloat16
        return self.p.carve([("x", (M, K), bf, False), ("w", (N, K), bf, False), ("bias", (N,), bf, False),
                             ("out", (M, N), bf, False)], tag)

    def fn_args(self, st):
        b = self.p.blas
        bias = C.c_void_p(st["bias"].data_ptr())
        # The bias pointer lives in the descriptor: one descriptor per set.
        desc = VP()
        CublasStatus.ck(b.ltMatmulDescCreate(C.addressof(desc), 68, 0), "MatmulDescCreate")
        for attr, val in ((3, C.c_int(1)), (4, C.c_int(0)), (7, C.c_int(4)), (26, C.c_int(14)), (8, bias)):
            CublasStatus.ck(b.ltMatmulDescSetAttribute(desc, attr, C.addressof(val), C.sizeof(val)),
                            f"MatmulDescSetAttribute {attr}")
        st["_desc"] = desc
        Ad, Bd, Dd = self.layouts
        if self.algo is None:
            res = HeurResult()
            n = C.c_int(0)
            CublasStatus.ck(b.ltHeuristic(self.h, desc, Ad, Bd, Dd, Dd, self.pref, 1, C.addressof(res),
                                          C.addressof(n)), "MatmulAlgoGetHeuristic")
            if n.value < 1:
                raise CudaError("no cuBLASLt algorithm")
            self.algo = res
        return b.ltMatmul, (self.h, desc.value, C.addressof(self.alpha), st["w"].data_ptr(), Ad,
                            st["x"].data_ptr(), Bd, C.addressof(self.beta), st["out"].data_ptr(), Dd,
                            st["out"].data_ptr(), Dd, C.addressof(self.algo), self.p.lt_ws.data_ptr(),
                            1 << 20, self.p.s)

    def outputs(self, st, rv):
        return [st["out"]]

    def fixed(self):
        return [("lt_ws", self.p.lt_ws.data_ptr(), 1 << 20)]


class GemmEx(LibKind):
    family = "cublasGemmEx"

    def __init__(self, probe, name, M=128, K=768, N=768):
        super().__init__(probe, name)
        self.M, self.K, self.N = M, K, N
        self.shape = f"bf16 {M}x{K} @ {K}x{N}^T"
        self.h = probe.blas_handle()
        self.alpha, self.beta = C.c_float(1.0), C.c_float(0.0)

    def make(self, tag):
        bf = self.p.torch.bfloat16
        return self.p.carve([("x", (self.M, self.K), bf, False), ("w", (self.N, self.K), bf, False),
                             ("out", (self.M, self.N), bf, False)], tag)

    def fn_args(self, st):
        M, K, N = self.M, self.K, self.N
        return self.p.blas.gemmEx, (self.h, 1, 0, N, M, K, C.addressof(self.alpha), st["w"].data_ptr(), 14, K,
                                    st["x"].data_ptr(), 14, K, C.addressof(self.beta), st["out"].data_ptr(),
                                    14, N, 68, -1)

    def outputs(self, st, rv):
        return [st["out"]]

    def fixed(self):
        return [("cublas_ws", self.p.blas_ws.data_ptr(), 32 << 20)]


class Bmm(LibKind):
    """C[b] = A[b] @ B[b] row-major: cuBLAS column-major with A and B swapped."""

    def __init__(self, probe, name, fp32, Bt=8, M=128, K=64, N=128):
        super().__init__(probe, name)
        self.fp32 = fp32
        self.family = "cublasSgemmStridedBatched" if fp32 else "cublasGemmStridedBatchedEx"
        self.Bt, self.M, self.K, self.N = Bt, M, K, N
        self.shape = f"{'fp32' if fp32 else 'bf16'} {Bt}x({M}x{K} @ {K}x{N})"
        self.h = probe.blas_handle()
        self.alpha, self.beta = C.c_float(1.0), C.c_float(0.0)

    def make(self, tag):
        dt = self.p.torch.float32 if self.fp32 else self.p.torch.bfloat16
        return self.p.carve([("a", (self.Bt, self.M, self.K), dt, False), ("b", (self.Bt, self.K, self.N), dt, False),
                             ("out", (self.Bt, self.M, self.N), dt, False)], tag)

    def fn_args(self, st):
        Bt, M, K, N = self.Bt, self.M, self.K, self.N
        a, b, o = st["a"].data_ptr(), st["b"].data_ptr(), st["out"].data_ptr()
        al, be = C.addressof(self.alpha), C.addressof(self.beta)
        if self.fp32:
            return self.p.blas.sgemmStridedBatched, (self.h, 0, 0, N, M, K, al, b, N, K * N, a, K, M * K, be,
                                                     o, N, M * N, Bt)
        return self.p.blas.gemmStridedBatchedEx, (self.h, 0, 0, N, M, K, al, b, 14, N, K * N, a, 14, K, M * K,
                                                  be, o, 14, N, M * N, Bt, 68, -1)

    def outputs(self, st, rv):
        return [st["out"]]

    def fixed(self):
        return [("cublas_ws", self.p.blas_ws.data_ptr(), 32 << 20)]


class Sgemm(LibKind):
    family = "cublasSgemm_v2"

    def __init__(self, probe, name, M=128, K=768, N=768):
        super().__init__(probe, name)
        self.M, self.K, self.N = M, K, N
        self.shape = f"fp32 {M}x{K} @ {K}x{N}"
        self.h = probe.blas_handle()
        self.alpha, self.beta = C.c_float(1.0), C.c_float(0.0)

    def make(self, tag):
        f = self.p.torch.float32
        return self.p.carve([("a", (self.M, self.K), f, False), ("b", (self.K, self.N), f, False),
                             ("out", (self.M, self.N), f, False)], tag)

    def fn_args(self, st):
        M, K, N = self.M, self.K, self.N
        return self.p.blas.sgemm, (self.h, 0, 0, N, M, K, C.addressof(self.alpha), st["b"].data_ptr(), N,
                                   st["a"].data_ptr(), K, C.addressof(self.beta), st["out"].data_ptr(), N)

    def outputs(self, st, rv):
        return [st["out"]]

    def fixed(self):
        return [("cublas_ws", self.p.blas_ws.data_ptr(), 32 << 20)]


class BatchNorm(LibKind):
    def __init__(self, probe, name, training, shape=(1, 64, 32, 32)):
        super().__init__(probe, name)
        self.training = training
        self.family = ("cudnnBatchNormalizationForwardTrainingEx" if training
                       else "cudnnBatchNormalizationForwardInference")
        self.shp = shape
        self.shape = "fp32 " + "x".join(map(str, shape)) + (" train" if training else " eval")
        d = probe.dnn
        self.h = probe.dnn_handle()
        xd, bnd = VP(), VP()
        d.ck(d.createTensorDescriptor(C.addressof(xd)), "CreateTensorDescriptor")
        d.ck(d.setTensor4dDescriptor(xd, 0, 0, *shape), "SetTensor4dDescriptor")
        d.ck(d.createTensorDescriptor(C.addressof(bnd)), "CreateTensorDescriptor")
        d.ck(d.deriveBN(bnd, xd, 1), "DeriveBNTensorDescriptor")
        self.xd, self.bnd = xd.value, bnd.value
        self.one, self.zero = C.c_float(1.0), C.c_float(0.0)
        self.ws_size = self.rs_size = 0
        if training:
            ws, rs = C.c_size_t(0), C.c_size_t(0)
            d.ck(d.bnTrainWsSize(self.h, 1, 0, self.xd, None, self.xd, self.bnd, None, C.addressof(ws)),
                 "GetBatchNormalizationForwardTrainingExWorkspaceSize")
            d.ck(d.bnTrainReserveSize(self.h, 1, 0, None, self.xd, C.addressof(rs)),
                 "GetBatchNormalizationTrainingExReserveSpaceSize")
            self.ws_size, self.rs_size = ws.value, rs.value

    def make(self, tag):
        f = self.p.torch.float32
        Cc = self.shp[1]
        specs = [("x", self.shp, f, False), ("y", self.shp, f, False), ("scale", (Cc,), f, False),
                 ("bias", (Cc,), f, False), ("mean", (Cc,), f, False), ("var", (Cc,), f, False)]
        if self.training:
            specs += [("save_mean", (Cc,), f, False), ("save_invvar", (Cc,), f, False)]
            if self.ws_size:
                specs.append(("ws", (self.ws_size,), self.p.torch.uint8, False))
            if self.rs_size:
                specs.append(("reserve", (self.rs_size,), self.p.torch.uint8, False))
        st = self.p.carve(specs, tag)
        return st

    def prepare(self, st):
        st["var"].abs_().add_(0.5)
        st["_init"] = [(st["mean"], st["mean"].clone()), (st["var"], st["var"].clone())]

    def state(self, st):
        return st.get("_init", []) if self.training else []

    def fn_args(self, st):
        d = self.p.dnn
        g = lambda k: st[k].data_ptr()
        if not self.training:
            return d.bnInference, (self.h, 1, C.addressof(self.one), C.addressof(self.zero), self.xd, g("x"),
                                   self.xd, g("y"), self.bnd, g("scale"), g("bias"), g("mean"), g("var"), 1e-5)
        ws = g("ws") if "ws" in st else None
        rs = g("reserve") if "reserve" in st else None
        return d.bnTrainEx, (self.h, 1, 0, C.addressof(self.one), C.addressof(self.zero), self.xd, g("x"), None,
                             None, self.xd, g("y"), self.bnd, g("scale"), g("bias"), 0.1, g("mean"), g("var"),
                             1e-5, g("save_mean"), g("save_invvar"), None, ws, self.ws_size, rs, self.rs_size)

    def outputs(self, st, rv):
        outs = [st["y"]]
        if self.training:
            outs += [st["save_mean"], st["save_invvar"], st["mean"], st["var"]]
        return outs


class BackendConv(LibKind):
    """cuDNN backend convolution forward, built with the backend API (what PyTorch's conv reaches)."""
    family = "cudnnBackendExecute (conv)"

    def __init__(self, probe, name, half_cl, shape=(1, 64, 32, 32), K=64):
        super().__init__(probe, name)
        self.half_cl = half_cl
        self.shp, self.Kout = shape, K
        self.shape = ("fp16 channels-last " if half_cl else "fp32 ") + "x".join(map(str, shape)) + f" * {K}x{shape[1]}x3x3"
        d = probe.dnn
        self.h = probe.dnn_handle()
        self.keep = []
        N, Cc, H, W = shape
        dt = 2 if half_cl else 0

        def strides(n, c, h, w):
            return (c * h * w, 1, w * c, c) if half_cl else (c * h * w, h * w, w, 1)

        x = self.tensor(1, (N, Cc, H, W), strides(N, Cc, H, W), dt)
        w = self.tensor(2, (K, Cc, 3, 3), strides(K, Cc, 3, 3), dt)
        y = self.tensor(3, (N, K, H, W), strides(N, K, H, W), dt)
        conv = self.create(1)
        self.set(conv, 100, 1, C.c_int, [0])
        self.set(conv, 101, 7, C.c_int, [1])
        self.set(conv, 106, 3, C.c_int64, [2])
        for attr in (102, 103):
            self.set(conv, attr, 3, C.c_int64, [1, 1])
        for attr in (104, 105):
            self.set(conv, attr, 3, C.c_int64, [1, 1])
        d.ck(d.bkFinalize(conv), "finalize conv")
        op = self.create(10)
        for attr, desc in ((704, x), (703, w), (705, y), (702, conv)):
            self.set(op, attr, 15, VP, [desc])
        self.set(op, 700, 4, C.c_float, [1.0])
        self.set(op, 701, 4, C.c_float, [0.0])
        d.ck(d.bkFinalize(op), "finalize conv op")
        og = self.create(15)
        try:
            self.set(og, 800, 0, VP, [self.h])
        except CudaError:
            pass
        self.set(og, 801, 15, VP, [op])
        d.ck(d.bkFinalize(og), "finalize operation graph")
        heur = self.create(4)
        self.set(heur, 201, 15, VP, [og])
        self.set(heur, 200, 8, C.c_int, [3])
        d.ck(d.bkFinalize(heur), "finalize engine heuristics")
        n = C.c_int64(0)
        d.ck(d.bkGet(heur, 202, 15, 0, C.addressof(n), None), "heuristics results count")
        if n.value < 1:
            raise CudaError("no engine config")
        cfgs = (VP * n.value)(*[self.create(3) for _ in range(n.value)])
        n2 = C.c_int64(0)
        d.ck(d.bkGet(heur, 202, 15, n.value, C.addressof(n2), C.addressof(cfgs)), "heuristics results")
        self.plan = None
        for i in range(n2.value):
            plan = self.create(5)
            try:
                self.set(plan, 400, 0, VP, [self.h])
            except CudaError:
                pass
            self.set(plan, 401, 15, VP, [cfgs[i]])
            if d.bkFinalize(plan) == 0:
                self.plan = plan
                self.engine_index = i
                break
        if self.plan is None:
            raise CudaError("no execution plan finalized")
        wsz, cnt = C.c_int64(0), C.c_int64(0)
        d.ck(d.bkGet(self.plan, 402, 3, 1, C.addressof(cnt), C.addressof(wsz)), "plan workspace size")
        self.ws_size = wsz.value
        self.ws = probe.torch.empty(max(self.ws_size, 256), dtype=probe.torch.uint8, device="cuda")

    def create(self, t):
        v = VP()
        self.p.dnn.ck(self.p.dnn.bkCreate(t, C.addressof(v)), f"BackendCreateDescriptor {t}")
        return v.value

    def set(self, desc, attr, atype, ctype, vals):
        arr = (ctype * len(vals))(*vals)
        self.keep.append(arr)
        self.p.dnn.ck(self.p.dnn.bkSet(desc, attr, atype, len(vals), C.addressof(arr)), f"BackendSetAttribute {attr}")

    def tensor(self, uid, dims, strides, dt):
        t = self.create(17)
        self.set(t, 901, 1, C.c_int, [dt])
        self.set(t, 902, 3, C.c_int64, list(dims))
        self.set(t, 903, 3, C.c_int64, list(strides))
        self.set(t, 906, 3, C.c_int64, [uid])
        self.set(t, 900, 3, C.c_int64, [16])
        self.p.dnn.ck(self.p.dnn.bkFinalize(t), "finalize tensor")
        return t

    def make(self, tag):
        dt = self.p.torch.float16 if self.half_cl else self.p.torch.float32
        N, Cc, H, W = self.shp
        return self.p.carve([("x", self.shp, dt, self.half_cl), ("w", (self.Kout, Cc, 3, 3), dt, self.half_cl),
                             ("y", (N, self.Kout, H, W), dt, self.half_cl)], tag)

    def fn_args(self, st):
        vp = self.create(16)
        self.set(vp, 1000, 3, C.c_int64, [1, 2, 3])
        self.set(vp, 1001, 6, VP, [st["x"].data_ptr(), st["w"].data_ptr(), st["y"].data_ptr()])
        self.set(vp, 1003, 6, VP, [self.ws.data_ptr()])
        self.p.dnn.ck(self.p.dnn.bkFinalize(vp), "finalize variant pack")
        return self.p.dnn.bkExecute, (self.h, self.plan, vp)

    def outputs(self, st, rv):
        return [st["y"]]

    def fixed(self):
        return [("cudnn_ws", self.ws.data_ptr(), self.ws.numel())]


class TorchKind(Kind):
    """The PyTorch op itself, on our stream; outputs come from PyTorch's allocator."""
    level = "torch"

    def __init__(self, probe, name, family, shape, specs, op, out_names, state_names=(), prep=None):
        super().__init__(probe, name)
        self.family, self.shape, self.specs, self.op = family, shape, specs, op
        self.out_names, self.state_names, self.prep = out_names, state_names, prep

    def make(self, tag):
        return self.p.carve(self.specs, tag)

    def prepare(self, st):
        if self.prep:
            self.prep(st)
        st["_init"] = [(st[k], st[k].clone()) for k in self.state_names]

    def state(self, st):
        return st.get("_init", [])

    def bind(self, st):
        return functools.partial(self.op, st)

    def outputs(self, st, rv):
        rv = rv if isinstance(rv, (tuple, list)) else (rv,)
        return [t for n, t in zip(self.out_names, rv) if n and t is not None and t.numel() > 0] + \
               [st[k] for k in self.state_names]

    def tensors(self, st, rv):
        ins = [(k, t.data_ptr(), self.p.span(t)) for k, t in st.items()
               if not k.startswith("_") and hasattr(t, "data_ptr") and t.numel() > 0]
        rv = rv if isinstance(rv, (tuple, list)) else (rv,)
        outs = [(n, t.data_ptr(), self.p.span(t)) for n, t in zip(self.out_names, rv)
                if n and hasattr(t, "data_ptr") and t.numel() > 0]
        return ins + outs


def torch_kinds(p):
    torch = p.torch
    F = torch.nn.functional
    bf, f32, f16 = torch.bfloat16, torch.float32, torch.float16
    ks = []
    def sdpa(st):
        return F.scaled_dot_product_attention(st["q"], st["k"], st["v"])
    ks.append(TorchKind(p, "torch_sdpa_cudnn", "F.scaled_dot_product_attention, CUDNN_ATTENTION (cudnnBackendExecute)",
                        "bf16 1x8x128x64", [("q", (1, 8, 128, 64), bf, False), ("k", (1, 8, 128, 64), bf, False),
                                            ("v", (1, 8, 128, 64), bf, False)], sdpa, ["out"]))
    for M in (128, 1):
        ks.append(TorchKind(p, f"torch_linear_bias_{M}", "F.linear + bias (cublasLtMatmul)", f"bf16 {M}x768 @ 768x768^T + bias",
                            [("x", (M, 768), bf, False), ("w", (768, 768), bf, False), ("bias", (768,), bf, False)],
                            lambda st: F.linear(st["x"], st["w"], st["bias"]), ["out"]))
    ks.append(TorchKind(p, "torch_linear_128", "F.linear (cublasGemmEx)", "bf16 128x768 @ 768x768^T",
                        [("x", (128, 768), bf, False), ("w", (768, 768), bf, False)],
                        lambda st: F.linear(st["x"], st["w"]), ["out"]))
    ks.append(TorchKind(p, "torch_bmm_bf16", "torch.bmm (cublasGemmStridedBatchedEx)", "bf16 8x(128x64 @ 64x128)",
                        [("a", (8, 128, 64), bf, False), ("b", (8, 64, 128), bf, False)],
                        lambda st: torch.bmm(st["a"], st["b"]), ["out"]))
    ks.append(TorchKind(p, "torch_mm_fp32", "torch.mm (cublasSgemm_v2)", "fp32 128x768 @ 768x768",
                        [("a", (128, 768), f32, False), ("b", (768, 768), f32, False)],
                        lambda st: torch.mm(st["a"], st["b"]), ["out"]))
    ks.append(TorchKind(p, "torch_bmm_fp32", "torch.bmm (cublasSgemmStridedBatched)", "fp32 8x(128x64 @ 64x128)",
                        [("a", (8, 128, 64), f32, False), ("b", (8, 64, 128), f32, False)],
                        lambda st: torch.bmm(st["a"], st["b"]), ["out"]))
    bn_specs = [("x", (1, 64, 32, 32), f32, False), ("weight", (64,), f32, False), ("bias", (64,), f32, False),
                ("running_mean", (64,), f32, False), ("running_var", (64,), f32, False)]
    bn_prep = lambda st: st["running_var"].abs_().add_(0.5)
    ks.append(TorchKind(p, "torch_bn_eval", "aten.cudnn_batch_norm eval (cudnnBatchNormalizationForwardInference)",
                        "fp32 1x64x32x32 eval", bn_specs,
                        lambda st: torch.ops.aten.cudnn_batch_norm(st["x"], st["weight"], st["bias"], st["running_mean"],
                                                                   st["running_var"], False, 0.1, 1e-5),
                        ["y", None, None, None], prep=bn_prep))
    ks.append(TorchKind(p, "torch_bn_train", "aten.cudnn_batch_norm train (cudnnBatchNormalizationForwardTrainingEx)",
                        "fp32 1x64x32x32 train", bn_specs,
                        lambda st: torch.ops.aten.cudnn_batch_norm(st["x"], st["weight"], st["bias"], st["running_mean"],
                                                                   st["running_var"], True, 0.1, 1e-5),
                        ["y", "save_mean", "save_var", None], state_names=("running_mean", "running_var"), prep=bn_prep))
    ks.append(TorchKind(p, "torch_conv_fp32", "F.conv2d (cudnnBackendExecute)", "fp32 1x64x32x32 * 64x64x3x3",
                        [("x", (1, 64, 32, 32), f32, False), ("w", (64, 64, 3, 3), f32, False)],
                        lambda st: F.conv2d(st["x"], st["w"], None, 1, 1), ["out"]))
    ks.append(TorchKind(p, "torch_conv_fp16_cl", "F.conv2d (cudnnBackendExecute)", "fp16 channels-last 1x64x32x32 * 64x64x3x3",
                        [("x", (1, 64, 32, 32), f16, True), ("w", (64, 64, 3, 3), f16, True)],
                        lambda st: F.conv2d(st["x"], st["w"], None, 1, 1), ["out"]))

    return ks


LIB_KINDS = [
    ("lt_linear_bias_128", lambda p, n: LtLinearBias(p, n, 128)),
    ("lt_linear_bias_1", lambda p, n: LtLinearBias(p, n, 1)),
    ("gemmex_128", lambda p, n: GemmEx(p, n)),
    ("gemm_strided_batched_ex_bf16", lambda p, n: Bmm(p, n, False)),
    ("sgemm_128", lambda p, n: Sgemm(p, n)),
    ("sgemm_strided_batched_fp32", lambda p, n: Bmm(p, n, True)),
    ("bn_inference", lambda p, n: BatchNorm(p, n, False)),
    ("bn_training", lambda p, n: BatchNorm(p, n, True)),
    ("conv_fp32", lambda p, n: BackendConv(p, n, False)),
    ("conv_fp16_cl", lambda p, n: BackendConv(p, n, True)),
]

# torch kind -> the lib kind whose direct call is the library's own share of it
TORCH_TO_LIB = {"torch_linear_bias_128": "lt_linear_bias_128", "torch_linear_bias_1": "lt_linear_bias_1",
                "torch_linear_128": "gemmex_128", "torch_bmm_bf16": "gemm_strided_batched_ex_bf16",
                "torch_mm_fp32": "sgemm_128", "torch_bmm_fp32": "sgemm_strided_batched_fp32",
                "torch_bn_eval": "bn_inference", "torch_bn_train": "bn_training",
                "torch_conv_fp32": "conv_fp32", "torch_conv_fp16_cl": "conv_fp16_cl"}


# ---------------------------------------------------------------------------------------------
# Measurements


def time_capture(p, kind, st, reps):
    d, s = p.drv, p.s
    call = kind.bind(st)
    for _ in range(3):
        kind.ck(call())
    p.sync()
    S = {k: [] for k in ("direct", "begin", "call_captured", "end", "capture", "instantiate", "first_launch",
                         "steady_launch")}
    ga, ea = VP(), VP()
    keep = []

    def direct():
        t0 = ns()
        rv = call()
        t1 = ns()
        kind.ck(rv)
        keep.append(rv)
        S["direct"].append(t1 - t0)

    def chain():
        t0 = ns()
        r = d.beginCapture(s, 1)
        t1 = ns()
        d.ck(r, "cuStreamBeginCapture_v2")
        try:
            rv = call()
        except BaseException:
            d.endCapture(s, C.addressof(ga))
            raise
        t2 = ns()
        r2 = d.endCapture(s, C.addressof(ga))
        t3 = ns()
        kind.ck(rv)
        d.ck(r2, "cuStreamEndCapture")
        keep.append(rv)
        t4 = ns()
        r = d.instantiate(C.addressof(ea), ga, 0)
        t5 = ns()
        d.ck(r, "cuGraphInstantiateWithFlags")
        t6 = ns()
        r = d.launch(ea, s)
        t7 = ns()
        d.ck(r, "cuGraphLaunch (first)")
        for _ in range(4):
            t8 = ns()
            r = d.launch(ea, s)
            t9 = ns()
            d.ck(r, "cuGraphLaunch")
            S["steady_launch"].append(t9 - t8)
        S["begin"].append(t1 - t0)
        S["call_captured"].append(t2 - t1)
        S["end"].append(t3 - t2)
        S["capture"].append(t3 - t0)
        S["instantiate"].append(t5 - t4)
        S["first_launch"].append(t7 - t6)

    for r in range(reps):
        if r % 2 == 0:
            direct()
            chain()
        else:
            chain()
            direct()
        p.sync()
        d.execDestroy(ea)
        d.graphDestroy(ga)
        ea.value, ga.value = None, None
        keep.clear()
        if p.left() < 0:
            break
    t = {k: median_us(v) for k, v in S.items()}
    t["n"] = len(S["direct"])
    t["direct_p10_p90"] = [round(sorted(S["direct"])[len(S["direct"]) // 10] / 1000, 3),
                           round(sorted(S["direct"])[len(S["direct"]) * 9 // 10] / 1000, 3)]
    return t


def ctypes_overhead(p, kind, st, reps):
    """ctypes' own cost of the call's argument list and of the driver calls (abs() through the same
    prototype): what the lib figures carry that a C caller would not."""
    out = {}
    f = kind.overhead(st)
    probes = {"direct": f,
              "launch": p.overhead_fn(p.drv.launch, (0, p.s)),
              "instantiate": p.overhead_fn(p.drv.instantiate, (0, 0, 0)),
              "begin": p.overhead_fn(p.drv.beginCapture, (p.s, 1)),
              "end": p.overhead_fn(p.drv.endCapture, (p.s, 0))}
    for k, fn in probes.items():
        if fn is None:
            continue
        v = []
        for _ in range(reps):
            t0 = ns()
            fn()
            t1 = ns()
            v.append(t1 - t0)
        out[k] = median_us(v)
    return out


def net_timing(t, ovh):
    if not ovh or "direct" not in ovh:
        return None
    n = dict(t)
    n["direct"] = t["direct"] - ovh["direct"]
    n["capture"] = t["capture"] - ovh["begin"] - ovh["direct"] - ovh["end"]
    n["instantiate"] = t["instantiate"] - ovh["instantiate"]
    n["first_launch"] = t["first_launch"] - ovh["launch"]
    n["steady_launch"] = t["steady_launch"] - ovh["launch"]
    return n


def graph_memory(p, kind, st, n=200):
    """Device memory per instantiated graph: free memory before and after instantiating n execs of
    one captured graph (and after launching each once). The execs stay alive until the run ends, so
    a later kind's figure is not pages the driver kept from an earlier kind's destroyed execs."""
    d = p.drv
    g, rv = p.capture(kind.bind(st))
    kind.ck(rv)
    execs = []
    p.kept.append((g, execs, rv))
    try:
        p.sync()
        free, total = C.c_size_t(), C.c_size_t()
        d.ck(d.memGetInfo(C.addressof(free), C.addressof(total)), "cuMemGetInfo")
        f0 = free.value
        for _ in range(n):
            execs.append(p.instantiate(g))
        d.ck(d.memGetInfo(C.addressof(free), C.addressof(total)), "cuMemGetInfo")
        f1 = free.value
        for e in execs:
            d.ck(d.launch(e, p.s), "cuGraphLaunch")
        p.sync()
        d.ck(d.memGetInfo(C.addressof(free), C.addressof(total)), "cuMemGetInfo")
        f2 = free.value
        return {"n": n, "per_graph_instantiated": (f0 - f1) // n, "per_graph_launched": (f0 - f2) // n,
                "free_drop_instantiated": f0 - f1, "free_drop_launched": f0 - f2}
    finally:
        p.sync()


def release_kept(p):
    p.sync()
    for g, execs, _ in p.kept:
        for e in execs:
            p.drv.execDestroy(e)
        p.drv.graphDestroy(g)
    p.kept.clear()


def read_graph(p, g):
    out = []
    for node, t in p.nodes(g):
        ent = {"node": node, "type": NODE_TYPES.get(t, str(t))}
        if t == 0:
            ent.update(p.kernel_node(node))
        elif t == 2:
            m = MSP()
            p.drv.ck(p.drv.memsetNodeGetParams(node, C.addressof(m)), "cuGraphMemsetNodeGetParams")
            ent["memset"] = m
        out.append(ent)
    return out


def tma_check(p, nA, nB, tA, tB):
    layout = nA["layout"]
    bA, bB = nA["bytes"], nB["bytes"]
    deltas = {na: pb - pa for (na, pa, _), (_, pb, _) in zip(tA, tB)}
    rep = {"exact_params": 0, "exact_differing": 0, "exact_reproduced": 0, "embedded_differing": 0,
           "embedded_reproduced": 0, "replace_calls": 0, "replace_accepted": 0, "found": []}
    mem = C.create_string_buffer(512)
    base = (C.addressof(mem) + 127) // 128 * 128
    for off, exact in tma_windows(layout, len(bA)):
        if exact:
            rep["exact_params"] += 1
        wa, wb = bA[off:off + 128], bB[off:off + 128]
        if wa == wb:
            continue
        rep["exact_differing" if exact else "embedded_differing"] += 1
        cands = []
        for j in range(16):
            w = int.from_bytes(wa[8 * j:8 * j + 8], "little")
            o = owner(w, tA)
            if o is not None and deltas[o]:
                cands.append((w + deltas[o], f"word {j} of window moved by {o}'s delta"))
        cands += [(pb, f"base of {n} in capture 2") for n, pb, _ in tB]
        seen = set()
        for addr, how in cands:
            if addr in seen or addr % 16:
                continue
            seen.add(addr)
            C.memmove(base, wa, 128)
            rep["replace_calls"] += 1
            if p.drv.tensorMapReplaceAddress(base, addr) != 0:
                continue
            rep["replace_accepted"] += 1
            if C.string_at(base, 128) == wb:
                rep["exact_reproduced" if exact else "embedded_reproduced"] += 1
                if len(rep["found"]) < 8:
                    rep["found"].append({"offset": off, "exact": exact, "address": how})
                break
    return rep


def diff_and_relocate(p, kind, res):
    """Capture on set a and set b; compare kernel arguments; patch a's exec to b's tensors."""
    torch, d = p.torch, p.drv
    sa, sb = kind.make("a"), kind.make("b")
    p.fill(sa, 1)
    p.fill(sb, 2)
    for st in (sa, sb):
        if hasattr(kind, "prepare"):
            kind.prepare(st)
    ca, cb = kind.bind(sa), kind.bind(sb)
    for _ in range(2):
        kind.ck(ca())
        kind.ck(cb())
    p.sync()
    # The reference (a direct call on set b) is taken before the captures, so that no allocation
    # comes between the captures and the launches: a torch kind's graph still points at the
    # temporaries (cuDNN workspace) PyTorch freed when the captured op returned.
    for t, init in kind.state(sb):
        t.copy_(init)
    rv_ref = cb()
    kind.ck(rv_ref)
    p.sync()
    ref = [t.clone() for t in kind.outputs(sb, rv_ref)]
    del rv_ref
    for st in (sa, sb):
        for t, init in kind.state(st):
            t.copy_(init)
    p.sync()
    gA, rvA = p.capture(ca)
    kind.ck(rvA)
    gB, rvB = p.capture(cb)
    kind.ck(rvB)
    eA = eB = None
    try:
        tA, tB = kind.tensors(sa, rvA), kind.tensors(sb, rvB)
        if [n for n, _, _ in tA] != [n for n, _, _ in tB]:
            raise RuntimeError(f"tensor lists differ: {[n for n, _, _ in tA]} / {[n for n, _, _ in tB]}")
        G = {"tensors": [{"name": na, "ptr_1": hex(pa), "ptr_2": hex(pb), "delta": pb - pa, "span": sp}
                         for (na, pa, sp), (_, pb, _) in zip(tA, tB)],
             "deltas_unique": deltas_unique(tA, tB)}
        res["graph"] = G
        NA, NB = read_graph(p, gA), read_graph(p, gB)
        types = {}
        for n in NA:
            types[n["type"]] = types.get(n["type"], 0) + 1
        G["node_types"] = types
        G["same_topology"] = [n["type"] for n in NA] == [n["type"] for n in NB]
        knodes = []
        patches = []
        for i, (a, b) in enumerate(zip(NA, NB)):
            if a["type"] == "kernel" and b["type"] == "kernel":
                ent = {"index": i, "name": a["name"], "form": a["form"], "n_params": len(a["layout"]),
                       "param_bytes": len(a["bytes"]) if a["bytes"] is not None else None,
                       "same_function": a["params"].func == b["params"].func,
                       "grid": [a["params"].gridDimX, a["params"].gridDimY, a["params"].gridDimZ],
                       "block": [a["params"].blockDimX, a["params"].blockDimY, a["params"].blockDimZ],
                       "same_launch_config": all(getattr(a["params"], f) == getattr(b["params"], f) for f in
                                                 ("gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY",
                                                  "blockDimZ", "sharedMemBytes"))}
                if a["bytes"] is not None and b["bytes"] is not None:
                    rep, patched = analyze_words(a["bytes"], b["bytes"], tA, tB)
                    ent["args"] = rep
                    try:
                        ent["tma"] = tma_check(p, a, b, tA, tB)
                    except Exception as e:
                        ent["tma"] = {"error": repr(e)}
                    patches.append(("kernel", a, patched))
                knodes.append(ent)
            elif a["type"] == "memset" and b["type"] == "memset":
                ma, mb = a["memset"], b["memset"]
                o = owner(ma.dst, tA)
                kw = 0
                for other in NA:
                    ob = other.get("bytes")
                    if other["type"] == "kernel" and ob:
                        kw += sum(1 for j in range(len(ob) // 8)
                                  if ma.dst <= int.from_bytes(ob[8 * j:8 * j + 8], "little")
                                  < ma.dst + ma.width * ma.elementSize * max(ma.height, 1))
                G.setdefault("memset_nodes", []).append({
                    "index": i, "dst_1": hex(ma.dst), "dst_2": hex(mb.dst), "dst_in": o,
                    "bytes": ma.width * ma.elementSize * max(ma.height, 1), "value": ma.value,
                    "dst_moved_by_delta": o is not None and mb.dst - ma.dst == dict(
                        (n, pb - pa) for (n, pa, _), (_, pb, _) in zip(tA, tB))[o],
                    "same_size": (ma.width, ma.height) == (mb.width, mb.height),
                    "kernel_words_into_it": kw})
                if o is not None:
                    patches.append(("memset", a, mb.dst))
        G["kernel_nodes"] = knodes
        G["all_nodes_reproduced"] = bool(knodes) and all((k.get("args") or {}).get("rule_reproduces") for k in knodes)
        G["other_nodes"] = {k: v for k, v in types.items() if k not in ("kernel",)}

        # Relocation: a's exec patched to b's tensors, against b's direct call.
        rl = {}
        res["relocation"] = rl
        outs_b = kind.outputs(sb, rvB)
        state_ids = {id(t) for t, _ in kind.state(sb)}

        def scrub():
            for t in outs_b:
                if id(t) not in state_ids:
                    t.fill_(float("nan"))
            for t, init in kind.state(sb):
                t.copy_(init)

        def same():
            if len(ref) != len(outs_b):
                return False
            return all(torch.equal(r.contiguous().view(-1).view(torch.uint8), o.contiguous().view(-1).view(torch.uint8))
                       for r, o in zip(ref, outs_b))

        eB = p.instantiate(gB)
        scrub()
        d.ck(d.launch(eB, p.s), "cuGraphLaunch(graph 2)")
        p.sync()
        rl["graph2_identical"] = same()
        eA = p.instantiate(gA)
        keep = []
        n_patched = 0
        ctx = VP()
        d.ck(d.ctxGetCurrent(C.addressof(ctx)), "cuCtxGetCurrent")
        for kind_, a, data in patches:
            if kind_ == "kernel":
                q, _ = p.params_with_bytes(a["params"], a["layout"], data, keep)
                d.ck(d.execKernelNodeSetParams(eA, a["node"], C.addressof(q)), "cuGraphExecKernelNodeSetParams_v2")
            else:
                m = MSP()
                C.memmove(C.addressof(m), C.addressof(a["memset"]), C.sizeof(MSP))
                m.dst = data
                d.ck(d.execMemsetNodeSetParams(eA, a["node"], C.addressof(m), ctx), "cuGraphExecMemsetNodeSetParams")
            n_patched += 1
        rl["patched_nodes"] = n_patched
        scrub()
        d.ck(d.launch(eA, p.s), "cuGraphLaunch(relocated)")
        p.sync()
        rl["relocated_identical"] = same()

        # Update cost per kernel node, on a's exec (now patched; the 'same' set re-sets the
        # relocated params, the 'changed' set flips one pointer word between capture 1's and 2's).
        upd = []
        res["update"] = upd
        reps = p.args.update_reps
        for kind_, a, data in patches:
            if kind_ != "kernel" or p.left() < 0:
                continue
            q_same, _ = p.params_with_bytes(a["params"], a["layout"], data, keep)
            q_chg, buf = p.params_with_bytes(a["params"], a["layout"], data, keep)
            word_off = None
            for o in range(0, len(data) // 8 * 8, 8):
                if a["bytes"][o:o + 8] != data[o:o + 8]:
                    word_off = o
                    break
            S = {k: [] for k in ("set_same", "launch_after_same", "set_changed", "launch_after_changed")}
            # 'same': the params the exec already holds, set again.
            for r in range(reps):
                t0 = ns()
                x = d.execKernelNodeSetParams(eA, a["node"], C.addressof(q_same))
                t1 = ns()
                y = d.launch(eA, p.s)
                t2 = ns()
                d.ck(x, "SetParams(same)")
                d.ck(y, "launch after SetParams(same)")
                S["set_same"].append(t1 - t0)
                S["launch_after_same"].append(t2 - t1)
                if r % 16 == 15:
                    p.sync()
            p.sync()
            # 'changed': one pointer word flips between capture 2's and capture 1's value, so every
            # set differs from what the exec holds by that word.
            if word_off is not None:
                vals = [int.from_bytes(data[word_off:word_off + 8], "little"),
                        int.from_bytes(a["bytes"][word_off:word_off + 8], "little")]
                for r in range(reps):
                    C.c_uint64.from_address(C.addressof(buf) + word_off).value = vals[(r + 1) % 2]
                    t0 = ns()
                    x = d.execKernelNodeSetParams(eA, a["node"], C.addressof(q_chg))
                    t1 = ns()
                    y = d.launch(eA, p.s)
                    t2 = ns()
                    d.ck(x, "SetParams(changed)")
                    d.ck(y, "launch after SetParams(changed)")
                    S["set_changed"].append(t1 - t0)
                    S["launch_after_changed"].append(t2 - t1)
                    if r % 16 == 15:
                        p.sync()
                p.sync()
            u = {"kernel": (a.get("name") or "?")[:40], **{k: median_us(v) for k, v in S.items()}, "n": reps,
                 "changed_word_offset": word_off}
            upd.append(u)
        p.sync()
    finally:
        p.sync()
        for e in (eA, eB):
            if e:
                d.execDestroy(e)
        d.graphDestroy(gA)
        d.graphDestroy(gB)
    return sa, sb


def strip(o):
    """JSON-safe copy (drops ctypes objects and raw bytes)."""
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("params", "bytes", "memset", "node", "layout")}
    if isinstance(o, (list, tuple)):
        return [strip(v) for v in o]
    if isinstance(o, (int, float, str, bool)) or o is None:
        return o
    return repr(o)


def run(args):
    os.makedirs(args.out, exist_ok=True)
    res = {"meta": {}, "kinds": {}, "errors": []}
    jpath = os.path.join(args.out, "graph-probe.json")
    mpath = os.path.join(args.out, "graph-probe.md")

    def save():
        with open(jpath, "w") as f:
            json.dump(strip(res), f, indent=1)
        with open(mpath, "w") as f:
            f.write(render_markdown(res))

    t_start = time.monotonic()
    try:
        p = Probe(args)
    except Exception as e:
        res["errors"].append(f"start: {e!r}")
        save()
        raise
    torch = p.torch
    m = res["meta"]
    m["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    m["gpu"] = torch.cuda.get_device_name(0)
    v = C.c_int()
    p.drv.driverGetVersion(C.addressof(v))
    m["cuda_driver_api"] = v.value
    m["torch"] = torch.__version__
    m["torch_cuda"] = torch.version.cuda
    m["cudnn"] = p.dnn.getVersion()
    m["cublasLt"] = p.blas.ltGetVersion()
    m["python"] = platform.python_version()
    m["reps"] = args.reps
    m["libraries"] = {"cublas": p.blas.path, "cublasLt": p.blas.lt_path, "cudnn": p.dnn.path}
    try:
        with open("/proc/driver/nvidia/version") as f:
            m["driver"] = f.readline().strip()
    except OSError:
        m["driver"] = None
    try:
        g = torch.cuda.CUDAGraph(keep_graph=True)
        m["torch_keep_graph"] = {"keep_graph": True, "raw_cuda_graph": hasattr(g, "raw_cuda_graph"),
                                 "raw_cuda_graph_exec": hasattr(g, "raw_cuda_graph_exec")}
    except Exception as e:
        m["torch_keep_graph"] = {"error": repr(e)}
    print("meta:", json.dumps(m), flush=True)
    save()

    kinds = []
    for name, mk in LIB_KINDS:
        if args.only and name not in args.only:
            continue
        try:
            kinds.append(mk(p, name))
        except Exception as e:
            res["kinds"][name] = {"level": "lib", "errors": [f"setup: {e!r}"]}
            print(f"[{name}] setup failed: {e!r}", flush=True)
            traceback.print_exc()
    try:
        from torch.nn.attention import sdpa_kernel, SDPBackend
        res["meta"]["sdpa_backend"] = "CUDNN_ATTENTION"
        ctx = sdpa_kernel(SDPBackend.CUDNN_ATTENTION)
        ctx.__enter__()
    except Exception as e:
        res["errors"].append(f"sdpa_kernel: {e!r}")
    kinds += [k for k in torch_kinds(p) if not args.only or k.name in args.only]
    if args.reverse:
        kinds.reverse()
    m["order"] = [k.name for k in kinds]
    if args.warmup > 0 and kinds:
        # Run 1 (2026-12-03) timed the same driver calls ~2x slower in its first kinds than in its last: run the first kind's
        # timing loop, discarded, for this long before measuring anything.
        t_w = time.monotonic()
        try:
            st_w = kinds[0].make("a")
            p.fill(st_w, 3)
            if hasattr(kinds[0], "prepare"):
                kinds[0].prepare(st_w)
            while time.monotonic() - t_w < args.warmup:
                time_capture(p, kinds[0], st_w, 20)
            del st_w
        except Exception as e:
            res["errors"].append(f"warm-up: {e!r}")
            recover(p)
        m["warmup_seconds"] = round(time.monotonic() - t_w, 1)

    for k in kinds:
        r = res["kinds"].setdefault(k.name, {})
        r.update({"level": k.level, "family": k.family, "shape": k.shape, "errors": r.get("errors", [])})
        if p.left() < 0:
            r["errors"].append("skipped: time budget spent")
            continue
        t0 = time.monotonic()
        st = None
        try:
            st = k.make("a")
            p.fill(st, 3)
            if hasattr(k, "prepare"):
                k.prepare(st)
            r["timing"] = time_capture(p, k, st, args.reps)
            r["C"] = c_ratio(r["timing"])
            if k.level == "lib":
                r["overhead"] = ctypes_overhead(p, k, st, args.reps)
                nt = net_timing(r["timing"], r["overhead"])
                r["timing_net"] = {kk: (round(vv, 3) if isinstance(vv, float) else vv) for kk, vv in nt.items()} if nt else None
                r["C_net"] = c_ratio(nt) if nt else None
            print(f"[{k.name}] timing {json.dumps(r['timing'])} C={r['C']} C_net={r.get('C_net')}", flush=True)
        except Exception as e:
            r["errors"].append(f"timing: {e!r}")
            print(f"[{k.name}] timing failed: {e!r}", flush=True)
            traceback.print_exc()
            recover(p)
        try:
            if st is not None:
                r["memory"] = graph_memory(p, k, st)
                print(f"[{k.name}] memory {r['memory']}", flush=True)
        except Exception as e:
            r["errors"].append(f"memory: {e!r}")
            print(f"[{k.name}] memory failed: {e!r}", flush=True)
            recover(p)
        try:
            diff_and_relocate(p, k, r)
            g = r.get("graph", {})
            print(f"[{k.name}] graph {json.dumps(strip({x: g.get(x) for x in ('node_types', 'deltas_unique', 'all_nodes_reproduced')}))} "
                  f"relocation {json.dumps(r.get('relocation'))}", flush=True)
            for nd in g.get("kernel_nodes", []):
                a = nd.get("args") or {}
                print(f"   node {nd['index']} {str(nd.get('name'))[:70]} params {nd['n_params']}/{nd['param_bytes']} "
                      f"ptr {a.get('ptr_words_1')} diff {a.get('diff_words')} expl {a.get('diff_explained')} "
                      f"rule {a.get('rule_reproduces')} unmoved {a.get('ptr_words_unmoved')} tma {json.dumps(nd.get('tma'))}",
                      flush=True)
            for u in r.get("update", []):
                print(f"   update {json.dumps(u)}", flush=True)
        except Exception as e:
            r["errors"].append(f"diff/relocate: {e!r}")
            print(f"[{k.name}] diff/relocate failed: {e!r}", flush=True)
            traceback.print_exc()
            recover(p)
        r["seconds"] = round(time.monotonic() - t0, 2)
        save()
    # torch kinds: C with the library's own direct time (the lib kind's, net) in the denominator
    for name, r in res["kinds"].items():
        lk = TORCH_TO_LIB.get(name)
        if lk and r.get("timing") and (res["kinds"].get(lk) or {}).get("timing_net"):
            t = r["timing"]
            ln = res["kinds"][lk]["timing_net"]
            den = ln["direct"] - ln["steady_launch"]
            num = t["capture"] + t["instantiate"] + t["first_launch"] - t["direct"]
            r["C_lib_direct"] = round(num / den, 2) if den > 0 else None
    release_kept(p)
    res["meta"]["total_seconds"] = round(time.monotonic() - t_start, 1)
    save()
    print(render_markdown(res))


def recover(p):
    """After a failure: end a capture left open, drain the stream."""
    try:
        st = C.c_int(0)
        if p.drv.streamIsCapturing(p.s, C.addressof(st)) == 0 and st.value != 0:
            g = VP()
            p.drv.endCapture(p.s, C.addressof(g))
            if g.value:
                p.drv.graphDestroy(g)
        p.drv.streamSynchronize(p.s)
    except Exception:
        traceback.print_exc()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="graph-probe-out")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--update-reps", type=int, default=200)
    ap.add_argument("--budget", type=float, default=200.0, help="seconds; kinds not started by then are skipped")
    ap.add_argument("--only", type=lambda s: [x for x in s.split(",") if x], default=None)
    ap.add_argument("--reverse", action="store_true", help="measure the kinds in reverse order")
    ap.add_argument("--warmup", type=float, default=0.0, help="seconds of discarded timing loops first")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--check-symbols", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    if args.check_symbols:
        check_symbols()
        return
    faulthandler.enable()
    run(args)


if __name__ == "__main__":
    main()
