"""The convolutional network in plain PyTorch: the independent reference of the tests.

:func:`build_module` gives ``nn.Sequential(Conv2d, Norm, ReLU, Conv2d, Norm, ReLU,
AdaptiveAvgPool2d(1), Flatten, Linear)`` (``Norm``: the kind's registered ``conv_module``,
:mod:`bnstudy.nets.norms`: ``BatchNorm2d``, ``GroupNorm`` with the spec's groups,
``GroupNorm(1, C)`` for layer norm over channels x positions, or ``Identity``) holding
:func:`bnstudy.nets.conv_train.initial_state`; :func:`train_plain` trains it with autograd and
``torch.optim.Adam`` on the batches of the compiled loop. Imports PyTorch; no pipeline job
uses it.
"""

from __future__ import annotations

import numpy as np
import torch

from bnstudy.base import normalisers
from bnstudy.nets.batching import epoch_rows, order_generator
from bnstudy.nets.conv_train import ADAM_BETAS, ADAM_EPS, CLASSES, ConvSpec, initial_state


def _norm(spec: ConvSpec, c: int) -> torch.nn.Module:
    """The kind's module in this network (its registered ``conv_module`` factory)."""
    return normalisers.get(spec.normaliser).conv_module_factory()(spec, c)


def build_module(spec: ConvSpec, seed: int | None = None, state: dict | None = None) -> torch.nn.Sequential:
    """The network; with ``seed`` holding its initial weights, with ``state`` those weights."""
    c1, c2 = spec.channels
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, c1, 3, padding=1),
        _norm(spec, c1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(c1, c2, 3, padding=1),
        _norm(spec, c2),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(c2, CLASSES),
    )
    if seed is not None:
        state = initial_state(spec, seed)
    if state is not None:
        net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    return net


def images(x: np.ndarray) -> torch.Tensor:
    """Rows of 64 pixels as ``(N, 1, 8, 8)`` images."""
    return torch.from_numpy(np.ascontiguousarray(x, np.float32)).reshape(-1, 1, 8, 8)


def first_gradient(spec: ConvSpec, seed: int, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Autograd's gradient of the mean cross-entropy of the batch ``(x, y)`` at the initial weights."""
    net = build_module(spec, seed).train()
    loss = torch.nn.functional.cross_entropy(net(images(x)), torch.from_numpy(np.asarray(y, np.int64)))
    loss.backward()
    return {k: p.grad.numpy().copy() for k, p in net.named_parameters()}


def train_plain(spec: ConvSpec, recipe, seed: int, x: np.ndarray, y: np.ndarray) -> torch.nn.Sequential:
    """The same run as :func:`bnstudy.nets.conv_train.train_one`, by autograd and ``torch.optim.Adam``."""
    net = build_module(spec, seed).train()
    opt = torch.optim.Adam(net.parameters(), lr=recipe.lr, betas=ADAM_BETAS, eps=ADAM_EPS)
    rng = order_generator(seed)
    xt, yt = images(x), torch.from_numpy(np.asarray(y, np.int64))
    for _ in range(recipe.epochs):
        rows = epoch_rows(rng, np.asarray(y), recipe.batch_size, "shuffle", recipe.last_batch)
        for b in range(0, len(rows) - recipe.batch_size + 1, recipe.batch_size):
            idx = torch.from_numpy(rows[b : b + recipe.batch_size])
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
            opt.step()
    return net
