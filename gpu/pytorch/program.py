"""What the check programs (workload.py, workload_nets.py, workload_relocation.py) share: how they
start and what they print, the bytes they write, and the mechanics of the modes they have in common:
the program's own CUDA graph, threads with streams of their own, more shapes than the shim's caches
hold. Like the programs, it knows nothing of the shim.
"""
import hashlib
import os
import threading

import torch


def device_or_skip(name="cuda"):
    """torch.device(name); without the CUDA device asked for, says SKIPPED and exits 77."""
    if name == "cuda" and not torch.cuda.is_available():
        print("SKIPPED: no CUDA device")
        raise SystemExit(77)
    return torch.device(name)


def print_environment(device):
    """The process and the versions, as key=value lines (check.py reads them)."""
    cuda = device.type == "cuda"
    print(f"pid={os.getpid()}")
    print(f"torch={torch.__version__}")
    print(f"torch_cuda={torch.version.cuda}")
    print(f"cudnn={torch.backends.cudnn.version() if cuda else None}")
    print(f"device={torch.cuda.get_device_name() if cuda else 'cpu'}")


def print_values(values):
    for key, value in values.items():
        print(f"{key}={value}")


def write_tensors(path, tensors):
    """The raw bytes of each tensor, in order; prints their SHA-256 for the log."""
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        for tensor in tensors:
            tensor = tensor.detach().cpu().contiguous()
            if tensor.dtype == torch.bfloat16:
                tensor = tensor.view(torch.int16)  # numpy has no bf16: the same bytes as int16
            data = tensor.numpy().tobytes()
            out.write(data)
            digest.update(data)
    print(f"output_sha256={digest.hexdigest()}")


def print_loaded_libraries():
    """Which cuDNN-related objects this process mapped (evidence of what was preloaded and loaded)."""
    names = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "cudnn" in path or "libcudart" in path:
                names.add(path)
    print(f"mapped={','.join(sorted(names))}")


def own_graph(warm, capture, before_capture=None):
    """The program's own CUDA graph, made as the CUDA-graph docs ask: warm() three times on a side
    stream (cuDNN's plans with it), then capture() under torch.cuda.graph; (graph, what capture()
    returned). before_capture() runs just before the capture starts."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            warm()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    if before_capture:
        before_capture()
    with torch.cuda.graph(graph):
        out = capture()
    return graph, out


def on_threads(count, iterations, forward, grad_mode):
    """`count` threads at once, each on a stream of its own, each running forward(its index)
    `iterations` times under grad_mode(); each thread's outputs stacked, in thread order."""
    torch.cuda.synchronize()  # weights and inputs are ready before the side streams read them
    results = [None] * count
    barrier = threading.Barrier(count)

    def run(index):
        stream = torch.cuda.Stream()
        outputs = []
        with grad_mode(), torch.cuda.stream(stream):
            barrier.wait()
            for _ in range(iterations):
                outputs.append(forward(index))
        stream.synchronize()
        results[index] = torch.stack(outputs)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    torch.cuda.synchronize()
    return results


def image_sizes(count, device):
    """`count` images of their own size (8x8, 10x10, ...), the same in every run."""
    generator = torch.Generator().manual_seed(5)
    return [torch.randn(1, 3, 8 + 2 * i, 8 + 2 * i, generator=generator).to(device) for i in range(count)]


def cycled(inputs, rounds, forward):
    """forward(x) twice for each input, the inputs taken in turn `rounds` times (more shapes than the
    shim's caches hold, each met again); the outputs in order."""
    return [forward(x) for _ in range(rounds) for x in inputs for _ in range(2)]
