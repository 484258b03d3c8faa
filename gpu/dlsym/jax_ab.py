"""JAX under the shim: a small jax.jit convolution network, its outputs, and its host time per call.

    python3 jax_ab.py [--shim LIB] [--work DIR] [--json FILE] [--markdown FILE] [--seconds S]
                      [--pairs N] [--dtype float16|float32] [--references N] [--env KEY=VALUE ...]

XLA loads libcudnn itself and takes every cuDNN function with dlsym on the library's handle: the
shim reaches it only by answering that dlsym (issue 20). This program shows whether it does, and
what it saves. The network: 8 layers of a 3x3 convolution (SAME padding, no bias) and a ReLU, NHWC,
batch 1, 32x32 images, 32 channels, fp16 by default, under jax.jit. Each convolution is a cuDNN call
in XLA's compiled program (the report counts the cuDNN custom calls in it), and at this size the
host's work per execution (jit dispatch, XLA's thunks, cuDNN's setup of each call) sets the pace.
One call is one execution, `f(params, x)`.

The parent (standard library only) runs the network twice without the shim and once under the
launcher; the run under the launcher checks its outputs with every feature on against every feature
off in the same process, counts per call what the shim did, and times paired, alternating blocks
with every feature on (7) and off (0): gpu/dlsym/dlsym_ab.py does all of that, the same way for
cudnn-frontend's Python package (frontend_py_ab.py). Targets (issue 20): with every feature on,
host time per jax.jit execution at least 15% lower than with every feature off, the 95% interval
above zero, in CPU time of the call (not awaited) and in wall time of the call with its result
awaited (`f(params, x).block_until_ready()`). They never change the exit status.

The children share a persistent compilation cache (jax_compilation_cache_dir, in --work, emptied at
the start): the first run compiles and autotunes the convolutions, the others load the same
executable, so every run uses the same cuDNN algorithms and the outputs compare bit for bit. XLA's
own flags are left as they are (XLA_FLAGS from the environment passes through); the children set
XLA_PYTHON_CLIENT_PREALLOCATE=false unless the environment says otherwise.
"""
import argparse
import os
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dlsym_ab  # noqa: E402

LAYERS = 8
IMAGE = 32  # height and width
CHANNELS = 32
BATCH = 1
TIMED = 4  # calls per timed block: 4 executions of 8 convolutions each
CACHE = "jax-compilation-cache"  # in --work; the harness's stale-file sweep leaves folders alone


class JaxProgram(dlsym_ab.Program):
    def __init__(self):
        super().__init__(
            name="jax", title="JAX under the shim: reach through dlsym and the in-process A/B (gpu/dlsym/jax_ab.py)",
            script=__file__,
            workloads={"conv8": "8 x (3x3 conv + ReLU) under jax.jit"},
            targets={("conv8", "cpu"): 15.0, ("conv8", "wall"): 15.0},
            target_metrics="cpu and wall, every feature on, at least 15%",
            child_env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})

    def prepare(self, work):
        shutil.rmtree(Path(work) / CACHE, ignore_errors=True)
        (Path(work) / CACHE).mkdir(parents=True)

    def child_arguments(self, args):
        return ["--dtype", args.dtype, "--cache-dir", str(Path(args.work) / CACHE)] + (
            ["--allow-cpu"] if args.allow_cpu else [])


def configure_cache(jax, cache_dir):
    """Every compiled program goes to the persistent cache, however fast it compiled."""
    if not cache_dir:
        return
    for name, value in (("jax_compilation_cache_dir", cache_dir),
                        ("jax_persistent_cache_min_compile_time_secs", 0.0),
                        ("jax_persistent_cache_min_entry_size_bytes", -1)):
        try:
            jax.config.update(name, value)
        except Exception as error:  # an option this jax does not have: the runs may then differ
            print(f"jax_ab: cannot set {name}: {error}", file=sys.stderr, flush=True)


def cudnn_calls(compiled_text):
    """The custom-call targets of the compiled HLO that name cuDNN, with their counts."""
    targets = re.findall(r'custom_call_target="([^"]+)"', compiled_text)
    counts = {}
    for target in targets:
        if "cudnn" in target.lower():
            counts[target] = counts.get(target, 0) + 1
    return counts


def make_workloads(args):
    """The network under jax.jit, as the harness's workload; raises dlsym_ab.Unavailable without a GPU."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax.numpy as jnp
        import numpy as np
    except ImportError as error:
        raise dlsym_ab.Unavailable(f"no jax here: {error}") from None
    configure_cache(jax, args.cache_dir)
    device = jax.devices()[0]
    if device.platform != "gpu" and not args.allow_cpu:
        raise dlsym_ab.Unavailable(f"jax found no GPU (its first device is {device})", dlsym_ab.EXIT_NO_GPU)
    dtype = jnp.dtype(args.dtype)

    key = jax.random.PRNGKey(0)
    params = []
    for _ in range(LAYERS):
        key, sub = jax.random.split(key)
        # He initialisation: the activations stay near 1 through the layers, in fp16 too.
        w = jax.random.normal(sub, (3, 3, CHANNELS, CHANNELS), jnp.float32) * (2.0 / (9 * CHANNELS)) ** 0.5
        params.append(w.astype(dtype))
    key, sub = jax.random.split(key)
    x = jax.random.normal(sub, (BATCH, IMAGE, IMAGE, CHANNELS), jnp.float32).astype(dtype)

    def forward(params, x):
        for w in params:
            x = jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC"))
            x = jax.nn.relu(x)
        return x

    f = jax.jit(forward)

    class Net:
        name = "conv8"
        what = (f"{LAYERS} x (3x3 conv + ReLU) under jax.jit, {args.dtype}, NHWC "
                f"{BATCH}x{IMAGE}x{IMAGE}x{CHANNELS}, one call = one execution f(params, x)")
        timed = TIMED
        last = None

        def call(self):
            self.last = f(params, x)

        def sync(self):
            self.last.block_until_ready()

        def snapshot(self):
            return np.asarray(self.last).tobytes()

    net = Net()
    net.call()  # compiles (or loads from the cache) before anything is counted
    net.sync()
    notes = {}
    if args.child == "ab":
        try:
            calls = cudnn_calls(f.lower(params, x).compile().as_text())
            notes["cuDNN custom calls in the compiled program"] = (
                ", ".join(f"{k} x{v}" for k, v in calls.items()) or "NONE (XLA runs no cuDNN call here)")
        except Exception as error:  # the count is a note, not a condition
            notes["cuDNN custom calls in the compiled program"] = f"not read: {error}"
        notes["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") or "(none)"
        notes["compilation cache files"] = (len(os.listdir(args.cache_dir)) if args.cache_dir
                                           and os.path.isdir(args.cache_dir) else "no cache")
    versions = {"jax": jax.__version__, "device": getattr(device, "device_kind", str(device)),
                "platform": device.platform}
    try:
        import jaxlib
        versions["jaxlib"] = jaxlib.__version__
        versions["backend"] = device.client.platform_version
    except Exception:  # versions are reported when they can be read
        pass
    return [net], versions, {"conv8": notes}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    dlsym_ab.add_arguments(parser, "jax")
    parser.add_argument("--dtype", choices=("float16", "float32"), default="float16",
                        help="the network's data type (default float16: XLA keeps NHWC for cuDNN)")
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)  # set by the parent for its children
    parser.add_argument("--allow-cpu", action="store_true", help=argparse.SUPPRESS)  # testing without a GPU
    args = parser.parse_args()
    dlsym_ab.check_arguments(parser, args)
    if args.child == "reference":
        return dlsym_ab.child_reference(args, lambda: make_workloads(args))
    if args.child == "ab":
        return dlsym_ab.child_ab(args, lambda: make_workloads(args))
    return dlsym_ab.parent(JaxProgram(), args)


if __name__ == "__main__":
    sys.exit(main())
