"""The network in PyTorch, for stacks of models: the independent reference.

The pipeline computes with :mod:`bnstudy.compiled.kernels`; this module computes the same
functions with PyTorch operations (autograd included), for the tests that check
the kernels against it and for the plain per-model training loop. A stack here
is a dict of tensors (see :mod:`bnstudy.nets.model`; :func:`tensors` converts).
"""

from __future__ import annotations

import torch

from bnstudy.nets.model import LINEARS, NORMS, NetSpec, norm_params
from bnstudy.nets.norms import normalise


def tensors(stacked: dict) -> dict[str, torch.Tensor]:
    """A NumPy stack as tensors (copies)."""
    return {k: torch.from_numpy(v.copy()) if not isinstance(v, torch.Tensor) else v for k, v in stacked.items()}


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``x @ W^T + b`` for each model; ``x`` is ``(M, ..., B, in)``, ``W`` is ``(M, out, in)``."""
    if x.dim() == 3:
        return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
    shape = (weight.shape[0],) + (1,) * (x.dim() - 3)
    w = weight.transpose(1, 2).view(*shape, *weight.shape[1:][::-1])
    return torch.matmul(x, w) + bias.view(*shape, 1, bias.shape[-1])


def hidden(
    stacked, spec: NetSpec, x, layer: int, *, train: bool, update: bool = False, limits=(1.0, 0.0)
) -> torch.Tensor:
    """The post-ReLU activation of hidden layer ``layer`` (0 or 1) given its input ``x``."""
    lin, nrm = LINEARS[layer], NORMS[layer]
    h = linear(x, stacked[lin + ".weight"], stacked[lin + ".bias"])
    h = normalise(
        spec.normaliser,
        h,
        norm_params(stacked, nrm),
        train=train,
        update=update,
        eps=spec.eps,
        momentum=spec.momentum,
        groups=spec.groups,
        limits=limits,
        virtual_batch=spec.virtual_batch,
    )
    return torch.relu(h)


def forward(
    stacked, spec: NetSpec, x: torch.Tensor, *, train: bool, update: bool = False, limits=(1.0, 0.0)
) -> torch.Tensor:
    """Logits of every model of the stack; ``x`` is ``(M, ..., B, 64)``."""
    for layer in (0, 1):
        x = hidden(stacked, spec, x, layer, train=train, update=update, limits=limits)
    return linear(x, stacked["6.weight"], stacked["6.bias"])


def predict(stacked, spec: NetSpec, x: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """Inference-mode labels of every model for the rows ``x`` (``(N, 64)``), shape ``(M, N)``."""
    m = next(iter(stacked.values())).shape[0]
    with torch.no_grad():
        out = [
            forward(stacked, spec, x[i : i + chunk].expand(m, -1, -1), train=False).argmax(-1)
            for i in range(0, len(x), chunk)
        ]
    return torch.cat(out, dim=1)
