"""The small convolutional network: its weights, its compiled training loop, its logits.

``nn.Sequential(Conv2d(1, C1, 3, padding=1), Norm(C1), ReLU, Conv2d(C1, C2, 3,
padding=1), Norm(C2), ReLU, AdaptiveAvgPool2d(1), Flatten, Linear(C2, 10))`` on
the digits as 8x8 images of one channel (the standardised pixels, row-major);
``Norm`` is ``BatchNorm2d``, ``GroupNorm(groups, C)``, ``GroupNorm(1, C)`` (layer
norm over channels x positions) or nothing. :mod:`bnstudy.compiled.conv` states the
arithmetic; :mod:`bnstudy.nets.conv_torch` builds the same network in PyTorch (the
tests' reference).

Initial weights follow PyTorch's defaults (convolution and linear weights and
biases uniform on ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``, ``fan_in = in channels x
9`` for a convolution; gamma 1, beta 0, running mean 0, running variance 1) drawn
as :mod:`bnstudy.nets.model` draws the MLP's: PCG64 seeded from ``(seed,
STREAM_INIT)``, ``(2u - 1) / sqrt(fan_in)`` in float64 rounded to float32, layer
by layer, weight before bias. Batches are :func:`bnstudy.nets.batching.epoch_rows`
from the seed's order stream (the MLP grid's order for the same seed). One
training step is: forward in training mode (the running statistics moved with
PyTorch's rule, once per step), :func:`bnstudy.compiled.gradients.loss_and_grad`, backward
layer by layer, :func:`bnstudy.compiled.optimisers.step_adam` over the flat parameter
vector (:func:`layout`; without a normaliser gamma and beta stay 1 and 0).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from bnstudy.base import normalisers
from bnstudy.base.fixedmath import JIT
from bnstudy.base.runtime import STREAM_INIT, derive_seed
from bnstudy.compiled.blocks import linear_t, transpose_into
from bnstudy.compiled.conv import P, average_pool, col2im, im2col
from bnstudy.compiled.gradients import linear_backward, loss_and_grad
from bnstudy.compiled.normkernels import spatial_backward, spatial_forward
from bnstudy.compiled.optimisers import step_adam
from bnstudy.nets.batching import epoch_rows, order_generator
from bnstudy.nets.recipe import batch_sizes_per_epoch

CLASSES = 10
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
NORMS = ("1", "4")


@dataclass(frozen=True)
class ConvSpec:
    """One convolutional network: normaliser, channels of the two convolutions, group norm's
    groups (layer norm: 1), eps and PyTorch momentum of batch norm."""

    normaliser: str
    channels: tuple[int, int] = (8, 16)
    groups: int = 4
    eps: float = 1e-5
    momentum: float = 0.1

    def setting(self) -> int:
        """The integer the kernels receive with the kind: its registered ``setting`` field
        (group norm's groups, which must divide both convolutions' channels), else 1."""
        field = normalisers.get(self.normaliser).setting
        if not field:
            return 1
        value = int(getattr(self, field))
        if field == "groups" and min(self.channels) % value:
            raise ValueError(f"{value} groups do not divide the channels {self.channels}")
        return value

    def kind(self) -> int:
        return normalisers.get(self.normaliser).kernel


def layout(spec: ConvSpec) -> list[tuple[str, tuple[int, ...]]]:
    """The flat parameter vector's parts: ``(state-dict key, shape)`` in order."""
    c1, c2 = spec.channels
    return [
        ("0.weight", (c1, 1, 3, 3)),
        ("0.bias", (c1,)),
        ("1.weight", (c1,)),
        ("1.bias", (c1,)),
        ("3.weight", (c2, c1, 3, 3)),
        ("3.bias", (c2,)),
        ("4.weight", (c2,)),
        ("4.bias", (c2,)),
        ("8.weight", (CLASSES, c2)),
        ("8.bias", (CLASSES,)),
    ]


def initial_state(spec: ConvSpec, seed: int) -> dict[str, np.ndarray]:
    """The initial weights of one network for ``seed`` (keys of the module's ``state_dict``)."""
    rng = np.random.default_rng(derive_seed(seed, STREAM_INIT))
    c1, c2 = spec.channels
    info = normalisers.get(spec.normaliser)
    state: dict[str, np.ndarray] = {}
    for layer, fan_in, shape in (("0", 9, (c1, 1, 3, 3)), ("3", 9 * c1, (c2, c1, 3, 3)), ("8", c2, (CLASSES, c2))):
        bound = 1.0 / np.sqrt(np.float64(fan_in))
        for name, sh in (("weight", shape), ("bias", shape[:1])):
            state[f"{layer}.{name}"] = ((2.0 * rng.random(sh) - 1.0) * bound).astype(np.float32)
        norm = {"0": "1", "3": "4"}.get(layer)
        if norm and info.affine:
            for name in info.parameters:  # gamma ones, beta zeros
                state[f"{norm}.{name}"] = np.full(shape[0], 1.0 if name == "weight" else 0.0, np.float32)
            if info.batch_statistics:
                state[f"{norm}.running_mean"] = np.zeros(shape[0], np.float32)
                state[f"{norm}.running_var"] = np.ones(shape[0], np.float32)
                state[f"{norm}.num_batches_tracked"] = np.zeros((), np.int64)
    order = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")
    return {k: state[k] for k in sorted(state, key=lambda k: (int(k.split(".")[0]), order.index(k.split(".")[1])))}


@numba.njit(**JIT)
def _views(p, c1, c2):
    o = 0
    w1 = p[o : o + 9 * c1].reshape((c1, 9))
    o += 9 * c1
    b1, g1, be1 = p[o : o + c1], p[o + c1 : o + 2 * c1], p[o + 2 * c1 : o + 3 * c1]
    o += 3 * c1
    w2 = p[o : o + c2 * 9 * c1].reshape((c2, 9 * c1))
    o += c2 * 9 * c1
    b2, g2, be2 = p[o : o + c2], p[o + c2 : o + 2 * c2], p[o + 2 * c2 : o + 3 * c2]
    o += 3 * c2
    w3 = p[o : o + 10 * c2].reshape((10, c2))
    o += 10 * c2
    return w1, b1, g1, be1, w2, b2, g2, be2, w3, p[o : o + 10]


@numba.njit(**JIT)
def train_run(
    kind,
    c1,
    c2,
    p,
    running,
    x,
    y,
    rows,
    sizes,
    eps,
    setting,
    momentum,
    lr,
    beta1,
    beta2,
    adam_eps,
    loss_out,
    correct_out,
    first_grad,
):
    """Train one model in place: epoch ``e`` feeds rows ``rows[e]`` of ``x`` (``(N, P)``) in
    consecutive batches of ``sizes``; ``running`` ``(4, max(c1, c2))`` holds the running mean
    and variance of layers 1 and 2. Writes each epoch's mean batch loss and correct rows, and
    (if it has any elements) the first step's gradient into ``first_grad``."""  # fmt: skip
    bmax = 0
    for s in sizes:
        bmax = max(bmax, s)
    rmax = bmax * P
    w1, b1, g1, be1, w2, b2, g2, be2, w3, b3 = _views(p, c1, c2)
    grad = np.zeros_like(p)
    dw1, db1, dg1, dbe1, dw2, db2, dg2, dbe2, dw3, db3 = _views(grad, c1, c2)
    m1, m2 = np.zeros_like(p), np.zeros_like(p)
    rm1, rv1, rm2, rv2 = running[0, :c1], running[1, :c1], running[2, :c2], running[3, :c2]
    w1t, w2t, w3t = np.empty((9, c1), np.float32), np.empty((9 * c1, c2), np.float32), np.empty((c2, 10), np.float32)
    xb, yb = np.empty((rmax, 1), np.float32), np.empty(bmax, np.int64)
    pt1 = np.empty((rmax, 9), np.float32)
    pre1, a1, xh1 = np.empty((rmax, c1), np.float32), np.empty((rmax, c1), np.float32), np.empty((rmax, c1), np.float32)
    pt2, dpt2 = np.empty((rmax, 9 * c1), np.float32), np.empty((rmax, 9 * c1), np.float32)
    pre2, a2, xh2 = np.empty((rmax, c2), np.float32), np.empty((rmax, c2), np.float32), np.empty((rmax, c2), np.float32)
    da2, dh2 = np.empty((rmax, c2), np.float32), np.empty((rmax, c2), np.float32)
    da1, dh1 = np.empty((rmax, c1), np.float32), np.empty((rmax, c1), np.float32)
    pooled, dpooled = np.empty((bmax, c2), np.float32), np.empty((bmax, c2), np.float32)
    ones = np.ones((bmax, c2), np.float32)
    z, dz = np.empty((bmax, 10), np.float32), np.empty((bmax, 10), np.float32)
    rs1, rs2 = np.empty((bmax, setting), np.float32), np.empty((bmax, setting), np.float32)
    st1, st2 = np.zeros((5, c1), np.float32), np.zeros((5, c2), np.float32)
    st1[3, :] = 1
    st2[3, :] = 1
    none = np.empty((rmax, 0), np.float32)
    step = 0
    for e in range(rows.shape[0]):
        pos = 0
        loss = 0.0
        correct = 0
        for s in range(sizes.shape[0]):
            n = sizes[s]
            r = n * P
            for i in range(n):
                row = rows[e, pos + i]
                yb[i] = y[row]
                for q in range(P):
                    xb[i * P + q, 0] = x[row, q]
            pos += n
            transpose_into(w1, w1t)
            transpose_into(w2, w2t)
            transpose_into(w3, w3t)
            im2col(xb, n, pt1)
            linear_t(pt1[:r], w1t, b1, pre1[:r])
            spatial_forward(kind, pre1[:r], n, g1, be1, rm1, rv1, eps, setting, momentum, st1, a1, xh1, rs1)
            im2col(a1, n, pt2)
            linear_t(pt2[:r], w2t, b2, pre2[:r])
            spatial_forward(kind, pre2[:r], n, g2, be2, rm2, rv2, eps, setting, momentum, st2, a2, xh2, rs2)
            average_pool(a2, n, pooled)
            linear_t(pooled[:n], w3t, b3, z[:n])
            batch_loss, batch_correct = loss_and_grad(z, yb, n, dz)
            loss += batch_loss
            correct += batch_correct
            linear_backward(dz, pooled, n, w3, dw3, db3, dpooled, ones)
            inv = np.float32(P)
            for i in range(n):
                for q in range(P):
                    for c in range(c2):
                        da2[i * P + q, c] = dpooled[i, c] / inv if a2[i * P + q, c] > 0 else np.float32(0)
            spatial_backward(kind, da2[:r], n, g2, st2, xh2, rs2, setting, dh2, dg2, dbe2)
            linear_backward(dh2, pt2, r, w2, dw2, db2, dpt2, pt2)
            col2im(dpt2, n, da1)
            spatial_backward(kind, da1[:r], n, g1, st1, xh1, rs1, setting, dh1, dg1, dbe1)
            linear_backward(dh1, pt1, r, w1, dw1, db1, none, pt1)
            if step == 0 and first_grad.shape[0] > 0:
                first_grad[:] = grad
            step += 1
            step_adam(p, grad, m1, m2, step, lr, beta1, beta2, adam_eps)
        loss_out[e] = loss / sizes.shape[0]
        correct_out[e] = correct


# ---- whole runs and stacks (Python) -------------------------------------------------


def _flat(spec: ConvSpec, state: dict) -> np.ndarray:
    parts = []
    for key, shape in layout(spec):
        if key in state:
            parts.append(np.asarray(state[key], np.float32).reshape(-1))
        else:  # no normaliser: gamma 1 and beta 0, never moved
            parts.append(np.full(int(np.prod(shape)), 1.0 if key.endswith("weight") else 0.0, np.float32))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def train_one(spec: ConvSpec, recipe, seed: int, x: np.ndarray, y: np.ndarray, first_grad=None):
    """Train the network of ``seed`` with Adam (``recipe``: batch size, lr, epochs, last batch);
    returns its state dict and one log row per epoch (``first_grad``: an array of the flat
    vector's size that receives the first step's gradient, laid out as :func:`layout`)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.int64)
    first_grad = np.empty(0, np.float32) if first_grad is None else first_grad
    if recipe.optimizer != "adam":
        raise ValueError(f"the convolutional network trains with adam, not {recipe.optimizer!r}")
    initial = initial_state(spec, seed)
    rng = order_generator(seed)
    rows = np.stack([epoch_rows(rng, y, recipe.batch_size, "shuffle", recipe.last_batch) for _ in range(recipe.epochs)])
    sizes = np.array(batch_sizes_per_epoch(len(y), recipe.batch_size, recipe.last_batch), np.int64)
    flat = _flat(spec, initial)
    c1, c2 = spec.channels
    running = np.zeros((4, max(c1, c2)), np.float32)
    running[1] = running[3] = 1.0
    loss = np.zeros(recipe.epochs, np.float64)
    correct = np.zeros(recipe.epochs, np.int64)
    train_run(
        spec.kind(), c1, c2, flat, running, x, y, rows, sizes, np.float32(spec.eps), spec.setting(),
        np.float32(spec.momentum), float(recipe.lr), ADAM_BETAS[0], ADAM_BETAS[1], ADAM_EPS, loss, correct, first_grad,
    )  # fmt: skip
    state, offset = {}, 0
    for key, shape in layout(spec):
        size = int(np.prod(shape))
        state[key] = flat[offset : offset + size].reshape(shape).copy()
        offset += size
    for i, layer in enumerate(NORMS):
        c = spec.channels[i]
        state[f"{layer}.running_mean"] = running[2 * i, :c].copy()
        state[f"{layer}.running_var"] = running[2 * i + 1, :c].copy()
        state[f"{layer}.num_batches_tracked"] = np.array(recipe.epochs * len(sizes), np.int64)
    seen = int(sizes.sum())
    log = [
        {"seed": seed, "epoch": e + 1, "loss": float(loss[e]), "train_accuracy": int(correct[e]) / seen}
        for e in range(recipe.epochs)
    ]
    return {k: state[k] for k in initial}, log


def train_models(spec: ConvSpec, recipe, seeds, x, y, threads: int = 1):
    """One network per seed: ``(stack, log)`` (model axis in the order of ``seeds``)."""
    seeds = [int(s) for s in seeds]
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(lambda s: train_one(spec, recipe, s, x, y), seeds))
    log = sorted((row for _, rows in results for row in rows), key=lambda r: (r["epoch"], seeds.index(r["seed"])))
    stacked = {k: np.stack([state[k] for state, _ in results]) for k in results[0][0]}
    return stacked, log


def model_arrays(stacked: dict, spec: ConvSpec, i: int) -> tuple:
    """Model ``i``'s arrays in :func:`bnstudy.compiled.conv.forward_model`'s order (``W^T`` for every layer)."""
    c1, c2 = spec.channels

    def get(key, fill, size):
        if key in stacked:
            return np.ascontiguousarray(stacked[key][i], dtype=np.float32)
        return np.full(size, fill, np.float32)

    def norm(layer, c):
        return tuple(
            get(f"{layer}.{n}", f, c) for n, f in (("weight", 1), ("bias", 0), ("running_mean", 0), ("running_var", 1))
        )  # noqa: E501

    t = lambda key, rows: np.ascontiguousarray(np.asarray(stacked[key][i], np.float32).reshape(rows, -1).T)  # noqa: E731
    return (
        t("0.weight", c1), get("0.bias", 0, c1), *norm("1", c1),
        t("3.weight", c2), get("3.bias", 0, c2), *norm("4", c2),
        t("8.weight", CLASSES), get("8.bias", 0, CLASSES),
    )  # fmt: skip


def logits(stacked: dict, spec: ConvSpec, x: np.ndarray, *, train: bool = False, batch: int = 0) -> np.ndarray:
    """Logits ``(M, N, 10)`` of every model for the images ``x`` (``(N, 64)``): inference mode,
    or training mode on consecutive batches of ``batch`` images (running statistics never written)."""
    from bnstudy.compiled.conv import forward_model

    x = np.ascontiguousarray(np.asarray(x, np.float32).reshape(-1, 1))
    n = x.shape[0] // P
    if train and (batch < 2 or n % batch):
        raise ValueError(f"training mode needs batches of >= 2 images that tile the {n} images; got {batch}")
    m = next(iter(stacked.values())).shape[0]
    out = np.empty((m, n, CLASSES), np.float32)
    for i in range(m):
        forward_model(
            spec.kind(), *model_arrays(stacked, spec, i), x, n, batch if train else 1, train,
            np.float32(spec.eps), spec.setting(), out[i],
        )  # fmt: skip
    return out
