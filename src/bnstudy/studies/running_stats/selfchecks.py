"""Study 5: what tests can and cannot see.

The four *self-checks* are what a batch-norm layer can assert about itself, with
nothing to compare against (gamma and beta are the layer's own parameters):

1. ``train_mean``: in training mode every feature of every batch's output has mean
   beta: ``max |mean(y) - beta| <= MEAN_TOL``;
2. ``train_var``: and (biased) variance gamma^2, shrunk by eps as the layer's own
   input predicts: ``max |var(y) - gamma^2 v / (v + eps)| / gamma^2 <= VAR_TOL``
   with ``v`` the batch's input variance;
3. ``inference_repeatable``: two inference-mode calls on the same rows agree
   exactly;
4. ``shape``: the output shape equals the input shape, in both modes.

The layer under test is the package's own float32 batch-norm layer,
:class:`bnstudy.compiled.layer.BatchNorm1d` with ``dtype=float32``: the fixed-order float32
arithmetic the study's training uses (that of :mod:`bnstudy.compiled.kernels`), with
``torch.nn.BatchNorm1d``'s semantics. It runs one pass of the enumerated population
(see :mod:`bnstudy.studies.running_stats.science`). ``tests/studies/test_selfchecks.py`` checks that
``torch.nn.BatchNorm1d`` in float32 agrees with it on the same pass within float32
rounding (outputs within 1e-5 absolute, running statistics within 1e-5 relative),
so the checks read the same on PyTorch's layer.

The *differential check* compares the layer with an *oracle*: the NumPy reference
(:mod:`bnstudy.nets.reference`) given the exact population statistics, i.e. the
function the layer is meant to compute at inference time. It is the exact
statistics that let it see the divergence; a faithful second implementation of
``BatchNorm1d`` fed the same batches computes the same running statistics and
agrees with the layer, divergence included.
It passes when the RMSE over all rows and features between the layer's
inference-mode output and the reference's is at most ``DIFFERENTIAL_TOL`` (a tenth
of the unit of the normalised output).

Every reported number is computed in float64 from the layer's float32 outputs with
the fixed-order reductions of :mod:`bnstudy.compiled.reductions` (sums over rows in row
order, over every element in C order), so it has the same bits on every CPU.
PyTorch is not imported.
"""

from __future__ import annotations

import numpy as np

from bnstudy.compiled.layer import BatchNorm1d
from bnstudy.compiled.reductions import column_moments, rms
from bnstudy.nets import reference
from bnstudy.studies.running_stats.science import EPS, pass_batches, population_stats
from bnstudy.studies.running_stats.terms import (  # noqa: F401 (re-exported: the self-checks' names)
    CHECKS,
    DIFFERENTIAL_TOL,
    MEAN_TOL,
    VAR_TOL,
    self_checks_pass,
)

DTYPE = np.float32  # the layer under test computes in float32, as training does


def layer(features: int, keep: float) -> BatchNorm1d:
    """The layer under test, as a user would build it: float32, gamma 1, beta 0,
    eps :data:`~bnstudy.studies.running_stats.science.EPS`, momentum ``1 - keep``."""
    return BatchNorm1d(features, eps=EPS, momentum=1.0 - keep, dtype=DTYPE)


def run(x: np.ndarray, batches: list[np.ndarray], keep: float, bn=None) -> dict:
    """One training pass then inference, with every self-check's worst value.

    ``bn`` is the layer under test (default :func:`layer`): any object with
    ``weight``, ``bias`` and ``eps``, ``train()`` and ``eval()``, called on a float32
    ``(n, F)`` array to give its output array in the current mode (training mode
    updating its running statistics), as :class:`bnstudy.compiled.layer.BatchNorm1d` is.

    Returns the four checks' measured values and pass flags, the train/inference
    divergence (RMSE over all rows seen), and the differential check's RMSE.
    """
    bn = layer(x.shape[1], keep) if bn is None else bn
    gamma = np.asarray(bn.weight, dtype=np.float64)
    beta = np.asarray(bn.bias, dtype=np.float64)
    gamma2 = gamma * gamma
    eps = float(bn.eps)
    xt = np.ascontiguousarray(x, dtype=DTYPE)
    train_out = np.zeros(x.shape)
    seen = np.zeros(len(x), dtype=bool)
    worst_mean, worst_var, shape_ok = 0.0, 0.0, True
    bn.train()
    for rows in batches:
        xb = xt[rows]
        y = np.asarray(bn(xb))
        shape_ok &= tuple(y.shape) == tuple(xb.shape)
        yd = y.astype(np.float64).reshape(xb.shape)
        y_mean, y_var = column_moments(yd)
        _, v = column_moments(xb)  # the float32 inputs, widened exactly
        expected_var = gamma2 * v / (v + eps)
        worst_mean = max(worst_mean, float(np.max(np.abs(y_mean - beta))))
        worst_var = max(worst_var, float(np.max(np.abs(y_var - expected_var) / gamma2)))
        train_out[rows] = yd
        seen[rows] = True
    bn.eval()
    first, second = np.asarray(bn(xt)), np.asarray(bn(xt))
    shape_ok &= tuple(first.shape) == tuple(xt.shape)
    inference = first.astype(np.float64).reshape(xt.shape)  # compare values even if the shape is wrong
    repeat_gap = float(np.max(np.abs(first.astype(np.float64) - second.astype(np.float64))))
    mu, sigma2 = population_stats(x)
    intended = reference.normalise_with(x, mu, sigma2, EPS, gamma, beta)
    divergence = rms((train_out - inference)[seen])
    differential = rms(inference - intended)
    return {
        "train_mean": worst_mean,
        "train_mean_pass": worst_mean <= MEAN_TOL,
        "train_var": worst_var,
        "train_var_pass": worst_var <= VAR_TOL,
        "inference_repeatable": repeat_gap,
        "inference_repeatable_pass": repeat_gap == 0.0,
        "shape": float(shape_ok),
        "shape_pass": bool(shape_ok),
        "train_eval_rmse": divergence,
        "differential_rmse": differential,
        "differential_pass": differential <= DIFFERENTIAL_TOL,
    }


def table(x: np.ndarray, batch_sizes, keep: float, seed: int, sort_feature: int = 0) -> list[dict]:
    """Tidy rows, one per (order, batch size): every check on one training pass."""
    rows = []
    for b in batch_sizes:
        for order in ("shuffled", "sorted"):
            batches = pass_batches(x, b, order, seed, sort_feature)
            rows.append({"order": order, "batch_size": int(b), "keep": keep, **run(x, batches, keep)})
    return rows
