"""cudnn-frontend's Python package under the shim: SDPA and convolution graphs executed from Python.

    python3 frontend_py_ab.py [--shim LIB] [--work DIR] [--json FILE] [--markdown FILE] [--seconds S]
                              [--pairs N] [--api auto|pygraph|backend] [--references N] [--env KEY=VALUE ...]

The package `cudnn` (nvidia-cudnn-frontend) opens libcudnn.so.9 with ctypes (RTLD_LOCAL) and its
compiled module takes every backend function with dlsym on that handle: the shim reaches it only by
answering that dlsym (issue 20). This program shows whether it does, and what it saves per
`graph.execute(...)` call, on two graphs built with the package's own API and executed in a loop:

- sdpa: scaled-dot-product attention forward, bf16, batch 1, 8 heads, 128 tokens, head dim 64, not
  causal, the scale 1/sqrt(64) given as a float (the graph holds it as a by-value scalar);
- conv: a 3x3 convolution forward, fp16, NHWC (channels-last) 1x32x32x32 image, 32 filters,
  padding 1.

Both run on a handle made by `cudnn.create_handle()`, on PyTorch's current stream, on tensors that
PyTorch allocates. Each execute builds a new variant pack and calls cudnnBackendExecute through the
package's dlsym'd pointers: what the shim's pack cache and graph replay answer. With --api auto
(the default) the graphs are `cudnn.pygraph`s, the package's public API, with its Python engines
deselected so that the cuDNN backend serves them (the shim sees only the backend); if building one
fails, that graph falls back to the package's C++ graph (`cudnn._pybind_module.backend_graph`,
`_execute`), and the report says so. --api pygraph or backend forces one.

The parent (standard library only) runs the graphs twice without the shim and once under the
launcher, which checks the outputs with every feature on against every feature off in the same
process, counts per call what the shim did, and times paired, alternating blocks (gpu/dlsym/dlsym_ab.py,
shared with jax_ab.py). Target (issue 20): with every feature on, main-thread CPU time per
graph.execute at least 10% lower than with every feature off, the 95% interval above zero, for each
graph; wall time with torch.cuda.synchronize() after each call is reported beside it. Targets never
change the exit status. The package must be importable (scripts/gpu-check installs its wheel from
.deps/wheels with pip --no-deps when it is not).
"""
import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dlsym_ab  # noqa: E402

SDPA_SHAPE = (1, 8, 128, 64)  # batch, heads, tokens, head dim
CONV = {"n": 1, "c": 32, "h": 32, "w": 32, "k": 32, "r": 3, "s": 3, "pad": 1}
TIMED = 8  # graph.execute calls per timed block
HEURISTICS = ("A", "FALLBACK")  # cudnn.heur_mode members, in order


class FrontendProgram(dlsym_ab.Program):
    def __init__(self):
        super().__init__(
            name="frontend_py",
            title="cudnn-frontend's Python package under the shim: reach through dlsym and the in-process A/B "
                  "(gpu/dlsym/frontend_py_ab.py)",
            script=__file__,
            workloads={"sdpa": "cuDNN SDPA forward graph", "conv": "cuDNN conv fprop graph"},
            targets={("sdpa", "cpu"): 10.0, ("conv", "cpu"): 10.0},
            target_metrics="cpu, every feature on, at least 10%, each graph")

    def child_arguments(self, args):
        return ["--api", args.api]


def python_engine_names(cudnn):
    """Names of the package's own (Python) engines, to deselect: the shim sees only the backend."""
    names = {"sdpa_fwd_prefill", "sdpa_bwd", "frost"}
    try:
        from cudnn.engines import manifest
        names.update(name for family in manifest.MANIFEST for name in family.slots)
    except Exception:  # an older or newer package: the fixed prefixes above stay
        pass
    return sorted(names)


class GraphWorkload:
    """One graph: its tensors from torch, its build with the chosen API, one execute per call."""

    timed = TIMED

    def __init__(self, name, what, cudnn, torch, handle, describe, buffers, io_type, api):
        """describe(graph) adds the graph's nodes and returns {tensor: torch buffer} for every
        operand (inputs and outputs); buffers lists the output buffers compared."""
        self.name, self.what, self.torch, self.outputs = name, what, torch, buffers
        self.notes = {}
        errors = []
        for choice in (("pygraph", "backend") if api == "auto" else (api,)):
            try:
                self.build(choice, cudnn, handle, describe, io_type)
                self.call()  # the first execute too: a graph that builds but does not run falls back as well
                self.sync()
                self.notes["API"] = choice + (f" (pygraph failed: {errors[0]})" if errors else "")
                break
            except Exception as error:  # noqa: BLE001 -- said in the report, then the other API
                errors.append(f"{type(error).__name__}: {error}"[:300])
                print(f"frontend_py_ab {name}: building or running with {choice} failed: {errors[-1]}", file=sys.stderr, flush=True)
        else:
            raise dlsym_ab.Unavailable(f"{name}: no API built the graph: " + "; ".join(errors))

    def build(self, api, cudnn, handle, describe, io_type):
        torch = self.torch
        modes = [getattr(cudnn.heur_mode, m) for m in HEURISTICS if hasattr(cudnn.heur_mode, m)]
        kinds = {"io_data_type": io_type, "intermediate_data_type": cudnn.data_type.FLOAT,
                 "compute_data_type": cudnn.data_type.FLOAT}
        if api == "pygraph":
            graph = cudnn.pygraph(handle=handle, **kinds)
            operands = describe(graph)
            graph.deselect_engines(python_engine_names(cudnn))
            graph.build(modes)
            if graph.selected_engine is not None:
                raise RuntimeError(f"the package chose its own engine {graph.selected_engine.name}: the shim would see nothing")
            try:
                self.notes["plan"] = graph.get_plan_name_at_index(getattr(graph, "_plan_index", 0))
            except Exception:  # noqa: BLE001 -- a note only
                pass
        else:
            graph = cudnn._pybind_module.backend_graph(handle=handle.backend_handle, **kinds)
            operands = describe(graph)
            for uid, tensor in enumerate(operands, start=1):  # explicit uids: _execute takes uid -> pointer
                tensor.set_uid(uid)
            graph.validate()
            graph.build_operation_graph()
            graph.create_execution_plans(modes)
            graph.check_support()
            graph.build_plans()
        size = graph.get_workspace_size()
        self.notes["workspace bytes"] = size
        workspace = self.workspace = torch.empty(max(size, 1), dtype=torch.uint8, device="cuda")
        if api == "pygraph":
            pack = dict(operands)  # the graph's tensors -> torch tensors, as the package's samples pass them

            def call():
                graph.execute(pack, workspace, handle=handle)
        else:
            pointers = {tensor.get_uid(): buffer.data_ptr() for tensor, buffer in operands.items()}
            workspace_pointer, raw_handle = workspace.data_ptr(), handle.backend_handle

            def call():
                graph._execute(pointers, workspace_pointer, raw_handle)
        # The graph, the operands' buffers and the workspace stay alive with the workload.
        self.graph, self.operands, self.call = graph, operands, call

    def sync(self):
        self.torch.cuda.synchronize()

    def snapshot(self):
        return b"".join(t.detach().contiguous().view(self.torch.uint8).cpu().numpy().tobytes() for t in self.outputs)


def make_workloads(args):
    """The two graphs; raises dlsym_ab.Unavailable without a GPU or without the package."""
    try:
        import torch  # first: it loads libcudnn.so.9, which the package then finds loaded
    except ImportError as error:
        raise dlsym_ab.Unavailable(f"no torch here: {error}") from None
    if not torch.cuda.is_available():
        raise dlsym_ab.Unavailable("no CUDA device", dlsym_ab.EXIT_NO_GPU)
    try:
        import cudnn
        cudnn.pygraph, cudnn.create_handle  # noqa: B018 -- a package of that name that is not cudnn-frontend
    except (ImportError, AttributeError) as error:
        raise dlsym_ab.Unavailable(f"cudnn-frontend's Python package is not importable: {error} "
                                  "(pip install --no-deps .deps/wheels/nvidia_cudnn_frontend-*.whl)") from None
    device = torch.device("cuda")
    torch.manual_seed(0)
    torch.zeros(1, device=device)  # the CUDA context, before cuDNN's handle
    handle = cudnn.create_handle()
    cudnn.set_stream(handle, torch.cuda.current_stream().cuda_stream)

    b, h, s, d = SDPA_SHAPE
    q, k, v = (torch.randn(b, h, s, d, device=device, dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)

    def describe_sdpa(graph):
        bf16 = cudnn.data_type.BFLOAT16
        tq, tk, tv = (graph.tensor(name=n, dim=list(t.shape), stride=list(t.stride()), data_type=bf16)
                      for n, t in (("q", q), ("k", k), ("v", v)))
        out, stats = graph.sdpa(q=tq, k=tk, v=tv, name="sdpa", generate_stats=False,
                                attn_scale=1.0 / math.sqrt(d), use_causal_mask=False)
        out.set_output(True).set_dim(list(o.shape)).set_stride(list(o.stride())).set_data_type(bf16)
        return {tq: q, tk: k, tv: v, out: o}

    c = CONV
    x = torch.randn(c["n"], c["c"], c["h"], c["w"], device=device, dtype=torch.float16).to(
        memory_format=torch.channels_last)
    wt = (torch.randn(c["k"], c["c"], c["r"], c["s"], device=device, dtype=torch.float16)
          * (2.0 / (c["c"] * c["r"] * c["s"])) ** 0.5).to(memory_format=torch.channels_last)
    y = torch.empty(c["n"], c["k"], c["h"], c["w"], device=device, dtype=torch.float16).to(
        memory_format=torch.channels_last)

    def describe_conv(graph):
        fp16 = cudnn.data_type.HALF
        tx = graph.tensor(name="X", dim=list(x.shape), stride=list(x.stride()), data_type=fp16)
        tw = graph.tensor(name="W", dim=list(wt.shape), stride=list(wt.stride()), data_type=fp16)
        ty = graph.conv_fprop(image=tx, weight=tw, padding=[c["pad"]] * 2, stride=[1, 1], dilation=[1, 1],
                              name="conv")
        ty.set_output(True).set_dim(list(y.shape)).set_stride(list(y.stride())).set_data_type(fp16)
        return {tx: x, tw: wt, ty: y}

    workloads = [
        GraphWorkload("sdpa", f"cuDNN SDPA forward graph, bf16 {b}x{h}x{s}x{d}, not causal, attn_scale a by-value "
                              "float; one call = one graph.execute", cudnn, torch, handle, describe_sdpa, [o],
                      cudnn.data_type.BFLOAT16, args.api),
        GraphWorkload("conv", f"cuDNN conv fprop graph, fp16 NHWC {c['n']}x{c['h']}x{c['w']}x{c['c']}, {c['k']} "
                              f"filters {c['r']}x{c['s']}, padding {c['pad']}; one call = one graph.execute",
                      cudnn, torch, handle, describe_conv, [y], cudnn.data_type.HALF, args.api)]
    versions = {"cudnn-frontend": getattr(cudnn, "__version__", "?"), "torch": torch.__version__,
                "cuda": torch.version.cuda, "device": torch.cuda.get_device_name()}
    try:
        versions["cuDNN (backend)"] = cudnn.backend_version()
    except Exception:  # noqa: BLE001 -- versions are reported when they can be read
        pass
    return workloads, versions, {w.name: w.notes for w in workloads}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    dlsym_ab.add_arguments(parser, "frontend_py")
    parser.add_argument("--api", choices=("auto", "pygraph", "backend"), default="auto",
                        help="cudnn.pygraph, the package's C++ graph, or pygraph falling back to it (default auto)")
    args = parser.parse_args()
    dlsym_ab.check_arguments(parser, args)
    if args.child == "reference":
        return dlsym_ab.child_reference(args, lambda: make_workloads(args))
    if args.child == "ab":
        return dlsym_ab.child_ab(args, lambda: make_workloads(args))
    return dlsym_ab.parent(FrontendProgram(), args)


if __name__ == "__main__":
    sys.exit(main())
