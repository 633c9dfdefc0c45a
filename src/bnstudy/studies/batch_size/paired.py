"""Study 2's comparisons as a paired design: which networks it compares (:data:`COMPARISONS`),
seed by seed (:func:`per_seed`) and over seeds (:func:`summarise`).

The pairing, the paired t interval and McNemar's exact test are every study's
(:mod:`bnstudy.evaluation.paired`); here the comparisons of normalisers and remedies by batch
size, from the grid's accuracy and per-row correctness tables. Counts are integers; nothing
here depends on the CPU.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bnstudy.evaluation.families import Family, declared
from bnstudy.evaluation.paired import mcnemar, paired_interval

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
# The declared family of comparisons (the config's ``families``) each comparison is a member of, one
# per batch size: :mod:`bnstudy.evaluation.families`.
FAMILIES = {
    "batchnorm_vs_none": "normalisers",
    "batchrenorm_vs_batchnorm": "renorm",
    "debiased_ema_vs_ema": "remedies",
    "cumulative_vs_ema": "remedies",
    "precise_bn_vs_ema": "remedies",
    "exact_vs_ema": "remedies",
    "batchnorm_keep_vs_drop": "last_batch",
    "none_keep_vs_drop": "last_batch",
}
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


def family(families: dict, comparison: str) -> Family:
    """The declared family (``families``: the config's section) of ``comparison``."""
    return declared(families, FAMILIES[comparison])


def _rows_by_network(correct: pd.DataFrame) -> dict[tuple, np.ndarray]:
    """Each network's per-row correctness in row order, by ``(normaliser, mode, batch_size, seed)``:
    one pass over the table (filtering it once per lookup cost 80 CPU s at 20 seeds a cell)."""
    keys = ["normaliser", "mode", "batch_size", "seed"]
    return {
        (str(n), str(m), int(b), int(s)): g.sort_values("row")["correct"].to_numpy()
        for (n, m, b, s), g in correct.groupby(keys, sort=False)
    }


def per_seed(runs: pd.DataFrame, correct: pd.DataFrame, comparisons=COMPARISONS) -> pd.DataFrame:
    """One row per comparison, batch size and seed with both sides present: accuracies,
    ``a_only``, ``b_only``, ``net_rows = a_only - b_only`` and the McNemar p-value."""
    acc = runs.set_index(["normaliser", "mode", "batch_size", "seed"])["accuracy"]
    rows = _rows_by_network(correct)
    empty = np.zeros(0, dtype=np.int64)
    out = []
    for name, (na, ma), (nb, mb) in comparisons:
        for b in sorted(int(v) for v in runs.batch_size.unique()):
            for s in sorted(int(v) for v in runs.seed.unique()):
                if (na, ma, b, s) not in acc.index or (nb, mb, b, s) not in acc.index:
                    continue
                ra, rb = rows.get((na, ma, b, s), empty), rows.get((nb, mb, b, s), empty)
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


def effect_dz(differences: np.ndarray) -> float:
    """Cohen's d_z of paired ``differences``: their mean over their standard deviation (n - 1);
    NaN for fewer than two or for differences that are all equal (no spread to scale by)."""
    d = np.asarray(differences, dtype=np.float64)
    if len(d) < 2:
        return float("nan")
    sd = float(np.std(d, ddof=1))
    return float(np.mean(d) / sd) if sd > 0 else float("nan")


def summarise(seeds: pd.DataFrame, confidence: float, families: dict) -> pd.DataFrame:
    """Per comparison and batch size: paired mean gain with its t interval, discordant rows summed
    over seeds, the number of seeds whose McNemar p is below ``1 - confidence`` each way, the seeds
    on each side (``seeds``, ``seeds_ahead``: A scores above B, ``seeds_behind``) and the
    standardised paired effect ``effect_dz`` (Cohen's d_z: the mean per-seed difference over its
    standard deviation; NaN where every seed's difference is the same).

    Each comparison's batch sizes are members of its declared family (:data:`FAMILIES`; ``families``:
    the config's section; ``family``: the comparison's number of batch sizes): ``ci_low_adj``,
    ``ci_high_adj`` are the paired intervals at the family's level
    (:meth:`bnstudy.evaluation.families.Family.level`: Bonferroni-adjusted, ``1 - (1 - confidence) /
    family``, or the unadjusted ``confidence`` where the family is declared without adjustment), the
    ones every claim about that comparison quotes."""
    alpha = 1 - confidence
    counts = seeds.groupby("comparison", sort=False)["batch_size"].nunique().to_dict()
    out = []
    for (name, b), g in seeds.groupby(["comparison", "batch_size"], sort=False):
        g = g.sort_values("seed")
        row = {"comparison": name, "batch_size": int(b)}
        row |= paired_interval(g.accuracy_a, g.accuracy_b, confidence)
        level = family(families, name).level(confidence, int(counts[name]))
        adj = paired_interval(g.accuracy_a, g.accuracy_b, level)
        row |= {"family": int(counts[name]), "ci_low_adj": adj["ci_low"], "ci_high_adj": adj["ci_high"]}
        significant = g.mcnemar_p < alpha
        row |= {
            "a_only": int(g.a_only.sum()),
            "b_only": int(g.b_only.sum()),
            "net_rows": ", ".join(f"{int(v):+d}" for v in g.net_rows),
            "seeds_a_better": int((significant & (g.net_rows > 0)).sum()),
            "seeds_b_better": int((significant & (g.net_rows < 0)).sum()),
            "seeds": int(len(g)),
            "seeds_ahead": int((g.net_rows > 0).sum()),
            "seeds_behind": int((g.net_rows < 0).sum()),
            "effect_dz": effect_dz(g.accuracy_a.to_numpy() - g.accuracy_b.to_numpy()),
        }
        out.append(row)
    return pd.DataFrame(out)


def members(pair_summary: pd.DataFrame) -> dict[str, int]:
    """``{family: m}`` of every family the paired summary forms (in :data:`FAMILIES`' order), ``m``
    the number of batch sizes of each of its comparisons: one number per family, since a family's
    comparisons are read together under one adjustment (a family whose comparisons differ in it is
    an error)."""
    counts = pair_summary.groupby("comparison", sort=False)["batch_size"].nunique().to_dict()
    out: dict[str, int] = {}
    for comparison, name in FAMILIES.items():
        if comparison not in counts:
            continue
        m = int(counts[comparison])
        if out.setdefault(name, m) != m:
            raise ValueError(f"family {name}: its comparisons have {out[name]} and {m} batch sizes (one family, one m)")
    return out
