"""The shim's counters as the GPU programs read them: inside the process (cudnn_fastpath_stats) and
from its statistics file (--stats-file), by key.

Read generically: a key the shim does not write (a build from before a feature) counts 0, so the
programs work with the shim before and after its replay of legacy cuDNN calls and of cuBLAS landed.
Standard library only. docs/statistics.md lists the keys.
"""
import ctypes

# The replay families besides the backend's graph replay, and the suffix of each of their counters.
FAMILIES = ("legacy_bn", "legacy_conv", "legacy_tensor", "lt_matmul", "gemm")
SUFFIXES = ("_direct", "_captured", "_launches", "_refused_capturing", "_refused_context", "_refused_failed",
            "_refused_full", "_unknown", "_declined")
HEURISTIC_KEYS = ("heuristic_cached", "heuristic_stored")
BACKEND_KEYS = ("graphs_captured", "graph_launches", "direct_executes")
LEGACY_FAMILIES = FAMILIES[:3]
BLAS_FAMILIES = FAMILIES[3:]


class ShimCounters:
    """The shim's counters read from inside the process (`cudnn_fastpath_stats`, docs/statistics.md)."""

    def __init__(self, function, struct, names):
        self.function, self.struct, self.names = function, struct, names

    @classmethod
    def find(cls):
        """None when the process has no shim, or a shim without the function."""
        process = ctypes.CDLL(None)
        try:
            fields, function = process.cudnn_fastpath_stats_fields, process.cudnn_fastpath_stats
        except AttributeError:
            return None
        fields.restype, fields.argtypes = ctypes.c_char_p, []
        names = fields().decode().split()
        struct = type("CudnnFastpathStats", (ctypes.Structure,),
                      {"_fields_": [("size", ctypes.c_uint32), ("counting", ctypes.c_uint32)]
                       + [(n, ctypes.c_uint64) for n in names]})
        function.restype, function.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t]
        return cls(function, struct, names)

    def read(self):
        """{name: count}, or None when the shim refused or does not count (no statistics asked)."""
        value = self.struct()
        if self.function(ctypes.byref(value), ctypes.sizeof(value)) != 0 or not value.counting:
            return None
        return {n: getattr(value, n) for n in self.names}


def count(stats, key):
    """A counter's value; 0 when the key is missing or not a number."""
    value = (stats or {}).get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def launches(stats):
    """Replayed ops: the sum of every *_launches counter (graph_launches, legacy_bn_launches, ...)."""
    return sum(count(stats, k) for k in (stats or {}) if k.endswith("_launches"))


def delta(before, after):
    """after - before for every counter of `after` (a key missing before counts 0)."""
    return {k: v - count(before, k) for k, v in (after or {}).items()
            if isinstance(v, int) and not isinstance(v, bool)}


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
    for family in FAMILIES:
        numbers = family_counts(stats, family)
        if numbers:
            parts.append(f"{family}: " + ", ".join(f"{k} {v}" for k, v in numbers.items() if v or k == "launches"))
    if any(k in stats for k in HEURISTIC_KEYS):
        parts.append("heuristics: " + ", ".join(f"{k.split('_')[1]} {count(stats, k)}" for k in HEURISTIC_KEYS))
    parts.append("backend: " + ", ".join(f"{k} {count(stats, k)}" for k in BACKEND_KEYS))
    if not any(has_family(stats, f) for f in FAMILIES):
        parts.insert(0, "no legacy_* or cuBLAS counters (a shim without those replays)")
    return "; ".join(parts)
