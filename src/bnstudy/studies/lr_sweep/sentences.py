"""The learning-rate sweep's sentences that turn its numbers into words: the name of batch
normalisation's gap to none at the smallest batch (:func:`gap_noun`), whether the choice of rate
changes it (:func:`deficit_answer`), a lift in validation rows (:func:`lift_rows`) and the chosen
rates at an end of the swept list (:func:`edge_sentence`); :mod:`bnstudy.studies.lr_sweep.report`
writes them into its macros. Nothing here depends on the CPU.
"""

from __future__ import annotations

from bnstudy.paper import latex
from bnstudy.paper.latex import points, words


def gap_noun(grid) -> str:
    """What batch normalisation minus none at the smallest batch and the grid's rate is (``grid``'s
    mean): a ``deficit`` where batch norm is behind, else an ``advantage``; the sentences on the
    sweep ask whether it survives the per-cell choice of the rate (:func:`deficit_answer`)."""
    return "deficit" if grid.gain < 0 else "advantage"


def deficit_answer(first, grid) -> str:
    """Whether batch normalisation's gap to none at the smallest batch (its :func:`gap_noun`, from
    the grid's rate) survives the per-cell choice of the rate, as a verb phrase that takes the
    choice as its object (``the deficit survives the tuning of the rate``), from the
    intervals of that comparison at the ``lr_gap`` family's level at the chosen rates (``first``)
    and at the grid's rate (``grid``). Of a deficit: it survives where the chosen rates' interval lies wholly
    below zero, does not where it lies wholly above; an interval holding zero "can no longer"
    tell it from zero only where the grid's rate did, and where the grid's interval holds zero
    too neither can. Of an advantage the same with the signs reversed."""
    sign = -1.0 if gap_noun(grid) == "deficit" else 1.0  # the gap, positive in its noun's direction
    lo, hi = sorted((sign * first.ci_low_adj, sign * first.ci_high_adj))
    if lo > 0:
        return "survives"
    if hi < 0:
        return "does not survive"
    if min(sign * grid.ci_low_adj, sign * grid.ci_high_adj) > 0:
        return "can no longer be told from zero after"
    return "cannot be told from zero, at the grid's rate or after"


def lift_rows(lift: float, validation_rows: int) -> str:
    """A validation-accuracy lift in rows of the validation split, and what it says of the choice:
    under one row, a choice close to chance; else the rows it is worth."""
    rows = lift * validation_rows
    if rows < 1:
        return (
            "a fraction of a validation row per seed: its rates are hard to tell apart, and which one is "
            "chosen is close to chance"
        )
    return f"about {latex.fmt(int(round(rows)))} of the {latex.fmt(int(validation_rows))} validation rows"


def edge_sentence(edges: list[str], margin: float, validation_rows: int) -> str:
    """The cells whose chosen rate lies at an end of the swept list, and by how much the chosen rate
    beats the next best there (the largest such margin, in points and in validation rows per seed:
    under one row the two rates are as good as tied); a sentence without its full stop."""
    if not edges:
        return "No cell's chosen rate lies at an end of the swept list"
    rows = margin * validation_rows
    total = latex.fmt(int(validation_rows))
    size = (
        f"less than one of the {total} validation rows per seed: a near tie"
        if rows < 1
        else f"about {latex.fmt(int(round(rows)))} of the {total} validation rows per seed"
    )
    by = "by" if len(edges) == 1 else "by at most"
    return (
        f"Chosen rates at an end of the swept list: {words(edges)}; there the chosen rate beats the next best "
        f"{by} {points(margin, 2)} points of mean validation accuracy ({size}), and no rate beyond the swept "
        "list was tried"
    )
