"""The PyTorch workloads by name, shared by the A/Bs and the checks: the in-process A/B's (ab.py,
per_call.py; what one iteration is, and the targets) and the greedy generation's models
(generate_ab.py, and workload_relocation.py's generate check); their networks are models.py's.

WORKLOADS, TARGETS, FLOORS and MODELS are plain data, read by the parents (no torch there);
make_workload() and Generation import torch (and transformers) and build one in the child.
docs/ab-method.md describes each workload and why it is built so.

A workload's spec: timed (K iterations per timed block), warmup (untimed iterations after each
switch, in both arms of a pair), compare (whether each block's output is compared with a reference
computed with every feature off: False for steps that are not deterministic), drop (the timed
iterations keep no output, as a program that consumes it at once: the next iteration gets the
same addresses; the output compared is that of one more iteration after the timed ones), plans
(iterations with every feature off before anything is measured, 20 unless said: cuDNN's plans and
cuBLAS's heuristics for every shape a workload cycles through are made there, not in a timed block).
A workload whose output depends on which of several inputs it took (conv_fresh) gives its step the
attributes `variants` (how many) and `which()` (the one the last call took): each gets its reference.
A step that moves through its inputs (or, decode_grow, a KV length) gives `tell()` and `seek(mark)`
(positioned()): ab.py runs the two blocks of a pair from the same mark, so that both arms time the
same inputs.
"""
import collections
import contextlib
import random
import time

import harness

WARMUP = harness.WARMUP  # after each switch, in both arms alike (harness.py says why 8)
BIG_BATCH = 256
SDPA_CALLS = 16  # cuDNN SDPA forward calls per sdpa iteration
MANY_SHAPES = [(h, w) for h in range(8, 28) for w in range(8, 23)]  # 300 input shapes
SHAPES_PER_ITERATION = 16
# The loads that never repeat: sizes cycled through, more of them than the shim's caches hold.
ROW_COUNTS = range(8, 308)  # linear_rows: 300 row counts of a 512-wide bf16 input
LINEAR_WIDTH, LINEAR_DEPTH = 512, 4
SEQ_LENGTHS = range(16, 316)  # seq_lengths: 300 sequence lengths of one encoder layer
SEQS_PER_ITERATION = 8
FRESH_SIZES = [(b, h, w) for b in (2, 3, 4, 5) for h in range(8, 23) for w in range(8, 13)]  # 300 input sizes
FRESH_PER_ITERATION = 8
DECODE_LAYERS, DECODE_HEADS, DECODE_HEAD_DIM = 8, 8, 64  # decode_grow: one token's attention per layer
DECODE_PROMPT, DECODE_STEPS = 32, 256  # the KV length grows 33..288, then a new sequence starts
LSTM_LENGTHS = range(16, 80)  # lstm: 64 sequence lengths, two calls per iteration
LSTM_PER_ITERATION = 2
FRESH_RING = 7  # conv_fresh: distinct inputs used in turn (prime to a block's 8 + 2 + 1 iterations)
SHIFT_KEPT, SHIFT_PADS = 5, 3  # conv_shift: outputs held, and pad allocations of 1 to 3 x 64 KiB held, in rings
NOT_SLOWER_PERCENT = -0.5  # the loads that never repeat: the interval's lower end at least this
# The relocation kinds (per_call.py): each call on the next of MOVING_RING inputs made beforehand, the
# last MOVING_KEPT outputs kept (so that the allocator moves them too); the pinned ones on one input,
# every output dropped (the same addresses every call: replayed by pointer).
MOVING_RING, MOVING_KEPT, MOVING_CALLS = 257, 7, 8
# moving_mix's kinds, in its order, and the call each makes.
MOVING_KINDS = {"lt": "cublasLtMatmul with a bias", "gemm": "cublasGemmEx", "strided": "cublasGemmStridedBatchedEx",
                "sgemm": "cublasSgemm_v2", "bn": "legacy batch norm"}

WORKLOADS = {
    # The legacy cuDNN and cuBLAS replays' workloads.
    "conv_bn16_fp32": {"timed": 2, "warmup": WARMUP, "drop": True,
                       "what": "nn.Sequential of 16 conv+bn+ReLU, fp32, batch 1, 32x32, inference_mode, output dropped"},
    "conv_bn16_fp32_train": {"timed": 2, "warmup": WARMUP, "drop": True,
                             "what": "its training step, fp32, batch 2, deterministic settings (forward, MSE, "
                                     "backward, SGD with lr 0); loss and first gradient compared"},
    "mlp_fp32_train": {"timed": 2, "warmup": WARMUP, "drop": True,
                       "what": "8 nn.Linear(256, 256) with ReLU between, fp32, batch 16, a training step under the "
                               "deterministic settings (forward: cublasLtMatmul; MSE; backward: cublasSgemm_v2, 17 a step "
                               "seen on the H200; SGD with lr 0); loss and first gradient compared"},
    "conv_fresh": {"timed": 2, "warmup": WARMUP, "drop": True,
                   "what": f"conv_bn16_fp32 fed a fresh input every iteration: a ring of {FRESH_RING} distinct inputs "
                           "made beforehand, the next one each iteration (the first layer's pointers move; the "
                           "activations are allocated as PyTorch does); each input's output compared"},
    # Issue 49's conv net fed fresh activations, the allocator's addresses shifting every step.
    "conv_shift": {"timed": 2, "warmup": WARMUP, "drop": True,
                   "what": f"conv_fresh with every step's output held for {SHIFT_KEPT} steps and a pad allocation of "
                           f"a size changing every step held for {SHIFT_PADS}: the activations move every step"},
    "conv_shift16": {"timed": 2, "warmup": WARMUP, "drop": True,
                     "what": "conv_shift in fp16, channels-last (cuDNN's convolutions relocate in this layout)"},
    # Their steady state: each switch of the A/B empties the shim's caches, and a shape relocates only
    # after it has been captured and proven (a few steps); 8 warm-up steps leave part of the timed
    # steps direct, which a program running for minutes never sees. Both arms warm up as long.
    "conv_shift_steady": {"timed": 2, "warmup": 4 * WARMUP, "drop": True,
                          "what": f"conv_shift after {4 * WARMUP} warm-up steps a block (its steady state)"},
    "conv_shift16_steady": {"timed": 2, "warmup": 4 * WARMUP, "drop": True,
                            "what": f"conv_shift16 after {4 * WARMUP} warm-up steps a block (its steady state)"},
    "stack_bias": {"timed": 2, "warmup": WARMUP, "drop": True,
                   "what": "12 BERT-base layers (768, 12 heads, FFN 3072), bf16, batch 1, 128 tokens, cuDNN attention, "
                           "every Linear with a bias (addmm: cublasLtMatmul), inference_mode"},
    "stack_nobias": {"timed": 2, "warmup": WARMUP, "drop": True,
                     "what": "the same stack without biases (matmul: cublasGemmEx), inference_mode"},
    "stack_bias_train": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False,
                         "what": "the stack with biases, a training step (MSE, backward, SGD with lr 0)"},
    "conv_many_shapes": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False,
                         "what": f"one 3x3 conv 3->32 fed {len(MANY_SHAPES)} input shapes in turn, "
                                 f"{SHAPES_PER_ITERATION} per iteration: more than the caches hold (misses)"},
    "conv_bn_shapes": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False, "plans": 24,
                       "what": f"one conv+BatchNorm2d+ReLU block 3->32, fp32 (batch norm in cuDNN), inference_mode, "
                               f"fed the {len(MANY_SHAPES)} shapes of conv_many_shapes in turn, "
                               f"{SHAPES_PER_ITERATION} per iteration: never repeats, must not be slower"},
    "linear_rows": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False, "plans": 24,
                    "what": f"{LINEAR_DEPTH} bf16 Linear({LINEAR_WIDTH}, {LINEAR_WIDTH}) with biases (cublasLtMatmul), "
                            f"inference_mode, fed {len(ROW_COUNTS)} row counts ({ROW_COUNTS[0]}..{ROW_COUNTS[-1]}) in turn, "
                            f"{SHAPES_PER_ITERATION} per iteration: never repeats, must not be slower"},
    "linear_rows_nobias": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False, "plans": 24,
                           "what": "linear_rows without biases (cublasGemmEx): never repeats, must not be slower"},
    "seq_lengths": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False, "plans": 44,
                    "what": f"one nn.TransformerEncoderLayer (256 wide, 8 heads, FFN 1024, batch_first), bf16, batch 1, "
                            f"inference_mode (PyTorch's fused encoder path, its attention by PyTorch's choice), fed "
                            f"{len(SEQ_LENGTHS)} sequence lengths ({SEQ_LENGTHS[0]}..{SEQ_LENGTHS[-1]}) in turn, "
                            f"{SEQS_PER_ITERATION} calls per iteration: never repeats, must not be slower"},
    "fresh_sizes": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False, "plans": 44,
                    "what": f"a small conv+MLP model (2 conv+BatchNorm2d+ReLU 3->32, average pool, Linear 32->256, "
                            f"ReLU, Linear 256->10), fp32, inference_mode, whose input has a new size (batch 2..5, "
                            f"8..22 x 8..12) every forward, {len(FRESH_SIZES)} sizes shuffled, {FRESH_PER_ITERATION} "
                            "forwards per iteration: never repeats, must not be slower"},
    "decode_grow": {"timed": 4, "warmup": 40, "drop": True, "compare": False, "plans": DECODE_STEPS + 4,
                    "what": f"one decode step per iteration: per layer ({DECODE_LAYERS}) one token's attention, "
                            f"q @ k^T and softmax @ v by torch.bmm (cublasGemmStridedBatchedEx), bf16, "
                            f"{DECODE_HEADS} heads of {DECODE_HEAD_DIM}, over a KV cache whose length grows by one "
                            f"every step ({DECODE_PROMPT + 1}..{DECODE_PROMPT + DECODE_STEPS}, then again): never "
                            "repeats, must not be slower. Long warm-up (40 steps, 640 GEMMs, more than a family's "
                            "512-key graph cache) so that each block measures the cache full, as a decode loop that "
                            "never switches does"},
    "lstm": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False, "plans": 40,
             "what": f"a 2-layer nn.LSTM(64, 128), fp32, batch 4, inference_mode (cuDNN's RNN API, its cuBLASLt "
                     f"matmuls inside), fed {len(LSTM_LENGTHS)} sequence lengths ({LSTM_LENGTHS[0]}.."
                     f"{LSTM_LENGTHS[-1]}) shuffled, {LSTM_PER_ITERATION} calls per iteration: never repeats, must "
                     "not be slower. The usual warm-up: if cuDNN's RNN makes a cuBLASLt matmul per step and layer, "
                     "its 16 warm-up calls make more than a family's 512-key graph cache holds, and each block "
                     "starts with the cache full, as a program that never switches (the calls per iteration say)"},
    "conv_bn16_big": {"timed": 2, "warmup": WARMUP, "drop": True,
                      "what": f"conv_bn16_fp32 at batch {BIG_BATCH}: the GPU sets the pace, wall time is the measure"},
    "bn16_train": {"timed": 2, "warmup": WARMUP, "drop": True,
                   "what": "16 BatchNorm2d+ReLU alone, a training step (input with a gradient, sum backward), fp32, "
                           "1x32x32x32: the legacy batch-norm calls and little else"},
    # The backend path's workloads (issues 17 and 19), as before.
    "eval16": {"timed": 2, "warmup": WARMUP,
               "what": "one forward of the 16-layer conv+bn+ReLU network of workload.py, batch 1, 32x32, eval"},
    "sdpa": {"timed": 2, "warmup": WARMUP,
             "what": f"{SDPA_CALLS} cuDNN SDPA forward calls, bf16 1x8x128x64, not causal"},
    # Training steps change nothing between iterations (learning rate 0) but are not compared with
    # a reference: cuDNN's backward may differ run to run.
    "train16": {"timed": 2, "warmup": WARMUP, "compare": False,
                "what": "one training step of the 16-layer network, fp32, batch 2 (forward, backward, SGD with lr 0)"},
    "sdpa_train": {"timed": 2, "warmup": WARMUP, "compare": False,
                   "what": "cuDNN SDPA forward and backward, bf16 1x8x128x64, not causal"},
    "eval16_half": {"timed": 2, "warmup": WARMUP,
                    "what": "eval16 in fp16, channels-last (the issue's prototype measured this layout)"},
    "eval16_big": {"timed": 2, "warmup": WARMUP,
                   "what": f"one forward of the 16-layer network, batch {BIG_BATCH}, 32x32, eval: the GPU is the bottleneck"},
    # The relocation kinds, one call after another, for per_call.py's host time per call.
    "moving_mix": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False,
                   "what": f"{MOVING_CALLS} calls of each kind a call of which moves its tensors: a bf16 Linear "
                           "768x768 with a bias on one row (cublasLtMatmul), one without (cublasGemmEx), a bf16 bmm "
                           "12x(1x64 @ 64x128) (cublasGemmStridedBatchedEx), an fp32 mm 1x768 @ 768x768 "
                           "(cublasSgemm_v2), an fp32 BatchNorm2d(64) eval on 1x64x16x16 (cuDNN's legacy batch "
                           f"norm), each on the next of {MOVING_RING} inputs, its last {MOVING_KEPT} outputs kept"},
    "pinned_mix": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False,
                   "what": "moving_mix's calls on one input each, every output dropped: the same tensors every call"},
    # moving_mix's kinds one at a time (moving_lt, moving_gemm, ...): the driver tracer's table of
    # per_call.py is per workload, so that each kind's driver calls per relocated call show alone.
    **{f"moving_{kind}": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False,
                          "what": f"moving_mix's {call} alone: its driver calls per relocated call"}
       for kind, call in MOVING_KINDS.items()},
    "moving_conv": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False,
                    "what": f"{MOVING_CALLS} fp16 channels-last conv2d 64->64 3x3 on 1x64x16x16 (cudnnBackendExecute), "
                            "each on the next input of the ring, the last outputs kept"},
    "moving_sdpa": {"timed": 2, "warmup": WARMUP, "drop": True, "compare": False,
                    "what": f"{MOVING_CALLS} cuDNN SDPA forwards, bf16 1x8x128x64, q the next of the ring, the last "
                            "outputs kept"},
}
NEVER_REPEATING = ("conv_many_shapes", "conv_bn_shapes", "linear_rows", "linear_rows_nobias", "seq_lengths",
                   "fresh_sizes", "decode_grow", "lstm")
DEFAULT_WORKLOADS = ("conv_bn16_fp32", "conv_bn16_fp32_train", "mlp_fp32_train", "stack_bias", "stack_nobias",
                     "stack_bias_train", *NEVER_REPEATING, "conv_fresh", "conv_bn16_big", "sdpa", "eval16", "train16",
                     "sdpa_train", "eval16_big")

# The issues' targets: percent faster (mean paired CPU-time gain over the mean off time) with the
# features on, and the 95% interval above zero. Those of graph replay (7) hold for every feature on
# (31) as well. Reported, never turned into an exit status.
_GRAPH_TARGETS = {"eval16": 10.0, "train16": 8.0, "sdpa": 15.0}
TARGETS = {("eval16", 3): 1.5, ("sdpa", 3): 3.0,
           **{(w, 7): p for w, p in _GRAPH_TARGETS.items()}, **{(w, 31): p for w, p in _GRAPH_TARGETS.items()}}
# Not slower: the 95% interval's lower end, in percent of the off time, at least this.
_FLOORS = {("sdpa_train", "cpu"): -1.0, ("sdpa_train", "wall"): -1.0, ("eval16_big", "wall"): -1.0,
           ("conv_bn16_big", "wall"): -1.0}
FLOORS = {(w, c, m): p for (w, m), p in _FLOORS.items() for c in (7, 31)}
# The loads that never repeat must not be slower with any feature on: CPU time, every condition.
FLOORS.update({(w, c, "cpu"): NOT_SLOWER_PERCENT for w in NEVER_REPEATING for c in (1, 2, 3, 7, 15, 23, 31)})


def make_workload(name, device):
    """(step, context): step() runs one iteration and returns its outputs (a tuple of tensors),
    inside context (an ExitStack the caller enters)."""
    import torch
    import torch.nn.functional as F

    import models

    stack = contextlib.ExitStack()
    if name in ("conv_bn16_fp32", "conv_bn16_big"):
        net = models.conv_bn_stack(device).eval()
        x = models.images(1, BIG_BATCH if name == "conv_bn16_big" else 1, device)[0]
        stack.enter_context(torch.inference_mode())
        return (lambda: (net(x),)), stack
    if name == "conv_bn16_fp32_train":
        models.deterministic()
        net = models.conv_bn_stack(device).train()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.0, momentum=0.9)  # the same work every step
        x = models.images(1, 2, device)[0]
        target = torch.zeros(2, models.WIDTH, models.IMAGE, models.IMAGE, device=device)
        first = net[0].weight

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(net(x), target)
            loss.backward()
            optimizer.step()
            return loss.detach(), first.grad
        return step, stack
    if name == "bn16_train":
        models.deterministic()
        net = models.bn_stack(device).train()
        x = models.images(1, 1, device, channels=models.WIDTH)[0].requires_grad_(True)

        def step():
            x.grad = None
            for p in net.parameters():
                p.grad = None
            out = net(x)
            out.sum().backward()
            return out.detach(), x.grad
        return step, stack
    if name in ("stack_bias", "stack_nobias"):
        model = models.transformer(device, bias=name == "stack_bias").eval()
        x = models.hidden_states(1, device)[0]
        stack.enter_context(torch.inference_mode())
        stack.enter_context(models.attention_backend("cudnn"))
        return (lambda: (model(x),)), stack
    if name == "stack_bias_train":
        model = models.transformer(device, bias=True).train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        x = models.hidden_states(1, device)[0]
        target = torch.zeros(1, models.SEQUENCE, models.HIDDEN, device=device)
        stack.enter_context(models.attention_backend("cudnn"))

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x).float(), target)
            loss.backward()
            optimizer.step()
            return (loss.detach(),)
        return step, stack
    if name in ("conv_many_shapes", "conv_bn_shapes"):
        torch.manual_seed(0)
        model = (torch.nn.Conv2d(3, 32, 3, padding=1, bias=False).to(device) if name == "conv_many_shapes"
                 else models.conv_bn_stack(device, depth=1).eval())
        inputs = random_inputs([(1, 3, h, w) for h, w in MANY_SHAPES], device)
        stack.enter_context(torch.inference_mode())
        return in_turn(model, inputs, SHAPES_PER_ITERATION), stack
    if name in NEVER_REPEATING or name in ("mlp_fp32_train", "conv_fresh", "conv_shift", "conv_shift16"):
        return more_workload(name, torch, models, device, stack)
    if name.endswith("_steady"):  # the same step, warmed up longer (WORKLOADS)
        return make_workload(name.removesuffix("_steady"), device)
    if name.startswith(("moving_", "pinned_")):
        return moving_workload(name, torch, models, device, stack), stack
    if name.startswith("generate_"):
        generation, position = Generation(name[len("generate_"):], torch, device), [0]

        def step():
            out = generation.run(position[0] % len(generation.prompts))
            position[0] += 1
            return (out,)
        return step, stack
    return backend_workload(name, torch, models, device, stack)


def random_inputs(shapes, device, dtype=None, seed=5):
    """One input per shape, in order, the same in every run."""
    import torch
    generator = torch.Generator().manual_seed(seed)
    made = [torch.randn(*shape, generator=generator) for shape in shapes]
    return [t.to(device) if dtype is None else t.to(device, dtype) for t in made]


def positioned(step, state):
    """`step`, given tell() and seek(mark) over `state` (a one-element list: where it is in its
    inputs). Without them a pair's second block would time the inputs after the first block's: with
    64 inputs and 40 a pair, the arms timed disjoint sets of the LSTM's sequence lengths."""
    step.tell = lambda: state[0]
    step.seek = lambda mark: state.__setitem__(0, mark)
    return step


def in_turn(model, inputs, per_iteration):
    """step(): `model` on the next `per_iteration` inputs, cycling through them; the last output."""
    position = [0]

    def step():
        out = None
        for _ in range(per_iteration):
            out = model(inputs[position[0]])
            position[0] = (position[0] + 1) % len(inputs)
        return (out,)
    return positioned(step, position)


def shuffled(items, seed):
    items = list(items)
    random.Random(seed).shuffle(items)
    return items


def more_workload(name, torch, models, device, stack):
    """The loads that never repeat (but conv_many_shapes and conv_bn_shapes), mlp_fp32_train and conv_fresh."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    if name in ("linear_rows", "linear_rows_nobias"):
        model = nn.Sequential(*(nn.Linear(LINEAR_WIDTH, LINEAR_WIDTH, bias=name == "linear_rows")
                                for _ in range(LINEAR_DEPTH))).to(device, torch.bfloat16).eval()
        inputs = random_inputs([(rows, LINEAR_WIDTH) for rows in ROW_COUNTS], device, torch.bfloat16)
        stack.enter_context(torch.inference_mode())
        return in_turn(model, inputs, SHAPES_PER_ITERATION), stack
    if name == "seq_lengths":
        model = nn.TransformerEncoderLayer(256, 8, dim_feedforward=1024, dropout=0.0,
                                           batch_first=True).to(device, torch.bfloat16).eval()
        inputs = random_inputs([(1, n, 256) for n in SEQ_LENGTHS], device, torch.bfloat16)
        stack.enter_context(torch.inference_mode())
        return in_turn(model, inputs, SEQS_PER_ITERATION), stack
    if name == "fresh_sizes":
        model = nn.Sequential(models.conv_bn_stack(device, depth=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(models.WIDTH, 256), nn.ReLU(), nn.Linear(256, 10)).to(device).eval()
        inputs = random_inputs([(b, 3, h, w) for b, h, w in shuffled(FRESH_SIZES, 7)], device)
        stack.enter_context(torch.inference_mode())
        return in_turn(model, inputs, FRESH_PER_ITERATION), stack
    if name == "lstm":
        model = nn.LSTM(64, 128, num_layers=2, batch_first=True).to(device).eval()
        inputs = random_inputs([(4, n, 64) for n in shuffled(LSTM_LENGTHS, 8)], device)
        stack.enter_context(torch.inference_mode())
        return in_turn(lambda x: model(x)[0], inputs, LSTM_PER_ITERATION), stack
    if name == "decode_grow":
        return decode_grow(torch, device, stack), stack
    if name == "mlp_fp32_train":
        models.deterministic()
        layers = []
        for i in range(8):
            layers += [nn.Linear(256, 256)] + ([nn.ReLU()] if i < 7 else [])
        net = nn.Sequential(*layers).to(device).train()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.0)  # the same work every step
        x = random_inputs([(16, 256)], device)[0]
        target = torch.zeros(16, 256, device=device)

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(net(x), target)
            loss.backward()
            optimizer.step()
            return loss.detach(), net[0].weight.grad
        return step, stack
    # conv_fresh: the next input of the ring every iteration; the activations as PyTorch allocates them.
    # conv_shift: the same, each output held for SHIFT_KEPT steps and a pad of a changing size for
    # SHIFT_PADS (the allocator's best fit then moves the activations from step to step).
    net = models.conv_bn_stack(device).eval()
    inputs = models.images(FRESH_RING, 1, device)
    if name == "conv_shift16":
        net = net.half().to(memory_format=torch.channels_last)
        inputs = [x.half().contiguous(memory_format=torch.channels_last) for x in inputs]
    position = [0]
    held = collections.deque(maxlen=SHIFT_KEPT)
    pads = collections.deque(maxlen=SHIFT_PADS)
    steps = [0]
    stack.enter_context(torch.inference_mode())

    def step():
        x = inputs[position[0]]
        position[0] = (position[0] + 1) % FRESH_RING
        if name == "conv_fresh":
            return (net(x),)
        steps[0] += 1
        pads.append(torch.empty((1 + steps[0] % 3) * 16384, device=device))
        out = net(x)
        held.append(out)
        return (out,)
    step.variants = FRESH_RING
    step.which = lambda: (position[0] - 1) % FRESH_RING
    return positioned(step, position), stack


def moving_workload(name, torch, models, device, stack):
    """The relocation kinds' step (MOVING_* above): the calls of each kind in turn, each on the next
    input of its ring (moving_*) or on its first (pinned_*)."""
    import collections
    F = torch.nn.functional
    torch.manual_seed(0)
    stack.enter_context(torch.inference_mode())
    pinned = name.startswith("pinned_")
    ring = 1 if pinned else MOVING_RING
    kept = collections.deque(maxlen=0 if pinned else MOVING_KEPT)
    bf16, fp32 = torch.bfloat16, torch.float32
    kind = name.split("_", 1)[1]
    if kind == "mix" or kind in MOVING_KINDS:
        w, b = torch.randn(768, 768, device=device, dtype=bf16), torch.randn(768, device=device, dtype=bf16)
        w32 = torch.randn(768, 768, device=device)
        keys = torch.randn(12, 64, 128, device=device, dtype=bf16)
        bn = torch.nn.BatchNorm2d(64).to(device).eval()
        calls = {"lt": (lambda x: F.linear(x, w, b), (1, 768), bf16),
                 "gemm": (lambda x: F.linear(x, w), (1, 768), bf16),
                 "strided": (lambda x: torch.bmm(x, keys), (12, 1, 64), bf16),
                 "sgemm": (lambda x: torch.mm(x, w32), (1, 768), fp32),
                 "bn": (bn, (1, 64, 16, 16), fp32)}
        assert list(calls) == list(MOVING_KINDS), "MOVING_KINDS names moving_mix's kinds"
        if kind != "mix":
            calls = {kind: calls[kind]}
    elif name.endswith("_conv"):
        conv = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False).to(device, torch.half).to(
            memory_format=torch.channels_last)
        calls = {"conv": (conv, (1, 64, 16, 16), torch.half)}
    else:
        _, k, v = models.make_qkv(1, device)[0]
        stack.enter_context(models.attention_backend("cudnn"))
        calls = {"sdpa": (lambda q: models.attention(q, k, v), tuple(k.shape), bf16)}
    inputs = {kind: [torch.randn(*shape, device=device, dtype=dtype) for _ in range(ring)]
              for kind, (_, shape, dtype) in calls.items()}
    if name.endswith("_conv"):
        inputs["conv"] = [x.to(memory_format=torch.channels_last) for x in inputs["conv"]]
    position = [0]

    def step():
        out = None
        for kind, (call, _, _) in calls.items():
            for i in range(MOVING_CALLS):
                out = call(inputs[kind][(position[0] + i) % ring])
                kept.append(out)
        position[0] = (position[0] + MOVING_CALLS) % ring
        return (out,)
    return positioned(step, position)


def decode_grow(torch, device, stack):
    """decode_grow's step: per layer, the new token's key and value written into the layer's cache,
    then q @ k^T over the cache so far, softmax, @ v (torch.bmm on views of the cache: strided batched
    GEMMs, no copy); the KV length grows by one per step and starts again after DECODE_STEPS."""
    heads, dim, longest = DECODE_HEADS, DECODE_HEAD_DIM, DECODE_PROMPT + DECODE_STEPS
    caches = random_inputs([(heads, longest, dim)] * (2 * DECODE_LAYERS), device, torch.bfloat16)
    tokens = random_inputs([(heads, 1, dim)] * (3 * DECODE_LAYERS), device, torch.bfloat16, seed=6)  # q, k, v
    scale = dim ** -0.5
    length = [DECODE_PROMPT]
    stack.enter_context(torch.inference_mode())

    def step():
        n = length[0] + 1
        out = None
        for layer in range(DECODE_LAYERS):
            keys, values = caches[2 * layer], caches[2 * layer + 1]
            q, k, v = tokens[3 * layer:3 * layer + 3]
            keys[:, n - 1:n].copy_(k)
            values[:, n - 1:n].copy_(v)
            scores = torch.bmm(q, keys[:, :n].transpose(1, 2))  # (heads, 1, n)
            out = torch.bmm(torch.softmax(scores * scale, dim=-1), values[:, :n])  # (heads, 1, dim)
        length[0] = n if n < longest else DECODE_PROMPT
        return (out,)
    return positioned(step, length)


def backend_workload(name, torch, models, device, stack):
    """The backend path's workloads, built as before these were added."""
    if name == "train16":
        net = models.make_net(device).train()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.0, momentum=0.9)
        x = models.make_inputs(1, 2, device)[0]
        target = torch.zeros(2, models.CLASSES, device=device)

        def step():
            optimizer.zero_grad(set_to_none=True)
            out, _ = net(x)
            loss = torch.nn.functional.mse_loss(out, target)
            loss.backward()
            optimizer.step()
            return (loss.detach(),)
        return step, stack
    if name == "sdpa_train":
        q, k, v = models.make_qkv(1, device, requires_grad=True)[0]
        upstream = torch.ones_like(q)
        stack.enter_context(models.attention_backend("cudnn"))

        def step():
            for tensor in (q, k, v):
                tensor.grad = None
            out = models.attention(q, k, v)
            out.backward(upstream)
            return (q.grad,)
        return step, stack
    stack.enter_context(torch.no_grad())
    if name in ("eval16", "eval16_big", "eval16_half"):
        net = models.make_net(device).eval()
        x = models.make_inputs(1, BIG_BATCH if name == "eval16_big" else 1, device)[0]
        if name == "eval16_half":
            net = net.half().to(memory_format=torch.channels_last)
            x = x.half().to(memory_format=torch.channels_last)
        return (lambda: net(x)), stack  # (logits, features)
    q, k, v = models.make_qkv(1, device)[0]
    stack.enter_context(models.attention_backend("cudnn"))

    def step():
        # Each output is dropped at once, as in a model that consumes it: the next call gets the
        # same address (and the same variant-pack contents).
        for _ in range(SDPA_CALLS - 1):
            models.attention(q, k, v)
        return (models.attention(q, k, v),)
    return step, stack


# ------------------------------------------------------------------------------------------------
# Greedy generation (generate_ab.py's A/B, workload_relocation.py's generate check)

MODELS = {
    "llama": "LlamaForCausalLM, random weights: 4 layers, hidden 512, 8 heads, FFN 1376, vocabulary 32000, "
             "bf16, no biases (cublasGemmEx)",
    "gpt2": "GPT2LMHeadModel, random weights: 4 layers, 512 wide, 8 heads, vocabulary 32000, bf16, Conv1D "
            "with biases (cublasLtMatmul)",
    # Issue 49's two models: what relocates depends on the configuration (grouped-query attention).
    "llama_gqa": "LlamaForCausalLM, random weights: 8 layers, hidden 768, 12 query and 4 key/value heads, FFN 2048, "
                 "vocabulary 8192, bf16 (cublasGemmEx)",
    "gpt2_12": "GPT2LMHeadModel, random weights: 12 layers, 768 wide, 12 heads, vocabulary 8192, bf16 "
               "(cublasLtMatmul)",
}
VOCAB, NEW_TOKENS = 32000, 32
PROMPT_LENGTHS = (5, 30, 12, 47, 8, 23, 38, 17)  # the order the generates take them in, again and again
# Greedy generation as per_call.py's load (host time per call in generation, where the shim's code and
# data go cold between calls): one generate() an iteration, the prompts in turn. MODELS' names.
WORKLOADS.update({f"generate_{model}": {"timed": 1, "warmup": 1, "drop": True, "compare": False,
                                        "what": f"one greedy generate() of {model} (MODELS), {NEW_TOKENS} new tokens, "
                                                "the prompts in turn"}
                  for model in ("gpt2_12", "llama_gqa")})


def build(name, torch, device):
    """(model, prompts): the model with random weights, greedy generation set in its generation
    config (NEW_TOKENS new tokens exactly: no end-of-sequence token), and one (ids, mask) per prompt."""
    import transformers
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    tokens = {"bos_token_id": 1, "eos_token_id": None, "pad_token_id": 0}
    if name == "llama":
        config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=512, intermediate_size=1376,
                                          num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=8,
                                          max_position_embeddings=256, **tokens)
        model = transformers.LlamaForCausalLM(config)
    elif name == "llama_gqa":
        config = transformers.LlamaConfig(vocab_size=8192, hidden_size=768, intermediate_size=2048,
                                          num_hidden_layers=8, num_attention_heads=12, num_key_value_heads=4,
                                          max_position_embeddings=256, **tokens)
        model = transformers.LlamaForCausalLM(config)
    elif name == "gpt2_12":
        config = transformers.GPT2Config(vocab_size=8192, n_positions=256, n_embd=768, n_layer=12, n_head=12,
                                         **tokens)
        model = transformers.GPT2LMHeadModel(config)
    else:
        config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=256, n_embd=512, n_layer=4, n_head=8,
                                         **tokens)
        model = transformers.GPT2LMHeadModel(config)
    model = model.to(device=device, dtype=torch.bfloat16).eval()
    settings = model.generation_config
    settings.max_new_tokens, settings.min_new_tokens = NEW_TOKENS, None
    settings.do_sample, settings.num_beams = False, 1
    settings.eos_token_id, settings.pad_token_id = None, 0
    generator = torch.Generator().manual_seed(3)
    prompts = []
    for length in PROMPT_LENGTHS:
        ids = torch.randint(3, config.vocab_size, (1, length), generator=generator).to(device)
        prompts.append((ids, torch.ones_like(ids)))
    return model, prompts


class Generation:
    """One model's generate() on the prompts in turn, timed or not."""

    def __init__(self, name, torch, device):
        self.torch = torch
        self.model, self.prompts = build(name, torch, device)

    def run(self, i):
        ids, mask = self.prompts[i]
        return self.model.generate(input_ids=ids, attention_mask=mask)

    def timed(self, i):
        """(output, main-thread CPU ns of the call, wall ns of the call and a synchronize)."""
        wall_start = time.perf_counter_ns()
        cpu_start = time.thread_time_ns()
        out = self.run(i)
        cpu_end = time.thread_time_ns()
        self.torch.cuda.synchronize()
        return out, cpu_end - cpu_start, time.perf_counter_ns() - wall_start

    def new_tokens(self, i, out):
        return out[0, self.prompts[i][0].shape[1]:].tolist()

    def passes(self, count):
        for _ in range(count):
            for i in range(len(self.prompts)):
                self.run(i)
        self.torch.cuda.synchronize()
