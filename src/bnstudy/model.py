"""The study's MLP, 64-128-128-10 with ReLU, normaliser after each hidden Linear.

Two faces of one network:

- :func:`build_module` gives a plain ``torch.nn.Sequential`` (layers ``0``-``6``),
  the form users load weights into and the per-model baseline trains;
- a *stack* is a dict of tensors with the same keys as that module's
  ``state_dict`` and a leading model axis ``M``; :func:`forward` runs ``M``
  models at once with batched matrix products.

:func:`stack` and :func:`unstack` convert between the two exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from .norms import BatchRenorm1d, normalise
from .runtime import STREAM_INIT, derive_seed

LINEARS = ("0", "3", "6")
NORMS = ("1", "4")


@dataclass(frozen=True)
class NetSpec:
    normaliser: str
    widths: tuple[int, ...] = (64, 128, 128, 10)
    groups: int = 8
    eps: float = 1e-5
    momentum: float | None = 0.1

    def metadata(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}


def _norm_module(spec: NetSpec, features: int) -> torch.nn.Module:
    kind = spec.normaliser
    if kind == "none":
        return torch.nn.Identity()
    if kind == "batchnorm":
        return torch.nn.BatchNorm1d(features, eps=spec.eps, momentum=spec.momentum)
    if kind == "batchrenorm":
        return BatchRenorm1d(features, eps=spec.eps, momentum=spec.momentum)
    if kind == "layernorm":
        return torch.nn.LayerNorm(features, eps=spec.eps)
    if kind == "groupnorm":
        return torch.nn.GroupNorm(spec.groups, features, eps=spec.eps)
    raise ValueError(f"unknown normaliser {kind!r}")


def build_module(spec: NetSpec, seed: int | None = None) -> torch.nn.Sequential:
    """The network as ``nn.Sequential``; with ``seed``, its initial weights for that seed.

    Initialisation is PyTorch's default for each layer, drawn from the global
    generator seeded from ``(seed, STREAM_INIT)`` inside a forked RNG state, so it
    neither depends on nor disturbs any other random stream.
    """
    w = spec.widths
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(derive_seed(seed, STREAM_INIT))
        return torch.nn.Sequential(
            torch.nn.Linear(w[0], w[1]),
            _norm_module(spec, w[1]),
            torch.nn.ReLU(),
            torch.nn.Linear(w[1], w[2]),
            _norm_module(spec, w[2]),
            torch.nn.ReLU(),
            torch.nn.Linear(w[2], w[3]),
        )


def stack(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Stack state dicts of identical networks along a new leading model axis."""
    return {k: torch.stack([s[k].detach().clone() for s in states]) for k in states[0]}


def unstack(stacked: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    """Split a stack back into per-model state dicts (contiguous copies)."""
    m = next(iter(stacked.values())).shape[0]
    return [{k: v[i].detach().clone().contiguous() for k, v in stacked.items()} for i in range(m)]


def initial_stack(spec: NetSpec, seeds: list[int]) -> dict[str, torch.Tensor]:
    return stack([build_module(spec, s).state_dict() for s in seeds])


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``x @ W^T + b`` for each model; ``x`` is ``(M, ..., B, in)``, ``W`` is ``(M, out, in)``."""
    if x.dim() == 3:
        return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
    shape = (weight.shape[0],) + (1,) * (x.dim() - 3)
    w = weight.transpose(1, 2).view(*shape, *weight.shape[1:][::-1])
    return torch.matmul(x, w) + bias.view(*shape, 1, bias.shape[-1])


def norm_params(stacked: dict[str, torch.Tensor], layer: str) -> dict[str, torch.Tensor]:
    prefix = layer + "."
    return {k[len(prefix):]: v for k, v in stacked.items() if k.startswith(prefix)}


def hidden(stacked, spec: NetSpec, x, layer: int, *, train: bool, update: bool = False,
           limits=(1.0, 0.0)) -> torch.Tensor:
    """The post-ReLU activation of hidden layer ``layer`` (0 or 1) given its input ``x``."""
    lin, nrm = LINEARS[layer], NORMS[layer]
    h = linear(x, stacked[lin + ".weight"], stacked[lin + ".bias"])
    h = normalise(
        spec.normaliser, h, norm_params(stacked, nrm), train=train, update=update,
        eps=spec.eps, momentum=spec.momentum, groups=spec.groups, limits=limits,
    )
    return torch.relu(h)


def forward(stacked, spec: NetSpec, x: torch.Tensor, *, train: bool, update: bool = False,
            limits=(1.0, 0.0)) -> torch.Tensor:
    """Logits of every model of the stack; ``x`` is ``(M, ..., B, 64)``."""
    for layer in (0, 1):
        x = hidden(stacked, spec, x, layer, train=train, update=update, limits=limits)
    return linear(x, stacked["6.weight"], stacked["6.bias"])


def predict(stacked, spec: NetSpec, x: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """Inference-mode labels of every model for the rows ``x`` (``(N, 64)``), shape ``(M, N)``."""
    m = next(iter(stacked.values())).shape[0]
    with torch.no_grad():
        out = [forward(stacked, spec, x[i:i + chunk].expand(m, -1, -1), train=False).argmax(-1)
               for i in range(0, len(x), chunk)]
    return torch.cat(out, dim=1)


def spec_from_metadata(meta: dict[str, str]) -> NetSpec:
    """The :class:`NetSpec` recorded in a weights file's metadata."""
    momentum = None if meta["momentum"] == "None" else float(meta["momentum"])
    widths = tuple(int(w) for w in meta["widths"].strip("()").split(","))
    return NetSpec(meta["normaliser"], widths, int(meta["groups"]), float(meta["eps"]), momentum)


def load_stack(paths) -> tuple[dict[str, torch.Tensor], NetSpec, list[dict[str, str]]]:
    """Stack the weights files ``paths`` (same spec) for evaluation."""
    from .io import read_metadata, read_weights

    metas = [read_metadata(p) for p in paths]
    specs = {spec_from_metadata(m) for m in metas}
    if len(specs) != 1:
        raise ValueError(f"weights of different networks cannot be stacked: {specs}")
    return stack([read_weights(p) for p in paths]), specs.pop(), metas


def load_module(path) -> torch.nn.Sequential:
    """A weights file as a ready ``nn.Sequential`` in inference mode."""
    from .io import read_metadata, read_weights

    net = build_module(spec_from_metadata(read_metadata(path)))
    net.load_state_dict(read_weights(path))
    return net.eval()
