"""Study 1 under both protocols: its families of comparisons, declared in the config
(:mod:`bnstudy.evaluation.families`), and the words that name their intervals.

- :data:`KEEP` (``protocol_keep``): the flip rate with the leftover rows kept minus dropped, paired
  by seed, at every probe size; the section states its verdict at the smallest;
- :data:`KEEP_ACCURACY` (``protocol_keep_accuracy``): the same for the training-mode accuracy,
  printed in the table beside the flip rate;
- :data:`PUBLISHED` (``protocol_published``): each published flip rate set against each protocol's
  interval over networks and examples, one member per protocol and probe size with a published rate
  and a crossed design (:func:`bnstudy.studies.companions.protocol_tables.published_members`); formed
  only where the build's task is the published one (a config on the digits), since elsewhere the
  section tests nothing of ours against the published values.

:func:`levels` gives the level of each family's intervals (:meth:`Family.level`), :func:`records` what
the summary records under ``families`` (:meth:`Family.record`); the sentences on the families are
:func:`keep_sentence`, :func:`published_clause` and :func:`in_full`.
"""

from __future__ import annotations

from bnstudy.evaluation.families import Family
from bnstudy.paper import latex

KEEP = "protocol_keep"
KEEP_ACCURACY = "protocol_keep_accuracy"
PUBLISHED = "protocol_published"
MEASURE_FAMILY = {"flip_rate": KEEP, "train_mode_accuracy": KEEP_ACCURACY}  # kept minus dropped, per measure
# Where no family of published comparisons is formed (another task), the crossed intervals are formed at
# the confidence itself, as this family's would be: its words name them in the (unprinted) macros.
NOT_FORMED = Family(PUBLISHED, "", "comparisons", "unadjusted", None)


def published_family(families: dict[str, Family]) -> Family:
    """The family of published comparisons, or :data:`NOT_FORMED` where the config forms none."""
    return families.get(PUBLISHED, NOT_FORMED)


def levels(families: dict[str, Family], confidence: float, sizes: int, published: int) -> dict[str, float]:
    """Each family's level of its intervals: ``{family: level}``; ``sizes`` the probe sizes (the kept
    minus dropped families' members), ``published`` the published comparisons (none formed: the
    crossed intervals at ``confidence``)."""
    out = {name: families[name].level(confidence, sizes) for name in (KEEP, KEEP_ACCURACY)}
    out[PUBLISHED] = published_family(families).level(confidence, published) if published else confidence
    return out


def records(families: dict[str, Family], confidence: float, sizes: int, published: int) -> dict:
    """The summary's ``families``: each formed family's :meth:`Family.record` (:data:`PUBLISHED` only
    where the config forms it)."""
    out = {name: families[name].record(confidence, sizes) for name in (KEEP, KEEP_ACCURACY)}
    if PUBLISHED in families:
        out[PUBLISHED] = families[PUBLISHED].record(confidence, published)
    return out


def _how(family: Family, members: int, confidence: str) -> str:
    """``Bonferroni-adjusted over the 4 probe sizes, so that all of them hold together at 95\\%`` or
    ``unadjusted (exploratory), each holding at 95\\% on its own``."""
    if family.adjusted and members > 1:
        return f"{family.phrase(members)}, so that all of them hold together at {confidence}"
    if family.adjusted:
        return family.phrase(members)
    return f"{family.phrase(members)}, each holding at {confidence} on its own"


def keep_sentence(flip: Family, accuracy: Family, sizes: int, confidence: str) -> str:
    """The Protocol's sentence on kept minus dropped's intervals, ``sizes`` per measure, ``confidence``
    printed: the flip rate's in :data:`KEEP`'s words, the training-mode accuracy's in
    :data:`KEEP_ACCURACY`'s, said once where the two are declared alike (no full stop)."""
    if flip.adjustment == accuracy.adjustment:
        how = _how(flip, sizes, confidence).replace("all of them hold", "each measure's hold")
        alike = "of the flip rate and of the training-mode accuracy alike"
        return f"The intervals of kept minus dropped, {alike}, are {how}"
    return (
        f"The intervals of kept minus dropped are, for the flip rate, {_how(flip, sizes, confidence)}; for the "
        f"training-mode accuracy, {_how(accuracy, sizes, confidence)}"
    )


def published_clause(family: Family, members: int, confidence: str) -> str:
    """The clause that ends the sentence on the published values: how the ``members`` intervals they
    are set against are formed, in the ``family``'s words (``confidence`` printed)."""
    if members == 0:
        return "and no published rate has an interval of ours to be set against"
    if family.adjusted and members > 1:
        return (
            f"and our intervals, one per protocol and probe size, are {family.phrase(members)}, so that all of "
            f"them hold together at {confidence}"
        )
    if family.adjusted:
        return f"and our one interval is {family.phrase(members)}"
    return (
        f"and each of our intervals covers one protocol at one probe size, {family.phrase(members)}: the "
        f"{members} do not hold together at {confidence}"
    )


def in_full(kept: str) -> str:
    """Where the published rate lies against each protocol's interval, in full: the kept protocol's
    :func:`bnstudy.studies.companions.protocols.reproduction` ``kept``; the dropped protocol's points
    to the companions section, which states that comparison with the same interval at the same level
    (the family's, adjusted or not: :func:`bnstudy.studies.companions.published.published_ratio_macros`),
    so that each comparison has one verdict in the paper."""
    return f"In full, {kept} (with them dropped: the results above)."


SMALLEST = "the smallest effect declared to matter"


def keep_verdict(lo: float, hi: float, family: Family) -> str:
    """Where a kept-minus-dropped interval of ``family`` lies with respect to zero and, where it contains
    zero and the family declares a smallest effect, whether it lies within it (two one-sided tests:
    :meth:`Family.within`): ``contains zero and reaches beyond $\\pm1.0$ points, the smallest effect
    declared to matter``; an interval that contains zero is never left to read as no effect."""
    text = latex.verdict(lo, hi)
    if not (lo <= 0 <= hi) or family.smallest_effect is None:
        return text
    verb = "lies within" if family.within(lo, hi) else "reaches beyond"
    return f"{text} and {verb} $\\pm{latex.points(family.smallest_effect, 1)}$ points, {SMALLEST}"


def keep_interval(lo: float, hi: float, family: Family) -> str:
    """A kept-minus-dropped interval in signed points, one decimal, each end with the decimals that tell
    it from zero and, where the interval contains zero (:func:`keep_verdict` then reads it against the
    smallest effect), from that effect (:func:`bnstudy.paper.latex.endpoint`'s bounds)."""
    margin = family.smallest_effect if lo <= 0 <= hi else None
    if latex.degenerate(lo, hi) or margin is None:
        return latex.points_interval(lo, hi, signed=True, digits=1)
    ends = [latex.endpoint(v, 1, signed=True, bounds=(-margin, margin)) for v in (lo, hi)]
    return f"[{ends[0]}, {ends[1]}]"
