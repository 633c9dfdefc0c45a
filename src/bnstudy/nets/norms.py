"""Normalisers as functions of a stack of models, and the modules PyTorch lacks.

A hidden activation ``h`` has shape ``(M, ..., B, F)``: ``M`` models, optional
extra leading axes (e.g. many probe batches of one model), ``B`` rows of a batch
and ``F`` features. Batch statistics are taken over the batch axis ``-2``; layer and
group statistics over features. Parameters and buffers have shape ``(M, F)``.

The maths follows PyTorch's ``BatchNorm1d``: the batch is normalised with its
biased variance; the running variance is updated with the unbiased one,
``running = (1 - momentum) * running + momentum * batch`` (``keep = 1 - momentum``),
or, with ``momentum=None``, with the cumulative average ``1 / updates``.

Batch renormalisation (Ioffe, 2017) normalises with the batch statistics and then
corrects towards the running ones::

    r = clip(sigma_batch / sigma_running, 1/rmax, rmax)      (no gradient)
    d = clip((mean_batch - mean_running) / sigma_running, -dmax, dmax)   (no gradient)
    y = (h - mean_batch) / sigma_batch * r + d

with ``sigma = sqrt(var + eps)``. With ``rmax = 1, dmax = 0`` it is batch norm; with
unclipped ``r, d`` it equals the inference-mode function.

Ghost batch norm (Hoffer, Hubara & Soudry, 2017) is batch norm over virtual
batches: in training mode a batch of ``B`` rows is cut into ``max(1, B // g)``
consecutive virtual batches of ``g`` rows, the last running to the batch's end (it
takes the remainder; a batch of fewer than ``2g`` rows is one virtual batch), and
each is batch-normalised with its own mean and biased variance; the running
statistics move once per virtual batch, in order, as batch norm moves them.
Inference mode is batch norm's.
"""

from __future__ import annotations

import torch

from bnstudy.base import normalisers

NORMALISERS = normalisers.NAMES
BATCH_NORMALISERS = normalisers.BATCH_NAMES


def _per_feature(t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """View an ``(M, F)`` tensor so that it broadcasts against ``h``."""
    return t.view(t.shape[0], *([1] * (h.dim() - 2)), t.shape[-1])


def _update_running(p: dict, mean: torch.Tensor, var: torch.Tensor, n: int, momentum) -> None:
    """In-place running-statistics update, PyTorch's rule (unbiased variance)."""
    with torch.no_grad():
        p["num_batches_tracked"].add_(1)
        if momentum is None:
            factor = 1.0 / p["num_batches_tracked"].to(mean.dtype).unsqueeze(-1)
        else:
            factor = momentum
        unbiased = var * (n / (n - 1))
        p["running_mean"].copy_(factor * mean + (1 - factor) * p["running_mean"])
        p["running_var"].copy_(factor * unbiased + (1 - factor) * p["running_var"])


def _affine(y: torch.Tensor, h: torch.Tensor, p: dict) -> torch.Tensor:
    return y * _per_feature(p["weight"], h) + _per_feature(p["bias"], h)


# ---- functional forms (named by the registry, bnstudy.base.normalisers) -------------
# f(h, p, *, train, update, eps, momentum, groups, limits, virtual_batch); see normalise().


def identity(h, p, **_):
    return h


def _batch(h, p, *, train, update, eps, momentum, limits, renorm):
    if train:
        n = h.shape[-2]
        if n < 2:
            raise ValueError("batch statistics need at least 2 rows per batch")
        mean = h.mean(dim=-2, keepdim=True)
        var = h.var(dim=-2, unbiased=False, keepdim=True)
        sigma_batch = torch.sqrt(var + eps)
        y = (h - mean) / sigma_batch
        if renorm:
            rmax, dmax = limits
            sigma = torch.sqrt(_per_feature(p["running_var"], h) + eps)
            r = (sigma_batch / sigma).clamp(1.0 / rmax, rmax).detach()
            d = ((mean - _per_feature(p["running_mean"], h)) / sigma).clamp(-dmax, dmax).detach()
            y = y * r + d
        if update:
            if h.dim() != 3:
                raise ValueError("running statistics update needs (M, B, F) input")
            _update_running(p, mean.detach().squeeze(-2), var.detach().squeeze(-2), n, momentum)
    else:
        mean = _per_feature(p["running_mean"], h)
        var = _per_feature(p["running_var"], h)
        y = (h - mean) / torch.sqrt(var + eps)
    return _affine(y, h, p)


def batch_norm(h, p, *, train, update=False, eps=1e-5, momentum=0.1, limits=(1.0, 0.0), **_):
    return _batch(h, p, train=train, update=update, eps=eps, momentum=momentum, limits=limits, renorm=False)


def batch_renorm(h, p, *, train, update=False, eps=1e-5, momentum=0.1, limits=(1.0, 0.0), **_):
    return _batch(h, p, train=train, update=update, eps=eps, momentum=momentum, limits=limits, renorm=True)


def virtual_batch_bounds(n: int, size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` rows of each virtual batch of a batch of ``n`` rows (ghost batch norm)."""
    parts = max(1, n // size)
    starts = [v * size for v in range(parts)]
    return list(zip(starts, starts[1:] + [n]))


def ghost_batch_norm(h, p, *, train, update=False, eps=1e-5, momentum=0.1, virtual_batch=None, **_):
    if not train:
        return batch_norm(h, p, train=False, eps=eps)
    if virtual_batch is None or virtual_batch < 2:
        raise ValueError(f"ghost batch norm needs virtual batches of at least 2 rows, got {virtual_batch}")
    parts = [
        batch_norm(h[..., lo:hi, :], p, train=True, update=update, eps=eps, momentum=momentum)
        for lo, hi in virtual_batch_bounds(h.shape[-2], virtual_batch)
    ]
    return torch.cat(parts, dim=-2)


def layer_norm(h, p, *, eps=1e-5, **_):
    mean = h.mean(dim=-1, keepdim=True)
    var = h.var(dim=-1, unbiased=False, keepdim=True)
    return _affine((h - mean) / torch.sqrt(var + eps), h, p)


def group_norm(h, p, *, eps=1e-5, groups=1, **_):
    g = h.unflatten(-1, (groups, h.shape[-1] // groups))
    mean = g.mean(dim=-1, keepdim=True)
    var = g.var(dim=-1, unbiased=False, keepdim=True)
    return _affine(((g - mean) / torch.sqrt(var + eps)).flatten(-2), h, p)


def rms_norm(h, p, *, eps=1e-5, **_):
    """Zhang & Sennrich (2019): ``h / sqrt(mean(h**2) + eps) * gamma`` per row; no centring, no beta."""
    return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps) * _per_feature(p["weight"], h)


def normalise(
    kind: str,
    h: torch.Tensor,
    p: dict,
    *,
    train: bool,
    update: bool = False,
    eps: float = 1e-5,
    momentum: float | None = 0.1,
    groups: int = 1,
    limits: tuple[float, float] = (1.0, 0.0),
    virtual_batch: int | None = None,
) -> torch.Tensor:
    """Apply normaliser ``kind`` (its registered functional form) with parameters/buffers ``p`` to ``h``.

    ``train`` selects batch statistics (training mode) or running statistics
    (inference mode); ``update`` additionally moves the running statistics, and is
    only allowed for plain ``(M, B, F)`` input. ``virtual_batch``: ghost batch
    norm's rows per virtual batch (needed in training mode).
    """
    form = normalisers.get(kind).functional_form()
    return form(
        h,
        p,
        train=train,
        update=update,
        eps=eps,
        momentum=momentum,
        groups=groups,
        limits=limits,
        virtual_batch=virtual_batch,
    )


# ---- module factories for users (named by the registry) -----------------------
# factory(spec, features) -> torch.nn.Module, spec a bnstudy.nets.model.NetSpec.


def identity_module(spec, features):
    return torch.nn.Identity()


def batch_norm_module(spec, features):
    return torch.nn.BatchNorm1d(features, eps=spec.eps, momentum=spec.momentum)


def batch_renorm_module(spec, features):
    return BatchRenorm1d(features, eps=spec.eps, momentum=spec.momentum)


def ghost_batch_norm_module(spec, features):
    return GhostBatchNorm1d(features, spec.virtual_batch, eps=spec.eps, momentum=spec.momentum)


def layer_norm_module(spec, features):
    return torch.nn.LayerNorm(features, eps=spec.eps)


def group_norm_module(spec, features):
    return torch.nn.GroupNorm(spec.groups, features, eps=spec.eps)


def rms_norm_module(spec, features):
    return torch.nn.RMSNorm(features, eps=spec.eps)


# ---- the convolutional network's module factories (named by the registry's conv_module) --
# factory(spec, channels) -> torch.nn.Module, spec a bnstudy.nets.conv_train.ConvSpec.


def batch_norm2d_module(spec, channels):
    return torch.nn.BatchNorm2d(channels, eps=spec.eps, momentum=spec.momentum)


def batch_renorm2d_module(spec, channels):
    return BatchRenorm2d(channels, eps=spec.eps, momentum=spec.momentum)


def ghost_batch_norm2d_module(spec, channels):
    return GhostBatchNorm2d(channels, spec.virtual_batch, eps=spec.eps, momentum=spec.momentum)


def layer_norm2d_module(spec, channels):
    """Layer norm over channels x positions: one group."""
    return torch.nn.GroupNorm(1, channels, eps=spec.eps)


def group_norm2d_module(spec, channels):
    return torch.nn.GroupNorm(spec.groups, channels, eps=spec.eps)


class BatchRenorm1d(torch.nn.Module):
    """Batch renormalisation as a PyTorch module (PyTorch has none).

    Same parameters and buffers as ``BatchNorm1d``; ``rmax`` and ``dmax`` are plain
    attributes that the trainer sets from a :class:`RenormSchedule` each step.
    """

    def __init__(self, features: int, eps: float = 1e-5, momentum: float | None = 0.1):
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.rmax, self.dmax = 1.0, 0.0
        self.weight = torch.nn.Parameter(torch.ones(features))
        self.bias = torch.nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = {
            "weight": self.weight.unsqueeze(0),
            "bias": self.bias.unsqueeze(0),
            "running_mean": self.running_mean.unsqueeze(0),
            "running_var": self.running_var.unsqueeze(0),
            "num_batches_tracked": self.num_batches_tracked.unsqueeze(0),
        }
        y = normalise(
            "batchrenorm",
            x.unsqueeze(0),
            p,
            train=self.training,
            update=self.training,
            eps=self.eps,
            momentum=self.momentum,
            limits=(self.rmax, self.dmax),
        )
        return y.squeeze(0)


class VirtualBatches:
    """Training mode over virtual batches, mixed in before a PyTorch batch norm: the batch
    (dimension 0) is cut into virtual batches of ``virtual_batch`` rows or images
    (:func:`virtual_batch_bounds`) and the batch norm's own forward runs on each in turn, so each
    normalises with its own statistics and moves the running statistics (and
    ``num_batches_tracked``) once; inference mode is the batch norm's."""

    unit = "rows"  # what a virtual batch counts, for the error line

    def __init__(self, features: int, virtual_batch: int, eps: float = 1e-5, momentum: float | None = 0.1):
        if virtual_batch < 2:
            raise ValueError(f"ghost batch norm needs virtual batches of at least 2 {self.unit}, got {virtual_batch}")
        super().__init__(features, eps=eps, momentum=momentum)
        self.virtual_batch = virtual_batch

    def extra_repr(self) -> str:
        return super().extra_repr() + f", virtual_batch={self.virtual_batch}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return super().forward(x)
        forward = super().forward  # one batch-norm step per virtual batch, in order
        return torch.cat([forward(x[lo:hi]) for lo, hi in virtual_batch_bounds(len(x), self.virtual_batch)])


class GhostBatchNorm1d(VirtualBatches, torch.nn.BatchNorm1d):
    """Ghost batch norm as a PyTorch module: ``BatchNorm1d`` over virtual batches.

    The same parameters, buffers and inference mode as ``BatchNorm1d``; in training
    mode the batch (dimension 0) is cut into virtual batches of ``virtual_batch``
    rows (:func:`virtual_batch_bounds`) and ``BatchNorm1d`` runs on each in turn,
    so each normalises with its own statistics and moves the running statistics
    (and ``num_batches_tracked``) once.
    """


class BatchRenorm2d(torch.nn.BatchNorm2d):
    """Batch renormalisation of images ``(N, C, H, W)``: ``BatchNorm2d``'s parameters, buffers and
    inference mode; in training mode each channel is renormalised with the mean and biased variance
    of its ``N x H x W`` values (:func:`batch_renorm` on them as rows), the running statistics moved
    once with the unbiased variance over the ``N x H x W`` values. ``rmax`` and ``dmax`` are plain
    attributes that the trainer sets each step (as :class:`BatchRenorm1d`'s)."""

    def __init__(self, channels: int, eps: float = 1e-5, momentum: float | None = 0.1):
        super().__init__(channels, eps=eps, momentum=momentum)
        self.rmax, self.dmax = 1.0, 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return super().forward(x)
        n, c, height, width = x.shape
        rows = x.permute(0, 2, 3, 1).reshape(1, n * height * width, c)  # (1 model, N x H x W, C)
        p = {k: getattr(self, k).unsqueeze(0) for k in ("weight", "bias", "running_mean", "running_var")}
        p["num_batches_tracked"] = self.num_batches_tracked.unsqueeze(0)
        y = normalise(
            "batchrenorm",
            rows,
            p,
            train=True,
            update=True,
            eps=self.eps,
            momentum=self.momentum,
            limits=(self.rmax, self.dmax),
        )
        return y.reshape(n, height, width, c).permute(0, 3, 1, 2)


class GhostBatchNorm2d(VirtualBatches, torch.nn.BatchNorm2d):
    """Ghost batch norm of images ``(N, C, H, W)``: ``BatchNorm2d`` over virtual batches of
    ``virtual_batch`` images (:func:`virtual_batch_bounds` on the images), each normalised with the
    statistics of its images x positions and moving the running statistics (and
    ``num_batches_tracked``) once, in order; inference mode ``BatchNorm2d``'s."""

    unit = "examples"
