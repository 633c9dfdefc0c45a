"""The plain PyTorch loop: one ``nn.Sequential``, autograd and ``torch.optim`` per model.

The independent reference for :mod:`bnstudy.nets.train` (same initial weights, same
batches; ``tests/nets/test_train.py`` states how closely they agree) and the baseline
of ``python -m bnstudy.tools.benchmark``. Not used by the pipeline.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from bnstudy.nets import model as mlp
from bnstudy.nets.batching import epoch_batches, order_generator
from bnstudy.nets.model import NetSpec
from bnstudy.nets.recipe import Recipe, renorm_schedule


def optimizer(params, recipe: Recipe):
    if recipe.optimizer == "adam":
        return torch.optim.Adam(params, lr=recipe.lr, foreach=False)
    if recipe.optimizer == "sgd":
        return torch.optim.SGD(params, lr=recipe.lr, momentum=recipe.sgd_momentum, foreach=False)
    raise ValueError(f"unknown optimizer {recipe.optimizer!r}")


def lr_scheduler(opt, recipe: Recipe):
    """PyTorch's own schedule of the recipe's ``lr_schedule``, stepped once per epoch (None for
    ``"constant"``): ``linear`` is ``LambdaLR`` with ``lambda e: (E - e) / E``, the reference
    :func:`bnstudy.nets.recipe.lr_scales` is held to."""
    if recipe.lr_schedule == "constant":
        return None
    if recipe.lr_schedule == "linear":
        epochs = recipe.epochs
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda e: (epochs - e) / epochs)
    raise ValueError(f"unknown lr_schedule {recipe.lr_schedule!r}")


def train_plain(spec: NetSpec, recipe: Recipe, seed: int, x, y) -> torch.nn.Sequential:
    """Train the network of ``seed`` one batch at a time; returns the module (training mode).

    With ``recipe.accumulate`` = k > 1 each batch is cut into k consecutive micro-batches, each
    loss divided by k and backpropagated into the summed gradients, then one optimiser step."""
    xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    yt = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))
    net = mlp.build_module(spec, seed)
    net.train()
    opt = optimizer(net.parameters(), recipe)
    rng = order_generator(seed)
    schedule = renorm_schedule(spec.normaliser, recipe, len(yt))
    decay = lr_scheduler(opt, recipe)
    step = 0
    for _ in range(recipe.epochs):
        for idx in epoch_batches(rng, np.asarray(y), recipe.batch_size, recipe.order, recipe.last_batch):
            if schedule:
                rmax, dmax = schedule.limits(step)
                for layer in mlp.NORMS:
                    net[int(layer)].rmax, net[int(layer)].dmax = rmax, dmax
            opt.zero_grad(set_to_none=True)
            k = recipe.accumulate  # micro-batches: loss / k, backward k times, one step
            for part in np.split(idx, k) if k > 1 else [idx]:
                index = torch.from_numpy(part)
                loss = F.cross_entropy(net(xt[index]), yt[index])
                (loss / k if k > 1 else loss).backward()
            opt.step()
            step += 1
        if decay:
            decay.step()
    return net
