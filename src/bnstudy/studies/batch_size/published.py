"""Study 2 against the published table: our cells minus its values, its gains against our seed spread.

:func:`published_gaps` sets each published cell in our grid beside ours (in points and in our seed
standard deviations); :func:`published_gap_macros` and :func:`published_gain_macros` turn them into
the macros the section quotes, with the standard error of a difference of means
(:func:`standard_error_of_difference`) from each cell's own standard deviation.
"""

from __future__ import annotations

import math

import pandas as pd

from bnstudy.paper import latex
from bnstudy.paper.latex import points, words

PUBLISHED_COLUMNS = [
    ("none", "inference", "none"),
    ("batchnorm", "inference", "batchnorm"),
    ("batchnorm", "training", "batchnorm_training_mode"),
]


def standard_error_of_difference(sd_a: float, sd_b: float, seeds: int) -> float:
    """Standard error of a difference of two independent means of ``seeds`` values each,
    from the two cells' own standard deviations: ``sqrt(sd_a^2/n + sd_b^2/n)``."""
    return math.sqrt(math.fsum([sd_a * sd_a / seeds, sd_b * sd_b / seeds]))


def published_gaps(cell: dict, published: dict) -> pd.DataFrame:
    """Ours minus published, per published cell in our grid, also in units of our seed sd."""
    rows = []
    for norm, mode, key in PUBLISHED_COLUMNS:
        for b, value in published[key].items():
            r = cell.get((norm, int(b), mode))
            if r is None:
                continue
            gap = r.mean - value
            rows.append(
                {
                    "normaliser": norm,
                    "mode": mode,
                    "batch_size": int(b),
                    "ours": r.mean,
                    "published": value,
                    "gap": gap,
                    "sd": r.sd,
                    "gap_in_sd": abs(gap) / r.sd if r.sd > 0 else float("inf"),
                }
            )
    return pd.DataFrame(rows)


def published_gain_macros(summary, cell: dict, published: dict, pair_summary: pd.DataFrame) -> dict:
    """The seed spread against the published gains, from each cell's own standard deviation,
    and how many of our paired intervals at those batch sizes exclude zero (``gainsSidesClause``: on
    which side, at every batch size, by :func:`sides_clause`)."""
    m = {}
    sd_inference = summary[summary["mode"] == "inference"]["sd"]
    m["sdInferenceMedian"] = points(float(sd_inference.median()), 2)
    m["sdInferenceLargest"] = points(float(sd_inference.max()), 2)
    claimed = {
        int(b): published["batchnorm"][b] - published["none"][b]
        for b in published["batchnorm"]
        if b in published["none"] and published["batchnorm"][b] > published["none"][b]
    }
    for b, g in claimed.items():
        m[latex.macro_name("publishedGain", "b", b)] = points(g)
    m["publishedGainSizes"] = words([str(b) for b in sorted(claimed)])
    se, in_se = [], []
    for b in sorted(claimed):
        bn, no = cell.get(("batchnorm", b, "inference")), cell.get(("none", b, "inference"))
        if bn is not None and no is not None:
            s = standard_error_of_difference(bn.sd, no.sd, int(published["seeds"]))
            se.append(
                f"{points(s, 2)} points at batch {b} (seed standard deviations "
                f"{points(bn.sd, 2)} and {points(no.sd, 2)})"
            )
            unit = " such standard errors" if not in_se else ""
            in_se.append(f"{latex.fmt(claimed[b] / s, 1) if s > 0 else 'n/a'}{unit} at batch {b}")
    m["seDiffPublishedSeedsList"] = words(se) if se else "n/a (none of those batch sizes is in our grid)"
    m["publishedGainInSeList"] = words(in_se) if in_se else "n/a"
    m["publishedGainSeSentence"] = published_gain_se_sentence(se, in_se, int(published["seeds"]))
    gains = pair_summary[pair_summary.comparison == "batchnorm_vs_none"]
    compared = gains[gains.batch_size.isin(list(claimed))]
    m["gainCompared"] = str(len(compared))
    m["gainComparedExcludingZero"] = latex.count(((compared.ci_low_adj > 0) | (compared.ci_high_adj < 0)).sum())
    m["gainComparedSizes"] = words([str(int(b)) for b in sorted(compared.batch_size)]) or "none"
    m["gainsExcludingZero"] = latex.count(((gains.ci_low_adj > 0) | (gains.ci_high_adj < 0)).sum())
    m["gainsCompared"] = str(len(gains))
    above = [str(int(b)) for b in sorted(gains[gains.ci_low_adj > 0].batch_size)]
    m["gainsSidesClause"] = sides_clause(above, [str(int(b)) for b in sorted(gains[gains.ci_high_adj < 0].batch_size)])
    return m


def sides_clause(above: list[str], below: list[str]) -> str:
    """Where the intervals that exclude zero lie, in brackets after a count of them (`` (above zero at
    batches 32 and 64, below at batch 2)``, `` (below zero at batch 2)``); empty where no interval
    excludes zero, for the count (``none``) has said so and ``at no batch size`` twice would say it again."""
    if not above and not below:
        return ""
    sides = [f"above zero {latex.at_batches(above)}"] if above else []
    if below:
        sides.append(f"below{'' if above else ' zero'} {latex.at_batches(below)}")
    return f" ({', '.join(sides)})"


def published_gain_se_sentence(se: list[str], in_se: list[str], published_seeds: int) -> str:
    """The sentence that sets the published gains against our seed spread: the standard error of a
    difference of two means of ``published_seeds`` seeds at each published batch size in our grid
    (``se``) and each gain in those standard errors (``in_se``); where none of those batch sizes is in
    the grid, a sentence that says so instead of standard errors of ``n/a``."""
    if not se:
        return (
            "None of the batch sizes with a published gain is in our grid, so none can be set against our seed spread."
        )
    verb = "gain is" if len(in_se) == 1 else "gains are"
    return (
        "With the standard deviations of the two cells compared, a difference of two independent means of "
        f"{published_seeds} seeds each carries a standard error of {words(se)}; the published {verb} {words(in_se)}."
    )


def _gap_in_se(gap: float, sd: float, published_seeds: int, seeds: int) -> str:
    """``|gap|`` in standard errors of their mean of ``published_seeds`` seeds minus ours of
    ``seeds``, both with our seed sd."""
    se = sd * math.sqrt(math.fsum([1 / published_seeds, 1 / seeds]))
    return latex.fmt(abs(gap) / se, 1) if se > 0 else "n/a"


def published_gap_macros(cell: dict, published: dict, seeds: int, sizes: list[int]) -> dict:
    """How far our cells lie from the published table, in points and in seed standard deviations.
    ``pubGapLargestIsBatchnormMin`` (empty) is defined where the largest gap is batch norm's at the
    smallest batch, the cell the text also takes as its example: the text then says it once."""
    m = {}
    gaps = published_gaps(cell, published)
    if len(gaps):
        worst = gaps.loc[gaps["gap"].abs().idxmax()]
        m["pubGapCells"] = str(len(gaps))
        m["pubGapLargest"] = points(abs(float(worst.gap)))
        m["pubGapLargestSign"] = "below" if worst.gap < 0 else "above"
        names = {"none": "no normaliser", "batchnorm": "batch normalisation"}
        m["pubGapLargestWhere"] = (
            f"{names.get(worst.normaliser, latex.escape(worst.normaliser))}"
            f"{', training mode' if worst['mode'] == 'training' else ''}"
            f" at batch {int(worst.batch_size)}"
        )
        m["pubGapLargestSd"] = points(float(worst.sd), 1)
        m["pubGapLargestInSd"] = latex.fmt(float(worst.gap_in_sd), 1)
        m["pubGapMedianInSd"] = latex.fmt(float(gaps["gap_in_sd"].median()), 1)
        m["pubGapLargestInSe"] = _gap_in_se(float(worst.gap), float(worst.sd), int(published["seeds"]), seeds)
        m |= {
            "pubBatchnormMin": "n/a",
            "pubGapBatchnormMinInSd": "n/a",
            "pubGapBatchnormMinSign": "n/a",
            "pubGapBatchnormMinPoints": "n/a",
            "pubGapBatchnormMinInSe": "n/a",
        }
        first = gaps[(gaps.normaliser == "batchnorm") & (gaps["mode"] == "inference") & (gaps.batch_size == sizes[0])]
        if len(first):
            r = first.iloc[0]
            m["pubBatchnormMin"] = latex.fmt(float(r.published))
            m["pubGapBatchnormMinInSd"] = latex.fmt(float(r.gap_in_sd), 1)
            m["pubGapBatchnormMinSign"] = "below" if r.gap < 0 else "above"
            m["pubGapBatchnormMinPoints"] = points(abs(float(r.gap)))
            m["pubGapBatchnormMinInSe"] = _gap_in_se(float(r.gap), float(r.sd), int(published["seeds"]), seeds)
            if first.index[0] == gaps["gap"].abs().idxmax():  # the example is the largest gap, stated already
                m["pubGapLargestIsBatchnormMin"] = ""
    bn = gaps[(gaps.normaliser == "batchnorm") & (gaps["mode"] == "inference")] if len(gaps) else gaps
    for r in bn.itertuples(index=False) if len(bn) else []:
        m[latex.macro_name("pub", "batchnorm", "b", r.batch_size)] = latex.fmt(float(r.published))
    return m
