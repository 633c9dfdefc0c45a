"""Study 2's comparisons as a paired design.

For one seed, every normaliser starts from the same initial weights and sees the
same batch order (the initial weights and the data order come from streams derived
from the seed, :mod:`bnstudy.nets.train`), and every remedy replaces only the running
statistics of the same trained network. Two networks of one seed are therefore a
pair, and a comparison ``A - B`` is made seed by seed:

- the accuracy difference ``d_s = acc_A(s) - acc_B(s)`` per seed, and over seeds
  their mean with a paired Student-t interval (the one-sample t interval of the
  ``d_s``: mean and sample standard deviation by :func:`bnstudy.base.stats.mean_sd`,
  sums correctly rounded; t quantile :func:`bnstudy.base.stats.t_quantile`);
- the same difference as a count of test rows: ``a_only`` rows that ``A`` labels
  correctly and ``B`` does not, ``b_only`` the reverse, ``a_only - b_only =
  n * d_s`` exactly; with an exact McNemar test on the discordant rows of each
  seed: under the null hypothesis that ``A`` and ``B`` are equally accurate, a
  discordant row favours ``A`` with probability 1/2, so ``a_only`` is binomial
  ``(a_only + b_only, 1/2)``; the two-sided p-value is that of ``scipy.stats.binomtest``
  (1 when there is no discordant row), computed exactly in integers and rounded once
  (:func:`mcnemar_p`: scipy's goes through the C library's ``exp`` and ``log``, whose last
  bits differ between machines).

Counts are integers; nothing here depends on the CPU.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bnstudy.base.stats import adjusted_confidence, seed_interval

# (name, (normaliser, mode) of A, (normaliser, mode) of B): A - B, inference mode.
COMPARISONS = (
    ("batchnorm_vs_none", ("batchnorm", "inference"), ("none", "inference")),
    ("batchrenorm_vs_batchnorm", ("batchrenorm", "inference"), ("batchnorm", "inference")),
    ("debiased_ema_vs_ema", ("batchnorm", "debiased_ema"), ("batchnorm", "inference")),
    ("cumulative_vs_ema", ("batchnorm", "cumulative"), ("batchnorm", "inference")),
    ("precise_bn_vs_ema", ("batchnorm", "precise_bn"), ("batchnorm", "inference")),
    ("exact_vs_ema", ("batchnorm", "exact"), ("batchnorm", "inference")),
    # leftover rows kept (mode ``inference_keep``) minus dropped: how far the unstated last-batch policy matters
    ("batchnorm_keep_vs_drop", ("batchnorm", "inference_keep"), ("batchnorm", "inference")),
    ("none_keep_vs_drop", ("none", "inference_keep"), ("none", "inference")),
)
LABELS = {
    "batchnorm_vs_none": "BN $-$ none",
    "batchrenorm_vs_batchnorm": "renorm $-$ BN",
    "debiased_ema_vs_ema": "debiased $-$ EMA",
    "cumulative_vs_ema": "cumulative $-$ EMA",
    "precise_bn_vs_ema": "PreciseBN $-$ EMA",
    "exact_vs_ema": "exact $-$ EMA",
    "batchnorm_keep_vs_drop": "BN, keep $-$ drop",
    "none_keep_vs_drop": "none, keep $-$ drop",
}


def mcnemar_p(a_only: int, n: int) -> float:
    """The exact two-sided p-value of ``a_only`` successes in ``n`` trials with probability 1/2:
    by symmetry twice the lower tail at ``min(a_only, n - a_only)``, at most 1 (what
    ``scipy.stats.binomtest(a_only, n, 0.5).pvalue`` defines: the outcomes no likelier than the
    one seen; at 1/2 no two pmf values nearer than a factor ``1 + 2/n`` tie). Hand-written for
    determinism: the tail's binomial coefficients are summed as Python integers and the quotient
    by ``2 ** n`` is rounded once (``int / int`` is correctly rounded), so the float is the same
    on every machine."""
    if n == 0:
        return 1.0
    k = min(int(a_only), n - int(a_only))
    if 2 * k == n:
        return 1.0
    term, tail = 1, 1  # C(n, 0)
    for i in range(k):
        term = term * (n - i) // (i + 1)  # C(n, i + 1), exact
        tail += term
    return min(1.0, (2 * tail) / (1 << n))


def mcnemar(correct_a, correct_b) -> tuple[int, int, float]:
    """``(a_only, b_only, p)``: discordant rows of two paired 0/1 vectors, exact two-sided McNemar
    p (:func:`mcnemar_p`)."""
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired rows differ in shape: {a.shape} and {b.shape}")
    a_only, b_only = int(np.count_nonzero(a & ~b)), int(np.count_nonzero(b & ~a))
    n = a_only + b_only
    p = mcnemar_p(a_only, n)
    return a_only, b_only, p


def paired_interval(a, b, confidence: float, bound: float = 1.0) -> dict:
    """Mean, sd and Student-t interval of the per-seed differences ``a[i] - b[i]`` (same seed order)
    of two shares (each in [0, 1]: accuracies, flip rates). The interval is clipped to [-1, 1], the
    range such a difference can take: with two or three seeds the t quantile (12.7 for one degree
    of freedom) carries an unclipped end past it. ``bound``: that range's half-width where the
    values are not shares (2 for two changes of a share, each in [-1, 1]). A NaN end (one seed)
    stays NaN."""
    a, b = list(a), list(b)
    if len(a) != len(b) or not a:
        raise ValueError(f"a paired comparison needs as many values on both sides, got {len(a)} and {len(b)}")
    diffs = [float(x) - float(y) for x, y in zip(a, b)]
    mean, sd, lo, hi = seed_interval(diffs, confidence)
    lo, hi = (-bound if lo < -bound else lo), (bound if hi > bound else hi)
    return {"seeds": len(diffs), "gain": mean, "sd": sd, "ci_low": lo, "ci_high": hi}


def _rows(correct: pd.DataFrame, norm: str, mode: str, b: int, seed: int) -> np.ndarray:
    g = correct[
        (correct.normaliser == norm) & (correct["mode"] == mode) & (correct.batch_size == b) & (correct.seed == seed)
    ].sort_values("row")
    return g["correct"].to_numpy()


def per_seed(runs: pd.DataFrame, correct: pd.DataFrame, comparisons=COMPARISONS) -> pd.DataFrame:
    """One row per comparison, batch size and seed with both sides present: accuracies,
    ``a_only``, ``b_only``, ``net_rows = a_only - b_only`` and the McNemar p-value."""
    acc = runs.set_index(["normaliser", "mode", "batch_size", "seed"])["accuracy"]
    out = []
    for name, (na, ma), (nb, mb) in comparisons:
        for b in sorted(int(v) for v in runs.batch_size.unique()):
            for s in sorted(int(v) for v in runs.seed.unique()):
                if (na, ma, b, s) not in acc.index or (nb, mb, b, s) not in acc.index:
                    continue
                ra, rb = _rows(correct, na, ma, b, s), _rows(correct, nb, mb, b, s)
                a_only, b_only, p = mcnemar(ra, rb)
                out.append(
                    {
                        "comparison": name,
                        "batch_size": b,
                        "seed": s,
                        "accuracy_a": float(acc[(na, ma, b, s)]),
                        "accuracy_b": float(acc[(nb, mb, b, s)]),
                        "rows": len(ra),
                        "a_only": a_only,
                        "b_only": b_only,
                        "net_rows": a_only - b_only,
                        "mcnemar_p": p,
                    }
                )
    return pd.DataFrame(
        out,
        columns=[
            "comparison",
            "batch_size",
            "seed",
            "accuracy_a",
            "accuracy_b",
            "rows",
            "a_only",
            "b_only",
            "net_rows",
            "mcnemar_p",
        ],
    )


def summarise(seeds: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Per comparison and batch size: paired mean gain with its t interval, discordant rows summed
    over seeds, and the number of seeds whose McNemar p is below ``1 - confidence`` each way.

    Each comparison's batch sizes are one family (``family``: their number): ``ci_low_adj``,
    ``ci_high_adj`` are the Bonferroni-adjusted paired intervals, each at
    ``1 - (1 - confidence) / family`` (:func:`bnstudy.base.stats.adjusted_confidence`), the ones a
    headline claim about that comparison quotes."""
    alpha = 1 - confidence
    family = seeds.groupby("comparison", sort=False)["batch_size"].nunique().to_dict()
    out = []
    for (name, b), g in seeds.groupby(["comparison", "batch_size"], sort=False):
        g = g.sort_values("seed")
        row = {"comparison": name, "batch_size": int(b)}
        row |= paired_interval(g.accuracy_a, g.accuracy_b, confidence)
        adj = paired_interval(g.accuracy_a, g.accuracy_b, adjusted_confidence(confidence, int(family[name])))
        row |= {"family": int(family[name]), "ci_low_adj": adj["ci_low"], "ci_high_adj": adj["ci_high"]}
        significant = g.mcnemar_p < alpha
        row |= {
            "a_only": int(g.a_only.sum()),
            "b_only": int(g.b_only.sum()),
            "net_rows": ", ".join(f"{int(v):+d}" for v in g.net_rows),
            "seeds_a_better": int((significant & (g.net_rows > 0)).sum()),
            "seeds_b_better": int((significant & (g.net_rows < 0)).sum()),
        }
        out.append(row)
    return pd.DataFrame(out)
