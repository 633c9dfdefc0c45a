"""Compiled kernel for the probes: training-mode batch (re)normalisation of many batches.

A companion probe needs, for every one of many small batches, the batch's mean and
biased variance per feature, then ``relu(scale * (h - mean) + shift)``. Written as
PyTorch operations that is six or seven passes over memory and as many temporary
tensors; here it is one loop nest, compiled once by Numba (``cache=True``: later
processes load the machine code from ``__pycache__``). The rows of a batch are
read through an index table, so the first hidden layer's gather happens inside the
kernel rather than as a copy before it.

The arithmetic is plain float32 in a fixed order, as written below: per feature, the
sum over the batch's rows in row order, divided by the row count; then the sum of
squared deviations from that mean, in row order; no fast-math, so the compiler may
spread the independent features over vector lanes but never reorders or fuses a sum
(the results are the same whatever vector width the CPU has). The formulas are
those of :func:`bnstudy.norms.normalise` with ``train=True``, ``update=False``::

    sigma_batch = sqrt(sum((h - mean)^2) / B + eps)
    batch norm:     scale = weight / sigma_batch,          shift = bias
    batch renorm:   sigma = sqrt(running_var + eps)
                    r = clip(sigma_batch / sigma, 1/rmax, rmax)
                    d = clip((mean - running_mean) / sigma, -dmax, dmax)
                    scale = r * weight / sigma_batch,      shift = d * weight + bias

Running statistics are read (batch renorm), never written.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@numba.njit(**_JIT)
def _batch_norm(src, rows, weight, bias, running_mean, running_var, eps, rmax, dmax, renorm, relu, out):
    """``out[m, j * R + r] = f(src[m, rows[j, r]])`` for every model ``m`` and batch ``j``.

    ``src`` ``(M, N, F)``, ``rows`` ``(K, B)`` indices into ``src``'s second axis,
    ``out`` ``(M, K * R, F)`` with ``R = B`` (every row) or ``R = 1`` (row 0 of each
    batch only; the statistics still come from all ``B`` rows).
    """
    n_models, _, features = src.shape
    n_batches, b = rows.shape
    per_batch = out.shape[1] // n_batches
    count = np.float32(b)
    low = np.float32(1.0) / rmax
    mean = np.empty(features, np.float32)
    scale = np.empty(features, np.float32)
    shift = np.empty(features, np.float32)
    for m in range(n_models):
        x = src[m]
        for j in range(n_batches):
            mean[:] = 0
            for r in range(b):
                row = x[rows[j, r]]
                for f in range(features):
                    mean[f] += row[f]
            for f in range(features):
                mean[f] = mean[f] / count
            scale[:] = 0  # the sum of squared deviations, then the scale
            for r in range(b):
                row = x[rows[j, r]]
                for f in range(features):
                    dev = row[f] - mean[f]
                    scale[f] += dev * dev
            for f in range(features):
                sigma_batch = np.sqrt(scale[f] / count + eps)
                if renorm:
                    sigma = np.sqrt(running_var[m, f] + eps)
                    r_ = min(max(sigma_batch / sigma, low), rmax)
                    d_ = min(max((mean[f] - running_mean[m, f]) / sigma, -dmax), dmax)
                    scale[f] = r_ * weight[m, f] / sigma_batch
                    shift[f] = d_ * weight[m, f] + bias[m, f]
                else:
                    scale[f] = weight[m, f] / sigma_batch
                    shift[f] = bias[m, f]
            for r in range(per_batch):
                row = x[rows[j, r]]
                y = out[m, j * per_batch + r]
                for f in range(features):
                    v = (row[f] - mean[f]) * scale[f] + shift[f]
                    y[f] = v if (v > 0 or not relu) else np.float32(0)


def batch_norm(src: torch.Tensor, rows: torch.Tensor, p: dict, out: torch.Tensor, *, eps: float,
               renorm: bool = False, limits=(1.0, 0.0), relu: bool = True) -> torch.Tensor:
    """Training-mode batch norm (``renorm``: batch renorm with ``limits``) of gathered batches.

    Batch ``j`` of model ``m`` is the rows ``src[m, rows[j]]``; ``out`` is ``(M, K * B,
    F)`` for every row of every batch, or ``(M, K, F)`` for row 0 of each batch only.
    ``p`` holds ``(M, F)`` ``weight`` and ``bias`` (and, for ``renorm``, the running
    statistics). ``relu`` applies the ReLU that follows every normaliser in the
    network. ``out`` may be ``src`` itself when ``rows`` lists each row once in order
    (a batch's rows are read before they are written). Returns ``out``.
    """
    k, b = rows.shape
    if b < 2:
        raise ValueError("batch statistics need at least 2 rows per batch")
    if out.shape[1] not in (k * b, k):
        raise ValueError(f"out has {out.shape[1]} rows per model; expected {k * b} (all) or {k} (first rows)")
    weight, bias = p["weight"], p["bias"]
    # batch norm never reads the running statistics; any (M, F) tensor fills their place
    running_mean, running_var = (p["running_mean"], p["running_var"]) if renorm else (weight, weight)
    rmax, dmax = limits
    _batch_norm(src.numpy(), rows.numpy(), weight.numpy(), bias.numpy(), running_mean.numpy(),
                running_var.numpy(), np.float32(eps), np.float32(rmax), np.float32(dmax), renorm, relu,
                out.numpy())
    return out
