"""The normalisers of a PyTorch network, and the audit's view of them.

:func:`find_normalisers` lists every normalisation layer of a module and sorts
them into layers that read batch statistics in training mode (batch norm 1d/2d/3d,
synchronised batch norm, the package's :class:`bnstudy.nets.norms.BatchRenorm1d` and
:class:`bnstudy.nets.norms.GhostBatchNorm1d`) and *batch-free* ones, which normalise
each example by itself (group, layer and instance norm).

:func:`probe_copy` gives a copy of the network (the caller's module is never
touched) whose batch-statistics layers are :class:`ProbeNorm` wrappers. The copy
stays in evaluation mode throughout (dropout stays off): only the wrappers switch.
With ``group = None`` a wrapper is its layer in inference mode (running
statistics); with ``group = b`` its input of ``G * b`` rows is ``G`` probe batches
of ``b`` consecutive rows, and each batch is normalised with its own statistics,
as the layer does in training mode (biased variance over the batch and, for
convolutional inputs, every position; running statistics read by batch renorm,
never written). So many probe batches go through one forward pass.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

BATCH_TYPES = (torch.nn.modules.batchnorm._BatchNorm,)
FREE_TYPES = (torch.nn.GroupNorm, torch.nn.LayerNorm, torch.nn.modules.instancenorm._InstanceNorm)
# names of TorchScript modules (``original_name``), which are not instances of the classes above
SCRIPT_BATCH = {"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "BatchRenorm1d", "GhostBatchNorm1d"}
SCRIPT_FREE = {"GroupNorm", "LayerNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm"}


def _renorm_type():
    from bnstudy.nets.norms import BatchRenorm1d

    return BatchRenorm1d


def _ghost_type():
    from bnstudy.nets.norms import GhostBatchNorm1d

    return GhostBatchNorm1d


@dataclass
class Normaliser:
    """One normalisation layer: its dotted name, class name and whether it reads batch statistics."""

    name: str
    kind: str
    batch: bool
    module: torch.nn.Module

    @property
    def tracks(self) -> bool:
        return getattr(self.module, "running_mean", None) is not None


def kind_of(module) -> str:
    return getattr(module, "original_name", None) or type(module).__name__


def is_batch(module) -> bool:
    if isinstance(module, torch.jit.ScriptModule):
        return kind_of(module) in SCRIPT_BATCH
    return isinstance(module, BATCH_TYPES + (_renorm_type(),))


def is_free(module) -> bool:
    if isinstance(module, torch.jit.ScriptModule):
        return kind_of(module) in SCRIPT_FREE
    return isinstance(module, FREE_TYPES) or type(module).__name__ == "RMSNorm"


def find_normalisers(model: torch.nn.Module) -> list[Normaliser]:
    """Every normalisation layer of ``model``, in module order (the root itself included)."""
    out = []
    for name, m in model.named_modules():
        if is_batch(m):
            out.append(Normaliser(name or "(model)", kind_of(m), True, m))
        elif is_free(m):
            out.append(Normaliser(name or "(model)", kind_of(m), False, m))
    return out


class ProbeNorm(torch.nn.Module):
    """A batch-statistics layer that normalises each group of ``group`` consecutive rows by itself.

    ``group = None``: the wrapped layer in inference mode. Otherwise the training-mode
    function of the layer, batch by batch: mean and biased variance over the batch's
    rows (and positions), ``(h - mean) / sqrt(var + eps)``; batch renorm then
    ``* r + d`` with ``r``, ``d`` clipped by the layer's ``rmax``, ``dmax`` against its
    running statistics; ghost batch norm over each batch's virtual batches
    (:func:`bnstudy.nets.norms.virtual_batch_bounds`); then the affine map.
    """

    def __init__(self, layer: torch.nn.Module):
        super().__init__()
        self.layer = layer.eval()
        self.group: int | None = None
        self.renorm = isinstance(layer, _renorm_type())
        self.virtual = getattr(layer, "virtual_batch", None) if isinstance(layer, _ghost_type()) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.group is None:
            return self.layer(x)
        b = self.group
        if x.shape[0] % b:
            raise ValueError(f"{x.shape[0]} rows are not whole batches of {b}")
        h = x.reshape(x.shape[0] // b, b, *x.shape[1:])  # (G, b, C, *positions)
        if self.virtual is None:
            y = self._normalise(h)
        else:
            from bnstudy.nets.norms import virtual_batch_bounds

            y = torch.cat([self._normalise(h[:, lo:hi]) for lo, hi in virtual_batch_bounds(b, self.virtual)], dim=1)
        return y.reshape(x.shape)

    def _shape(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return t.reshape(1, 1, -1, *([1] * (h.dim() - 3)))

    def _normalise(self, h: torch.Tensor) -> torch.Tensor:
        """``h`` is ``(G, b, C, *positions)``: each of the ``G`` batches normalised by its own statistics,
        folded into one multiply-add per element: ``y = h * scale + shift``."""
        layer = self.layer
        dims = [1, *range(3, h.dim())]
        if h.shape[1] * max(1, h[0, 0, 0].numel()) < 2:
            raise ValueError("batch statistics need at least 2 values per channel")
        var, mean = torch.var_mean(h, dim=dims, correction=0, keepdim=True)
        sigma = torch.sqrt(var + layer.eps)
        scale = 1.0 / sigma
        shift = -mean * scale
        if self.renorm:  # y = (h - mean) / sigma * r + d
            run_sigma = torch.sqrt(self._shape(layer.running_var, h) + layer.eps)
            r = (sigma / run_sigma).clamp(1.0 / layer.rmax, layer.rmax)
            d = ((mean - self._shape(layer.running_mean, h)) / run_sigma).clamp(-layer.dmax, layer.dmax)
            scale, shift = scale * r, shift * r + d
        if getattr(layer, "weight", None) is not None:
            w = self._shape(layer.weight, h)
            scale, shift = scale * w, shift * w + self._shape(layer.bias, h)
        return torch.addcmul(shift, h, scale)


def _set_child(model: torch.nn.Module, name: str, child: torch.nn.Module) -> torch.nn.Module:
    if not name:
        return child
    parent_name, _, leaf = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, leaf, child)
    return model


def convert_sync(model: torch.nn.Module) -> torch.nn.Module:
    """Every ``SyncBatchNorm`` of ``model`` as the ``BatchNorm`` of its input's dimension.

    A single process has no group to synchronise with: the layer's training-mode
    function on one batch is batch norm's. The layer's parameters and buffers move
    over unchanged; the dimension follows from the input (batch norm's arithmetic is
    the same for 1d, 2d and 3d inputs), so ``BatchNorm1d``'s stands for all.
    """
    for name, m in list(model.named_modules()):
        if isinstance(m, torch.nn.SyncBatchNorm):
            bn = _AnyBatchNorm(m.num_features, m.eps, m.momentum, m.affine, m.track_running_stats)
            bn.load_state_dict(m.state_dict())
            bn.train(m.training)
            model = _set_child(model, name, bn)
    return model


class _AnyBatchNorm(torch.nn.modules.batchnorm._BatchNorm):
    """Batch norm for inputs of any dimension (what a converted ``SyncBatchNorm`` becomes)."""

    def _check_input_dim(self, x):
        if x.dim() < 2:
            raise ValueError(f"expected an input of at least 2 dimensions, got {x.dim()}")


def probe_copy(model: torch.nn.Module) -> tuple[torch.nn.Module, list[ProbeNorm]]:
    """A copy of ``model`` in evaluation mode with every batch-statistics layer a :class:`ProbeNorm`."""
    net = convert_sync(copy.deepcopy(model)).eval()
    wrappers = []
    for name, m in list(net.named_modules()):
        if is_batch(m) and not isinstance(m, ProbeNorm):
            w = ProbeNorm(m)
            net = _set_child(net, name, w)
            wrappers.append(w)
    return net, wrappers


def set_group(wrappers, b: int | None) -> None:
    for w in wrappers:
        w.group = b
