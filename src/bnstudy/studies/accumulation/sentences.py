"""The accumulation study's generated sentences: its check, the abstract's verdict, what it resolves.

The check against ghost batch norm (:func:`check_sentence`), the abstract's sentence at the
smallest micro-batch (:func:`abstract_sentence`) and :func:`resolved_sentence`. Each sentence
follows its numbers in every variant they allow (an interval wholly below zero, wholly above, or
across it); :func:`bnstudy.studies.accumulation.report.report` puts them in the macros.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.evaluation.families import Family, within
from bnstudy.paper.latex import points, points_interval, signed_points, words

# The first step's largest gradient difference, relative to the largest gradient, that float32
# sums in another order explain: a few units of float32's epsilon (1.2e-7) times the rows summed.
CHECK_RELATIVE = 1e-5


def check_sentence(first_relative: float, first_running: float) -> str:
    """Whether accumulation passes its check against ghost batch norm, as a sentence: the first
    step's running statistics identical and its gradients within :data:`CHECK_RELATIVE`."""
    if first_running == 0 and first_relative <= CHECK_RELATIVE:
        return (
            "The check passes: the loop computes what ghost batch normalisation computes, up to the "
            "order of float32 sums."
        )
    return (
        "The check fails: the first step's running statistics or gradients differ by more than "
        "float32 sums in another order explain."
    )


def _difference(r) -> str:
    """A paired row's mean and interval in signed points: ``$-13.37$ points $[-15.24, -11.50]$``."""
    return f"${signed_points(r.gain)}$ points ${points_interval(r.ci_low, r.ci_high, signed=True)}$"


def _side(r) -> str:
    """``below``, ``above`` or ``zero``: where a paired row's interval lies."""
    return "below" if r.ci_high < 0 else "above" if r.ci_low > 0 else "zero"


def _state(r, margin: float | None) -> tuple[str, bool | None]:
    """A headline row's verdict: its side of zero (:func:`_side`) and whether it lies wholly within the
    smallest effect ``margin`` (:func:`bnstudy.studies.accumulation.family.within`; None without one)."""
    return _side(r), within(r.ci_low, r.ci_high, margin)


def _clause(state: tuple[str, bool | None], other: str, pronoun: str, d: str, margin: str) -> str:
    """One comparison's verdict in the abstract (``other``: whom accumulation is compared with, ``pronoun``
    standing for it; ``d``: the difference and interval; ``margin``: the smallest effect in words)."""
    side, inside = state
    if side == "zero":
        if inside is None:
            return (
                f"cannot be told apart from {other} ({d}) and, with no smallest difference declared to matter, "
                f"is not shown equivalent to {pronoun}"
            )
        if inside:
            return f"is equivalent to {other} within the {margin} declared to matter ({d})"
        return (
            f"cannot be told apart from {other} ({d}), nor shown equivalent to {pronoun} within the {margin} "
            "declared to matter"
        )
    text = f"falls behind {other} by {d}" if side == "below" else f"is ahead of {other} by {d}"
    return f"{text}, wholly within the {margin} declared to matter" if inside else text


def _both(state: tuple[str, bool | None], others: list[str], d: list[str], margin: str) -> str:
    """Both comparisons' shared verdict, said once."""
    side, inside = state
    if side == "zero":
        if inside is None:
            return (
                f"cannot be told apart from {others[0]} ({d[0]}) or from {others[1]} ({d[1]}) and, with no smallest "
                "difference declared to matter, is shown equivalent to neither"
            )
        if inside:
            return (
                f"is equivalent to {others[0]} ({d[0]}) and to {others[1]} ({d[1]}) within the {margin} "
                "declared to matter"
            )
        return (
            f"cannot be told apart from {others[0]} ({d[0]}) or from {others[1]} ({d[1]}), nor shown equivalent to "
            f"either within the {margin} declared to matter"
        )
    text = (
        f"falls behind {others[0]} by {d[0]} and {others[1]} by {d[1]}"
        if side == "below"
        else f"is ahead of {others[0]} by {d[0]} and of {others[1]} by {d[1]}"
    )
    return f"{text}, both wholly within the {margin} declared to matter" if inside else text


def abstract_sentence(pair: pd.DataFrame, m: int, batch_size: int, family: Family, members: int) -> str:
    """The abstract's sentence on accumulation at micro-batch ``m`` (the smallest): whether batch norm
    accumulated from micro-batches of ``m`` rows to steps of ``batch_size`` can be told apart, in
    inference mode and paired by seed, from the true batch and from the grid's networks at batch ``m``,
    each interval at the level of the declared headline ``family`` of ``members`` comparisons (named in
    its words, :meth:`~bnstudy.evaluation.families.Family.phrase`), in words that follow each interval:
    "falls behind" only where it lies wholly below zero, "is ahead of" only where wholly above;
    where it contains zero, "is equivalent to" only where it lies wholly within the family's smallest
    effect (two one-sided tests), else "cannot be told apart from" and not shown equivalent; an
    interval clear of zero but wholly within the smallest effect says so. A verdict both intervals
    share is said once. ``pair``: :func:`~bnstudy.studies.accumulation.report.paired_table` indexed
    by micro-batch, comparison and mode."""
    rows = [pair.loc[(m, "accumulate_vs_large", "inference")], pair.loc[(m, "accumulate_vs_small", "inference")]]
    others = [f"the true batch of {batch_size}", f"the grid's networks at batch {m}"]
    margin = family.smallest_effect
    states = [_state(r, margin) for r in rows]
    d = [_difference(r) for r in rows]
    words_of_margin = "" if margin is None else f"$\\pm{points(margin, 1)}$ points"
    if states[0] == states[1]:
        said = _both(states[0], others, d, words_of_margin)
    else:
        first, second = (
            _clause(state, o, pronoun, x, words_of_margin)
            for state, o, pronoun, x in zip(states, others, ("it", "them"), d)
        )
        named = f"the {words_of_margin} declared to matter"
        if words_of_margin and named in first:  # the margin named once; the second clause refers back to it
            second = second.replace(named, "that margin")
        qualified = "declared to matter" in first  # a clause that ends in its qualifier takes ", and"
        said = f"{first}, and {second}" if qualified else f"{first} and {second}"
    return (
        f"In inference mode, paired by seed and {family.phrase(members)}, batch normalisation trained in "
        f"micro-batches of {m} rows accumulated to steps of {batch_size} {said}"
    )


def resolved_sentence(resolved: list[tuple[str, int]]) -> str:
    """How many of the ghost-minus-accumulation intervals exclude zero, and which, as a clause whose
    verb agrees with its count: ``none excludes zero``; ``one excludes zero (training mode at
    micro-batch 2)``; ``3 exclude zero (training mode at micro-batches 2 and 4, inference mode at
    micro-batch 4)``. ``resolved``: (mode words, micro-batch) of each, grouped by mode in order."""
    if not resolved:
        return "none excludes zero"
    by_mode: dict[str, list[int]] = {}
    for mode, m in resolved:
        by_mode.setdefault(mode, []).append(m)
    # modes with the same micro-batches share one phrase ("training mode and inference mode at ...")
    by_batches: dict[tuple[int, ...], list[str]] = {}
    for mode, ms in by_mode.items():
        by_batches.setdefault(tuple(ms), []).append(mode)
    where = words(
        [
            f"{words(modes)} at micro-batch{'es' if len(ms) > 1 else ''} {words([str(m) for m in ms])}"
            for ms, modes in by_batches.items()
        ]
    )
    if len(resolved) == 1:
        return f"one excludes zero ({where})"
    return f"{len(resolved)} exclude zero ({where})"
