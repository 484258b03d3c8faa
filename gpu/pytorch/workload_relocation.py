"""The PyTorch programs of check.py's relocation part (check_relocation.py): calls whose tensors move.
They know nothing of the shim.

    python3 workload_relocation.py generate  --models llama,gpt2 --passes P --warmup W --out FILE
    python3 workload_relocation.py fresh     --iters N --out FILE
    python3 workload_relocation.py alternate --steps N --out FILE
    python3 workload_relocation.py capture   --iters N --passes P --out FILE
    python3 workload_relocation.py streams   --iters N --out FILE
    python3 workload_relocation.py mlp       --iters N --steps S --out FILE

The shim replays a call whose tensors moved (same shapes, new addresses) by launching its shape's
graph pointed at the call's tensors: cuBLASLt's matmul, cuBLAS's GEMMs (cublasGemmEx and the typed
cublasSgemm_v2 and cublasSgemmStridedBatched among them) and cuDNN's legacy batch norm. Each mode
makes tensors move as real programs do, and writes the bytes of its results to --out:

- generate: greedy generation with HF transformers (workloads.py's random-weight Llama and GPT-2,
  generate_ab.py's, bf16, 32 new tokens, 8 prompt lengths in turn): every generate()'s new token ids (int64). Its KV
  cache grows and its activations move every token.
- fresh: models.py's fp32 conv+BN network with a batch norm in front of it, eval, fed the next of a
  ring of RING inputs made beforehand every step, every output kept (as a program that holds its
  results): the first batch norm reads a new input each step, the last writes a new output.
- alternate: a training-like loop (the mixed network below, deterministic settings, MSE, SGD) whose
  activations alternate between two allocations: each step's outputs are held through the next
  step, and the input alternates between two tensors. The losses, the last gradients and weights.
- capture: the mixed network in eval, eagerly on the ring with every output kept (shapes learnt and
  relocated), then the program's own CUDA graph (torch.cuda.graph) of --passes forwards of a static
  input (the calls the shim would otherwise relocate, and, from the third pass, calls whose exact
  tensors it has seen twice), replayed with ring inputs copied in, then eagerly again.
- streams: the mixed network in eval on two side streams in turn (a new stream every iteration),
  fed the ring, every output kept.
- mlp: an fp32 MLP (Linears with and without biases: cublasLtMatmul and cublasSgemm_v2; a per-head
  torch.bmm: cublasSgemmStridedBatched): forwards on the ring with every output kept, then
  deterministic training steps (forward, MSE, backward, SGD): the outputs, losses, last gradients and
  weights.

The mixed network: a BatchNorm2d on the input, 4 conv+BN+ReLU blocks (models.py's, fp32: cuDNN's
legacy batch norm), the mean over the image, an fp32 Linear with a bias (cublasLtMatmul) and one
without (cublasSgemm_v2), then a bf16 Linear with a bias (cublasLtMatmul) and one without
(cublasGemmEx); its forward returns the last three library outputs, which the modes keep.

Under the shim with statistics, each mode also prints the counters that moved (the shim's, read in
the process; docs/statistics.md) as JSON on key=value lines: `steady_counts` (the mode's second
half, or its training steps' second half; per model `<model>_steady_counts` for generate) and, for
capture, `capture_counts` (while the program's stream captured) and `eager_counts` (the eager
iterations before it). --device cpu is a dry run of the code without a GPU (capture and streams
need CUDA; nothing of cuDNN's or cuBLAS's is called).
"""
import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import models  # noqa: E402  first: it sets CUBLAS_WORKSPACE_CONFIG (deterministic cuBLAS) before cuBLAS starts
import harness  # noqa: E402  the shim's counters, read in the process
import program  # noqa: E402
import shimstats  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import workloads  # noqa: E402  the generation's models
from program import write_tensors  # noqa: E402
from workload_nets import training_record  # noqa: E402

RING = 16  # distinct inputs used in turn
MIXED_BATCH, MIXED_DEPTH, MIXED_HIDDEN = 4, 4, 256
MLP_BATCH, MLP_WIDTH, MLP_LAYERS, MLP_HEADS = 16, 256, 6, 8


class Counters:
    """The shim's counters in this process (None without a shim, or without statistics)."""

    def __init__(self):
        self.marks = {}

    @staticmethod
    def read():
        return harness.read_counters()

    def mark(self, name):
        self.marks[name] = self.read()

    def moved(self, name):
        """The counters that moved since mark(name), or None without counters."""
        before, after = self.marks.get(name), self.read()
        if before is None or after is None:
            return None
        return {k: v for k, v in shimstats.delta(before, after).items() if v}

    def say(self, key, name):
        counts = self.moved(name)
        if counts is not None:
            print(f"{key}={json.dumps(counts, sort_keys=True, separators=(',', ':'))}")


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def input_norm(device):
    """A BatchNorm2d on the 3 input channels (cuDNN's legacy batch norm in fp32), seeded."""
    torch.manual_seed(1)
    return models.init_batchnorm(nn.BatchNorm2d(3)).to(device)


class Mixed(nn.Module):
    """Every relocated family in one forward (the module docstring)."""

    def __init__(self, device):
        super().__init__()
        self.features = models.conv_bn_stack(device, depth=MIXED_DEPTH)
        self.norm = input_norm(device)
        torch.manual_seed(2)
        self.fp32_up = nn.Linear(models.WIDTH, MIXED_HIDDEN).to(device)
        self.fp32_mix = nn.Linear(MIXED_HIDDEN, MIXED_HIDDEN, bias=False).to(device)
        self.bf16_up = nn.Linear(MIXED_HIDDEN, 2 * MIXED_HIDDEN).to(device, torch.bfloat16)
        self.bf16_down = nn.Linear(2 * MIXED_HIDDEN, MIXED_HIDDEN, bias=False).to(device, torch.bfloat16)

    def forward(self, x):
        features = self.features(self.norm(x))
        hidden = self.fp32_mix(F.relu(self.fp32_up(features.mean(dim=(2, 3)))))
        out = self.bf16_down(F.gelu(self.bf16_up(hidden.to(torch.bfloat16))))
        return out, hidden, features


class MLP(nn.Module):
    """fp32: MLP_LAYERS Linears (a bias on every other one) with ReLU between, then a per-head
    product by torch.bmm (the hidden split into MLP_HEADS heads, each times its own square matrix)."""

    def __init__(self, device):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList(nn.Linear(MLP_WIDTH, MLP_WIDTH, bias=i % 2 == 0) for i in range(MLP_LAYERS))
        head = MLP_WIDTH // MLP_HEADS
        self.heads = nn.Parameter(torch.randn(MLP_HEADS, head, head) / head ** 0.5)
        self.to(device)

    def forward(self, x):
        """(output, the per-head product, the last Linear's output): the last two are library outputs."""
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        batch = x.shape[0]
        per_head = x.view(batch, MLP_HEADS, -1).transpose(0, 1)  # (heads, batch, head), a strided view
        product = torch.bmm(per_head, self.heads)
        return product.transpose(0, 1).reshape(batch, MLP_WIDTH), product, x


def stacked(kept):
    """The kept outputs' components, each stacked over the iterations (a list of tensors)."""
    return [torch.stack([k[j] for k in kept]) for j in range(len(kept[0]))]


def generate(args, device, counters):
    """Every generate()'s new token ids, per model in turn; the counters over the passes after --warmup."""
    ids = []
    for name in [n for n in args.models.split(",") if n]:
        g = workloads.Generation(name, torch, device)
        for p in range(args.passes):
            if p == args.warmup:
                synchronize(device)
                counters.mark(name)
            for i in range(len(g.prompts)):
                ids += g.new_tokens(i, g.run(i))
        synchronize(device)
        counters.say(f"{name}_steady_counts", name)
        del g
    write_tensors(args.out, [torch.tensor(ids, dtype=torch.int64)])
    return {"generates": args.passes * len(workloads.PROMPT_LENGTHS), "prompt_lengths":
            ",".join(map(str, workloads.PROMPT_LENGTHS)), "new_tokens": workloads.NEW_TOKENS, "models": args.models}


def fresh(args, device, counters):
    net = nn.Sequential(input_norm(device), models.conv_bn_stack(device)).eval()
    inputs = models.images(RING, 1, device)
    kept = []
    with torch.inference_mode():
        for i in range(args.iters):
            if i == args.iters // 2:
                synchronize(device)
                counters.mark("steady")
            kept.append(net(inputs[i % RING]))  # the output held: the last batch norm writes a new one each step
        synchronize(device)
    counters.say("steady_counts", "steady")
    write_tensors(args.out, [torch.stack(kept)])
    return {"iterations": args.iters, "ring": RING}


def alternate(args, device, counters):
    models.deterministic()
    net = Mixed(device).train()
    inputs = models.images(2, MIXED_BATCH, device)
    target = torch.randn(MIXED_BATCH, MIXED_HIDDEN, generator=torch.Generator().manual_seed(3)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    losses = torch.empty(args.steps, device=device)  # one tensor made beforehand (workload_nets.train_steps)
    previous = None
    for i in range(args.steps):
        if i == args.steps // 2:
            synchronize(device)
            counters.mark("steady")
        optimizer.zero_grad(set_to_none=True)
        outputs = net(inputs[i % 2])  # made while the previous step's are still held: the other allocation
        loss = F.mse_loss(outputs[0].float(), target)
        loss.backward()
        optimizer.step()
        losses[i].copy_(loss.detach())
        previous = tuple(t.detach() for t in outputs)  # held through the next step
    synchronize(device)
    counters.say("steady_counts", "steady")
    write_tensors(args.out, training_record(net, losses, previous[0]))
    return {"steps": args.steps, "final_loss": f"{losses[-1].item():.9g}",
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}


def capture(args, device, counters):
    net = Mixed(device).eval()
    inputs = models.images(RING, MIXED_BATCH, device)
    before, after = [], []
    with torch.no_grad():
        counters.mark("eager")
        for i in range(args.iters):
            before.append(net(inputs[i % RING]))
        torch.cuda.synchronize()
        counters.say("eager_counts", "eager")
        static_input = inputs[0].clone()
        static_out = torch.empty(MIXED_BATCH, MIXED_HIDDEN, dtype=torch.bfloat16, device=device)

        def passes():
            # Each pass's tensors freed before the next: the graph's pool gives the next pass the
            # same addresses, so from the third pass on the shim meets calls it would capture.
            for _ in range(args.passes):
                static_out.copy_(net(static_input)[0])
        graph, _ = program.own_graph(lambda: net(static_input), passes, before_capture=lambda: counters.mark("capture"))
        counters.say("capture_counts", "capture")
        replayed = torch.empty((args.iters, MIXED_BATCH, MIXED_HIDDEN), dtype=torch.bfloat16, device=device)
        for i in range(args.iters):
            static_input.copy_(inputs[(i + 5) % RING])
            graph.replay()
            replayed[i].copy_(static_out)
        for i in range(args.iters):
            after.append(net(inputs[(i + 9) % RING]))
    torch.cuda.synchronize()
    write_tensors(args.out, stacked(before) + [replayed] + stacked(after))
    return {"iterations": 3 * args.iters, "passes_captured": args.passes}


def streams(args, device, counters):
    net = Mixed(device).eval()
    inputs = models.images(RING, MIXED_BATCH, device)
    side = [torch.cuda.Stream(), torch.cuda.Stream()]
    torch.cuda.synchronize()  # weights and inputs are ready before the side streams read them
    kept = []
    with torch.inference_mode():
        for i in range(args.iters):
            if i == args.iters // 2:
                torch.cuda.synchronize()
                counters.mark("steady")
            with torch.cuda.stream(side[i % len(side)]):
                kept.append(net(inputs[i % RING]))
    torch.cuda.synchronize()
    counters.say("steady_counts", "steady")
    write_tensors(args.out, stacked(kept))
    return {"iterations": args.iters, "streams": len(side)}


def mlp(args, device, counters):
    net = MLP(device)
    generator = torch.Generator().manual_seed(4)
    inputs = [torch.randn(MLP_BATCH, MLP_WIDTH, generator=generator).to(device) for _ in range(RING)]
    kept = []
    net.eval()
    with torch.no_grad():
        for i in range(args.iters):
            kept.append(net(inputs[i % RING]))  # held: every library output a new address
    models.deterministic()
    net.train()
    target = torch.randn(MLP_BATCH, MLP_WIDTH, generator=generator).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    losses, out = torch.empty(args.steps, device=device), None
    for i in range(args.steps):
        if i == args.steps // 2:
            synchronize(device)
            counters.mark("steady")
        optimizer.zero_grad(set_to_none=True)
        out = net(inputs[i % 2])[0]
        loss = F.mse_loss(out, target)
        loss.backward()
        optimizer.step()
        losses[i].copy_(loss.detach())
    synchronize(device)
    counters.say("steady_counts", "steady")
    write_tensors(args.out, stacked(kept) + training_record(net, losses, out))
    return {"iterations": args.iters, "steps": args.steps, "final_loss": f"{losses[-1].item():.9g}",
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}


MODES = {"generate": generate, "fresh": fresh, "alternate": alternate, "capture": capture, "streams": streams,
         "mlp": mlp}
CUDA_ONLY = ("capture", "streams")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: a dry run of the code without a GPU (not capture, not streams)")
    modes = parser.add_subparsers(dest="mode_name", required=True)
    for name in MODES:
        mode = modes.add_parser(name)
        mode.add_argument("--out", required=True)
        if name == "generate":
            mode.add_argument("--models", default="llama,gpt2")
            mode.add_argument("--passes", type=int, default=4, help="passes over the prompts")
            mode.add_argument("--warmup", type=int, default=2, help="passes before the steady counters")
        else:
            mode.add_argument("--iters", type=int, default=40)
        if name in ("alternate", "mlp"):
            mode.add_argument("--steps", type=int, default=30)
        if name == "capture":
            mode.add_argument("--passes", type=int, default=4, help="forwards inside the program's capture")
    args = parser.parse_args()
    device = program.device_or_skip(args.device)
    if args.device == "cpu" and args.mode_name in CUDA_ONLY:
        parser.error(f"{args.mode_name} needs CUDA")
    program.print_environment(device)
    print(f"cublas_workspace_config={os.environ.get('CUBLAS_WORKSPACE_CONFIG', '')}")
    counters = Counters()
    print(f"counted={counters.read() is not None}")
    program.print_values(MODES[args.mode_name](args, device, counters))
    program.print_loaded_libraries()


if __name__ == "__main__":
    main()
