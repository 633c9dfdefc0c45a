"""Study 2's remedies for batch normalisation's running statistics, applied to frozen networks.

Each remedy takes a trained stack and returns *replacement* running statistics as
``{layer: (mean, var)}`` (float32 ``(M, F)``), as :mod:`bnstudy.evaluation.recompute` lays
them out; either network, as there. The four replacements, for a batch-norm layer with
input rows ``h`` (pre-norm activations) and keep-factor ``keep = 1 - momentum``:

(a) :func:`debiased_ema` -- the running averages with the initial value's weight
    removed. After ``u`` updates PyTorch's running value is
    ``r_u = keep**u * r_0 + (1 - keep) * sum_k keep**(u - k) * s_k`` with
    ``r_0 = 0`` (mean) or ``1`` (variance); the debiased value is
    ``(r_u - keep**u * r_0) / (1 - keep**u)``, a weighted mean of the batch
    statistics ``s_k`` alone (Adam's bias correction). ``u`` is the layer's
    ``num_batches_tracked``.
(b) :func:`cumulative_average` -- one pass over the training half in batches of
    the training size, weights frozen, training-mode forward passes
    (:func:`bnstudy.evaluation.recompute.training_mode_layer_inputs`): the plain
    mean of the per-batch means and of the per-batch *unbiased* variances (what
    PyTorch's ``momentum=None`` rule accumulates from reset buffers). Layer 2
    sees layer 1 normalised with batch statistics, as in training.
(c) PreciseBN-style population statistics pooled over the same pass
    (:func:`bnstudy.evaluation.recompute.precise_statistics`).
(d) the exact statistics of the training half layer by layer
    (:func:`bnstudy.evaluation.recompute.exact_statistics`).

:func:`all_statistics` computes them all from one pass; :func:`bnstudy.evaluation.distance.distances`
measures each against (d), per layer.

Arithmetic (the rules of :mod:`bnstudy.base.fixedmath`: the same bits on every CPU): per-batch
moments (b) in float64, each feature an independent sum, ``mean = (sum over the batch's rows in
batch order) / n``, ``var = (sum over the same rows, same order, of (h - mean)**2) / (n - 1)``;
then ``(sum over batches in pass order of the batch values) / K``; ``keep**u`` by
:func:`bnstudy.base.fixedmath.powi`. The statistics are rounded to float32, the dtype of the
running statistics they replace.
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT, powi

# _pooled and _require_batchnorm are the shared module's own steps: all_statistics pools (c) from
# the same training-mode pass as (b), so it calls the step rather than precise_statistics
from bnstudy.evaluation.recompute import (
    Spec,
    _pooled,
    _require_batchnorm,
    exact_statistics,
    norm_layers,
    pass_batches,
    running_statistics,
    training_mode_layer_inputs,
)

REMEDIES = ("debiased_ema", "cumulative", "precise_bn", "exact")


# ---- compiled reductions (float64, fixed order) --------------------------------


@numba.njit(**JIT)
def _cumulative_moments(h, starts, mean, var):
    """Batch ``j`` is rows ``starts[j] .. starts[j + 1] - 1`` of ``h``: the mean over batches
    (in order) of each batch's mean and unbiased variance (rows in batch order)."""
    f_ = h.shape[1]
    k = starts.shape[0] - 1
    bmean = np.empty(f_, np.float64)
    bvar = np.empty(f_, np.float64)
    for f in range(f_):
        mean[f] = 0.0
        var[f] = 0.0
    for j in range(k):
        s, e = starts[j], starts[j + 1]
        n = e - s
        for f in range(f_):
            bmean[f] = 0.0
        for r in range(s, e):
            for f in range(f_):
                bmean[f] += h[r, f]
        for f in range(f_):
            bmean[f] = bmean[f] / n
            bvar[f] = 0.0
        for r in range(s, e):
            for f in range(f_):
                d = h[r, f] - bmean[f]
                bvar[f] += d * d
        for f in range(f_):
            mean[f] += bmean[f]
            var[f] += bvar[f] / (n - 1)
    for f in range(f_):
        mean[f] = mean[f] / k
        var[f] = var[f] / k


# The compiled function of this module calls no compiled function of another module: Numba's
# cache checks only the caller's own source file (see ``bnstudy/__init__.py``).


def initial_weight(spec: Spec, updates: int) -> float:
    """Weight ``keep**updates`` the initial running value still carries (:func:`fixedmath.powi`)."""
    return float(powi(1.0 - spec.momentum, int(updates)))


def debiased_ema(stacked, spec: Spec) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(a) Running averages with the initial value's weight ``w0 = keep**u`` removed.

    Initial values: mean 0, variance 1 (PyTorch's); per model and feature, in
    float64, ``mean = r_mean / (1 - w0)`` and ``var = (r_var - w0) / (1 - w0)``,
    rounded to float32. A layer that was never updated (``u = 0``) has no batch
    statistic to average and raises.
    """
    if spec.momentum is None:
        raise ValueError("the cumulative average (momentum=None) carries no initial-value bias")
    out = {}
    for layer in norm_layers(spec):
        u = np.asarray(stacked[f"{layer}.num_batches_tracked"]).reshape(-1)
        if (u < 1).any():
            raise ValueError("debiasing needs at least one update")
        w0 = np.array([initial_weight(spec, k) for k in u], np.float64).reshape(-1, 1)
        mean = np.asarray(stacked[f"{layer}.running_mean"], np.float64)
        var = np.asarray(stacked[f"{layer}.running_var"], np.float64)
        out[layer] = ((mean / (1.0 - w0)).astype(np.float32), ((var - w0) / (1.0 - w0)).astype(np.float32))
    return out


def _cumulative(inputs, starts) -> dict:
    """Per layer :func:`_cumulative_moments`; ``starts`` one array for every layer, or by layer."""
    out = {}
    for layer, h in inputs.items():
        mean = np.empty(h.shape[::2], np.float64)
        var = np.empty(h.shape[::2], np.float64)
        for i in range(h.shape[0]):
            _cumulative_moments(h[i], starts[layer], mean[i], var[i])
        out[layer] = (mean.astype(np.float32), var.astype(np.float32))
    return out


def cumulative_average(stacked, spec: Spec, x, batches) -> dict:
    """(b) Mean over ``batches`` (in order) of per-batch means and unbiased variances.

    Equivalent, up to rounding, to resetting the buffers and running the network
    in training mode with ``momentum=None`` over the batches (see the tests);
    computed here from the layer inputs directly, on a frozen stack. Per batch of
    ``n`` rows, float64, rows in batch order: ``mean = sum(h) / n``,
    ``var = sum((h - mean)**2) / (n - 1)``; then each summed over batches in pass
    order and divided by their number ``K``.
    """
    return _cumulative(*training_mode_layer_inputs(stacked, spec, x, batches))


def all_statistics(
    stacked, spec: Spec, x_train, y_train, batch_size: int, seed: int, last_batch: str = "drop"
) -> dict[str, dict]:
    """Every set of statistics of a batch-norm stack, by name: the trained ``ema`` and (a)-(d).

    The training-mode pass is cut like the networks' training epochs (``last_batch``).
    """
    _require_batchnorm(spec)
    inputs, starts = training_mode_layer_inputs(
        stacked, spec, x_train, pass_batches(y_train, batch_size, seed, last_batch)
    )
    return {
        "ema": running_statistics(stacked, spec),
        "debiased_ema": debiased_ema(stacked, spec),
        "cumulative": _cumulative(inputs, starts),
        "precise_bn": _pooled(inputs),
        "exact": exact_statistics(stacked, spec, x_train),
    }
