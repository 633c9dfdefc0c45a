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

They are evaluated on a real ``torch.nn.BatchNorm1d`` (float32, as deployed) over
one pass of the enumerated population (see :mod:`bnstudy.running_stats`).

The *differential check* compares the layer with a second, independent
implementation (:mod:`bnstudy.reference`) of the function the layer is meant to
compute at inference time: normalisation with the exact population statistics.
It passes when the RMSE over all rows and features between PyTorch's
inference-mode output and the reference's is at most ``DIFFERENTIAL_TOL`` (a tenth
of the unit of the normalised output).
"""

from __future__ import annotations

import numpy as np
import torch

from . import reference
from .running_stats import EPS, pass_batches, population_stats

MEAN_TOL = 1e-4
VAR_TOL = 1e-3
DIFFERENTIAL_TOL = 0.1
CHECKS = ("train_mean", "train_var", "inference_repeatable", "shape")


def layer(features: int, keep: float) -> torch.nn.BatchNorm1d:
    """A float32 ``BatchNorm1d`` as a user would build it (gamma 1, beta 0)."""
    return torch.nn.BatchNorm1d(features, eps=EPS, momentum=1.0 - keep)


def run(x: np.ndarray, batches: list[np.ndarray], keep: float,
        bn: torch.nn.BatchNorm1d | None = None) -> dict:
    """One training pass then inference, with every self-check's worst value.

    Returns the four checks' measured values and pass flags, the train/inference
    divergence (RMSE over all rows seen), and the differential check's RMSE.
    """
    bn = layer(x.shape[1], keep) if bn is None else bn
    gamma = bn.weight.detach().double().numpy()
    beta = bn.bias.detach().double().numpy()
    xt = torch.from_numpy(x.astype(np.float32))
    train_out = np.zeros(x.shape)
    seen = np.zeros(len(x), dtype=bool)
    worst_mean, worst_var, shape_ok = 0.0, 0.0, True
    bn.train()
    with torch.no_grad():
        for rows in batches:
            xb = xt[rows]
            y = bn(xb)
            shape_ok &= tuple(y.shape) == tuple(xb.shape)
            yd = y.double().numpy()
            v = xb.double().numpy().var(0)
            expected_var = gamma ** 2 * v / (v + bn.eps)
            worst_mean = max(worst_mean, float(np.max(np.abs(yd.mean(0) - beta))))
            worst_var = max(worst_var, float(np.max(np.abs(yd.var(0) - expected_var) / gamma ** 2)))
            train_out[rows] = yd
            seen[rows] = True
        bn.eval()
        first, second = bn(xt), bn(xt)
    shape_ok &= tuple(first.shape) == tuple(xt.shape)
    inference = first.double().reshape(xt.shape).numpy()  # compare values even if the shape is wrong
    repeat_gap = float((first - second).abs().max())
    mu, sigma2 = population_stats(x)
    intended = reference.normalise_with(x, mu, sigma2, EPS, gamma, beta)
    divergence = float(np.sqrt(np.mean((train_out - inference)[seen] ** 2)))
    differential = float(np.sqrt(np.mean((inference - intended) ** 2)))
    return {
        "train_mean": worst_mean, "train_mean_pass": worst_mean <= MEAN_TOL,
        "train_var": worst_var, "train_var_pass": worst_var <= VAR_TOL,
        "inference_repeatable": repeat_gap, "inference_repeatable_pass": repeat_gap == 0.0,
        "shape": float(shape_ok), "shape_pass": bool(shape_ok),
        "train_eval_rmse": divergence,
        "differential_rmse": differential, "differential_pass": differential <= DIFFERENTIAL_TOL,
    }


def table(x: np.ndarray, batch_sizes, keep: float, seed: int, sort_feature: int = 0) -> list[dict]:
    """Tidy rows, one per (order, batch size): every check on one training pass."""
    rows = []
    for b in batch_sizes:
        for order in ("shuffled", "sorted"):
            batches = pass_batches(x, b, order, seed, sort_feature)
            rows.append({"order": order, "batch_size": int(b), "keep": keep, **run(x, batches, keep)})
    return rows


def self_checks_pass(row: dict) -> bool:
    """All four self-checks pass."""
    return all(row[f"{c}_pass"] for c in CHECKS)
