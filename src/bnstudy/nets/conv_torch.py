"""The convolutional network in plain PyTorch: the independent reference of the tests.

:func:`build_module` gives ``nn.Sequential(Conv2d, Norm, ReLU, ..., Conv2d, Norm, ReLU,
AdaptiveAvgPool2d(1), Flatten, Linear)`` from the spec's layers (a :class:`Residual` when a
layer adds an earlier layer's output before its ReLU; ``Norm``: the kind's registered ``conv_module``,
:mod:`bnstudy.nets.norms`: ``BatchNorm2d``, ``BatchRenorm2d``, ``GhostBatchNorm2d`` with the spec's
virtual batch, ``GroupNorm`` with the spec's groups, ``GroupNorm(1, C)`` for layer norm over
channels x positions, or ``Identity``) holding the spec's ``initial_state``
(:func:`bnstudy.nets.conv_train.initial_state`);
:func:`train_plain` trains it with autograd and ``torch.optim.Adam`` on the batches of the
compiled loop (batch renorm with the limits of each step, :func:`set_limits`). Imports PyTorch; no
pipeline job uses it.
"""

from __future__ import annotations

import numpy as np
import torch

from bnstudy.base import normalisers
from bnstudy.base.convlayers import square_side
from bnstudy.nets import norms
from bnstudy.nets.batching import epoch_rows, order_generator
from bnstudy.nets.plain import lr_scheduler
from bnstudy.nets.recipe import renorm_schedule
from bnstudy.nets.spec import CLASSES, Network
from bnstudy.nets.train import ADAM_BETAS, ADAM_EPS


class Residual(torch.nn.Sequential):
    """``nn.Sequential`` of ``(Conv2d, Norm, ReLU) x L, AdaptiveAvgPool2d, Flatten, Linear`` whose layer
    ``l`` adds the output of layer ``skips[l]`` (-1: none) to its normaliser's output before its ReLU
    (same state-dict keys as the plain ``nn.Sequential``)."""

    def __init__(self, skips, *modules):
        super().__init__(*modules)
        self.skips = [int(s) for s in skips]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = []
        for i, skip in enumerate(self.skips):
            h = self[3 * i + 1](self[3 * i](x))
            x = self[3 * i + 2](h if skip < 0 else h + outs[skip])
            outs.append(x)
        for module in list(self)[3 * len(self.skips) :]:
            x = module(x)
        return x


def _norm(spec: Network, c: int) -> torch.nn.Module:
    """The kind's module in this network (its registered ``conv_module`` factory)."""
    return normalisers.get(spec.normaliser).conv_module_factory()(spec, c)


def build_module(spec: Network, seed: int | None = None, state: dict | None = None) -> torch.nn.Sequential:
    """The network; with ``seed`` holding its initial weights, with ``state`` those weights."""
    modules, blocks = [], spec.blocks()
    for b in blocks:
        conv = torch.nn.Conv2d(b.in_channels, b.channels, 3, stride=b.stride, padding=1)
        modules += [conv, _norm(spec, b.channels), torch.nn.ReLU()]
    modules += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(blocks[-1].channels, CLASSES)]
    skips = [b.skip for b in blocks]
    net = Residual(skips, *modules) if max(skips) >= 0 else torch.nn.Sequential(*modules)
    if seed is not None:
        state = spec.initial_state(seed)
    if state is not None:
        net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    return net


def images(x: np.ndarray) -> torch.Tensor:
    """Rows of ``side * side`` pixels as ``(N, 1, side, side)`` images."""
    side = square_side(np.asarray(x).shape[1])
    return torch.from_numpy(np.ascontiguousarray(x, np.float32)).reshape(-1, 1, side, side)


def first_gradient(spec: Network, seed: int, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Autograd's gradient of the mean cross-entropy of the batch ``(x, y)`` at the initial weights."""
    net = build_module(spec, seed).train()
    loss = torch.nn.functional.cross_entropy(net(images(x)), torch.from_numpy(np.asarray(y, np.int64)))
    loss.backward()
    return {k: p.grad.numpy().copy() for k, p in net.named_parameters()}


def set_limits(net: torch.nn.Module, rmax: float, dmax: float) -> None:
    """Batch renorm's limits on every ``BatchRenorm2d`` of ``net`` (no other module has them)."""
    for m in net.modules():
        if isinstance(m, norms.BatchRenorm2d):
            m.rmax, m.dmax = rmax, dmax


def train_plain(spec: Network, recipe, seed: int, x: np.ndarray, y: np.ndarray) -> torch.nn.Sequential:
    """The same run as :func:`bnstudy.nets.train.train_one` of ``spec``, by autograd and ``torch.optim``
    (Adam, or SGD with the recipe's momentum), batches in the recipe's order (batch renorm: the
    limits of :func:`bnstudy.nets.recipe.renorm_schedule` at each step)."""
    net = build_module(spec, seed).train()
    if recipe.optimizer == "sgd":
        opt = torch.optim.SGD(net.parameters(), lr=recipe.lr, momentum=recipe.sgd_momentum)
    else:
        opt = torch.optim.Adam(net.parameters(), lr=recipe.lr, betas=ADAM_BETAS, eps=ADAM_EPS)
    rng = order_generator(seed)
    xt, yt = images(x), torch.from_numpy(np.asarray(y, np.int64))
    schedule = renorm_schedule(spec.normaliser, recipe, len(yt))
    decay = lr_scheduler(opt, recipe)
    step = 0
    for _ in range(recipe.epochs):
        rows = epoch_rows(rng, np.asarray(y), recipe.batch_size, recipe.order, recipe.last_batch)
        for b in range(0, len(rows) - recipe.batch_size + 1, recipe.batch_size):
            if schedule:
                set_limits(net, *schedule.limits(step))
            step += 1
            idx = torch.from_numpy(rows[b : b + recipe.batch_size])
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
            opt.step()
        if decay:
            decay.step()
    return net
