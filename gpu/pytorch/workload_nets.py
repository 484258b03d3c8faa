"""The PyTorch programs of check.py's legacy part (check_legacy.py). They know nothing of the shim.

    python3 workload_nets.py convbn  --mode eval|train|autocast --iters N --out FILE
    python3 workload_nets.py stack   [--no-bias] [--train] [--attention cudnn|math] --iters N --out FILE
    python3 workload_nets.py capture --net NET --iters N --out FILE
    python3 workload_nets.py threads --net convbn|stack --threads T --iters N --out FILE
    python3 workload_nets.py shapes  --net convbn|stack [--no-bias] --sizes N --rounds R --out FILE
    python3 workload_nets.py lstm    --iters N --steps S --out FILE

The networks are models.py's: the fp32 conv+batchnorm+ReLU stack (its batch norms are cuDNN's
legacy calls) and the BERT-base transformer stack in bf16 (its Linears are cuBLASLt's matmul with
biases, cuBLAS's GemmEx without). convbn: eval under inference_mode, batch 1, every iteration's
output; train: a deterministic training step, batch 2, the losses, then the last gradients,
weights and running statistics; autocast: the same step with fp16 activations (torch.autocast),
batch norm in fp32. stack: eval under inference_mode, every output; --train: training steps (MSE,
SGD), the losses and what training_record() keeps. capture: the program's own CUDA graph
(torch.cuda.graph) of NET (convbn, convbn_train, stack_bias, stack_nobias, stack_train_math),
replayed with new inputs, then the same eagerly. threads: T threads with their own streams. shapes:
more input shapes than the shim's caches hold (image sizes, or sequence lengths of a 2-layer stack
with math attention). lstm: a 2-layer LSTM, eval outputs and deterministic training steps. Every
mode writes the bytes of its results to --out (float32 where check.py may measure a spread) and
prints key=value lines. --device cpu is a dry run of the code without a GPU (attention by
PyTorch's choice; nothing of cuDNN's is called; capture and threads need CUDA streams).
"""
import argparse
import contextlib

import models  # first: it sets CUBLAS_WORKSPACE_CONFIG (deterministic cuBLAS) before cuBLAS starts
import program
import torch
import torch.nn.functional as F
from program import write_tensors

STACK_SHAPE_LAYERS = 2  # the shapes case's stack: each length is new shapes for every matmul
FULL_RECORD_ELEMENTS = 2_000_000  # training records keep every gradient and weight below this size


def attention(args):
    return contextlib.nullcontext() if args.device == "cpu" else models.attention_backend(args.attention)


def training_record(model, losses, out):
    """What a training run writes, as float32: the losses, the last output, then every gradient and
    weight (or, for a large model, the per-tensor sums of both and the first and last gradient)."""
    parameters = [p for p in model.parameters()]
    record = [losses.float(), out.detach().float()]
    if sum(p.numel() for p in parameters) <= FULL_RECORD_ELEMENTS:
        record += [p.grad.float() for p in parameters] + [p.detach().float() for p in parameters]
        record += [b.float() for b in model.buffers()]
    else:
        record += [torch.stack([p.grad.float().sum() for p in parameters]),
                   torch.stack([p.detach().float().sum() for p in parameters]),
                   parameters[0].grad.float(), parameters[-1].grad.float()]
    return record


def train_steps(model, step_input, target, steps, lr, autocast=None, forward=None):
    """Forward (model, or `forward`), MSE, backward and SGD `steps` times; (losses, last output).

    The losses go into one tensor made beforehand: a loop that keeps each step's loss tensor (a list
    of them) holds one more small block of PyTorch's caching allocator every step, which moves the
    step's other small tensors (a transformer's activations at batch 1) to new addresses every
    iteration, so that no call repeats and the shim's caches back off (seen on the H200, 2026-12-01)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses, out = torch.empty(steps, device=target.device), None
    for i in range(steps):
        optimizer.zero_grad(set_to_none=True)
        with autocast or contextlib.nullcontext():
            out = (forward or model)(step_input(i))
        loss = F.mse_loss(out.float(), target)
        loss.backward()
        optimizer.step()
        losses[i].copy_(loss.detach())
    return losses, out


def convbn(args, device):
    if args.mode == "eval":
        net = models.conv_bn_stack(device).eval()
        inputs = models.images(4, 1, device)
        results = torch.empty(args.iters, models.WIDTH, models.IMAGE, models.IMAGE, device=device)
        with torch.inference_mode():
            for i in range(args.iters):
                results[i].copy_(net(inputs[i % len(inputs)])[0])  # the output dropped, as a program does
        write_tensors(args.out, [results])
        return {"iterations": args.iters}
    models.deterministic()
    net = models.conv_bn_stack(device).train()
    inputs = models.images(1, 2, device)
    target = torch.randn(2, models.WIDTH, models.IMAGE, models.IMAGE,
                         generator=torch.Generator().manual_seed(2)).to(device)
    autocast = torch.autocast(device.type, dtype=torch.float16) if args.mode == "autocast" else None
    losses, out = train_steps(net, lambda i: inputs[0], target, args.iters, 0.05, autocast)
    write_tensors(args.out, training_record(net, losses, out))
    return {"steps": args.iters, "final_loss": f"{losses[-1].item():.9g}",
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}


def stack(args, device):
    model = models.transformer(device, bias=args.bias)
    inputs = models.hidden_states(2, device)
    if not args.train:
        model.eval()
        results = torch.empty(args.iters, 1, models.SEQUENCE, models.HIDDEN, dtype=torch.bfloat16, device=device)
        with torch.inference_mode(), attention(args):
            for i in range(args.iters):
                results[i].copy_(model(inputs[i % len(inputs)]))
        write_tensors(args.out, [results])
        return {"iterations": args.iters}
    if args.attention == "math":
        models.deterministic()  # cuDNN's attention refuses the deterministic mode; the math one is deterministic
    model.train()
    target = torch.randn(1, models.SEQUENCE, models.HIDDEN, generator=torch.Generator().manual_seed(3)).to(device)
    with attention(args):
        losses, out = train_steps(model, lambda i: inputs[i % len(inputs)], target, args.iters, 0.01)
    write_tensors(args.out, training_record(model, losses, out))
    return {"steps": args.iters, "final_loss": f"{losses[-1].item():.9g}"}


def capture(args, device):
    """The program's own CUDA graph, warmed up on a side stream as the CUDA-graph docs ask, captured,
    replayed --iters times with new inputs copied into its static input; then the same eagerly (the
    shim's replays again)."""
    train = args.net in ("convbn_train", "stack_train_math")
    if args.net.startswith("convbn"):
        model = models.conv_bn_stack(device)
        inputs = models.images(4, 2 if train else 1, device)
        target = torch.zeros(2, models.WIDTH, models.IMAGE, models.IMAGE, device=device)
    else:
        model = models.transformer(device, bias=args.net != "stack_nobias")
        inputs = models.hidden_states(4, device)
        target = torch.zeros(1, models.SEQUENCE, models.HIDDEN, device=device)
    if train:
        models.deterministic()
    args.attention = "math" if args.net == "stack_train_math" else "cudnn"
    model.train(train)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    grad = contextlib.nullcontext() if train else torch.no_grad()

    def step(x):
        if not train:
            return model(x)
        out = model(x)
        loss = F.mse_loss(out.float(), target)
        loss.backward()
        optimizer.step()
        return loss.detach()

    def warm():
        optimizer.zero_grad(set_to_none=True)
        step(static_input)

    static_input = inputs[0].clone()
    with attention(args), grad:
        graph, static_out = program.own_graph(warm, lambda: step(static_input),
                                              before_capture=lambda: optimizer.zero_grad(set_to_none=True))
        # Results into tensors made beforehand, not lists of new ones (see train_steps).
        replayed = torch.empty((args.iters,) + tuple(static_out.shape), device=device)
        eager = torch.empty_like(replayed)
        for i in range(args.iters):
            static_input.copy_(inputs[i % len(inputs)])
            graph.replay()
            replayed[i].copy_(static_out)
        for i in range(args.iters):
            if train:
                optimizer.zero_grad(set_to_none=True)
            eager[i].copy_(step(inputs[i % len(inputs)]))
    torch.cuda.synchronize()
    write_tensors(args.out, [replayed, eager])
    return {"iterations": 2 * args.iters, "net": args.net}


def threads(args, device):
    """--threads threads at once, each with its own stream and input, the same network; each
    thread's outputs in thread order."""
    if args.net == "convbn":
        model = models.conv_bn_stack(device).eval()
        inputs = models.images(args.threads, 1, device)
    else:
        model = models.transformer(device, bias=True).eval()
        inputs = models.hidden_states(args.threads, device)
    with attention(args):  # PyTorch's backend choice is process-wide: set once for every thread
        results = program.on_threads(args.threads, args.iters, lambda index: model(inputs[index]).float().sum(dim=1),
                                     torch.inference_mode)
    write_tensors(args.out, results)
    return {"iterations": args.iters * args.threads, "threads": args.threads}


def shapes(args, device):
    """--sizes input shapes (image sizes 8, 10, ...; or sequence lengths 16, 17, ...), cycled --rounds
    times, two iterations each: more distinct ops than the shim's caches hold. Each output is summed
    over its spatial or token axis (float32), which keeps every element's bits in play."""
    if args.net == "convbn":
        model = models.conv_bn_stack(device).eval()
        inputs = program.image_sizes(args.sizes, device)
        reduce = (2, 3)
    else:
        args.attention = "math"  # no cuDNN attention graph to build per length: the matmuls are the point
        model = models.transformer(device, bias=args.bias, layers=STACK_SHAPE_LAYERS).eval()
        generator = torch.Generator().manual_seed(5)
        inputs = [torch.randn(1, 16 + i, models.HIDDEN, generator=generator).to(device, torch.bfloat16)
                  for i in range(args.sizes)]
        reduce = 1
    with torch.inference_mode(), attention(args):
        sums = program.cycled(inputs, args.rounds, lambda x: model(x).float().sum(dim=reduce))
    write_tensors(args.out, [torch.cat(sums)])
    return {"iterations": len(sums), "sizes": args.sizes}


def lstm(args, device):
    """A 2-layer LSTM (cuDNN's RNN API, which the shim does not replay): eval outputs, then
    deterministic training steps."""
    torch.manual_seed(0)
    model = torch.nn.LSTM(64, 128, num_layers=2, batch_first=True).to(device)
    generator = torch.Generator().manual_seed(6)
    inputs = [torch.randn(4, 32, 64, generator=generator).to(device) for _ in range(3)]
    outputs = []
    model.eval()
    with torch.inference_mode():
        for i in range(args.iters):
            outputs.append(model(inputs[i % len(inputs)])[0])
    models.deterministic()
    model.train()
    target = torch.randn(4, 32, 128, generator=generator).to(device)
    losses, out = train_steps(model, lambda i: inputs[i % len(inputs)], target, args.steps, 0.05,
                              forward=lambda x: model(x)[0])
    write_tensors(args.out, [torch.stack(outputs)] + training_record(model, losses, out))
    return {"iterations": args.iters, "steps": args.steps}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: a dry run of the code without a GPU")
    modes = parser.add_subparsers(dest="mode_name", required=True)
    for name in ("convbn", "stack", "capture", "threads", "shapes", "lstm"):
        mode = modes.add_parser(name)
        mode.add_argument("--out", required=True)
        mode.add_argument("--iters", type=int, default=20)
        mode.add_argument("--attention", choices=("cudnn", "math"), default="cudnn")
        mode.add_argument("--no-bias", dest="bias", action="store_false")
        if name == "convbn":
            mode.add_argument("--mode", choices=("eval", "train", "autocast"), default="eval")
        if name == "stack":
            mode.add_argument("--train", action="store_true")
        if name in ("capture", "threads", "shapes"):
            nets = ("convbn", "convbn_train", "stack_bias", "stack_nobias", "stack_train_math") \
                if name == "capture" else ("convbn", "stack")
            mode.add_argument("--net", choices=nets, required=True)
        if name == "threads":
            mode.add_argument("--threads", type=int, default=4)
        if name == "shapes":
            mode.add_argument("--sizes", type=int, default=40)
            mode.add_argument("--rounds", type=int, default=2)
        if name == "lstm":
            mode.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    device = program.device_or_skip(args.device)
    program.print_environment(device)
    program.print_values({"convbn": convbn, "stack": stack, "capture": capture, "threads": threads, "shapes": shapes,
                          "lstm": lstm}[args.mode_name](args, device))
    print(f"attention={args.attention if args.device == 'cuda' else 'default'}")
    program.print_loaded_libraries()


if __name__ == "__main__":
    main()
