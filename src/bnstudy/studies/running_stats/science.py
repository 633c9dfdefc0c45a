"""Study 3: running statistics of one batch-norm layer on an enumerated population.

One batch-norm layer (gamma 1, beta 0, float64, eps 1e-5; the package's own
fixed-order layer :class:`bnstudy.compiled.layer.BatchNorm1d`, which follows
``torch.nn.BatchNorm1d``'s semantics and is checked against it in the tests) sees
one pass over a population ``x`` of ``N`` rows, cut into consecutive batches of
``b`` rows after a seeded shuffle (``order="shuffled"``) or after sorting by one
feature (``order="sorted"``). A final batch of one row cannot be normalised by
batch statistics and is dropped. Everything is then compared with the *exact*
population statistics ``mu`` and ``sigma2`` (per-feature mean and ddof-0 variance),
each score a mean over all rows or all features. The population is enumerated, but
the shuffle is one draw: :func:`replicated_study` repeats the shuffled pass over
several seeded shuffles, so the scores of one shuffle can be set against their
spread over shuffles.

Estimators of (mu, sigma2) left behind by the pass, each from the same batches:

- ``ema``: PyTorch's running averages with keep-factor ``keep`` (PyTorch
  ``momentum = 1 - keep``) from the initial values (0, 1). After ``u`` updates
  the initial values keep weight ``keep**u``.
- ``bias_corrected``: the EMA with that weight removed,
  ``(running - keep**u * initial) / (1 - keep**u)`` (Adam's correction).
- ``cumulative``: PyTorch's ``momentum=None``, the plain average of the batch
  means and of the unbiased batch variances.
- ``pooled``: the mean and the ddof-0 variance of all rows the pass saw, pooled
  around the pooled mean. By the law of total variance this is the average
  within-batch (biased) variance *plus* the variance of the batch means; the
  averages above only ever see the within-batch part.

Arithmetic: every number that reaches an output has the same bits on every CPU.
The layer's pass is one compiled fixed-order loop (:mod:`bnstudy.compiled.layer`: batch
sums over the batch's rows in the order the batch lists them, two-pass variance);
the statistics are the fixed-order float64 reductions of :mod:`bnstudy.compiled.reductions`
(sums over rows in row order, over batches in pass order, over every element in C
order); ``keep**u`` is :func:`bnstudy.base.fixedmath.powi`. Elementwise arithmetic and
``sqrt`` (correctly rounded everywhere) stay NumPy. PyTorch is not imported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnstudy.base.fixedmath import powi
from bnstudy.base.runtime import STREAM_POPULATION, derive_seed
from bnstudy.compiled.layer import BatchNorm1d
from bnstudy.compiled.reductions import rms, weighted_column_sums
from bnstudy.studies.running_stats.terms import (  # noqa: F401 (re-exported: the study's names)
    ESTIMATORS,
    INITIAL_MEAN,
    INITIAL_VAR,
    ORDERS,
    initial_offset,
    monotone_sentence,
    population_stats,
    summary_json,
)

EPS = 1e-5


def pass_batches(
    x: np.ndarray, batch_size: int, order: str, seed: int, sort_feature: int = 0, shuffle: int = 0
) -> list[np.ndarray]:
    """Row indices of each batch of one pass over ``x``.

    ``shuffled``: a permutation from the stream ``(seed, STREAM_POPULATION, 1,
    batch_size)`` for shuffle 0 and ``(seed, STREAM_POPULATION, 1, batch_size,
    shuffle)`` for the replicate shuffles 1, 2, ...; ``sorted``: ascending in feature
    ``sort_feature`` (stable sort; ``shuffle`` is ignored).
    Consecutive batches of ``batch_size`` rows; a last short batch is kept unless
    it has a single row (dropped: it has no batch variance).
    """
    n = len(x)
    if order == "shuffled":
        keys = (seed, STREAM_POPULATION, 1, batch_size) + ((shuffle,) if shuffle else ())
        rng = np.random.default_rng(derive_seed(*keys))
        perm = rng.permutation(n)
    elif order == "sorted":
        perm = np.argsort(x[:, sort_feature], kind="stable")
    else:
        raise ValueError(f"unknown order {order!r}; expected one of {ORDERS}")
    batches = [perm[i : i + batch_size] for i in range(0, n, batch_size)]
    return [b for b in batches if len(b) > 1]


def bn_layer(features: int, keep: float | None, dtype=np.float64) -> BatchNorm1d:
    """A fresh batch-norm layer with gamma 1, beta 0, eps :data:`EPS`; ``keep=None`` is momentum=None."""
    momentum = None if keep is None else 1.0 - keep
    return BatchNorm1d(features, eps=EPS, momentum=momentum, dtype=dtype)


@dataclass(frozen=True)
class PassResult:
    """What one pass leaves behind, rows of ``train_output`` in population order."""

    train_output: np.ndarray  # (N, F): each row normalised with its own batch's statistics
    seen: np.ndarray  # (N,) bool: rows that were in a batch (a dropped single row is not)
    running_mean: np.ndarray
    running_var: np.ndarray
    batch_means: np.ndarray  # (U, F)
    batch_vars: np.ndarray  # (U, F), biased (ddof 0)
    batch_sizes: np.ndarray  # (U,)

    @property
    def updates(self) -> int:
        return len(self.batch_sizes)


def run_pass(x: np.ndarray, batches: list[np.ndarray], keep: float | None) -> PassResult:
    """Run a fresh float64 layer in training mode over ``batches`` of ``x`` (in order),
    updating its running statistics: one call of the compiled pass of :mod:`bnstudy.compiled.layer`."""
    layer = bn_layer(x.shape[1], keep)
    out, means, variances = layer.train_pass(x, batches)
    seen = np.zeros(len(x), dtype=bool)
    for rows in batches:
        seen[rows] = True
    return PassResult(
        out,
        seen,
        layer.running_mean.copy(),
        layer.running_var.copy(),
        means,
        variances,
        np.array([len(b) for b in batches], dtype=np.int64),
    )


def bias_corrected(running: np.ndarray, initial: float, keep: float, updates: int) -> np.ndarray:
    """Remove the initial value's weight ``keep**updates`` (:func:`bnstudy.base.fixedmath.powi`)
    from an EMA and renormalise: ``(running - w * initial) / (1 - w)``, elementwise."""
    w = powi(keep, updates)
    return (running - w * initial) / (1.0 - w)


def pooled(x: np.ndarray, seen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and ddof-0 variance of every row the pass saw (PreciseBN-style, exact pooling),
    the rows in population order."""
    return population_stats(x[seen])


def variance_decomposition(result: PassResult) -> tuple[np.ndarray, np.ndarray]:
    """Per feature: (row-weighted average within-batch variance, variance of the batch means).

    Their sum is the pooled variance of the rows seen (law of total variance). With
    ``w_u = n_u / sum(n)`` (integer sum, exact), every sum over batches in pass order:
    ``within = sum w_u var_u``, ``grand = sum w_u mean_u``,
    ``between = sum w_u (mean_u - grand)**2``.
    """
    sizes = np.asarray(result.batch_sizes, dtype=np.int64)
    w = sizes / int(sizes.sum())
    within = weighted_column_sums(w, result.batch_vars)
    grand = weighted_column_sums(w, result.batch_means)
    dev = result.batch_means - grand
    between = weighted_column_sums(w, dev * dev)
    return within, between


def statistics_errors(mean, var, mu, sigma2) -> dict:
    """Errors of an estimate (mean, var) against the exact (mu, sigma2).

    ``running_error`` is the root mean square over the 2F errors of mean and
    variance together (means first, then variances, summed in that order); the worst
    feature is the largest absolute error (the first such feature on a tie).
    """
    dm, dv = mean - mu, var - sigma2
    return {
        "mean_rmse": rms(dm),
        "var_rmse": rms(dv),
        "running_error": rms(np.concatenate([dm, dv])),
        "worst_mean_error": float(np.max(np.abs(dm))),
        "worst_var_error": float(np.max(np.abs(dv))),
        "worst_var_feature": int(np.argmax(np.abs(dv))),
    }


def batch_estimate_error(result: PassResult, mu, sigma2) -> float:
    """Error of a single batch's own estimate: RMS over batches and the 2F errors of
    (batch mean, unbiased batch variance ``var * n / (n - 1)``) against the truth,
    summed batch by batch (each batch's means, then its variances)."""
    n = result.batch_sizes[:, None].astype(np.float64)
    unbiased = result.batch_vars * n / (n - 1.0)
    return rms(np.concatenate([result.batch_means - mu, unbiased - sigma2], axis=1))


def train_eval_rmse(x, result: PassResult, mean, var) -> float:
    """RMSE over all seen rows and features between training-mode and inference-mode outputs
    (inference: ``(x - mean) / sqrt(var + eps)``), summed over rows in population order."""
    inference = (x - mean) / np.sqrt(var + EPS)
    return rms((result.train_output - inference)[result.seen])


def study(
    x: np.ndarray, batch_sizes, keeps, order: str, seed: int, sort_feature: int = 0, shuffle: int = 0
) -> list[dict]:
    """Tidy rows, one per (batch size, estimator, keep), for one batch order (and shuffle)."""
    mu, sigma2 = population_stats(x)
    offset = initial_offset(mu, sigma2)
    rows = []
    for b in batch_sizes:
        batches = pass_batches(x, b, order, seed, sort_feature, shuffle)
        base = None
        estimates = []
        for keep in keeps:
            r = run_pass(x, batches, keep)
            base = r
            u = r.updates
            estimates.append(("ema", keep, r.running_mean, r.running_var, powi(keep, u)))
            estimates.append(
                (
                    "bias_corrected",
                    keep,
                    bias_corrected(r.running_mean, INITIAL_MEAN, keep, u),
                    bias_corrected(r.running_var, INITIAL_VAR, keep, u),
                    0.0,
                )
            )
        r = run_pass(x, batches, None)
        estimates.append(("cumulative", None, r.running_mean, r.running_var, 0.0))
        estimates.append(("pooled", None, *pooled(x, r.seen), 0.0))
        base = base or r
        within, between = variance_decomposition(base)
        for name, keep, mean, var, weight in estimates:
            rows.append(
                {
                    "order": order,
                    "batch_size": int(b),
                    "updates": base.updates,
                    "estimator": name,
                    "keep": keep,
                    "initial_weight": weight,
                    "predicted_error": weight * offset,
                    **statistics_errors(mean, var, mu, sigma2),
                    "batch_estimate_error": batch_estimate_error(base, mu, sigma2),
                    "train_eval_rmse": train_eval_rmse(x, base, mean, var),
                    "sort_feature_within_var": float(within[sort_feature]),
                    "sort_feature_between_var": float(between[sort_feature]),
                }
            )
    return rows


def replicated_study(x: np.ndarray, batch_sizes, keep: float, seed: int, shuffles: int) -> list[dict]:
    """:func:`study` of shuffled passes with keep-factor ``keep``, for shuffles ``0 .. shuffles - 1``;
    each row carries its ``shuffle``."""
    rows = []
    for shuffle in range(shuffles):
        rows += [r | {"shuffle": shuffle} for r in study(x, batch_sizes, [keep], "shuffled", seed, 0, shuffle)]
    return rows
