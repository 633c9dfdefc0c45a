"""Study 1 against the published flip rates: ratios, and where each published rate lies against our interval.

The published rates come from one network, other examples and another split, so each is set
against the interval over networks and examples together (:func:`crossed_interval`);
:func:`published_comparison` says it in words (:func:`published_place`, :func:`ratio_words`).
The protocols' comparison (:mod:`bnstudy.studies.companions.protocols`) uses the same. Both set the
published rates against our intervals as one declared family, ``protocol_published``
(:mod:`bnstudy.studies.companions.protocol_families`), where the config forms it: the dropped
protocol's intervals here are formed at that family's level and named by its tag, so that the two
sections print one interval and one verdict per comparison.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base import stats
from bnstudy.evaluation.families import Family
from bnstudy.paper import latex
from bnstudy.paper.latex import words
from bnstudy.studies.companions.formats import interval_text, pct_text


def ratio_words(ours: float, theirs: float) -> str:
    """Our rate as a multiple of theirs with the digits that tell it from 1: ``1.7 times theirs``,
    ``1.04 times theirs`` (never ``1.0 times``), ``0.996 times theirs`` where two decimals would print
    1.00 (45.1 and 45.3 percent print apart: the ratio does too); ``within 0.1\\% of theirs`` where three
    decimals still print 1.000, ``the same as theirs`` only where the two are equal; ``theirs zero``."""
    if theirs <= 0:
        return "theirs zero"
    r = ours / theirs
    if latex.fmt(r, 1) not in ("1.0", "0.9", "1.1"):
        return f"{latex.fmt(r, 1)} times theirs"
    for digits in (2, 3):
        text = latex.fmt(r, digits)
        if float(text) != 1:
            return f"{text} times theirs"
    return "the same as theirs" if ours == theirs else "within 0.1\\% of theirs"


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


def published_ratio_macros(
    probes: pd.DataFrame, published: dict, sizes, confidence: float, against: tuple[Family, int] | None = None
) -> dict:
    """Our flip rates against the published ones, size by size, as ratios and against our intervals.

    The published rates come from one network, other examples and another split, so each is set
    against the interval over the dependence networks and the examples together
    (:func:`crossed_interval`), not the one over networks alone; the words are
    :func:`published_comparison`'s. A size without a published rate, or with one network (no
    crossed interval), is left out. ``against``: the family of published comparisons and its
    members, where the config forms it (each interval at :meth:`Family.level`); ``None``: none
    formed, each interval at ``confidence``."""
    level = against[0].level(confidence, against[1]) if against and against[1] else confidence
    cells = {}
    for b in sizes:
        theirs = published["flip_rate"].get(b)
        c = crossed_interval(probes, "dependence", b, level)
        if theirs is not None and c is not None:
            cells[b] = (float(theirs), c["mean"], c["ci_low"], c["ci_high"])
    said = f"{100 * confidence:g}\\%"
    return published_comparison(cells, *(against or (None, 0)), said)


def family_words(family: Family | None, members: int, confidence: str) -> tuple[str, str]:
    """How :func:`published_comparison` names the intervals: ``(lead, interval)``, the words before
    the comparisons and the noun in each. Unadjusted or no family formed: no lead, ``our interval``
    (the intervals at the confidence, as the Method says); adjusted: ``with each of our intervals
    Bonferroni-adjusted over the 4 comparisons, so that all of them hold together at 95\\%, `` and
    ``our adjusted interval`` (:meth:`Family.phrase`, :meth:`Family.tag`)."""
    if family is None or not family.adjusted or members < 1:
        return "", "our interval"
    interval = f"our {family.tag} interval"
    if members == 1:
        return f"with our one interval {family.phrase(members)}, ", interval
    return (
        f"with each of our intervals {family.phrase(members)}, so that all of them hold together at {confidence}, ",
        interval,
    )


def published_comparison(
    cells: dict[int, tuple[float, float, float, float]],
    family: Family | None = None,
    members: int = 0,
    confidence: str = "95\\%",
) -> dict:
    """``cells[b] = (published, our mean, interval low, interval high)``, sizes ascending; ``family``
    and its ``members``: the family of published comparisons the intervals belong to (``None``: not
    formed), ``confidence`` printed (:func:`family_words`):

    - ``compPublishedComparison``: per size, the published rate, whether it lies inside, below or
      above our interval, and the ratio of our mean to it (``at $b=16$ the published 3.2\\% lies
      below our interval [...] (ours 4.8\\%, 1.5 times theirs)``), joined by semicolons; ``n/a``
      for no size;
    - ``compPublishedOutside``: the sizes whose published rate lies outside our interval, in words.
    """
    lead, interval = family_words(family, members, confidence)
    clauses, outside = [], []
    for b in sorted(cells):
        theirs, mean, lo, hi = cells[b]
        where = published_place(theirs, lo, hi)
        if where != "inside":
            outside.append(f"$b={b}$")
        clauses.append(
            f"at $b={b}$ the published {pct_text(theirs)} lies {where} {interval} {interval_text(lo, hi)}"
            f" (ours {pct_text(mean)}, {ratio_words(mean, theirs)})"
        )
    return {
        "compPublishedComparison": lead + "; ".join(clauses) if clauses else "n/a",
        "compPublishedOutside": f"at {words(outside)}" if outside else "at no size",
    }
