"""What the running-statistics study's report needs of its science without its compiled layer: the
orders and estimators, the population's exact moments and the untouched layer's offset (the fixed-order
reductions of :mod:`bnstudy.compiled.reductions`, statistics as :mod:`bnstudy.base.stats` is), the
sentence and JSON of the summary, and the self-checks' tolerances. :mod:`.science` and
:mod:`.selfchecks` take them from here, so editing the layer kernel does not re-run the report."""

from __future__ import annotations

import numpy as np

from bnstudy.compiled.reductions import column_moments, rms

ORDERS = ("shuffled", "sorted")
ESTIMATORS = ("ema", "bias_corrected", "cumulative", "pooled")
INITIAL_MEAN = 0.0
INITIAL_VAR = 1.0
MEAN_TOL = 1e-4
VAR_TOL = 1e-3
DIFFERENTIAL_TOL = 0.1
CHECKS = ("train_mean", "train_var", "inference_repeatable", "shape")


def population_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact per-feature mean and variance (ddof 0) of the enumerated population
    (float64 sums over rows in row order, two passes)."""
    return column_moments(x)


def initial_offset(mu, sigma2) -> float:
    """RMS over the 2F values of (initial value - truth): the error of the untouched layer."""
    return rms(np.concatenate([INITIAL_MEAN - mu, INITIAL_VAR - sigma2]))


def monotone_sentence(means: dict[int, float]) -> str:
    """Whether the mean running error rises or falls with every step in batch size, in words that
    are true of ``means`` (``{batch size: mean error}``): ``rises``/``falls with every step`` where it
    does, ``never falls``/``never rises`` where a step ties; else each fall, the smallest value named
    once (at the end of its fall, or at the smallest batch where no fall reaches it)."""
    sizes = sorted(means)
    steps_ = list(zip(sizes, sizes[1:]))
    falls = [(a, b) for a, b in steps_ if means[b] < means[a]]
    rises = [(a, b) for a, b in steps_ if means[b] > means[a]]
    best = min(sizes, key=lambda b: means[b])
    if not falls:
        every = len(rises) == len(steps_)
        return "rises with every step in batch size" if every else "never falls as the batch size grows"
    if not rises:
        every = len(falls) == len(steps_)
        return "falls with every step in batch size" if every else "never rises as the batch size grows"
    text = ""
    for i, (a, b) in enumerate(falls):
        if i:  # a comma before "and" where the clause before closes on "where it is smallest"
            text += (", and " if falls[i - 1][1] == best else " and ") if i == len(falls) - 1 else ", "
        text += f"from $b={a}$ to $b={b}$" + (", where it is smallest" if b == best else "")
    tail = "" if any(b == best for _, b in falls) else f", and is smallest at the smallest batch $b={best}$"
    return f"is not monotone in the batch size: it falls {text}{tail}"


def summary_json(rows: list[dict], keep: float = 0.9) -> dict:
    """The keys of ``results/summary/running_stats.json``, each by batch size.

    Shuffled order, EMA with keep-factor ``keep``; ``train_eval_rmse_sorted`` the
    same for the sorted order; ``worst_feature_var_error`` the largest absolute
    running-variance error over features and batch sizes (shuffled, same keep).
    """

    def pick(order):
        return {
            r["batch_size"]: r for r in rows if r["order"] == order and r["estimator"] == "ema" and r["keep"] == keep
        }

    shuffled, sorted_ = pick("shuffled"), pick("sorted")
    sizes = sorted(shuffled)
    return {
        "updates": {str(b): shuffled[b]["updates"] for b in sizes},
        "running_error": {str(b): shuffled[b]["running_error"] for b in sizes},
        "batch_estimate_error": {str(b): shuffled[b]["batch_estimate_error"] for b in sizes},
        "train_eval_rmse": {str(b): shuffled[b]["train_eval_rmse"] for b in sizes},
        "train_eval_rmse_sorted": {str(b): sorted_[b]["train_eval_rmse"] for b in sizes},
        "worst_feature_var_error": max(shuffled[b]["worst_var_error"] for b in sizes),
    }


def self_checks_pass(row: dict) -> bool:
    """All four self-checks pass."""
    return all(row[f"{c}_pass"] for c in CHECKS)
