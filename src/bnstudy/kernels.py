"""The network's arithmetic, compiled, in one fixed order: the same bits on every CPU.

Every forward pass whose result reaches an output (training, inference-mode and
training-mode evaluation, the remedies' passes, the companion probes) runs
through the functions here, compiled by Numba (``cache=True``: later processes
load the machine code from ``__pycache__``). The rules (see
:mod:`bnstudy.fixedmath`): no fast-math and no fused multiply-add; every
reduction in the order written below, vectorised only across independent
outputs, so a CPU with wider vectors computes more outputs at once, each the
same way; ``exp``/``log`` from :mod:`bnstudy.fixedmath`. All network arithmetic
is float32.

One model's parameters are 2-D arrays in PyTorch's layout (``weight`` is
``(out, in)``). The canonical operations, per output element:

- Linear: ``h[i, o] = bias[o] + sum_k a[i, k] * W[o, k]``, the sum from ``k = 0``
  upwards, starting from the bias (:func:`linear_t`, given ``W^T``).
- Batch statistics of a batch of ``n`` rows, per feature: ``mean = (sum over rows
  in row order) / n``; ``var = (sum of (h - mean)**2 in row order) / n`` (biased);
  ``invstd = 1 / sqrt(var + eps)``.
- Batch norm, training mode: ``xhat = (h - mean) * invstd``; ``y = xhat * gamma + beta``.
- Batch renorm, training mode: ``sigma = sqrt(running_var + eps)``,
  ``r = clip(sqrt(var + eps) / sigma, 1/rmax, rmax)``,
  ``d = clip((mean - running_mean) / sigma, -dmax, dmax)``,
  ``y = (xhat * r + d) * gamma + beta``.
- Batch norm and renorm, inference mode: ``invstd = 1 / sqrt(running_var + eps)``,
  ``y = ((h - running_mean) * invstd) * gamma + beta``.
- Layer and group norm (per row, per group of ``F / groups`` consecutive
  features, in feature order): the same mean, biased variance and ``invstd``;
  ``y = xhat * gamma + beta``.
- ReLU: ``max(y, 0)`` (``y`` if ``y > 0``, else 0).

A *stack* holds ``M`` models of one network: arrays with a leading model axis and
the keys of the module's ``state_dict`` (see :mod:`bnstudy.model`).
"""

from __future__ import annotations

import numba
import numpy as np

from .fixedmath import JIT
from .normalisers import BATCH as BATCH
from .normalisers import GROUP as GROUP
from .normalisers import LAYER as LAYER
from .normalisers import NONE as NONE
from .normalisers import RENORM as RENORM
from .normalisers import kernel_codes

# Normaliser kinds as the kernels know them: {name: code}, from the registry.
KIND = kernel_codes()


# ---- building blocks (one model, 2-D arrays) -----------------------------------


@numba.njit(**JIT)
def transpose_into(w, wt):
    """``wt[k, o] = w[o, k]``."""
    for o in range(w.shape[0]):
        for k in range(w.shape[1]):
            wt[k, o] = w[o, k]


@numba.njit(**JIT)
def linear_t(a, wt, bias, out):
    """``out[i] = bias + a[i] @ wt`` for every row ``i``; ``wt`` is ``W^T``, ``(in, out)``.

    Rows go four at a time (each weight row is loaded once for four rows); every
    output is the bias plus the products added in ``k`` order, whatever the grouping.
    """
    n, kk = a.shape
    oo = wt.shape[1]
    i = 0
    while i + 4 <= n:
        for o in range(oo):
            out[i, o] = bias[o]
            out[i + 1, o] = bias[o]
            out[i + 2, o] = bias[o]
            out[i + 3, o] = bias[o]
        for k in range(kk):
            a0, a1, a2, a3 = a[i, k], a[i + 1, k], a[i + 2, k], a[i + 3, k]
            w = wt[k]
            for o in range(oo):
                out[i, o] += a0 * w[o]
                out[i + 1, o] += a1 * w[o]
                out[i + 2, o] += a2 * w[o]
                out[i + 3, o] += a3 * w[o]
        i += 4
    while i < n:
        for o in range(oo):
            out[i, o] = bias[o]
        for k in range(kk):
            a0 = a[i, k]
            w = wt[k]
            for o in range(oo):
                out[i, o] += a0 * w[o]
        i += 1


@numba.njit(**JIT)
def batch_moments(h, start, n, mean, var):
    """Mean and biased variance per feature of rows ``start .. start + n - 1`` of ``h``."""
    f_ = h.shape[1]
    count = np.float32(n)
    for f in range(f_):
        mean[f] = 0
    for r in range(start, start + n):
        for f in range(f_):
            mean[f] += h[r, f]
    for f in range(f_):
        mean[f] = mean[f] / count
        var[f] = 0
    for r in range(start, start + n):
        for f in range(f_):
            dev = h[r, f] - mean[f]
            var[f] += dev * dev
    for f in range(f_):
        var[f] = var[f] / count


@numba.njit(**JIT)
def renorm_rd(mean, var, running_mean, running_var, eps, rmax, dmax, r, d):
    """Batch renorm's ``r`` and ``d`` per feature (constants: no gradient flows through them)."""
    low = np.float32(1.0) / rmax
    for f in range(mean.shape[0]):
        sigma = np.sqrt(running_var[f] + eps)
        r[f] = min(max(np.sqrt(var[f] + eps) / sigma, low), rmax)
        d[f] = min(max((mean[f] - running_mean[f]) / sigma, -dmax), dmax)


@numba.njit(**JIT)
def batch_norm_rows(h, start, n, mean, invstd, gamma, beta, r, d, renorm, relu, out, out_start, xhat):
    """Normalise rows ``start ..`` of ``h`` with per-feature ``mean``/``invstd`` into ``out``
    from row ``out_start``; ``xhat`` (same rows as ``out``, or a 0-row array) keeps ``xhat``."""
    f_ = h.shape[1]
    keep = xhat.shape[0] > 0
    for j in range(n):
        for f in range(f_):
            xh = (h[start + j, f] - mean[f]) * invstd[f]
            if keep:
                xhat[out_start + j, f] = xh
            if renorm:
                y = (xh * r[f] + d[f]) * gamma[f] + beta[f]
            else:
                y = xh * gamma[f] + beta[f]
            if relu and not y > 0:
                y = np.float32(0)
            out[out_start + j, f] = y


@numba.njit(**JIT)
def row_norm(h, i, groups, eps, gamma, beta, relu, out, xhat, rstd):
    """Layer/group norm of row ``i`` of ``h`` into ``out[i]``; keeps ``xhat[i]`` and
    ``rstd[i, g]`` when those arrays have rows (pass 0-row arrays otherwise)."""
    f_ = h.shape[1]
    size = f_ // groups
    count = np.float32(size)
    keep = xhat.shape[0] > 0
    for g in range(groups):
        lo = g * size
        mean = np.float32(0)
        for f in range(lo, lo + size):
            mean += h[i, f]
        mean = mean / count
        var = np.float32(0)
        for f in range(lo, lo + size):
            dev = h[i, f] - mean
            var += dev * dev
        var = var / count
        inv = np.float32(1) / np.sqrt(var + eps)
        if keep:
            rstd[i, g] = inv
        for f in range(lo, lo + size):
            xh = (h[i, f] - mean) * inv
            if keep:
                xhat[i, f] = xh
            y = xh * gamma[f] + beta[f]
            if relu and not y > 0:
                y = np.float32(0)
            out[i, f] = y


@numba.njit(**JIT)
def norm_inference(kind, h, gamma, beta, running_mean, running_var, eps, groups, relu, out):
    """Inference-mode normaliser (and ReLU) of every row of ``h`` into ``out``."""
    n, f_ = h.shape
    if kind == BATCH or kind == RENORM:
        invstd = np.empty(f_, np.float32)
        for f in range(f_):
            invstd[f] = np.float32(1) / np.sqrt(running_var[f] + eps)
        none = np.empty((0, f_), np.float32)
        batch_norm_rows(h, 0, n, running_mean, invstd, gamma, beta, invstd, invstd, False, relu, out, 0, none)
    elif kind == LAYER or kind == GROUP:
        none = np.empty((0, f_), np.float32)
        for i in range(n):
            row_norm(h, i, groups, eps, gamma, beta, relu, out, none, none)
    else:
        for i in range(n):
            for f in range(f_):
                y = h[i, f]
                out[i, f] = y if (y > 0 or not relu) else np.float32(0)


@numba.njit(**JIT)
def norm_train(kind, h, batch, gamma, beta, running_mean, running_var, eps, groups, rmax, dmax, relu, out):
    """Training-mode normaliser (and ReLU) of ``h``, whose rows are consecutive batches of
    ``batch`` rows; running statistics are read (batch renorm), never written."""
    n, f_ = h.shape
    none = np.empty((0, f_), np.float32)
    if kind == BATCH or kind == RENORM:
        mean = np.empty(f_, np.float32)
        var = np.empty(f_, np.float32)
        invstd = np.empty(f_, np.float32)
        r = np.empty(f_, np.float32)
        d = np.empty(f_, np.float32)
        for start in range(0, n, batch):
            batch_moments(h, start, batch, mean, var)
            for f in range(f_):
                invstd[f] = np.float32(1) / np.sqrt(var[f] + eps)
            if kind == RENORM:
                renorm_rd(mean, var, running_mean, running_var, eps, rmax, dmax, r, d)
            batch_norm_rows(h, start, batch, mean, invstd, gamma, beta, r, d, kind == RENORM, relu, out, start, none)
    else:
        norm_inference(kind, h, gamma, beta, running_mean, running_var, eps, groups, relu, out)


@numba.njit(**JIT)
def forward_model(
    kind,
    w1t,
    b1,
    g1,
    be1,
    rm1,
    rv1,
    w2t,
    b2,
    g2,
    be2,
    rm2,
    rv2,
    w3t,
    b3,
    x,
    batch,
    train,
    eps,
    groups,
    rmax,
    dmax,
    pre1,
    out1,
    pre2,
    out2,
    logits,
):
    """One model's logits for rows ``x`` (consecutive batches of ``batch`` rows in training mode).

    ``pre1``/``out1``/``pre2``/``out2`` receive each hidden layer's input to the
    normaliser and its post-ReLU output (``(N, F)`` scratch arrays).
    """
    linear_t(x, w1t, b1, pre1)
    if train:
        norm_train(kind, pre1, batch, g1, be1, rm1, rv1, eps, groups, rmax, dmax, True, out1)
    else:
        norm_inference(kind, pre1, g1, be1, rm1, rv1, eps, groups, True, out1)
    linear_t(out1, w2t, b2, pre2)
    if train:
        norm_train(kind, pre2, batch, g2, be2, rm2, rv2, eps, groups, rmax, dmax, True, out2)
    else:
        norm_inference(kind, pre2, g2, be2, rm2, rv2, eps, groups, True, out2)
    linear_t(out2, w3t, b3, logits)


@numba.njit(**JIT)
def argmax_rows(logits, out):
    """Index of the first largest logit of every row."""
    for i in range(logits.shape[0]):
        best = 0
        for c in range(1, logits.shape[1]):
            if logits[i, c] > logits[i, best]:
                best = c
        out[i] = best


# ---- stacks ------------------------------------------------------------------------


def transposed(stacked: dict, key: str) -> np.ndarray:
    """``W^T`` of every model, ``(M, in, out)``, contiguous."""
    w = np.asarray(stacked[key], dtype=np.float32)
    return np.ascontiguousarray(w.transpose(0, 2, 1))


def _layer_arrays(stacked: dict, layer: str, features: int, m: int):
    """A normaliser's (gamma, beta, running mean, running var), ``(M, F)``; defaults where absent."""

    def get(name, fill):
        key = f"{layer}.{name}"
        if key in stacked:
            return np.ascontiguousarray(stacked[key], dtype=np.float32)
        return np.full((m, features), fill, np.float32)

    return get("weight", 1.0), get("bias", 0.0), get("running_mean", 0.0), get("running_var", 1.0)


def stack_arrays(stacked: dict):
    """The kernel's view of a stack: ``W^T`` and vectors per layer, float32, contiguous."""
    w1t, w2t, w3t = (transposed(stacked, k) for k in ("0.weight", "3.weight", "6.weight"))
    m, h1, h2 = w1t.shape[0], w1t.shape[2], w2t.shape[2]
    vec = lambda k: np.ascontiguousarray(stacked[k], dtype=np.float32)  # noqa: E731
    n1 = _layer_arrays(stacked, "1", h1, m)
    n2 = _layer_arrays(stacked, "4", h2, m)
    return (w1t, vec("0.bias"), *n1, w2t, vec("3.bias"), *n2, w3t, vec("6.bias"))


def logits(stacked: dict, spec, x: np.ndarray, *, train: bool = False, batch: int = 0, limits=(1.0, 0.0)) -> np.ndarray:
    """Logits ``(M, N, C)`` of every model of ``stacked`` for the rows ``x`` ``(N, in)``.

    Inference mode by default; with ``train``, training mode on consecutive batches
    of ``batch`` rows of ``x`` (``N`` a multiple of ``batch``), running statistics
    read (batch renorm) and never written.
    """
    arrays = stack_arrays(stacked)
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = x.shape[0]
    if train and (batch < 2 or n % batch):
        raise ValueError(f"training mode needs batches of >= 2 rows that tile the {n} rows; got {batch}")
    m, h1, h2, c = arrays[0].shape[0], arrays[0].shape[2], arrays[6].shape[2], arrays[12].shape[2]
    kind = KIND[spec.normaliser]
    groups = spec.groups if kind == GROUP else 1
    out = np.empty((m, n, c), np.float32)
    pre1, out1 = np.empty((n, h1), np.float32), np.empty((n, h1), np.float32)
    pre2, out2 = np.empty((n, h2), np.float32), np.empty((n, h2), np.float32)
    for i in range(m):
        forward_model(
            kind,
            *(a[i] for a in arrays),
            x,
            batch if train else 1,
            train,
            np.float32(spec.eps),
            groups,
            np.float32(limits[0]),
            np.float32(limits[1]),
            pre1,
            out1,
            pre2,
            out2,
            out[i],
        )
    return out


def predict(stacked: dict, spec, x: np.ndarray) -> np.ndarray:
    """Inference-mode labels ``(M, N)`` of every model for the rows ``x``."""
    z = logits(stacked, spec, x)
    labels = np.empty(z.shape[:2], np.int64)
    for i in range(z.shape[0]):
        argmax_rows(z[i], labels[i])
    return labels
