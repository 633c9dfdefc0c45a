"""Training: the plain per-model loop and the lockstep trainer.

Both draw the same batches for a given seed (:func:`epoch_batches`) and start
from the same weights (:func:`bnstudy.model.build_module`). The lockstep trainer
computes the same gradients as autograd, by hand (:class:`StackedNet`), and steps
all models with the optimiser acting on a flat buffer; a model trained in lockstep
with others is bit for bit the model the lockstep trainer gives alone (at the
study's widths; with batch norms at some other widths, seen at 48 and 100, the
gradient of the Linear bias before the norm, mathematically zero, is rounding
noise summed in an order that depends on the stack's size), and the plain loop's
model up to float rounding (``tests/test_train.py`` states the tolerances).

Batches: every epoch the training rows are permuted by a generator seeded from
``(seed, STREAM_ORDER)`` and cut into batches of ``batch_size``. What is left over
(``n mod batch_size`` rows) is dropped with ``last_batch="drop"`` (the default):
with 898 rows that is a batch of 2 rows at every batch size but 2, which maps
every unit to -1/+1 and enters the running averages with the weight of a full
batch. ``last_batch="keep"`` keeps a final batch of two or more rows; a final
batch of one row cannot be normalised with batch statistics and is always dropped.
``order="class_sorted"`` sorts the permuted
rows by label before cutting (each batch then holds one or two classes) and
shuffles the order of the full batches: the non-exchangeable control.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import NamedTuple

import torch
import torch.nn.functional as F

from . import model as mlp
from .model import NetSpec
from .norms import BATCH_NORMALISERS, RenormSchedule
from .runtime import STREAM_ORDER, derive_seed


@dataclass(frozen=True)
class Recipe:
    optimizer: str = "adam"  # "adam" or "sgd"
    lr: float = 1e-3
    sgd_momentum: float = 0.9
    batch_size: int = 64
    epochs: int = 20
    order: str = "shuffle"  # or "class_sorted"
    last_batch: str = "drop"  # or "keep" (a final batch of >= 2 rows)
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


def batch_sizes_per_epoch(n: int, batch_size: int, last_batch: str = "drop") -> list[int]:
    if last_batch not in ("drop", "keep"):
        raise ValueError(f"unknown last_batch {last_batch!r}")
    full, rest = divmod(n, batch_size)
    return [batch_size] * full + ([rest] if rest >= 2 and last_batch == "keep" else [])


def steps_per_epoch(n: int, batch_size: int, last_batch: str = "drop") -> int:
    return len(batch_sizes_per_epoch(n, batch_size, last_batch))


def epoch_batches(g: torch.Generator, labels: torch.Tensor, batch_size: int, order: str,
                  last_batch: str = "drop") -> list[torch.Tensor]:
    """Row indices of each batch of one epoch, drawn from generator ``g``."""
    n = len(labels)
    perm = torch.randperm(n, generator=g)
    if order == "class_sorted":
        perm = perm[torch.sort(labels[perm], stable=True).indices]
    elif order != "shuffle":
        raise ValueError(f"unknown order {order!r}")
    sizes = batch_sizes_per_epoch(n, batch_size, last_batch)
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
        total_steps=recipe.epochs * steps_per_epoch(n, recipe.batch_size, recipe.last_batch),
        rmax=recipe.renorm_rmax, dmax=recipe.renorm_dmax, warmup=recipe.renorm_warmup,
        rmax_full=recipe.renorm_rmax_full, dmax_full=recipe.renorm_dmax_full,
    )


def train_lockstep(spec: NetSpec, recipe: Recipe, seeds: list[int], x: torch.Tensor, y: torch.Tensor):
    """Train one model per seed, all advancing together.

    Each model starts from :func:`bnstudy.model.build_module` for its seed and sees
    the batches :func:`epoch_batches` draws from its own order generator, exactly as
    :func:`train_plain` would; the gradients are written out by hand
    (:class:`StackedNet`) and the optimiser acts on one flat buffer holding every
    model's parameters (:class:`FlatAdam`, :class:`FlatSGD`). Lockstep and plain
    training agree up to float rounding.

    Returns the trained stack (keys as in the module's ``state_dict``, leading
    model axis in the order of ``seeds``) and a tidy per-epoch log: one dict per
    (seed, epoch) with the mean training-mode batch loss and the training-mode
    accuracy over the rows seen in that epoch.
    """
    net = StackedNet.from_stack(spec, mlp.initial_stack(spec, seeds))
    opt = flat_optimizer(net.flat, net.flat_grad, recipe, net.parts)
    gens = [order_generator(s) for s in seeds]
    schedule = renorm_schedule(spec, recipe, len(y))
    sizes = batch_sizes_per_epoch(len(y), recipe.batch_size, recipe.last_batch)
    divisors = [torch.tensor(float(size)) for size in sizes]  # batch sizes as tensors: a cheaper division
    classes = spec.widths[-1]
    step, log = 0, []
    # No autograd anywhere below (the gradients are hand-written): inference mode
    # skips PyTorch's autograd bookkeeping on every op, the same kernels run.
    with torch.inference_mode():
        for epoch in range(1, recipe.epochs + 1):
            rows = torch.stack([torch.cat(epoch_batches(g, y, recipe.batch_size, recipe.order, recipe.last_batch))
                                for g in gens])
            xe, ye = x[rows], y[rows]  # (M, rows, in), (M, rows), in batch order
            onehot = F.one_hot(ye, classes).to(x.dtype)  # (M, rows, C)
            logits = []
            for size, xb, ob in zip(divisors, xe.split(sizes, dim=1), onehot.split(sizes, dim=1)):
                out = net.forward_train(xb, schedule.limits(step) if schedule else (1.0, 0.0))
                opt.begin_step()
                # d(mean cross-entropy)/d logits = (softmax - onehot) / B, for each model;
                # the optimiser updates each part of the buffer as backward finishes with it
                net.backward(torch.softmax(out, dim=2).sub_(ob).div_(size), done=opt.update)
                logits.append(out)
                step += 1
            loss, accuracy = _epoch_scores(torch.cat(logits, dim=1), ye, sizes)
            for i, seed in enumerate(seeds):
                log.append({"seed": seed, "epoch": epoch, "loss": float(loss[i]),
                            "train_accuracy": float(accuracy[i])})
    return net.state(), log


def _epoch_scores(logits: torch.Tensor, labels: torch.Tensor, sizes: list[int]):
    """Per model: mean over batches of the batch-mean cross-entropy, and accuracy over rows.

    ``logits`` is ``(M, rows, C)`` in batch order, as they were computed during the epoch.
    """
    nll = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")  # (M, rows)
    m, b, full = nll.shape[0], sizes[0], sizes.count(sizes[0])
    batch_losses = [nll[:, : full * b].reshape(m, full, b).mean(2)]
    if len(sizes) > full:  # the short last batch
        batch_losses.append(nll[:, full * b:].mean(1, keepdim=True))
    loss = torch.cat(batch_losses, dim=1).double().sum(1) / len(sizes)
    accuracy = (logits.argmax(2) == labels).sum(1).double() / labels.shape[1]
    return loss, accuracy


def train_plain(spec: NetSpec, recipe: Recipe, seed: int, x: torch.Tensor, y: torch.Tensor):
    """The baseline: one ``nn.Sequential`` and a standard PyTorch loop, same batches."""
    net = mlp.build_module(spec, seed)
    net.train()
    opt = _optimizer(net.parameters(), recipe)
    g = order_generator(seed)
    schedule = renorm_schedule(spec, recipe, len(y))
    step = 0
    for _ in range(recipe.epochs):
        for idx in epoch_batches(g, y, recipe.batch_size, recipe.order, recipe.last_batch):
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


@dataclass
class TrainedCell:
    """The trained networks of one weights list, stacked, with the test data to evaluate them on."""

    stacked: dict
    spec: NetSpec
    metas: list
    x: torch.Tensor
    y: torch.Tensor
    limits: tuple[float, float]  # batch renorm's (rmax, dmax) at the end of training


def load_trained(weights, x_test, y_test, y_train) -> TrainedCell:
    """Stack the weights files ``weights`` and read the test half (paths as the rules give them).

    ``y_train`` is read for its length only: the renorm schedule is a function of
    the number of training steps.
    """
    from .io import read_array

    stacked, spec, metas = mlp.load_stack(weights)
    return TrainedCell(stacked, spec, metas, torch.from_numpy(read_array(x_test)),
                       torch.from_numpy(read_array(y_test)), final_limits(metas[0], len(read_array(y_train))))


# ---------------------------------------------------------------------------
# The lockstep trainer: hand-written gradients over flat stacked buffers.
#
# Activations have shape (M, B, F), as in bnstudy.model.forward; every Linear is
# one batched matrix product a @ W^T + b.


def _flat_views(flat: torch.Tensor, layout: list[tuple[str, tuple[int, ...]]]) -> dict[str, torch.Tensor]:
    """Consecutive views of ``flat``, one per (key, shape) of ``layout`` (key None: padding)."""
    views, offset = {}, 0
    for key, shape in layout:
        n = math.prod(shape)
        if key is not None:
            views[key] = flat[offset:offset + n].view(shape)
        offset += n
    return views


# The flat buffer holds one *part* per Linear: its weight and bias and those of
# the normaliser after it. The optimiser updates a part as soon as backward is
# done with it (while its tensors are still in cache: at batch 2, parameters,
# gradients and Adam's moments of five models overflow the core's L2 cache, and
# one update over the whole buffer after backward made every next step start
# cold). Each part is padded to a multiple of ALIGN elements so that the
# vectorised optimiser kernels treat every element alike (no scalar remainder
# loop): each model gets the same arithmetic whatever the stack's size and
# however the buffer is cut into parts.
ALIGN = 64


def _part(key: str) -> int:
    """Index of the part that holds state-dict ``key``: the Linear at or before its layer."""
    layer = int(key.split(".")[0])
    return sum(int(linear) <= layer for linear in mlp.LINEARS) - 1


def _is_trainable(key: str, value: torch.Tensor) -> bool:
    return value.is_floating_point() and not key.endswith(("running_mean", "running_var"))


@dataclass
class StackedNet:
    """``M`` networks of one :class:`NetSpec` whose trainable tensors live in one flat buffer.

    ``params[k]`` and ``grads[k]`` are views (leading model axis) into ``flat`` and
    ``flat_grad``; an optimiser step over the flat buffers is a step of every model,
    since Adam and SGD act elementwise. ``buffers`` holds the running statistics.
    :meth:`forward_train` runs training mode (batch statistics, running statistics
    updated) and :meth:`backward` returns the exact gradient of the sum over models
    of each model's mean batch loss (the same quantity autograd differentiates in
    :func:`train_plain`, one model at a time).
    """

    spec: NetSpec
    order: tuple[str, ...]  # keys of the module's state_dict
    flat: torch.Tensor
    flat_grad: torch.Tensor
    params: dict
    grads: dict
    buffers: dict
    parts: tuple[slice, ...]  # of flat: one per Linear, with the normaliser after it
    updates: int = 0  # running-statistics updates made here (training steps)
    saved: list | None = field(default=None, repr=False)  # forward results backward needs

    @classmethod
    def from_stack(cls, spec: NetSpec, stacked: dict[str, torch.Tensor]) -> "StackedNet":
        trainable = [k for k, v in stacked.items() if _is_trainable(k, v)]
        chunks, parts, layout, offset = [], [], [], 0
        for part in range(len(mlp.LINEARS)):
            keys = [k for k in trainable if _part(k) == part]
            size = sum(stacked[k].numel() for k in keys)
            chunks += [stacked[k].reshape(-1) for k in keys]
            chunks.append(torch.zeros(-size % ALIGN, dtype=stacked[keys[0]].dtype))
            layout += [(k, tuple(stacked[k].shape)) for k in keys] + [(None, (-size % ALIGN,))]
            parts.append(slice(offset, offset + size + (-size % ALIGN)))
            offset = parts[-1].stop
        flat = torch.cat(chunks)
        flat_grad = torch.zeros_like(flat)
        buffers = {k: v.clone() for k, v in stacked.items() if not _is_trainable(k, v)}
        return cls(spec, tuple(stacked), flat, flat_grad, _flat_views(flat, layout),
                   _flat_views(flat_grad, layout), buffers, tuple(parts))

    def state(self) -> dict[str, torch.Tensor]:
        """The stack as a dict in the module's ``state_dict`` key order."""
        out = {}
        for k in self.order:
            if k in self.params:
                out[k] = self.params[k].clone()
            elif k.endswith("num_batches_tracked"):
                out[k] = self.buffers[k] + self.updates
            else:
                out[k] = self.buffers[k].clone()
        return out

    # -- one training step ---------------------------------------------------
    def __post_init__(self):
        # per Linear: W^T (M, in, out), W, bias (M, 1, out), and their gradients' views
        self.linears = [
            _Linear(self.params[k + ".weight"].transpose(1, 2), self.params[k + ".weight"],
                    self.params[k + ".bias"].unsqueeze(1), self.grads[k + ".weight"], self.grads[k + ".bias"])
            for k in mlp.LINEARS
        ]
        self.norms = [None if self.spec.normaliser == "none" else _Norm.of(self, k) for k in mlp.NORMS]

    def forward_train(self, x: torch.Tensor, limits=(1.0, 0.0)) -> torch.Tensor:
        """Training-mode logits ``(M, B, classes)`` for inputs ``x`` of shape ``(M, B, in)``.

        Batch statistics normalise; running statistics are updated (one update).
        """
        self.updates += 1
        self.saved = [x]
        a = x
        for linear, norm in zip(self.linears, self.norms):
            z, ctx = self._norm_forward(norm, torch.baddbmm(linear.bias_row, a, linear.weight_t), limits)
            a = z.relu_()  # z is a fresh tensor (or, with no normaliser, h): nothing else reads it
            self.saved += [ctx, a]
        out = self.linears[2]
        return torch.baddbmm(out.bias_row, a, out.weight_t)

    def backward(self, dlogits: torch.Tensor, done=None) -> None:
        """Write into ``flat_grad`` the gradient given ``dlogits`` = d loss / d logits, ``(M, B, C)``.

        Linear ``h = a W^T + b``: ``dW = dh^T a``, ``db = sum_rows dh``, ``da = dh W``;
        ReLU passes the gradient where its output is positive. ``done(i)``, if
        given, is called as soon as part ``i`` (:attr:`parts`) has its gradient
        and its parameters are no longer read: last part first.
        """
        x, ctx1, a1, ctx2, a2 = self.saved
        dh = dlogits
        for part, a, norm, ctx in ((2, a2, self.norms[1], ctx2), (1, a1, self.norms[0], ctx1)):
            linear = self.linears[part]
            torch.bmm(dh.transpose(1, 2), a, out=linear.grad_weight)
            torch.sum(dh, dim=1, out=linear.grad_bias)
            dz = _THRESHOLD_BACKWARD(torch.bmm(dh, linear.weight), a, 0)
            if done is not None:
                done(part)  # the normaliser below belongs to the part before
            dh = self._norm_backward(norm, dz, ctx)
        first = self.linears[0]
        torch.bmm(dh.transpose(1, 2), x, out=first.grad_weight)
        torch.sum(dh, dim=1, out=first.grad_bias)
        if done is not None:
            done(0)
        self.saved = None

    # -- normalisers ---------------------------------------------------------
    def _norm_forward(self, norm: "_Norm | None", h: torch.Tensor, limits):
        """Training-mode normaliser on ``h`` ``(M, B, F)``; returns output and what backward needs.

        Batch norms treat the ``M * F`` (model, feature) pairs as the channels of
        one ``(B, M * F)`` batch: PyTorch's own batch-norm kernel, which also moves
        the running statistics exactly as ``BatchNorm1d`` does. Batch
        renormalisation is that kernel with weight ``gamma * r`` and bias
        ``gamma * d + beta`` (``r``, ``d`` constants).
        """
        if norm is None:
            return h, None
        kind, spec = self.spec.normaliser, self.spec
        m, b, f = h.shape
        if kind in BATCH_NORMALISERS:
            channels = h.transpose(0, 1).reshape(b, m * f)
            momentum = spec.momentum if spec.momentum is not None else 1.0 / self.updates
            if kind == "batchnorm":
                w_eff, b_eff, rd = norm.weight_flat, norm.bias_flat, None
            else:  # r, d from the running statistics before this step's update
                var, mean = torch.var_mean(h, dim=1, correction=0)
                sigma = torch.sqrt(norm.running_var + spec.eps)
                rmax, dmax = limits
                r = (torch.sqrt(var + spec.eps) / sigma).clamp_(1.0 / rmax, rmax)
                d = ((mean - norm.running_mean) / sigma).clamp_(-dmax, dmax)
                w_eff = (norm.weight * r).view(-1)
                b_eff, rd = torch.addcmul(norm.bias, norm.weight, d).view(-1), (r, d)
            z, mean, invstd = torch.native_batch_norm(
                channels, w_eff, b_eff, norm.running_mean_flat, norm.running_var_flat, True, momentum, spec.eps)
            return z.view(b, m, f).transpose(0, 1), (channels, w_eff, mean, invstd, rd)
        hg = h.view(m, b, norm.groups, f // norm.groups)
        var, mean = torch.var_mean(hg, dim=3, correction=0, keepdim=True)
        rstd = torch.rsqrt(var + spec.eps)
        xhat = ((hg - mean) * rstd).view(m, b, f)
        z = torch.addcmul(norm.bias_row, xhat, norm.weight_row)
        return z, (xhat, rstd)

    def _norm_backward(self, norm: "_Norm | None", dz: torch.Tensor, ctx) -> torch.Tensor:
        """Gradient of the normaliser's input given ``dz``; writes its weight and bias gradients.

        Layer/group norm: with ``xhat = (h - mean) * rstd`` over a group,
        ``dh = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))`` with
        ``dxhat = gamma * dz``; batch norms use PyTorch's backward kernel.
        """
        if norm is None:
            return dz
        m, b, f = dz.shape
        if self.spec.normaliser in BATCH_NORMALISERS:
            channels, w_eff, mean, invstd, rd = ctx
            dh, dw_eff, db_eff = _BATCH_NORM_BACKWARD(
                dz.transpose(0, 1).reshape(b, m * f), channels, w_eff, None, None, mean, invstd,
                True, self.spec.eps, [True, True, True])
            if rd is None:
                norm.grad_weight_flat.copy_(dw_eff)
            else:  # z = gamma * (r * xhat + d) + beta with r, d constants
                r, d = rd
                torch.addcmul(dw_eff.view(m, f) * r, db_eff.view(m, f), d, out=norm.grad_weight)
            norm.grad_bias_flat.copy_(db_eff)
            return dh.view(b, m, f).transpose(0, 1)
        xhat, rstd = ctx
        torch.sum(dz, dim=1, out=norm.grad_bias)
        torch.sum(dz * xhat, dim=1, out=norm.grad_weight)
        groups = norm.groups
        dxhat = (dz * norm.weight_row).view(m, b, groups, f // groups)
        xg = xhat.view(m, b, groups, f // groups)
        dh = dxhat - dxhat.mean(dim=3, keepdim=True) - xg * (dxhat * xg).mean(dim=3, keepdim=True)
        return (dh * rstd).view(m, b, f)


_THRESHOLD_BACKWARD = torch.ops.aten.threshold_backward.default
_BATCH_NORM_BACKWARD = torch.ops.aten.native_batch_norm_backward.default


class _Linear(NamedTuple):
    """Views of one stacked Linear's parameters and gradients (leading model axis)."""

    weight_t: torch.Tensor  # (M, in, out)
    weight: torch.Tensor  # (M, out, in)
    bias_row: torch.Tensor  # (M, 1, out)
    grad_weight: torch.Tensor
    grad_bias: torch.Tensor


class _Norm(NamedTuple):
    """Views of one stacked normaliser's tensors, in the shapes the step uses them."""

    weight: torch.Tensor  # (M, F)
    bias: torch.Tensor
    grad_weight: torch.Tensor
    grad_bias: torch.Tensor
    weight_row: torch.Tensor  # (M, 1, F)
    bias_row: torch.Tensor
    weight_flat: torch.Tensor  # (M * F,)
    bias_flat: torch.Tensor
    grad_weight_flat: torch.Tensor
    grad_bias_flat: torch.Tensor
    running_mean: torch.Tensor | None  # (M, F), batch norms only
    running_var: torch.Tensor | None
    running_mean_flat: torch.Tensor | None
    running_var_flat: torch.Tensor | None
    groups: int  # feature groups of layer/group norm (1 for layer norm)

    @classmethod
    def of(cls, net: StackedNet, layer: str) -> "_Norm":
        w, b = net.params[layer + ".weight"], net.params[layer + ".bias"]
        gw, gb = net.grads[layer + ".weight"], net.grads[layer + ".bias"]
        rm, rv = net.buffers.get(layer + ".running_mean"), net.buffers.get(layer + ".running_var")
        batch = net.spec.normaliser in BATCH_NORMALISERS
        return cls(w, b, gw, gb, w.unsqueeze(1), b.unsqueeze(1), w.view(-1), b.view(-1), gw.view(-1), gb.view(-1),
                   rm if batch else None, rv if batch else None,
                   rm.view(-1) if batch else None, rv.view(-1) if batch else None,
                   net.spec.groups if net.spec.normaliser == "groupnorm" else 1)


# ---------------------------------------------------------------------------
# Optimisers over one flat buffer. Adam and SGD act element by element, so one
# step over the buffer holding every model's parameters is a step of each model.


class FlatOptimizer:
    """An element-wise optimiser over the flat buffer ``param``, updated whole or part by part.

    :meth:`step` updates every element; a trainer may instead call
    :meth:`begin_step` and then :meth:`update` once for each part (slices of the
    buffer given as ``parts``), in any order, which updates every element exactly
    as :meth:`step` does.
    """

    def step(self) -> None:
        self.begin_step()
        for i in range(len(self.parts)):
            self.update(i)

    def begin_step(self) -> None:
        self.count += 1

    def update(self, part: int) -> None:
        raise NotImplementedError


@dataclass
class FlatAdam(FlatOptimizer):
    """Adam (PyTorch's defaults, no weight decay) on the flat buffer ``param``, in place.

    One call of PyTorch's fused Adam kernel per part and step (the kernel behind
    ``torch.optim.Adam(fused=True)``, without that class's per-step Python
    overhead). Per element, at step ``t``: ``m = beta1 m + (1 - beta1) g``,
    ``v = beta2 v + (1 - beta2) g^2``,
    ``param -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``:
    the update of the per-model loop's ``foreach=False`` Adam, up to float rounding.
    """

    param: torch.Tensor
    grad: torch.Tensor
    lr: float
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    parts: tuple[slice, ...] = (slice(None),)

    def __post_init__(self):
        self.exp_avg = torch.zeros_like(self.param)
        self.exp_avg_sq = torch.zeros_like(self.param)
        self.steps = torch.zeros((), dtype=torch.float32)  # the step count as the kernel takes it
        self.count = 0
        self.views = [tuple([t[part]] for t in (self.param, self.grad, self.exp_avg, self.exp_avg_sq))
                      for part in self.parts]

    def begin_step(self) -> None:
        super().begin_step()
        self.steps.fill_(self.count)

    def update(self, part: int) -> None:
        param, grad, exp_avg, exp_avg_sq = self.views[part]
        torch._fused_adam_(
            param, grad, exp_avg, exp_avg_sq, [], [self.steps],
            lr=self.lr, beta1=self.betas[0], beta2=self.betas[1], weight_decay=0.0, eps=self.eps,
            amsgrad=False, maximize=False)


@dataclass
class FlatSGD(FlatOptimizer):
    """SGD with momentum (no dampening, no Nesterov) on the flat buffer ``param``, in place.

    PyTorch's single-tensor update: ``buf = g`` at the first step, then
    ``buf = momentum * buf + g``; ``param -= lr * buf``.
    """

    param: torch.Tensor
    grad: torch.Tensor
    lr: float
    momentum: float = 0.0
    parts: tuple[slice, ...] = (slice(None),)

    def __post_init__(self):
        self.count = 0
        self.buf = torch.zeros_like(self.param) if self.momentum else None

    def update(self, part: int) -> None:
        where = self.parts[part]
        param, direction = self.param[where], self.grad[where]
        if self.momentum:
            buf = self.buf[where]
            if self.count == 1:
                buf.copy_(direction)
            else:
                buf.mul_(self.momentum).add_(direction)
            direction = buf
        param.add_(direction, alpha=-self.lr)


def flat_optimizer(flat: torch.Tensor, flat_grad: torch.Tensor, recipe: Recipe, parts=(slice(None),)):
    """The recipe's optimiser over the flat buffers (cut into ``parts``), PyTorch's defaults otherwise."""
    if recipe.optimizer == "adam":
        return FlatAdam(flat, flat_grad, lr=recipe.lr, parts=tuple(parts))
    if recipe.optimizer == "sgd":
        return FlatSGD(flat, flat_grad, lr=recipe.lr, momentum=recipe.sgd_momentum, parts=tuple(parts))
    raise ValueError(f"unknown optimizer {recipe.optimizer!r}")
