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

models.py's Net: a conv+batchnorm+ReLU network, batch 1 and 32x32 images in eval mode, so that the
host (and with it cudnnSetStream, called before every cuDNN op) sets the pace. The sdpa modes run
scaled-dot-product attention forced onto cuDNN (SDPBackend.CUDNN_ATTENTION): bf16, batch 1, 8 heads,
128 tokens, head dim 64, not causal. The modes that compute write the bytes of their results to --out, to be
compared bit for bit between runs (sdpa_train writes float32, so that check.py can also measure how
far two runs are apart). Everything else is printed as key=value lines.

The last three are graph replay's cases (the shim replays steady cuDNN executes as CUDA graphs):
capture is the program capturing its own CUDA graph of the network (torch.cuda.graph) and replaying
it; shapes cycles through more image sizes than the shim's caches hold (packs and graphs are evicted
and made again); threads runs the network in several threads at once, each on a stream of its own.
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

# Its folder on the path: gpu/pip-check runs it through runpy.run_path, which puts none there.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402  first: it sets CUBLAS_WORKSPACE_CONFIG (deterministic cuBLAS) before cuBLAS starts
import program  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from models import CLASSES, SDPA_CAUSAL, SDPA_SHAPE, attention, make_inputs, make_net, make_qkv  # noqa: E402
from program import write_tensors  # noqa: E402

CHUNK = 8  # iterations timed together; 8 x ~50 launches stays well inside the launch queue
SDPA_SETS = 4  # distinct q/k/v sets cycled through: a cached pack must follow the pointers


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
    with torch.no_grad(), models.attention_backend("cudnn"):
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
    with models.attention_backend("cudnn"):
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
    with torch.no_grad():
        graph, (static_logits, static_features) = program.own_graph(lambda: net(static_input),
                                                                    lambda: net(static_input))
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
    inputs = program.image_sizes(args.sizes, device)
    with torch.no_grad():
        logits = program.cycled(inputs, args.rounds, lambda x: net(x)[0])
    torch.cuda.synchronize()
    write_tensors(args.out, [torch.stack(logits)])
    print(f"iterations={args.rounds * len(inputs) * 2}")
    print(f"sizes={len(inputs)}")


def threads(args):
    """--threads threads at once, each with its own stream and inputs, the same network (one cuDNN
    handle per thread in PyTorch); each thread's outputs written in thread order."""
    device = torch.device("cuda")
    net = make_net(device).eval()
    inputs = make_inputs(args.threads, 1, device)
    results = program.on_threads(args.threads, args.iters, lambda index: net(inputs[index])[0], torch.no_grad)
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

    program.print_environment(program.device_or_skip())
    {"infer": infer, "streams": streams, "train": train, "time": timed, "sdpa": sdpa,
     "sdpa_train": sdpa_train, "capture": capture, "shapes": shapes, "threads": threads}[args.mode](args)
    program.print_loaded_libraries()


if __name__ == "__main__":
    main()
