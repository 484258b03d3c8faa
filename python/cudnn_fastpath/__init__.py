"""cudnn_fastpath: the libcudnn_fastpath.so shim, its launcher, and a look inside from Python.

Run a program under the shim with the launcher (``cudnn-fastpath [options] program args`` or
``python -m cudnn_fastpath [options] program args``). From inside that program this module tells
whether the shim is there and steers it:

    import cudnn_fastpath
    cudnn_fastpath.loaded()          # True under the launcher
    cudnn_fastpath.features()        # frozenset({'set_stream', 'variant_packs'})
    with cudnn_fastpath.disabled():  # every cuDNN call goes to cuDNN unchanged in this block
        ...
    cudnn_fastpath.stats()           # {'counting': True, 'handles': 1, 'skipped': 999, ...}

The shim is found in the process itself (``ctypes.CDLL(None)``: the global scope, where
LD_PRELOAD puts it); this module never loads it. Every function works without it and says what
it answers then: ``loaded()`` is False, ``features()`` and ``set_features()`` give an empty set,
``disabled()`` does nothing, ``stats()`` gives an empty dict.
"""

import contextlib
import ctypes
import os
import threading

__all__ = [
    "SET_STREAM",
    "VARIANT_PACKS",
    "ALL_FEATURES",
    "GRAPHS",
    "LEGACY",
    "CUBLAS",
    "loaded",
    "features",
    "set_features",
    "disabled",
    "stats",
    "shim_path",
    "launcher_path",
]

try:
    from importlib.metadata import version as _version

    __version__ = _version("cudnn-fastpath")
except Exception:  # not installed as a distribution (a source checkout on sys.path)
    __version__ = "unknown"

#: skip cudnnSetStream calls that would not change the handle's stream
SET_STREAM = "set_stream"
#: proxy variant packs and reuse finalized ones whose contents repeat
VARIANT_PACKS = "variant_packs"
#: replay steady executes of cached variant packs as CUDA graphs (needs VARIANT_PACKS)
GRAPHS = "graphs"
#: replay steady calls of cuDNN's legacy API (batch norm, convolution, pooling, ...) as CUDA graphs
LEGACY = "legacy"
#: replay steady cublasLtMatmul and cublasGemmEx calls as CUDA graphs, answer cuBLASLt's
#: heuristic from a cache
CUBLAS = "cublas"
#: every feature
ALL_FEATURES = frozenset({SET_STREAM, VARIANT_PACKS, GRAPHS, LEGACY, CUBLAS})

# The bits of shim_control.h (CUDNN_FASTPATH_FEATURE_*).
_FEATURE_BITS = {SET_STREAM: 1, VARIANT_PACKS: 2, GRAPHS: 4, LEGACY: 8, CUBLAS: 16}

_here = os.path.dirname(os.path.abspath(__file__))


def shim_path():
    """The path of the libcudnn_fastpath.so this package carries (whether or not the file is there)."""
    return os.path.join(_here, "libcudnn_fastpath.so")


def launcher_path():
    """The path of the launcher script this package carries (the console script and ``python -m``
    run it)."""
    return os.path.join(_here, "cudnn-fastpath")


class _Shim:
    """The shim's exported functions, looked up in the process's global scope.

    Only a successful lookup is kept: a program may load the shim later (dlopen RTLD_GLOBAL), and
    then it is found on the next call.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._functions = None
        self._stats = None  # (stats function, struct type), once built

    def functions(self):
        if self._functions is not None:
            return self._functions
        try:
            process = ctypes.CDLL(None)
            get = process.cudnn_fastpath_features
            put = process.cudnn_fastpath_set_features
        except (OSError, AttributeError):
            return None
        get.restype, get.argtypes = ctypes.c_uint, []
        put.restype, put.argtypes = ctypes.c_uint, [ctypes.c_uint]
        with self._lock:
            self._functions = (get, put)
        return self._functions

    def stats_reader(self):
        """(function, struct type) for cudnn_fastpath_stats, or None when no shim exports it."""
        if self._stats is not None:
            return self._stats
        try:
            process = ctypes.CDLL(None)
            read = process.cudnn_fastpath_stats
            names = process.cudnn_fastpath_stats_fields
        except (OSError, AttributeError):
            return None
        names.restype, names.argtypes = ctypes.c_char_p, []
        read.restype, read.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t]
        fields = (names() or b"").decode("ascii").split()
        # The struct as the shim declares it (statistics versions 2 to 4): four uint32 (size, counting,
        # version, reserved), then a uint64 per name.
        struct = type(
            "cudnn_fastpath_stats_t",
            (ctypes.Structure,),
            {"_fields_": [(name, ctypes.c_uint32) for name in _HEADER]
             + [(name, ctypes.c_uint64) for name in fields]},
        )
        with self._lock:
            self._stats = (read, struct)
        return self._stats


_shim = _Shim()
# The struct's uint32 members before its counters.
_HEADER = ("size", "counting", "version", "reserved")


def _names(mask):
    return frozenset(name for name, bit in _FEATURE_BITS.items() if mask & bit)


def loaded():
    """True when a libcudnn_fastpath.so is loaded in this process's global scope (LD_PRELOAD, as
    the launcher does it, or a dlopen with RTLD_GLOBAL); False otherwise."""
    return _shim.functions() is not None


def features():
    """The features of the shim in effect now, a frozenset of names (SET_STREAM, VARIANT_PACKS).

    Without the shim: an empty frozenset (nothing of it is on). Under CUDNN_FASTPATH_DISABLE=1 or
    the launcher's --disable: also empty."""
    functions = _shim.functions()
    if functions is None:
        return frozenset()
    return _names(functions[0]())


def set_features(wanted):
    """Asks the shim for exactly the features named in ``wanted`` (an iterable of SET_STREAM and
    VARIANT_PACKS, or one name) and returns the features in effect afterwards: those asked for
    that the configuration allows (CUDNN_FASTPATH_DISABLE=1 allows none,
    CUDNN_FASTPATH_VARIANT_PACKS=0 not VARIANT_PACKS). Takes effect from the next cuDNN call, in
    every thread.

    Without the shim: does nothing and returns an empty frozenset. An unknown name raises
    ValueError."""
    if isinstance(wanted, str):
        wanted = (wanted,)
    mask = 0
    for name in wanted:
        if name not in _FEATURE_BITS:
            raise ValueError("unknown cudnn_fastpath feature %r (known: %s)" % (name, ", ".join(sorted(_FEATURE_BITS))))
        mask |= _FEATURE_BITS[name]
    functions = _shim.functions()
    if functions is None:
        return frozenset()
    return _names(functions[1](mask))


@contextlib.contextmanager
def disabled():
    """A block in which the shim forwards every cuDNN call unchanged (all features off); the
    features in effect before are asked for again when the block ends, however it ends.

    Without the shim: does nothing. Nesting works; switching features inside the block from
    another thread is undone when the block ends."""
    functions = _shim.functions()
    if functions is None:
        yield
        return
    get, put = functions
    before = get()
    put(0)
    try:
        yield
    finally:
        put(before)


def stats():
    """The shim's counts now, as a dict: ``counting`` (bool), ``version`` (of the statistics'
    layout, docs/statistics.md), then ``handles``, ``live_handles``
    and every counter of the shim by name (``skipped``, ``forwarded``, ``pack_hits``, ...; the list
    is the shim's own, cudnn_fastpath_stats_fields()), each an int.

    Statistics are on when the program runs with CUDNN_FASTPATH_STATS or CUDNN_FASTPATH_STATS_FILE
    (the launcher's --stats, --stats-file). When they are off, ``counting`` is False and every
    counter is 0; ``handles`` and ``live_handles`` are counted all the same.
    Safe while other threads call cuDNN: each count is exact once those calls have returned.

    Without the shim (or with a shim too old to export cudnn_fastpath_stats): an empty dict."""
    reader = _shim.stats_reader()
    if reader is None:
        return {}
    read, struct = reader
    out = struct()
    if read(ctypes.byref(out), ctypes.sizeof(out)) != 0:
        raise OSError("cudnn_fastpath_stats refused a buffer of %d bytes" % ctypes.sizeof(out))
    result = {"counting": bool(out.counting), "version": int(out.version)}
    # Only what the shim filled: its struct may be shorter than the list it named (never here, as
    # both come from the same shim, but the size field is the contract).
    for name, kind in struct._fields_[len(_HEADER):]:
        if getattr(struct, name).offset + ctypes.sizeof(kind) > out.size:
            break
        result[name] = int(getattr(out, name))
    return result
