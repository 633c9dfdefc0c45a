"""Study 2's macros: the numbers the paper's text quotes, as LaTeX macros.

:func:`macros` turns the tables of :mod:`bnstudy.studies.batch_size.summary` (runs,
summary over seeds, distances, paired comparisons, published values) into macro
values; the helpers format points, intervals and the sentences built from them.
"""

from __future__ import annotations

import math

import pandas as pd

from bnstudy.base.fixedmath import powi
from bnstudy.paper import latex
from bnstudy.paper.latex import points, points_interval, signed_points, words

KEYS = ["normaliser", "batch_size", "mode", "seed"]
DISTANCE_KEYS = ["normaliser", "batch_size", "statistics", "layer"]
REMEDIES = ("debiased_ema", "cumulative", "precise_bn", "exact")
REMEDY_COLUMNS = [
    ("inference", "EMA (trained)"),
    ("debiased_ema", "debiased EMA"),
    ("cumulative", "cumulative"),
    ("precise_bn", "PreciseBN"),
    ("exact", "exact"),
]
DISTANCE_COLUMNS = [
    ("ema", "EMA (trained)"),
    ("debiased_ema", "debiased EMA"),
    ("cumulative", "cumulative"),
    ("precise_bn", "PreciseBN"),
]
PUBLISHED_COLUMNS = [
    ("none", "inference", "none"),
    ("batchnorm", "inference", "batchnorm"),
    ("batchnorm", "training", "batchnorm_training_mode"),
]


def interval(lo, hi, digits=3):
    """An accuracy interval as fractions, each end with the decimals it needs
    (:func:`bnstudy.paper.latex.endpoint`: never ``1.000`` for an end below 1)."""
    f = lambda v: latex.endpoint(v, digits, scale=1.0, bounds=(1.0,))  # noqa: E731
    return f"[{f(lo)}, {f(hi)}]"


def standard_error_of_difference(sd_a: float, sd_b: float, seeds: int) -> float:
    """Standard error of a difference of two independent means of ``seeds`` values each,
    from the two cells' own standard deviations: ``sqrt(sd_a^2/n + sd_b^2/n)``."""
    return math.sqrt(math.fsum([sd_a * sd_a / seeds, sd_b * sd_b / seeds]))


def at_batches(sizes: list[str]) -> str:
    """``at batch 2``, ``at batches 2 and 4``, or ``at no batch size`` (:func:`bnstudy.paper.latex.at_batches`)."""
    return latex.at_batches(sizes)


def interval_sign_macros(pair_summary: pd.DataFrame) -> dict:
    """Per comparison of the grid (leftover-row comparisons excluded), in words:

    - ``paired<Comparison>AboveSizes``/``BelowSizes``: where the Bonferroni-adjusted paired
      interval (the comparison's batch sizes one family) lies wholly above / wholly below
      zero, as ``at batch 2``, ``at batches 2 and 4`` or ``at no batch size``;
    - ``paired<Comparison>Least{Gain,Ci,Size,Better,Worse}``: the batch size with the smallest
      mean gain (the first of equals), its gain and interval in signed points, and the seeds whose
      McNemar test favours A / B there."""
    m = {}
    grid = pair_summary[~pair_summary.comparison.str.endswith("keep_vs_drop")]
    for name, g in grid.groupby("comparison", sort=True):
        g = g.sort_values("batch_size", kind="stable")
        above = [str(int(b)) for b, lo in zip(g.batch_size, g.ci_low_adj) if lo > 0]
        below = [str(int(b)) for b, hi in zip(g.batch_size, g.ci_high_adj) if hi < 0]
        m[latex.macro_name("paired", name, "above sizes")] = at_batches(above)
        m[latex.macro_name("paired", name, "below sizes")] = at_batches(below)
        m[latex.macro_name("paired", name, "sign sentence")] = latex.zero_sentence(
            "the adjusted paired intervals", above, below, len(g)
        )
        least = g.loc[g["gain"].idxmin()]
        stem = ("paired", name, "least")
        m[latex.macro_name(*stem, "gain")] = signed_points(float(least.gain))
        m[latex.macro_name(*stem, "ci")] = points_interval(float(least.ci_low), float(least.ci_high), signed=True)
        m[latex.macro_name(*stem, "adj ci")] = points_interval(least.ci_low_adj, least.ci_high_adj, signed=True)
        m[latex.macro_name(*stem, "adj verdict")] = latex.verdict(least.ci_low_adj, least.ci_high_adj)
        m[latex.macro_name(*stem, "size")] = str(int(least.batch_size))
        m[latex.macro_name(*stem, "better")] = str(int(least.seeds_a_better))
        m[latex.macro_name(*stem, "worse")] = str(int(least.seeds_b_better))
    return m


REMEDY_NAMES = {
    "cumulative_vs_ema": "the cumulative average",
    "precise_bn_vs_ema": "PreciseBN",
    "exact_vs_ema": "the exact statistics",
}


def remedy_sign_sentence(pair_summary: pd.DataFrame) -> str:
    """In words, at which batch sizes the Bonferroni-adjusted paired interval of each remedy
    (minus the trained EMA) lies wholly above and wholly below zero; remedies alike are named
    together, and one remedy's intervals agree in number with it (``the paired intervals of
    PreciseBN lie``: one interval per batch size)."""

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
    """A paired row's mean gain and adjusted interval: ``$+0.60$ points [$+0.06$, $+1.14$]``."""
    return f"${signed_points(row.gain)}$ points ${points_interval(row.ci_low_adj, row.ci_high_adj, signed=True)}$"


def _side(row) -> str:
    """``below``, ``above`` or ``zero``: where a paired row's adjusted interval lies."""
    return "below" if row.ci_high_adj < 0 else "above" if row.ci_low_adj > 0 else "zero"


STATISTICS = "exact statistics of the training data in place of the running averages"


def recovery_sentence(loss, exact, closed: float, b: int, others=()) -> str:
    """What exact statistics recover of batch normalisation's loss to no normaliser at batch ``b``,
    in words that follow the adjusted intervals: ``loss`` (batch norm minus none) and ``exact``
    (exact statistics minus the trained EMA) are paired rows; ``closed``: the share of the gap the
    exact statistics close; ``others``: ``(name, row, closed)`` of the other recomputations at ``b``
    (the cumulative average, PreciseBN), in the same family of comparisons. A share of the loss is
    named only where the loss's interval lies wholly below zero, and the rest put in the weights (by
    inference) only where the exact statistics' gain lies wholly above zero and leaves a rest. Where
    the exact statistics' interval contains zero but another recomputation's lies wholly above it, that
    one is named: a share of the loss is then shown to lie in the running statistics after all."""
    gain = f"{_adjusted(exact)} (adjusted)"
    if _side(loss) == "zero":
        return (
            f"At batch {b} the adjusted interval of batch normalisation minus no normaliser contains zero, so "
            f"there is no established loss to recover; {STATISTICS} change the accuracy there by {gain}, an "
            f"interval that {latex.verdict(exact.ci_low_adj, exact.ci_high_adj)}"
        )
    if _side(loss) == "above":
        return (
            f"At batch {b} batch normalisation is ahead of no normaliser (the adjusted interval lies wholly "
            f"above zero), so there is no loss to recover; {STATISTICS} change its accuracy by {gain}"
        )
    head = f"{STATISTICS[0].upper()}{STATISTICS[1:]}"
    if _side(exact) == "zero":
        above = [(name, row, share) for name, row, share in others if _side(row) == "above"]
        if above:
            name, row, share = max(above, key=lambda o: o[1].gain)
            return (
                f"{head} change the accuracy at batch {b} by {gain}, an interval that contains zero, while "
                f"{name}'s change, {_adjusted(row)} (adjusted alike), lies wholly above zero: by that "
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
    if _side(exact) == "below":
        return f"{head} lower the accuracy at batch {b} further, by {gain}"
    share = latex.fmt(closed, 0, percent=True)
    within = f"{_adjusted(exact)}, adjusted"  # inside parentheses: no second pair
    if closed >= 1:
        return f"{head} recover the whole loss at batch {b} ({share} of it; {within})"
    return (
        f"{head} recover {share} of the loss at batch {b} ({within}); as no set of statistics we tried "
        "recovers the rest, we infer, without measuring it directly, that the rest lies in the weights"
    )


def renorm_sentence(at_min, least, closed: float, loss_below: bool, b: int) -> str:
    """Batch renormalisation against batch normalisation, from the adjusted paired intervals: at
    the smallest batch ``b`` (``at_min``; "recovers" a share of the loss only where batch norm's
    loss to none and renormalisation's gain both lie wholly beyond zero) and at the batch size of
    its smallest paired difference (``least``), each with the interval's verdict."""
    gain = f"{_adjusted(at_min)} (adjusted)"
    within = f"{_adjusted(at_min)}, adjusted"  # inside parentheses: no second pair
    side = _side(at_min)
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
        f"{_adjusted(least)} (adjusted), an interval that {latex.verdict(least.ci_low_adj, least.ci_high_adj)}"
    )
    if _side(least) == "below":
        text += ": there it loses accuracy"
    return text


def claim_macros(cell: dict, pair_summary: pd.DataFrame, sizes: list[int]) -> dict:
    """The abstract's generated claims at the smallest batch size: ``recoverySentence`` and
    ``renormSentence`` (:func:`recovery_sentence`, :func:`renorm_sentence`); section 2's
    ``pairedBatchrenormVsBatchnormMinDifference`` (:func:`bnstudy.paper.latex.difference_clause`)."""
    b = sizes[0]
    row = {
        (p.comparison, int(p.batch_size)): p
        for p in pair_summary.itertuples(index=False)
        if not p.comparison.endswith("keep_vs_drop")
    }
    base, ref = cell.get(("batchnorm", b, "inference")), cell.get(("none", b, "inference"))
    loss = row.get(("batchnorm_vs_none", b))
    if base is None or ref is None or loss is None:
        return {}
    gap = ref.mean - base.mean
    m = {}
    exact, exact_cell = row.get(("exact_vs_ema", b)), cell.get(("batchnorm", b, "exact"))
    if exact is not None and exact_cell is not None:
        closed = (exact_cell.mean - base.mean) / gap if gap != 0 else float("nan")
        others = []
        for name, kind in (("cumulative_vs_ema", "cumulative"), ("precise_bn_vs_ema", "precise_bn")):
            other, other_cell = row.get((name, b)), cell.get(("batchnorm", b, kind))
            if other is not None and other_cell is not None:
                share = (other_cell.mean - base.mean) / gap if gap != 0 else float("nan")
                others.append((REMEDY_NAMES[name], other, share))
        m["recoverySentence"] = recovery_sentence(loss, exact, closed, b, others)
    renorm, renorm_cell = row.get(("batchrenorm_vs_batchnorm", b)), cell.get(("batchrenorm", b, "inference"))
    if renorm is not None and renorm_cell is not None:
        rows = pair_summary[pair_summary.comparison == "batchrenorm_vs_batchnorm"].sort_values("batch_size")
        least = rows.loc[rows["gain"].idxmin()]
        closed = (renorm_cell.mean - base.mean) / gap if gap != 0 else float("nan")
        m["renormSentence"] = renorm_sentence(renorm, least, closed, _side(loss) == "below", b)
        m["pairedBatchrenormVsBatchnormMinDifference"] = latex.difference_clause(
            renorm.gain, renorm.ci_low, renorm.ci_high, "batch normalisation"
        )
    return m


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


def setting_macros(runs, pairs, published, sizes: list[int], confidence: float) -> dict:
    """The grid's settings: seeds, batch sizes, confidence, the test rows evaluated."""
    return {
        "gridSeeds": str(runs["seed"].nunique()),
        "publishedSeeds": str(published["seeds"]),
        "batchMin": str(sizes[0]),
        "batchMax": str(sizes[-1]),
        "gridBatchCount": str(len(sizes)),
        "evalConfidence": f"{100 * confidence:g}\\%",
        "mcnemarAlpha": f"{1 - confidence:.2g}",
        "testRowsEvaluated": latex.fmt(int(pairs["rows"].iloc[0])) if len(pairs) else "n/a",
    }


def discussion_macros(cell: dict, sizes: list[int]) -> dict:
    """The discussion's two statements about the grid's means, as they come out (means over seeds,
    inference mode unless named; no intervals, and the sentences say what they compare):

    - ``groupShapeSentence``: whether the grid shows the shape group normalisation was proposed for,
      batch normalisation's accuracy lowest at the smallest batch while group normalisation's varies
      less across batch sizes than batch normalisation's (both must be in the grid);
    - ``trainModeLossClause``: at how many of the grid's batch sizes batch normalisation evaluated in
      training mode scores below its inference mode."""
    m = {}

    def means(norm, mode="inference"):
        return {b: cell[(norm, b, mode)].mean for b in sizes if (norm, b, mode) in cell}

    bn, gn = means("batchnorm"), means("groupnorm")
    if len(bn) == len(gn) == len(sizes) >= 2:
        bn_range, gn_range = max(bn.values()) - min(bn.values()), max(gn.values()) - min(gn.values())
        lowest = min(sizes, key=lambda b: (bn[b], b))
        spans = (
            f"group normalisation's mean accuracy varies by {points(gn_range)} points across the grid's batch "
            f"sizes, batch normalisation's by {points(bn_range)}"
        )
        if lowest == sizes[0] and gn_range < bn_range:
            m["groupShapeSentence"] = (
                "We see the same shape on a far smaller problem (section~\\ref{sec:batch-size}: in inference "
                f"mode batch normalisation's mean accuracy is lowest at batch {sizes[0]}, and {spans})"
            )
        else:
            why = (
                f"batch normalisation's mean accuracy is lowest at batch {lowest}, not at the smallest, {sizes[0]}"
                if lowest != sizes[0]
                else spans
            )
            m["groupShapeSentence"] = (
                "Our grid, a far smaller problem, does not show that shape (section~\\ref{sec:batch-size}: in "
                f"inference mode {why})"
            )
    train = means("batchnorm", "training")
    if bn and len(train) == len(bn):
        below = sum(train[b] < bn[b] for b in bn)
        count = "every one" if below == len(bn) else str(below)
        m["trainModeLossClause"] = (
            f"scores below inference mode at {count} of the grid's {len(bn)} batch sizes in our networks (means "
            "over seeds)"
        )
    return m


def cell_macros(cell: dict, sizes: list[int]) -> dict:
    """Every cell's mean and sd over seeds; at the two ends also its interval, named by the end."""
    m = {}
    for (norm, b, mode), r in cell.items():
        m[latex.macro_name("acc", mode, norm, "b", b)] = latex.fmt(r.mean)
        m[latex.macro_name("sd", mode, norm, "b", b)] = latex.fmt(r.sd)
        for end, size in (("min", sizes[0]), ("max", sizes[-1])):
            if b == size:
                m[latex.macro_name("acc", mode, norm, end)] = latex.fmt(r.mean)
                m[latex.macro_name("ci", mode, norm, end)] = interval(r.ci_low, r.ci_high)
                m[latex.macro_name("sd", mode, norm, end)] = latex.fmt(r.sd)
                m[latex.macro_name("sdPoints", mode, norm, end)] = points(r.sd, 1)
    return m


def gap_closed_macros(cell: dict, sizes: list[int]) -> dict:
    """How much of batch norm's inference-mode gap to no normaliser each remedy closes. Where batch
    norm is not behind at the smallest batch (a gap of zero or less), ``gapAheadMin`` (batch norm
    minus none, signed points) is written as well, and the text says there is no gap to close instead
    of a share of it."""
    m = {}
    for end, b in (("min", sizes[0]), ("max", sizes[-1])):
        base, ref = cell.get(("batchnorm", b, "inference")), cell.get(("none", b, "inference"))
        if base is None or ref is None:
            continue
        gap = ref.mean - base.mean
        m[latex.macro_name("gap", end)] = points(gap)
        if end == "min" and not gap > 0:  # the text reads the smallest batch's
            m[latex.macro_name("gapAhead", end)] = latex.signed_points(base.mean - ref.mean, 1)
        renorm = cell.get(("batchrenorm", b, "inference"))
        if renorm is not None:
            m[latex.macro_name("gapClosed", "batchrenorm", end)] = (
                latex.fmt((renorm.mean - base.mean) / gap, 0, percent=True) if gap > 0 else "n/a"
            )
        for mode in REMEDIES:
            r = cell.get(("batchnorm", b, mode))
            if r is not None:
                m[latex.macro_name("gain", mode, end)] = points(r.mean - base.mean)
                m[latex.macro_name("gapClosed", mode, end)] = (
                    latex.fmt((r.mean - base.mean) / gap, 0, percent=True) if gap > 0 else "n/a"
                )
    return m


def paired_end_macros(pair_summary: pd.DataFrame, sizes: list[int]) -> dict:
    """Paired comparisons at the two ends: mean gain, paired interval (and adjusted, with its
    verdict), rows won and lost, McNemar seeds."""
    m = {}
    for p in pair_summary.itertuples(index=False):
        for end, size in (("min", sizes[0]), ("max", sizes[-1])):
            if p.batch_size == size:
                stem = ("paired", p.comparison, end)
                m[latex.macro_name(*stem, "gain")] = signed_points(p.gain)
                m[latex.macro_name(*stem, "ci")] = points_interval(p.ci_low, p.ci_high, signed=True)
                m[latex.macro_name(*stem, "adj ci")] = points_interval(p.ci_low_adj, p.ci_high_adj, signed=True)
                m[latex.macro_name(*stem, "adj verdict")] = latex.verdict(p.ci_low_adj, p.ci_high_adj)
                m[latex.macro_name("paired", p.comparison, "family")] = str(p.family)
                m[latex.macro_name(*stem, "won")] = str(p.a_only)
                m[latex.macro_name(*stem, "lost")] = str(p.b_only)
                m[latex.macro_name(*stem, "better")] = str(p.seeds_a_better)
                m[latex.macro_name(*stem, "worse")] = str(p.seeds_b_better)
    return m


def keep_macros(pair_summary: pd.DataFrame, pairs) -> dict:
    """Keeping the leftover rows minus dropping them, paired; one test row in points."""
    m = {}
    for p in pair_summary[pair_summary.comparison.str.endswith("keep_vs_drop")].itertuples(index=False):
        stem = ("paired", p.comparison)
        m[latex.macro_name(*stem, "gain")] = signed_points(p.gain)
        m[latex.macro_name(*stem, "ci")] = points_interval(p.ci_low, p.ci_high, signed=True)
        m[latex.macro_name(*stem, "won")] = str(p.a_only)
        m[latex.macro_name(*stem, "lost")] = str(p.b_only)
        m["keepBatchSize"] = str(p.batch_size)
    if len(pairs):
        m["rowPoints"] = latex.fmt(1 / int(pairs["rows"].iloc[0]) * 100, 2)
    return m


def ema_macros(runs, updates, momentum: float) -> dict:
    """The initial value's weight after the fewest updates of any batch-norm network, and the
    largest change of accuracy from debiasing."""
    m = {}
    if len(updates):
        fewest = int(updates["updates"].min())
        weight = powi(1.0 - momentum, fewest)
        mantissa, exponent = f"{weight:.1e}".split("e")
        m["emaFewestUpdates"] = latex.fmt(fewest)
        m["emaInitialWeightFewest"] = f"\\ensuremath{{{mantissa}\\times 10^{{{int(exponent)}}}}}"
        debiased = runs[runs["mode"] == "debiased_ema"].set_index(["batch_size", "seed"])["accuracy"]
        trained = runs[(runs["mode"] == "inference") & (runs["normaliser"] == "batchnorm")].set_index(
            ["batch_size", "seed"]
        )["accuracy"]
        m["debiasedLargestChange"] = points(float((debiased - trained.reindex(debiased.index)).abs().max()))
    return m


def distance_macros(distance_summary: pd.DataFrame, sizes: list[int]) -> dict:
    """Distances of the trained EMA, PreciseBN and the cumulative average to the exact
    statistics, layer 2, smallest and largest batch."""
    m = {}
    for end, b in (("min", sizes[0]), ("max", sizes[-1])):
        for name in ("ema", "precise_bn", "cumulative"):
            d = distance_summary[
                (distance_summary.batch_size == b)
                & (distance_summary.statistics == name)
                & (distance_summary.layer == 2)
            ]
            if len(d):
                m[latex.macro_name("meanDistance", name, "layer", "two", end)] = latex.fmt(
                    float(d.mean_distance.iloc[0]), 3
                )
                m[latex.macro_name("varDistance", name, "layer", "two", end)] = latex.fmt(
                    float(d.var_distance.iloc[0]), 3
                )
    return m


def published_gain_macros(summary, cell: dict, published: dict, pair_summary: pd.DataFrame) -> dict:
    """The seed spread against the published gains, from each cell's own standard deviation,
    and how many of our paired intervals at those batch sizes exclude zero."""
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
    m["gainComparedExcludingZero"] = str(int(((compared.ci_low_adj > 0) | (compared.ci_high_adj < 0)).sum()))
    m["gainComparedSizes"] = words([str(int(b)) for b in sorted(compared.batch_size)]) or "none"
    m["gainsExcludingZero"] = str(int(((gains.ci_low_adj > 0) | (gains.ci_high_adj < 0)).sum()))
    m["gainsCompared"] = str(len(gains))
    return m


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
    """How far our cells lie from the published table, in points and in seed standard deviations."""
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
    bn = gaps[(gaps.normaliser == "batchnorm") & (gaps["mode"] == "inference")] if len(gaps) else gaps
    for r in bn.itertuples(index=False) if len(bn) else []:
        m[latex.macro_name("pub", "batchnorm", "b", r.batch_size)] = latex.fmt(float(r.published))
    return m


def macros(runs, summary, updates, distance_summary, pairs, pair_summary, published, momentum, confidence) -> dict:
    """Every number the section quotes, as ``{name: text}``."""
    cell = {(r.normaliser, int(r.batch_size), r.mode): r for r in summary.itertuples(index=False)}
    sizes = sorted(runs["batch_size"].unique().tolist())
    m = setting_macros(runs, pairs, published, sizes, confidence)
    m |= cell_macros(cell, sizes)
    m |= gap_closed_macros(cell, sizes)
    m |= paired_end_macros(pair_summary, sizes)
    m |= interval_sign_macros(pair_summary)
    m["remedySignSentence"] = remedy_sign_sentence(pair_summary)
    m |= keep_macros(pair_summary, pairs)
    m |= ema_macros(runs, updates, momentum)
    m |= distance_macros(distance_summary, sizes)
    m |= published_gain_macros(summary, cell, published, pair_summary)
    m |= published_gap_macros(cell, published, int(runs["seed"].nunique()), sizes)
    m |= claim_macros(cell, pair_summary, sizes)
    m |= discussion_macros(cell, sizes)
    return m
