"""The Python API of the installed package, run by wheel_test.sh in one of three processes:

  api_check.py without              no shim in the process
  api_check.py counting STUB        under `cudnn-fastpath --stats`: STUB is the test stub libcudnn
  api_check.py not-counting STUB    under `cudnn-fastpath` without statistics

Prints "api_check MODE: ok" when every check passed; the first failed check raises."""

import ctypes
import sys

import cudnn_fastpath as cf

mode = sys.argv[1]


def expect(what, got, wanted):
    if got != wanted:
        raise AssertionError("%s: got %r, wanted %r" % (what, got, wanted))


try:
    cf.set_features({"no_such_feature"})
    raise AssertionError("set_features took an unknown name")
except ValueError:
    pass

if mode == "without":
    expect("loaded()", cf.loaded(), False)
    expect("features()", cf.features(), frozenset())
    expect("set_features(ALL_FEATURES)", cf.set_features(cf.ALL_FEATURES), frozenset())
    expect("set_features(one name)", cf.set_features(cf.SET_STREAM), frozenset())
    with cf.disabled():
        expect("features() in disabled()", cf.features(), frozenset())
    expect("stats()", cf.stats(), {})
    print("api_check without: ok")
    sys.exit(0)

counting = mode == "counting"
# The stub libcudnn in the global scope, as a program linked to cuDNN has it; the calls go through
# the process's global lookup, which finds the preloaded shim first.
ctypes.CDLL(sys.argv[2], mode=ctypes.RTLD_GLOBAL)
process = ctypes.CDLL(None)
create, set_stream = process.cudnnCreate, process.cudnnSetStream
create.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
set_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
handle = ctypes.c_void_p()
expect("cudnnCreate", create(ctypes.byref(handle)), 0)
stream = ctypes.c_void_p(0x1000)  # any non-null value: the stub does no GPU work with it


def set_stream_times(n):
    for _ in range(n):
        expect("cudnnSetStream", set_stream(handle, stream), 0)


expect("loaded()", cf.loaded(), True)
expect("features()", cf.features(), cf.ALL_FEATURES)
start = cf.stats()
expect("stats()['counting']", start.get("counting"), counting)
names = process.cudnn_fastpath_stats_fields
names.restype = ctypes.c_char_p
expect("stats()['version']", start.get("version"), 4)
expect("stats() keys", list(start), ["counting", "version"] + names().decode().split())

set_stream_times(100)
after = cf.stats()
expect("stats()['handles']", after["handles"], 1)
expect("stats()['live_handles']", after["live_handles"], 1)
if counting:
    expect("skipped after 100 calls", after["skipped"] - start["skipped"], 99)
    expect("forwarded after 100 calls", after["forwarded"] - start["forwarded"], 1)
else:
    unchanged = ("counting", "version", "handles", "live_handles")
    expect("counters with statistics off", {k: v for k, v in after.items() if k not in unchanged},
           {k: 0 for k in after if k not in unchanged})

with cf.disabled():
    expect("features() in disabled()", cf.features(), frozenset())
    set_stream_times(10)
    inside = cf.stats()
expect("features() after disabled()", cf.features(), cf.ALL_FEATURES)
if counting:
    expect("forwarded in disabled()", inside["forwarded"] - after["forwarded"], 10)
    expect("skipped in disabled()", inside["skipped"] - after["skipped"], 0)

expect("set_features(SET_STREAM)", cf.set_features([cf.SET_STREAM]), frozenset({cf.SET_STREAM}))
expect("features()", cf.features(), frozenset({cf.SET_STREAM}))
expect("set_features(ALL_FEATURES)", cf.set_features(cf.ALL_FEATURES), cf.ALL_FEATURES)
print("api_check %s: ok" % mode)
