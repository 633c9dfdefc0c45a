"""Study 2's generated sentences: where the remedies' paired intervals lie, what the exact statistics recover.

And what batch renorm keeps at the smallest batch.

Each sentence is built from the paired comparisons' rows (:mod:`bnstudy.studies.batch_size.paired`)
in every variant the numbers allow (above, below or across zero; one batch size or several);
:func:`bnstudy.studies.batch_size.macros.macros` puts them in the paper's macros. The intervals they
quote are each comparison's family's (``ci_low_adj``, ``ci_high_adj``: at the declared family's
level), and the sentences name them as the family does (:attr:`bnstudy.evaluation.families.Family.tag`:
``adjusted`` or ``unadjusted``).
"""

from __future__ import annotations

import pandas as pd

from bnstudy.evaluation.families import Family
from bnstudy.paper import latex
from bnstudy.paper.latex import points, points_interval, signed_points, words

REMEDY_NAMES = {
    "cumulative_vs_ema": "the cumulative average",
    "precise_bn_vs_ema": "PreciseBN",
    "exact_vs_ema": "the exact statistics",
}


def train_mode_loss_clause(inference: dict, training: dict) -> str:
    """At how many batch sizes batch normalisation's mean accuracy in training mode lies below that in
    inference mode (``{batch size: mean over seeds}``), compared at the three decimals the paper
    prints them with, so that no size whose two means print alike (0.854 and 0.854) is counted below;
    such sizes are named as level with it to three decimals."""
    shown = {b: (latex.fmt(training[b], 3), latex.fmt(inference[b], 3)) for b in inference}
    below = [b for b, (t, i) in shown.items() if float(t) < float(i)]
    level = [str(b) for b, (t, i) in shown.items() if t == i]
    count = "every one" if len(below) == len(inference) else latex.count(len(below))
    tie = f" and level with it to three decimals {latex.at_batches(level)}" if level else ""
    return (
        f"scores below inference mode at {count} of the grid's {len(inference)} batch sizes{tie} in our networks "
        "(means over seeds)"
    )


def remedy_sign_sentence(pair_summary: pd.DataFrame) -> str:
    """In words, at which batch sizes the paired interval of each remedy (minus the trained EMA; at
    its family's level, Bonferroni-adjusted or not as declared) lies wholly above and wholly below
    zero; remedies alike are named together, and one remedy's intervals agree in number with it
    (``the paired intervals of PreciseBN lie``: one interval per batch size)."""

    def sizes(g, above):
        g = g.sort_values("batch_size", kind="stable")
        out = [
            str(int(b)) for b, lo, hi in zip(g.batch_size, g.ci_low_adj, g.ci_high_adj) if (lo > 0 if above else hi < 0)
        ]
        return tuple(out)

    groups: dict[tuple[tuple[str, ...], tuple[str, ...], int], list[str]] = {}
    for name, label in REMEDY_NAMES.items():
        g = pair_summary[pair_summary.comparison == name]
        if len(g):
            groups.setdefault((sizes(g, True), sizes(g, False), len(g)), []).append(label)
    clauses = [
        latex.zero_sentence(f"the paired intervals of {words(labels)}", above, below, total)
        for (above, below, total), labels in groups.items()
    ]
    return "; ".join(clauses) if clauses else "n/a"


def _adjusted(row) -> str:
    """A paired row's mean gain and its family's interval: ``$+0.60$ points [$+0.06$, $+1.14$]``."""
    return f"${signed_points(row.gain)}$ points ${points_interval(row.ci_low_adj, row.ci_high_adj, signed=True)}$"


def side_of(row) -> str:
    """``below``, ``above`` or ``zero``: where a paired row's interval (its family's) lies."""
    return "below" if row.ci_high_adj < 0 else "above" if row.ci_low_adj > 0 else "zero"


STATISTICS = "exact statistics of the training data in place of the running averages"


def recovery_sentence(loss, exact, closed: float, b: int, others=(), *, normalisers: Family, remedies: Family) -> str:
    """What exact statistics recover of batch normalisation's loss to no normaliser at batch ``b``,
    in words that follow the families' intervals (``normalisers``: the family of ``loss``,
    ``remedies``: of ``exact`` and ``others``; each interval named by its family's tag,
    ``adjusted`` or ``unadjusted``): ``loss`` (batch norm minus none) and ``exact``
    (exact statistics minus the trained EMA) are paired rows; ``closed``: the share of the gap the
    exact statistics close; ``others``: ``(name, row, closed)`` of the other recomputations at ``b``
    (the cumulative average, PreciseBN), in the same family of comparisons. A share of the loss is
    named only where the loss's interval lies wholly below zero, and the rest put in the weights (by
    inference) only where the exact statistics' gain lies wholly above zero and leaves a rest. Where
    the exact statistics' interval contains zero but another recomputation's lies wholly above it, that
    one is named: a share of the loss is then shown to lie in the running statistics after all."""
    gain = f"{_adjusted(exact)} ({remedies.tag})"
    if side_of(loss) == "zero":
        return (
            f"At batch {b} the {normalisers.tag} interval of batch normalisation minus no normaliser contains zero, so "
            f"there is no established loss to recover; {STATISTICS} change the accuracy there by {gain}, an "
            f"interval that {latex.verdict(exact.ci_low_adj, exact.ci_high_adj)}"
        )
    if side_of(loss) == "above":
        return (
            f"At batch {b} batch normalisation is ahead of no normaliser (the {normalisers.tag} interval lies wholly "
            f"above zero), so there is no loss to recover; {STATISTICS} change its accuracy by {gain}"
        )
    head = f"{STATISTICS[0].upper()}{STATISTICS[1:]}"
    if side_of(exact) == "zero":
        above = [(name, row, share) for name, row, share in others if side_of(row) == "above"]
        if above:
            name, row, share = max(above, key=lambda o: o[1].gain)
            return (
                f"{head} change the accuracy at batch {b} by {gain}, an interval that contains zero, while "
                f"{name}'s change, {_adjusted(row)} ({remedies.tag} alike), lies wholly above zero: by that "
                f"recomputation a share of the loss ({latex.fmt(share, 0, percent=True)} of it) lies in the "
                "running statistics"
            )
        tried = ""
        if others:
            names = words([name for name, _, _ in others])
            tried = f", and no other recomputation's change ({names}) lies wholly above zero"
        return (
            f"{head} change the accuracy at batch {b} by {gain}, an interval that contains zero{tried}, so no "
            "share of the loss is shown to lie in the running statistics"
        )
    if side_of(exact) == "below":
        return f"{head} lower the accuracy at batch {b} further, by {gain}"
    share = latex.fmt(closed, 0, percent=True)
    within = f"{_adjusted(exact)}, {remedies.tag}"  # inside parentheses: no second pair
    if closed >= 1:
        return f"{head} recover the whole loss at batch {b} ({share} of it; {within})"
    return (
        f"{head} recover {share} of the loss at batch {b} ({within}); as no set of statistics we tried "
        "recovers the rest, we infer, without measuring it directly, that the rest lies in the weights"
    )


def renorm_sentence(at_min, least, closed: float, loss_below: bool, b: int, *, renorm: Family) -> str:
    """Batch renormalisation against batch normalisation, from the paired intervals of its family
    (``renorm``, whose tag names them: ``adjusted`` or ``unadjusted``): at
    the smallest batch ``b`` (``at_min``; "recovers" a share of the loss only where batch norm's
    loss to none and renormalisation's gain both lie wholly beyond zero) and at the batch size of
    its smallest paired difference (``least``), each with the interval's verdict."""
    gain = f"{_adjusted(at_min)} ({renorm.tag})"
    within = f"{_adjusted(at_min)}, {renorm.tag}"  # inside parentheses: no second pair
    side = side_of(at_min)
    if side == "above" and loss_below:
        text = (
            f"Batch renormalisation recovers {latex.fmt(closed, 0, percent=True)} of the loss at batch {b} ({within})"
        )
    elif side == "above":
        text = f"Batch renormalisation is ahead of batch normalisation at batch {b}, by {gain}"
    elif side == "below":
        text = f"Batch renormalisation falls behind batch normalisation at batch {b}, by {gain}"
    else:
        text = (
            f"Batch renormalisation cannot be told apart from batch normalisation at batch {b} ({within}, "
            "an interval that contains zero)"
        )
    if int(least.batch_size) == b:
        return f"{text}; this is its smallest paired difference to batch normalisation"
    text += (
        f"; its smallest paired difference to batch normalisation, at batch {int(least.batch_size)}, is "
        f"{_adjusted(least)} ({renorm.tag}), an interval that {latex.verdict(least.ci_low_adj, least.ci_high_adj)}"
    )
    if side_of(least) == "below":
        text += ": there it loses accuracy"
    return text


# The two normalisers of each normaliser comparison, in words (A, B of A minus B).
COMPARED = {
    "batchnorm_vs_none": ("batch normalisation", "no normaliser"),
    "batchrenorm_vs_batchnorm": ("batch renormalisation", "batch normalisation"),
}


def direction_sentence(name: str, g: pd.DataFrame) -> str:
    """Where every seed puts normaliser A on the same side of B (comparison ``name``; ``g``: its rows of
    the paired summary, one per batch size, with ``seeds``, ``seeds_ahead``, ``seeds_behind``), in
    words: ``every one of the 20 seeds puts batch normalisation below no normaliser at batch 2, and
    above it at batch 64``, ``... below ... at batches 2 and 4``, or ``at no batch size do all 20
    seeds put ... on one side of ...``. A seed whose two networks score alike is on neither side."""
    a, b = COMPARED[name]
    g = g.sort_values("batch_size", kind="stable")
    counts = sorted({int(n) for n in g.seeds})
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    behind = [str(int(s)) for s, k, m in zip(g.batch_size, g.seeds_behind, g.seeds) if k == m]
    ahead = [str(int(s)) for s, k, m in zip(g.batch_size, g.seeds_ahead, g.seeds) if k == m]
    if not behind and not ahead:
        return f"at no batch size do all {n} seeds put {a} on one side of {b}"
    if behind and ahead:
        below, above = latex.at_batches(behind), latex.at_batches(ahead)
        return f"every one of the {n} seeds puts {a} below {b} {below}, and above it {above}"
    side = "below" if behind else "above"
    return f"every one of the {n} seeds puts {a} {side} {b} {latex.at_batches(behind or ahead)}"


def small_effect_sentence(name: str, g: pd.DataFrame, family: Family) -> str:
    """Where an interval of comparison ``name`` (``g``: its rows, one per batch size; ``family``: its
    declared family, whose intervals they are) lies wholly on one side of zero and yet wholly within
    the family's smallest effect, the smallest difference declared to matter (for the family
    ``normalisers`` the controls' equivalence margin): `` Yet the adjusted intervals clear of zero at
    batches 32 and 64 lie wholly within $\\pm1.0$ points ...``, with its leading space (the sign
    sentence before it says on which side); empty where there is no such batch size, or where the
    family declares no smallest effect."""
    a, b = COMPARED[name]
    margin = family.smallest_effect
    if margin is None:
        return ""
    g = g.sort_values("batch_size", kind="stable")
    sizes = [
        str(int(s))
        for s, lo, hi in zip(g.batch_size, g.ci_low_adj, g.ci_high_adj)
        if (hi < 0 and lo > -margin) or (lo > 0 and hi < margin)
    ]
    if not sizes:
        return ""
    intervals = "interval" if len(sizes) == 1 else "intervals"
    verb = "lies" if len(sizes) == 1 else "lie"
    which = " (the equivalence margin)" if family.name == "normalisers" else ""
    return (
        f" Yet the {family.tag} {intervals} clear of zero {latex.at_batches(sizes)} {verb} wholly within "
        f"$\\pm{points(margin, 1)}$ points, the smallest difference declared to matter{which}: there {a} and {b} "
        "differ, but by less than that."
    )
