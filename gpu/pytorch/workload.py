"""The PyTorch program that gpu-check runs with and without the shim. It knows nothing of the shim.

    python3 workload.py infer   --iters N --out FILE
    python3 workload.py streams --iters N --switch-every K --out FILE
    python3 workload.py train   --steps N --out FILE
    python3 workload.py time    --chunks N --warmup W
    python3 workload.py sdpa       --iters N --out FILE
    python3 workload.py sdpa_train --steps N --out FILE
    python3 workload.py capture --iters N --out FILE
    python3 workload.py shapes  --sizes N --rounds R --out FILE
    python3 workload.py threads --threads T --iters N --out FILE

A conv+batchnorm+ReLU network, batch 1 and 32x32 images in eval mode, so that the host (and with it
cudnnSetStream, called before every cuDNN op) sets the pace. The sdpa modes run scaled-dot-product
attention forced onto cuDNN (SDPBackend.CUDNN_ATTENTION): bf16, batch 1, 8 heads, 128 tokens, head
dim 64, not causal. The modes that compute write the bytes of their results to --out, to be
compared bit for bit between runs (sdpa_train writes float32, so that check.py can also measure how
far two runs are apart). Everything else is printed as key=value lines.

The last three are graph replay's cases (the shim replays steady cuDNN executes as CUDA graphs):
capture is the program capturing its own CUDA graph of the network (torch.cuda.graph) and replaying
it; shapes cycles through more image sizes than the shim's caches hold (packs and graphs are evicted
and made again); threads runs the network in several threads at once, each on a stream of its own.
"""
import os

# Deterministic cuBLAS (the linear head) needs a fixed workspace, set before cuBLAS starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

DEPTH = 16  # conv+bn+relu blocks: 32 cuDNN ops (so 32 cudnnSetStream calls) per forward
WIDTH = 32
IMAGE = 32
CLASSES = 10
CHUNK = 8  # iterations timed together; 8 x ~50 launches stays well inside the launch queue

# Scaled-dot-product attention: (batch, heads, tokens, head dim), bf16. Small, so that the host's
# work per call (and with it the variant pack PyTorch builds per cuDNN SDPA call) shows.
SDPA_SHAPE = (1, 8, 128, 64)
SDPA_CAUSAL = False  # full attention; cuDNN takes is_causal=True as well, this keeps one graph
SDPA_SETS = 4  # distinct q/k/v sets cycled through: a cached pack must follow the pointers


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        layers, channels = [], 3
        for _ in range(DEPTH):
            layers += [nn.Conv2d(channels, WIDTH, 3, padding=1, bias=False),
                       nn.BatchNorm2d(WIDTH), nn.ReLU(inplace=True)]
            channels = WIDTH
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, x):
        features = self.features(x)
        # A mean, not adaptive pooling: its backward is deterministic.
        return self.head(features.mean(dim=(2, 3))), features


def make_net(device):
    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        # Running statistics away from 0 and 1, so that eval-mode batchnorm does real arithmetic.
        for module in net.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    return net.to(device)


def make_inputs(count, batch, device):
    generator = torch.Generator().manual_seed(1)
    return torch.randn(count, batch, 3, IMAGE, IMAGE, generator=generator).to(device)


def make_qkv(count, device, requires_grad=False):
    """count (q, k, v) triples of SDPA_SHAPE in bf16, the same in every run."""
    generator = torch.Generator().manual_seed(3)
    return [tuple(torch.randn(SDPA_SHAPE, generator=generator).to(device, torch.bfloat16)
                  .requires_grad_(requires_grad) for _ in range(3))
            for _ in range(count)]


def cudnn_attention():
    """A context in which scaled_dot_product_attention may only use cuDNN (it raises otherwise)."""
    return sdpa_kernel([SDPBackend.CUDNN_ATTENTION])


def attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=SDPA_CAUSAL)


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


def print_environment():
    print(f"pid={os.getpid()}")
    print(f"torch={torch.__version__}")
    print(f"torch_cuda={torch.version.cuda}")
    print(f"cudnn={torch.backends.cudnn.version()}")
    print(f"device={torch.cuda.get_device_name()}")


def print_loaded_libraries():
    """Which cuDNN-related objects this process mapped (evidence of what was preloaded and loaded)."""
    names = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "cudnn" in path or "libcudart" in path:
                names.add(path)
    print(f"mapped={','.join(sorted(names))}")


def infer(args):
    device = torch.device("cuda")
    net = make_net(device).eval()
    inputs = make_inputs(8, 1, device)
    logits = []
    with torch.no_grad():
        for i in range(args.iters):
            out, features = net(inputs[i % len(inputs)])
            logits.append(out)
    torch.cuda.synchronize()
    write_tensors(args.out, [torch.stack(logits), features])
    print(f"iterations={args.iters}")


def streams(args):
    """The same inference on two side streams, switching every --switch-every iterations."""
    device = torch.device("cuda")
    net = make_net(device).eval()
    inputs = make_inputs(8, 1, device)
    side = [torch.cuda.Stream(), torch.cuda.Stream()]
    torch.cuda.synchronize()  # weights and inputs are ready before the side streams read them
    logits, changes, previous = [], 0, None
    with torch.no_grad():
        for i in range(args.iters):
            current = (i // args.switch_every) % len(side)
            changes += previous is not None and current != previous
            previous = current
            with torch.cuda.stream(side[current]):
                out, features = net(inputs[i % len(inputs)])
            logits.append(out)
    torch.cuda.synchronize()
    write_tensors(args.out, [torch.stack(logits), features])
    print(f"iterations={args.iters}")
    # Every change makes the next cuDNN op set a new stream on the handle: it must reach cuDNN.
    print(f"stream_changes={changes}")


def train(args):
    """Forward, backward and an optimizer step, deterministic, so that runs compare bit for bit."""
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    # warn_only: an op with no deterministic kernel warns (in the log) instead of ending the run;
    # check.py compares two runs without the shim before judging the shim on training anyway.
    torch.use_deterministic_algorithms(True, warn_only=True)
    # Set at import (before cuBLAS started); printed so that check.py can see it was in effect.
    print(f"cublas_workspace_config={os.environ.get('CUBLAS_WORKSPACE_CONFIG', '')}")
    device = torch.device("cuda")
    net = make_net(device).train()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    inputs = make_inputs(1, 4, device)[0]
    targets = torch.randn(4, CLASSES, generator=torch.Generator().manual_seed(2)).to(device)
    losses = []
    for _ in range(args.steps):
        optimizer.zero_grad(set_to_none=True)
        out, _ = net(inputs)
        # Mean squared error: cross-entropy's NLLLoss has no deterministic CUDA kernel and would throw.
        loss = F.mse_loss(out, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    torch.cuda.synchronize()
    parameters = list(net.parameters())
    # Losses, then the last step's gradients, then the weights and batchnorm statistics after it.
    write_tensors(args.out, [torch.stack(losses)] + [p.grad for p in parameters] + parameters
                  + list(net.buffers()))
    print(f"steps={args.steps}")
    print(f"final_loss={losses[-1].item():.9g}")


def print_sdpa_setup():
    print(f"sdpa_shape={'x'.join(map(str, SDPA_SHAPE))}")
    print(f"sdpa_causal={SDPA_CAUSAL}")
    print("sdpa_backend=CUDNN_ATTENTION")
    # cuDNN SDPA refuses to run under torch.use_deterministic_algorithms: these modes never set it.
    print(f"deterministic_algorithms={torch.are_deterministic_algorithms_enabled()}")


def sdpa(args):
    """cuDNN SDPA forward, no autograd: every iteration's output, bf16, in order."""
    device = torch.device("cuda")
    sets = make_qkv(SDPA_SETS, device)
    # Each output is copied out and dropped at once, so the allocator hands the next call the same
    # address, as in a real model: the shim's pack cache sees repeated packs (and must still follow
    # the q/k/v pointers, which cycle through SDPA_SETS sets).
    results = torch.empty((args.iters, *SDPA_SHAPE), dtype=torch.bfloat16, device=device)
    with torch.no_grad(), cudnn_attention():
        for i in range(args.iters):
            results[i].copy_(attention(*sets[i % len(sets)]))
    torch.cuda.synchronize()
    write_tensors(args.out, [results])
    print_sdpa_setup()
    print(f"iterations={args.iters}")


def sdpa_train(args):
    """cuDNN SDPA forward and backward: the gradients of q, k and v of every step, as float32."""
    device = torch.device("cuda")
    sets = make_qkv(SDPA_SETS, device, requires_grad=True)
    generator = torch.Generator().manual_seed(4)
    upstream = [torch.randn(SDPA_SHAPE, generator=generator).to(device, torch.bfloat16) for _ in sets]
    # float32 holds every bf16 value exactly; check.py reads it with array('f').
    results = torch.empty((args.steps, 3, *SDPA_SHAPE), dtype=torch.float32, device=device)
    with cudnn_attention():
        for step in range(args.steps):
            i = step % len(sets)
            out = attention(*sets[i])
            out.backward(upstream[i])
            for j, tensor in enumerate(sets[i]):
                results[step, j].copy_(tensor.grad)
                tensor.grad = None  # the next step's gradients reuse the memory, as in training
            del out
    torch.cuda.synchronize()
    write_tensors(args.out, [results])
    print_sdpa_setup()
    print(f"steps={args.steps}")


def capture(args):
    """The program's own CUDA graph of the network: warmed up on a side stream, captured, replayed
    --iters times with new inputs copied into its static input. The shim must execute directly
    inside the capture (its executes are recorded into the program's graph)."""
    device = torch.device("cuda")
    net = make_net(device).eval()
    inputs = make_inputs(8, 1, device)
    static_input = inputs[0].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):  # the warm-up the CUDA-graph docs ask for (and cuDNN's plans)
            net(static_input)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_logits, static_features = net(static_input)
    logits = []
    for i in range(args.iters):
        static_input.copy_(inputs[i % len(inputs)])
        graph.replay()
        logits.append(static_logits.clone())
    # And the same network run eagerly afterwards (the shim's own graphs again).
    with torch.no_grad():
        for i in range(args.iters):
            out, features = net(inputs[i % len(inputs)])
            logits.append(out)
    torch.cuda.synchronize()
    write_tensors(args.out, [torch.stack(logits), static_features, features])
    print(f"iterations={args.iters}")


def shapes(args):
    """--sizes image sizes (each a new set of cuDNN plans and packs), cycled --rounds times, two
    iterations per size and round: more (handle, plan, pack) triples than the shim's caches hold."""
    device = torch.device("cuda")
    net = make_net(device).eval()
    generator = torch.Generator().manual_seed(5)
    sizes = [8 + 2 * i for i in range(args.sizes)]
    inputs = [torch.randn(1, 3, size, size, generator=generator).to(device) for size in sizes]
    logits = []
    with torch.no_grad():
        for _ in range(args.rounds):
            for x in inputs:
                for _ in range(2):
                    out, _ = net(x)
                    logits.append(out)
    torch.cuda.synchronize()
    write_tensors(args.out, [torch.stack(logits)])
    print(f"iterations={args.rounds * len(sizes) * 2}")
    print(f"sizes={len(sizes)}")


def threads(args):
    """--threads threads at once, each with its own stream and inputs, the same network (one cuDNN
    handle per thread in PyTorch); each thread's outputs written in thread order."""
    import threading

    device = torch.device("cuda")
    net = make_net(device).eval()
    inputs = make_inputs(args.threads, 1, device)
    torch.cuda.synchronize()
    results = [None] * args.threads
    barrier = threading.Barrier(args.threads)

    def run(index):
        stream = torch.cuda.Stream()
        logits = []
        with torch.no_grad(), torch.cuda.stream(stream):
            barrier.wait()
            for _ in range(args.iters):
                out, _ = net(inputs[index])
                logits.append(out)
        stream.synchronize()
        results[index] = torch.stack(logits)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(args.threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    torch.cuda.synchronize()
    write_tensors(args.out, results)
    print(f"iterations={args.iters * args.threads}")
    print(f"threads={args.threads}")


def timed(args):
    """Per-iteration time of the inference loop: host enqueue time and time to completion."""
    device = torch.device("cuda")
    net = make_net(device).eval()
    x = make_inputs(1, 1, device)[0]
    enqueue, complete = [], []
    with torch.no_grad():
        for _ in range(args.warmup):
            net(x)
        torch.cuda.synchronize()
        for _ in range(args.chunks):
            start = time.perf_counter_ns()
            for _ in range(CHUNK):
                net(x)
            queued = time.perf_counter_ns()
            torch.cuda.synchronize()
            done = time.perf_counter_ns()
            enqueue.append((queued - start) / CHUNK)
            complete.append((done - start) / CHUNK)
    print(f"iterations={args.warmup + args.chunks * CHUNK}")
    print(f"enqueue_ns_median={statistics.median(enqueue):.0f}")
    print(f"complete_ns_median={statistics.median(complete):.0f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    for name in ("infer", "streams"):
        mode = modes.add_parser(name)
        mode.add_argument("--iters", type=int, default=200)
        mode.add_argument("--out", required=True)
        if name == "streams":
            mode.add_argument("--switch-every", type=int, default=5)
    mode = modes.add_parser("train")
    mode.add_argument("--steps", type=int, default=5)
    mode.add_argument("--out", required=True)
    mode = modes.add_parser("sdpa")
    mode.add_argument("--iters", type=int, default=100)
    mode.add_argument("--out", required=True)
    mode = modes.add_parser("sdpa_train")
    mode.add_argument("--steps", type=int, default=8)
    mode.add_argument("--out", required=True)
    mode = modes.add_parser("capture")
    mode.add_argument("--iters", type=int, default=50)
    mode.add_argument("--out", required=True)
    mode = modes.add_parser("shapes")
    mode.add_argument("--sizes", type=int, default=40)
    mode.add_argument("--rounds", type=int, default=3)
    mode.add_argument("--out", required=True)
    mode = modes.add_parser("threads")
    mode.add_argument("--threads", type=int, default=4)
    mode.add_argument("--iters", type=int, default=100)
    mode.add_argument("--out", required=True)
    mode = modes.add_parser("time")
    mode.add_argument("--chunks", type=int, default=40)
    mode.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()

    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA device")
        raise SystemExit(77)
    print_environment()
    {"infer": infer, "streams": streams, "train": train, "time": timed, "sdpa": sdpa,
     "sdpa_train": sdpa_train, "capture": capture, "shapes": shapes, "threads": threads}[args.mode](args)
    print_loaded_libraries()


if __name__ == "__main__":
    main()
