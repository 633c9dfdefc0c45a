"""Study 1 against the published flip rates: ratios, and where each published rate lies against our interval.

The published rates come from one network, other examples and another split, so each is set
against the interval over networks and examples together (:func:`crossed_interval`);
:func:`published_comparison` says it in words (:func:`published_place`, :func:`ratio_words`).
The protocols' comparison (:mod:`bnstudy.studies.companions.protocols`) uses the same.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base import stats
from bnstudy.paper import latex
from bnstudy.paper.latex import words
from bnstudy.studies.companions.formats import interval_text, pct_text


def ratio_words(ours: float, theirs: float) -> str:
    """Our rate as a multiple of theirs with the digits that tell it from 1: ``1.7 times theirs``,
    ``1.04 times theirs`` (never ``1.0 times``), ``equal to theirs to two decimals``; ``theirs zero``."""
    if theirs <= 0:
        return "theirs zero"
    r = ours / theirs
    if latex.fmt(r, 1) not in ("1.0", "0.9", "1.1"):
        return f"{latex.fmt(r, 1)} times theirs"
    if latex.fmt(r, 2) == "1.00":
        return "equal to theirs to two decimals"
    return f"{latex.fmt(r, 2)} times theirs"


def crossed_design(probes: pd.DataFrame, network: str, b: int) -> bool:
    """Whether ``network``'s random companions of ``b`` form a crossed design: two networks (seeds)
    and two examples or more (:func:`crossed_interval` is ``None`` without one)."""
    g = probes[(probes["network"] == network) & (probes["design"] == "random") & (probes["batch_size"] == b)]
    return g["seed"].nunique() >= 2 and g["example"].nunique() >= 2


def crossed_interval(probes: pd.DataFrame, network: str, b: int, confidence: float, count: str = "flips"):
    """A share over networks and examples together: ``network``'s networks (one per seed) with
    random companions of ``b``, each example's ``count / batches`` (``count``: ``flips`` for the
    flip rate, ``correct`` for the training-mode accuracy) as a networks x examples table (both
    ascending), and :func:`bnstudy.base.stats.crossed_components` of it: the mean with the
    interval over new networks and new examples, and the variance components. ``None`` with fewer
    than two networks or two examples (no crossed design)."""
    if not crossed_design(probes, network, b):
        return None
    g = probes[(probes["network"] == network) & (probes["design"] == "random") & (probes["batch_size"] == b)]
    table = (
        g.assign(rate=g[count] / g["batches"])
        .pivot_table(index="seed", columns="example", values="rate", aggfunc="first")
        .sort_index(axis=0)
        .sort_index(axis=1)
    )
    return stats.crossed_components(table.to_numpy(), confidence)


def published_place(theirs: float, lo: float, hi: float) -> str:
    """Where a published value lies against an interval: ``inside``, ``below`` or ``above``."""
    return "inside" if lo <= theirs <= hi else ("below" if theirs < lo else "above")


def published_ratio_macros(probes: pd.DataFrame, published: dict, sizes, confidence: float) -> dict:
    """Our flip rates against the published ones, size by size, as ratios and against our intervals.

    The published rates come from one network, other examples and another split, so each is set
    against the interval over the dependence networks and the examples together
    (:func:`crossed_interval`), not the one over networks alone; the words are
    :func:`published_comparison`'s. A size without a published rate, or with one network (no
    crossed interval), is left out."""
    cells = {}
    for b in sizes:
        theirs = published["flip_rate"].get(b)
        c = crossed_interval(probes, "dependence", b, confidence)
        if theirs is not None and c is not None:
            cells[b] = (float(theirs), c["mean"], c["ci_low"], c["ci_high"])
    return published_comparison(cells)


def published_comparison(cells: dict[int, tuple[float, float, float, float]]) -> dict:
    """``cells[b] = (published, our mean, interval low, interval high)``, sizes ascending:

    - ``compPublishedComparison``: per size, the published rate, whether it lies inside, below or
      above our interval, and the ratio of our mean to it (``at $b=16$ the published 3.2\\% lies
      below our interval [...] (ours 4.8\\%, 1.5 times theirs)``), joined by semicolons; ``n/a``
      for no size;
    - ``compPublishedOutside``: the sizes whose published rate lies outside our interval, in words.
    """
    clauses, outside = [], []
    for b in sorted(cells):
        theirs, mean, lo, hi = cells[b]
        where = published_place(theirs, lo, hi)
        if where != "inside":
            outside.append(f"$b={b}$")
        clauses.append(
            f"at $b={b}$ the published {pct_text(theirs)} lies {where} our interval {interval_text(lo, hi)}"
            f" (ours {pct_text(mean)}, {ratio_words(mean, theirs)})"
        )
    return {
        "compPublishedComparison": "; ".join(clauses) if clauses else "n/a",
        "compPublishedOutside": f"at {words(outside)}" if outside else "at no size",
    }
