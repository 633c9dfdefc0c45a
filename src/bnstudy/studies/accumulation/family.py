"""The accumulation study's declared families of comparisons (:mod:`bnstudy.evaluation.families`).

Every paired interval the study forms is a member of one of two families, each declared in the
config's ``families`` section before the build:

- :data:`HEADLINE` (``families.accumulation``): accumulation minus the true batch
  (``accumulate_vs_large``) and minus the grid's batch at the micro-batch (``accumulate_vs_small``),
  in inference mode with the running and with the recomputed statistics (:data:`HEADLINE_MODES`),
  at every micro-batch: the comparisons that answer the section's two questions (nearer the true
  batch or the micro-batch; running statistics or weights), whose verdicts the abstract, the
  Result and the table state. Its members: ``2 x 2 x`` the micro-batches, every one of them
  formed and printed (the table gives each), so a claim may pick any of them.
- :data:`OTHER` (``families.accumulation_other``): every other paired interval of the study: ghost
  batch norm minus accumulation, accumulation minus the rate-scaled arm and that arm minus the
  grid's rate in every mode, the two comparisons above in training mode, and each configuration's
  recomputed minus running statistics. Its members: all of those at every micro-batch.

Each interval is formed at its family's level (:meth:`bnstudy.evaluation.families.Family.level`).
A headline interval that contains zero shows only that the seeds cannot tell the two apart: the
two are shown equivalent (two one-sided tests) only where that interval, at the family's level,
lies wholly within the family's smallest effect (:func:`within`); with none declared, never.
"""

from __future__ import annotations

from bnstudy.evaluation.families import Family, declared, within
from bnstudy.paper import latex
from bnstudy.paper.latex import points

HEADLINE = "accumulation"
OTHER = "accumulation_other"
NAMES = (HEADLINE, OTHER)
HEADLINE_COMPARISONS = ("accumulate_vs_large", "accumulate_vs_small")
HEADLINE_MODES = ("inference", "recomputed")


def family_of(comparison: str, mode: str) -> str:
    """The family a paired comparison in ``mode`` belongs to: :data:`HEADLINE` or :data:`OTHER`."""
    return HEADLINE if comparison in HEADLINE_COMPARISONS and mode in HEADLINE_MODES else OTHER


def members(micro_batches: int, comparisons: int, modes: int, configs: int) -> dict[str, int]:
    """``{family: members}`` for ``micro_batches`` micro-batches, ``comparisons`` paired comparisons in
    each of ``modes`` modes, and one recomputed-minus-running interval per each of ``configs``
    configurations: :data:`HEADLINE` the module docstring's ``2 x 2 x micro_batches``, :data:`OTHER`
    the rest."""
    headline = len(HEADLINE_COMPARISONS) * len(HEADLINE_MODES) * micro_batches
    return {HEADLINE: headline, OTHER: (comparisons * modes + configs) * micro_batches - headline}


def declare(families: dict) -> dict[str, Family]:
    """``{name: Family}`` of the study's two families from the config's ``families`` section."""
    return {name: declared(families, name) for name in NAMES}


def records(families: dict[str, Family], confidence: float, counts: dict[str, int]) -> dict:
    """The summary's ``families`` key: each family's :meth:`~bnstudy.evaluation.families.Family.record`."""
    return {name: families[name].record(confidence, counts[name]) for name in NAMES}


def _margin(margin: float) -> str:
    return f"$\\pm{points(margin, 1)}$ points"


def verdict(lo: float, hi: float, margin: float | None) -> str:
    """Where a headline interval lies, against zero and against the family's smallest effect
    ``margin``, in words that follow ``the ... interval``: one clear of zero says also where it lies
    wholly within the margin; one that contains zero says whether it shows the two equivalent."""
    side = latex.verdict(lo, hi)
    inside = within(lo, hi, margin)
    if hi < 0 or lo > 0:
        if inside:
            return f"{side}, yet wholly within {_margin(margin)}, the smallest difference declared to matter"
        return side
    if inside is None:
        return f"{side}, and with no smallest difference declared to matter it shows no equivalence"
    if inside:
        return (
            f"{side} and lies wholly within {_margin(margin)}, the smallest difference declared to matter: "
            "the two are equivalent by two one-sided tests"
        )
    return (
        f"{side} but reaches beyond {_margin(margin)}, the smallest difference declared to matter: "
        "the two are neither told apart nor shown equivalent"
    )


def discussion_sentence(lo: float, hi: float) -> str:
    """The Discussion's sentence on which batch size counts, from accumulation minus the true batch
    in inference mode at the smallest micro-batch (its headline interval ``[lo, hi]``): only where
    that interval lies wholly below zero does an optimiser step over a large batch fail to stand in
    for normalising over one; else the study cannot tell."""
    if hi < 0:
        return (
            "An optimiser step that averages over a large batch does not stand in for a batch-normalisation"
            " layer that normalises over one: accumulated micro-batches fall behind the true batch"
        )
    if lo > 0:
        return (
            "Accumulated micro-batches score above the true batch, so an optimiser step over a large batch"
            " more than stands in for normalising over one here"
        )
    return (
        "Whether an optimiser step that averages over a large batch stands in for a batch-normalisation"
        " layer that normalises over one, our seeds cannot tell: accumulated micro-batches are not told"
        " apart from the true batch"
    )


def family_sentence(families: dict[str, Family], counts: dict[str, int], confidence: str) -> str:
    """What the two declared families do to the section's intervals, in their own words
    (:meth:`~bnstudy.evaluation.families.Family.phrase`), ``confidence`` the study's printed: the
    headline family's intervals hold together at ``confidence`` with Bonferroni, each alone without;
    its smallest effect is the margin an interval containing zero must lie within to show the two
    equivalent; every other interval is the other family's."""
    head, other = families[HEADLINE], families[OTHER]
    n = counts[HEADLINE]
    if head.adjusted:
        text = f"Their intervals are {head.phrase(n)}, so that all of them hold together at {confidence}"
    else:
        text = f"Their intervals are {head.phrase(n)}: each holds at {confidence} on its own, not all {n} together"
    if head.smallest_effect is None:
        text += (
            "; no smallest difference is declared to matter, so an interval that contains zero shows only that "
            "our seeds cannot tell the two apart, never that they score alike"
        )
    else:
        text += (
            f". One that contains zero shows the two equivalent only where it lies wholly within "
            f"{_margin(head.smallest_effect)}, the smallest difference declared to matter (two one-sided tests)"
        )
    n = counts[OTHER]
    if other.adjusted:
        own = f"{other.tag} by Bonferroni over its own {n} {other.over}"  # not the phrase again: no clause twice
        return f"{text}. Every other paired interval here is {own}, so that those {n} hold together too"
    return f"{text}. Every other paired interval here is {other.phrase(n)}, a {confidence} interval on its own"
