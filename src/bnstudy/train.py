"""Training: the plain per-model loop and the lockstep trainer.

Both draw the same batches for a given seed (:func:`epoch_batches`) and start
from the same weights (:func:`bnstudy.model.build_module`), so a model trained in
lockstep with others is the model trained alone, up to float rounding of the
batched matrix products.

Batches: every epoch the training rows are permuted by a generator seeded from
``(seed, STREAM_ORDER)`` and cut into batches of ``batch_size``. A final batch of a
single row cannot be normalised with batch statistics and is dropped; a final
batch of two or more rows is kept. ``order="class_sorted"`` sorts the permuted
rows by label before cutting (each batch then holds one or two classes) and
shuffles the order of the full batches: the non-exchangeable control.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch
import torch.nn.functional as F

from . import model as mlp
from .model import NetSpec
from .norms import RenormSchedule
from .runtime import STREAM_ORDER, derive_seed


@dataclass(frozen=True)
class Recipe:
    optimizer: str = "adam"  # "adam" or "sgd"
    lr: float = 1e-3
    sgd_momentum: float = 0.9
    batch_size: int = 64
    epochs: int = 20
    order: str = "shuffle"  # or "class_sorted"
    # batch renormalisation limits and ramp milestones (fractions of the run)
    renorm_rmax: float = 3.0
    renorm_dmax: float = 5.0
    renorm_warmup: float = 0.05
    renorm_rmax_full: float = 0.4
    renorm_dmax_full: float = 0.25

    @classmethod
    def from_params(cls, params: dict) -> "Recipe":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in dict(params).items() if k in names})

    @classmethod
    def from_metadata(cls, meta: dict[str, str]) -> "Recipe":
        """Inverse of :meth:`metadata` (weights files store strings)."""
        return cls(**{f.name: type(f.default)(meta[f.name]) for f in fields(cls) if f.name in meta})

    def metadata(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}


def batch_sizes_per_epoch(n: int, batch_size: int) -> list[int]:
    full, rest = divmod(n, batch_size)
    return [batch_size] * full + ([rest] if rest >= 2 else [])


def steps_per_epoch(n: int, batch_size: int) -> int:
    return len(batch_sizes_per_epoch(n, batch_size))


def epoch_batches(g: torch.Generator, labels: torch.Tensor, batch_size: int, order: str) -> list[torch.Tensor]:
    """Row indices of each batch of one epoch, drawn from generator ``g``."""
    n = len(labels)
    perm = torch.randperm(n, generator=g)
    if order == "class_sorted":
        perm = perm[torch.sort(labels[perm], stable=True).indices]
    elif order != "shuffle":
        raise ValueError(f"unknown order {order!r}")
    sizes = batch_sizes_per_epoch(n, batch_size)
    batches = list(torch.split(perm[: sum(sizes)], sizes))
    if order == "class_sorted":  # shuffle the full batches; a short last batch stays last
        full = n // batch_size
        batches = [batches[i] for i in torch.randperm(full, generator=g).tolist()] + batches[full:]
    return batches


def order_generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(derive_seed(seed, STREAM_ORDER))


def _optimizer(params, recipe: Recipe):
    if recipe.optimizer == "adam":
        return torch.optim.Adam(params, lr=recipe.lr, foreach=False)
    if recipe.optimizer == "sgd":
        return torch.optim.SGD(params, lr=recipe.lr, momentum=recipe.sgd_momentum, foreach=False)
    raise ValueError(f"unknown optimizer {recipe.optimizer!r}")


def renorm_schedule(spec: NetSpec, recipe: Recipe, n: int) -> RenormSchedule | None:
    if spec.normaliser != "batchrenorm":
        return None
    return RenormSchedule(
        total_steps=recipe.epochs * steps_per_epoch(n, recipe.batch_size),
        rmax=recipe.renorm_rmax, dmax=recipe.renorm_dmax, warmup=recipe.renorm_warmup,
        rmax_full=recipe.renorm_rmax_full, dmax_full=recipe.renorm_dmax_full,
    )


def train_lockstep(spec: NetSpec, recipe: Recipe, seeds: list[int], x: torch.Tensor, y: torch.Tensor):
    """Train one model per seed, all advancing together.

    Returns the trained stack (keys as in the module's ``state_dict``, leading
    model axis in the order of ``seeds``) and a tidy per-epoch log: one dict per
    (seed, epoch) with the mean training-mode batch loss and the training-mode
    accuracy over the rows seen in that epoch.
    """
    stacked = mlp.initial_stack(spec, seeds)
    trainable = {k: v.requires_grad_(True) for k, v in stacked.items() if v.is_floating_point()
                 and not k.endswith(("running_mean", "running_var"))}
    opt = _optimizer(list(trainable.values()), recipe)
    gens = [order_generator(s) for s in seeds]
    schedule = renorm_schedule(spec, recipe, len(y))
    m, step, log = len(seeds), 0, []
    for epoch in range(1, recipe.epochs + 1):
        plans = [epoch_batches(g, y, recipe.batch_size, recipe.order) for g in gens]
        loss_sum = torch.zeros(m, dtype=torch.float64)
        correct = torch.zeros(m, dtype=torch.long)
        rows = 0
        for b in range(len(plans[0])):
            idx = torch.stack([plan[b] for plan in plans])  # (M, B)
            xb, yb = x[idx], y[idx]
            limits = schedule.limits(step) if schedule else (1.0, 0.0)
            logits = mlp.forward(stacked, spec, xb, train=True, update=True, limits=limits)
            per_model = F.cross_entropy(logits.flatten(0, 1), yb.flatten(), reduction="none").view(m, -1).mean(1)
            opt.zero_grad(set_to_none=True)
            per_model.sum().backward()
            opt.step()
            with torch.no_grad():
                loss_sum += per_model.double()
                correct += (logits.argmax(-1) == yb).sum(1)
            rows += idx.shape[1]
            step += 1
        for i, seed in enumerate(seeds):
            log.append({"seed": seed, "epoch": epoch, "loss": float(loss_sum[i] / len(plans[0])),
                        "train_accuracy": float(correct[i]) / rows})
    return {k: v.detach() for k, v in stacked.items()}, log


def train_plain(spec: NetSpec, recipe: Recipe, seed: int, x: torch.Tensor, y: torch.Tensor):
    """The baseline: one ``nn.Sequential`` and a standard PyTorch loop, same batches."""
    net = mlp.build_module(spec, seed)
    net.train()
    opt = _optimizer(net.parameters(), recipe)
    g = order_generator(seed)
    schedule = renorm_schedule(spec, recipe, len(y))
    step = 0
    for _ in range(recipe.epochs):
        for idx in epoch_batches(g, y, recipe.batch_size, recipe.order):
            if schedule:
                rmax, dmax = schedule.limits(step)
                for layer in mlp.NORMS:
                    net[int(layer)].rmax, net[int(layer)].dmax = rmax, dmax
            loss = F.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
    return net



def final_limits(meta: dict[str, str], n: int) -> tuple[float, float]:
    """Batch-renorm (rmax, dmax) at the end of the run recorded in weights ``meta``."""
    if meta.get("normaliser") != "batchrenorm":
        return (1.0, 0.0)
    return renorm_schedule(NetSpec("batchrenorm"), Recipe.from_metadata(meta), n).final
