"""The PyTorch program that gpu-check runs with and without the shim. It knows nothing of the shim.

    python3 workload.py infer   --iters N --out FILE
    python3 workload.py streams --iters N --switch-every K --out FILE
    python3 workload.py train   --steps N --out FILE
    python3 workload.py time    --chunks N --warmup W

A conv+batchnorm+ReLU network, batch 1 and 32x32 images in eval mode, so that the host (and with it
cudnnSetStream, called before every cuDNN op) sets the pace. The modes that compute write the bytes
of their results to --out, to be compared bit for bit between runs. Everything else is printed as
key=value lines.
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

DEPTH = 16  # conv+bn+relu blocks: 32 cuDNN ops (so 32 cudnnSetStream calls) per forward
WIDTH = 32
IMAGE = 32
CLASSES = 10
CHUNK = 8  # iterations timed together; 8 x ~50 launches stays well inside the launch queue


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


def write_tensors(path, tensors):
    """The raw bytes of each tensor, in order; prints their SHA-256 for the log."""
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        for tensor in tensors:
            data = tensor.detach().cpu().contiguous().numpy().tobytes()
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
    mode = modes.add_parser("time")
    mode.add_argument("--chunks", type=int, default=40)
    mode.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()

    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA device")
        raise SystemExit(77)
    print_environment()
    {"infer": infer, "streams": streams, "train": train, "time": timed}[args.mode](args)
    print_loaded_libraries()


if __name__ == "__main__":
    main()
