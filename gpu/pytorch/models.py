"""The networks of the legacy cuDNN and cuBLAS workloads (ab.py, check_legacy.py's program
workload_nets.py, per_call.py). It knows nothing of the shim.

- conv_bn_stack: an nn.Sequential of 16 conv+batchnorm+ReLU blocks (workload.py's sizes: 32
  channels, 3x3, 32x32 images), fp32. PyTorch runs the convolutions through cuDNN's backend
  (cudnnBackendExecute) and the batch norms through cuDNN's legacy API
  (cudnnBatchNormalizationForwardInference in eval, ...ForwardTrainingEx and ...BackwardEx in training).
- bn_stack: 16 BatchNorm2d+ReLU blocks and nothing else, the legacy batch-norm calls alone.
- Transformer: a hand-written stack of BERT-base layers (hidden 768, 12 heads, FFN 3072, post-LN,
  GELU), bf16, attention by scaled_dot_product_attention on the backend a context picks (cuDNN's:
  one cudnnBackendExecute per layer). With biases every Linear is addmm, which PyTorch sends to
  cublasLtMatmul (after a cublasLtMatmulAlgoGetHeuristic); without them, a plain matmul, which it
  sends to cublasGemmEx; the math attention backend's batched matmuls go to
  cublasGemmStridedBatchedEx.
"""
import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DEPTH, WIDTH, IMAGE = 16, 32, 32  # the conv network: workload.py's sizes
HIDDEN, HEADS, FFN, LAYERS, SEQUENCE = 768, 12, 3072, 12, 128  # BERT-base, batch 1


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
    deterministic kernel warns). CUBLAS_WORKSPACE_CONFIG must be set before cuBLAS starts (check.py
    and ab.py set it in the environment, workload_nets.py at import)."""
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True, warn_only=True)
