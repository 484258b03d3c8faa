"""The shim's counters as the GPU programs read them, by key: a statistics file's (--stats-file), or
those read inside the process (harness.read_counters, through cudnn_fastpath.stats()).

Read generically: a key the shim does not write (a build from before a feature) counts 0, so the
programs work with the shim before and after its replay of legacy cuDNN calls and of cuBLAS landed.
Standard library only. docs/statistics.md lists the keys.
"""
# The replay families (the backend execute's among them since the statistics' version 2), and the
# suffix of each of their counters.
FAMILIES = ("backend", "legacy_bn", "legacy_conv", "legacy_tensor", "lt_matmul", "gemm", "typed_gemm")
SUFFIXES = ("_direct", "_captured", "_launches", "_refused_capturing", "_refused_context", "_refused_failed",
            "_refused_full", "_unknown", "_declined", "_refused_churn", "_evicted")
HEURISTIC_KEYS = ("heuristic_cached", "heuristic_stored")
# Relocation's, every family's together (shim_control.h), as replay_text() names them.
RELOCATION_KEYS = {"relocated": "launches", "relocations_proven": "proven", "relocations_refused": "refused",
                   "relocations_unprofitable": "not saving"}
LEGACY_FAMILIES = ("legacy_bn", "legacy_conv", "legacy_tensor")
BLAS_FAMILIES = ("lt_matmul", "gemm")
# A family's calls, as its counters split them: direct + captured + launches is every call of the
# family the shim saw while its replay was on (the refused, unknown and declined ones are direct).
CALL_PARTS = ("_direct", "_captured", "_launches")
# Names that end so without being a replay family: the heuristic cache (heuristic_direct).
NOT_FAMILIES = ("heuristic",)


def count(stats, key):
    """A counter's value; 0 when the key is missing or not a number."""
    value = (stats or {}).get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def launches(stats):
    """Replayed ops: the sum of every *_launches counter (backend_launches, legacy_bn_launches, ...)."""
    return sum(count(stats, k) for k in (stats or {}) if k.endswith("_launches"))


def delta(before, after):
    """after - before for every counter of `after` (a key missing before counts 0)."""
    return {k: v - count(before, k) for k, v in (after or {}).items()
            if isinstance(v, int) and not isinstance(v, bool)}


def replay_families(keys):
    """The replay families among counter names (a statistics file's keys, cudnn_fastpath_stats_fields,
    a census), in their order: every prefix P of a P_direct, P_captured or P_launches counter. The
    shim's families today (FAMILIES) and whichever it adds later (sgemm_..., say) without a change here."""
    found = []
    for key in keys or ():
        family = next((key[:-len(part)] for part in CALL_PARTS if key.endswith(part)), "")
        if family and family not in NOT_FAMILIES and family not in found:
            found.append(family)
    return found


def blas_families(keys):
    """The cuBLAS and cuBLASLt families among `keys`: every replay family but cuDNN's (legacy_*, backend)."""
    return [f for f in replay_families(keys) if not f.startswith("legacy_") and f != "backend"]


def calls(counts, iterations=1):
    """What the shim saw per iteration, per family that saw a call: {family: {"calls", "launches",
    "captured", "direct"}} for each replay family (by its counters' names: the backend's executes of
    cached packs are "backend") and cuBLASLt's heuristic as "heuristic" ({"calls", "cached", "stored",
    "direct"}). `counts`: counter increases (a census, a delta)."""
    result = {}
    parts = [(f, {p: f"{f}_{p}" for p in ("launches", "captured", "direct")}) for f in replay_families(counts)]
    parts.append(("heuristic", {k.split("_")[1]: k for k in (*HEURISTIC_KEYS, "heuristic_direct")}))
    for family, keys in parts:
        numbers = {part: count(counts, key) / iterations for part, key in keys.items()}
        if any(numbers.values()):
            result[family] = {"calls": sum(numbers.values()), **numbers}
    return result


def calls_text(counts, iterations=1):
    """calls() in one phrase: 'lt_matmul 8 (launches 8, captured 0, direct 0); gemm ...'."""
    per_family = calls(counts, iterations)
    return "; ".join(f"{family} {n['calls']:g} (" + ", ".join(f"{k} {v:g}" for k, v in n.items() if k != "calls") + ")"
                     for family, n in per_family.items())


def replayed_share(counts, families):
    """Of the calls of `families` (launches + captured + direct), the share answered by a graph
    launch, and those calls: (share or None without a call, calls). A capture counts as not replayed."""
    launched = sum(count(counts, f"{f}_launches") for f in families)
    seen = launched + sum(count(counts, f"{f}{p}") for f in families for p in ("_direct", "_captured"))
    return (launched / seen if seen else None), seen


def has_family(stats, family):
    """Whether the shim writes any counter of `family` (it has that replay at all)."""
    return any(f"{family}{suffix}" in (stats or {}) for suffix in SUFFIXES)


def family_counts(stats, family):
    """{suffix without its underscore: value} of the family's counters the shim wrote."""
    return {suffix[1:]: stats[f"{family}{suffix}"] for suffix in SUFFIXES if f"{family}{suffix}" in (stats or {})}


def replay_text(stats):
    """One line of what the replays did: each family's counters, the heuristic cache, and the backend's."""
    if not stats:
        return "no statistics"
    parts = []
    for family in FAMILIES + tuple(f for f in replay_families(stats) if f not in FAMILIES):
        numbers = family_counts(stats, family)
        if numbers:
            parts.append(f"{family}: " + ", ".join(f"{k} {v}" for k, v in numbers.items() if v or k == "launches"))
    if count(stats, "relocations_proven"):
        parts.append("relocation: " + ", ".join(f"{label} {count(stats, k)}" for k, label in RELOCATION_KEYS.items()))
    if any(k in stats for k in HEURISTIC_KEYS):
        parts.append("heuristics: " + ", ".join(f"{k.split('_')[1]} {count(stats, k)}" for k in HEURISTIC_KEYS))
    if not replay_families(stats):
        parts.insert(0, "no legacy_* or cuBLAS counters (a shim without those replays)")
    return "; ".join(parts)
