"""The networks and inputs of the PyTorch workloads (workloads.py's A/B steps, the check programs
workload.py, workload_nets.py and workload_relocation.py, eval16_profile.py, torchrun_check.py). It
knows nothing of the shim.

- Net (make_net): the backend path's network, 16 conv+batchnorm+ReLU blocks (32 channels, 3x3,
  32x32 images), the mean over the image and a Linear head; eval mode at batch 1 lets the host (and
  with it cudnnSetStream, called before every cuDNN op) set the pace. make_qkv: scaled-dot-product
  attention's inputs, bf16, batch 1, 8 heads, 128 tokens, head dim 64, not causal.
- conv_bn_stack: an nn.Sequential of 16 conv+batchnorm+ReLU blocks (Net's sizes), fp32. PyTorch runs
  the convolutions through cuDNN's backend (cudnnBackendExecute) and the batch norms through cuDNN's
  legacy API (cudnnBatchNormalizationForwardInference in eval, ...ForwardTrainingEx and
  ...BackwardEx in training).
- bn_stack: 16 BatchNorm2d+ReLU blocks and nothing else, the legacy batch-norm calls alone.
- Transformer: a hand-written stack of BERT-base layers (hidden 768, 12 heads, FFN 3072, post-LN,
  GELU), bf16, attention by scaled_dot_product_attention on the backend a context picks (cuDNN's:
  one cudnnBackendExecute per layer). With biases every Linear is addmm, which PyTorch sends to
  cublasLtMatmul (after a cublasLtMatmulAlgoGetHeuristic); without them, a plain matmul, which it
  sends to cublasGemmEx; the math attention backend's batched matmuls go to
  cublasGemmStridedBatchedEx.
"""
import os

# Deterministic cuBLAS (Net's head, the training steps) needs a fixed workspace, set before cuBLAS starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import contextlib  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

DEPTH = 16  # conv+bn+relu blocks: 32 cuDNN ops (so 32 cudnnSetStream calls) per forward
WIDTH, IMAGE, CLASSES = 32, 32, 10
HIDDEN, HEADS, FFN, LAYERS, SEQUENCE = 768, 12, 3072, 12, 128  # BERT-base, batch 1
# Scaled-dot-product attention: (batch, heads, tokens, head dim), bf16. Small, so that the host's
# work per call (and with it the variant pack PyTorch builds per cuDNN SDPA call) shows.
SDPA_SHAPE = (1, 8, 128, 64)
SDPA_CAUSAL = False  # full attention; cuDNN takes is_causal=True as well, this keeps one graph


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


def attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=SDPA_CAUSAL)


def init_batchnorm(module):
    """Running statistics away from 0 and 1, so that eval-mode batch norm does real arithmetic."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return module


def conv_bn_stack(device, depth=DEPTH, width=WIDTH, channels=3):
    """nn.Sequential of `depth` x (3x3 conv without bias, BatchNorm2d, ReLU), fp32, seeded."""
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Conv2d(channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
        channels = width
    return init_batchnorm(nn.Sequential(*layers)).to(device)


def bn_stack(device, depth=DEPTH, width=WIDTH):
    """nn.Sequential of `depth` x (BatchNorm2d, ReLU): the legacy batch-norm calls alone."""
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.BatchNorm2d(width), nn.ReLU()]
    return init_batchnorm(nn.Sequential(*layers)).to(device)


def images(count, batch, device, channels=3, size=IMAGE, seed=1):
    """`count` input batches, the same in every run."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, channels, size, size, generator=generator).to(device) for _ in range(count)]


def attention_backend(name):
    """A context in which scaled_dot_product_attention uses only `name`: "cudnn" (raises if cuDNN
    cannot), "math" (PyTorch's own, batched matmuls), or "default" (PyTorch's choice)."""
    if name == "default":
        return contextlib.nullcontext()
    return sdpa_kernel([{"cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}[name]])


class Layer(nn.Module):
    """One BERT layer: self-attention (separate query, key and value projections), residual and
    LayerNorm, then the feed-forward block, residual and LayerNorm."""

    def __init__(self, bias):
        super().__init__()
        self.query, self.key, self.value, self.out = (nn.Linear(HIDDEN, HIDDEN, bias=bias) for _ in range(4))
        self.norm1, self.norm2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.up, self.down = nn.Linear(HIDDEN, FFN, bias=bias), nn.Linear(FFN, HIDDEN, bias=bias)

    def forward(self, x):
        batch, tokens, _ = x.shape

        def heads(t):  # (batch, tokens, hidden) -> (batch, heads, tokens, head dim), a strided view
            return t.view(batch, tokens, HEADS, HIDDEN // HEADS).transpose(1, 2)

        attended = F.scaled_dot_product_attention(heads(self.query(x)), heads(self.key(x)), heads(self.value(x)))
        x = self.norm1(x + self.out(attended.transpose(1, 2).reshape(batch, tokens, HIDDEN)))
        return self.norm2(x + self.down(F.gelu(self.up(x))))


class Transformer(nn.Module):
    def __init__(self, layers=LAYERS, bias=True):
        super().__init__()
        self.layers = nn.Sequential(*(Layer(bias) for _ in range(layers)))

    def forward(self, x):
        return self.layers(x)


def transformer(device, bias=True, layers=LAYERS, dtype=torch.bfloat16):
    torch.manual_seed(0)
    return Transformer(layers, bias).to(device, dtype)


def hidden_states(count, device, tokens=SEQUENCE, batch=1, dtype=torch.bfloat16, seed=2):
    """`count` inputs of (batch, tokens, HIDDEN), the same in every run."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, tokens, HIDDEN, generator=generator).to(device, dtype) for _ in range(count)]


def deterministic():
    """The settings docs/ab-method.md's deterministic training steps run under: cuDNN's deterministic
    algorithms, no benchmarking, PyTorch's deterministic mode (warn only: an op without a
    deterministic kernel warns). CUBLAS_WORKSPACE_CONFIG must be set before cuBLAS starts (the
    parents set it in the environment, this module at import)."""
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True, warn_only=True)
