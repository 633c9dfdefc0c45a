"""Study 2's macros: the numbers the paper's text quotes, as LaTeX macros.

:func:`macros` turns the tables of :mod:`bnstudy.studies.batch_size.summary` (runs,
summary over seeds, distances, paired comparisons, published values) into macro
values; the helpers format points and intervals. The sentences built from them are
:mod:`bnstudy.studies.batch_size.sentences`', the comparison with the published table
:mod:`bnstudy.studies.batch_size.published`'.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.evaluation.families import declared as declared_family
from bnstudy.paper import latex
from bnstudy.paper.latex import points, points_interval, signed_points
from bnstudy.studies.batch_size.paired import family, members
from bnstudy.studies.batch_size.published import published_gain_macros, published_gap_macros
from bnstudy.studies.batch_size.sentences import (
    COMPARED,
    REMEDY_NAMES,
    direction_sentence,
    recovery_sentence,
    remedy_sign_sentence,
    renorm_sentence,
    side_of,
    train_mode_loss_clause,
)

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


def interval(lo, hi, digits=3):
    """An accuracy interval as fractions, each end with the decimals it needs
    (:func:`bnstudy.paper.latex.endpoint`: never ``1.000`` for an end below 1)."""
    f = lambda v: latex.endpoint(v, digits, scale=1.0, bounds=(1.0,))  # noqa: E731
    return f"[{f(lo)}, {f(hi)}]"


def at_batches(sizes: list[str]) -> str:
    """``at batch 2``, ``at batches 2 and 4``, or ``at no batch size`` (:func:`bnstudy.paper.latex.at_batches`)."""
    return latex.at_batches(sizes)


def interval_sign_macros(pair_summary: pd.DataFrame, families: dict) -> dict:
    """Per comparison of the grid (leftover-row comparisons excluded), in words:

    - ``paired<Comparison>AboveSizes``/``BelowSizes``: where the paired interval at its family's
      level (the comparison's batch sizes members of its declared family, ``families``: the config's
      section) lies wholly above / wholly below zero, as ``at batch 2``, ``at batches 2 and 4`` or
      ``at no batch size``; ``...SignSentence``: the same in one clause, the intervals named by
      the family's tag (``the adjusted paired intervals``, ``the unadjusted paired intervals``);
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
            f"the {family(families, name).tag} paired intervals", above, below, len(g)
        )
        if name in COMPARED:  # seed by seed, where every seed agrees in direction
            m[latex.macro_name("paired", name, "direction sentence")] = direction_sentence(name, g)
        least = g.loc[g["gain"].idxmin()]
        stem = ("paired", name, "least")
        m[latex.macro_name(*stem, "gain")] = signed_points(float(least.gain))
        m[latex.macro_name(*stem, "ci")] = points_interval(float(least.ci_low), float(least.ci_high), signed=True)
        m[latex.macro_name(*stem, "adj ci")] = points_interval(least.ci_low_adj, least.ci_high_adj, signed=True)
        m[latex.macro_name(*stem, "adj verdict")] = latex.verdict(least.ci_low_adj, least.ci_high_adj)
        m[latex.macro_name(*stem, "size")] = str(int(least.batch_size))
        m[latex.macro_name(*stem, "better")] = latex.count(least.seeds_a_better)
        m[latex.macro_name(*stem, "worse")] = latex.count(least.seeds_b_better)
    return m


def claim_macros(cell: dict, pair_summary: pd.DataFrame, sizes: list[int], families: dict) -> dict:
    """The abstract's generated claims at the smallest batch size: ``recoverySentence`` and
    ``renormSentence`` (:func:`recovery_sentence`, :func:`renorm_sentence`, worded by the declared
    families, ``families``: the config's section); section 2's
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
        m["recoverySentence"] = recovery_sentence(
            loss,
            exact,
            closed,
            b,
            others,
            normalisers=family(families, "batchnorm_vs_none"),
            remedies=family(families, "exact_vs_ema"),
        )
    renorm, renorm_cell = row.get(("batchrenorm_vs_batchnorm", b)), cell.get(("batchrenorm", b, "inference"))
    if renorm is not None and renorm_cell is not None:
        rows = pair_summary[pair_summary.comparison == "batchrenorm_vs_batchnorm"].sort_values("batch_size")
        least = rows.loc[rows["gain"].idxmin()]
        closed = (renorm_cell.mean - base.mean) / gap if gap != 0 else float("nan")
        m["renormSentence"] = renorm_sentence(
            renorm, least, closed, side_of(loss) == "below", b, renorm=family(families, "batchrenorm_vs_batchnorm")
        )
        m["pairedBatchrenormVsBatchnormMinDifference"] = latex.difference_clause(
            renorm.gain, renorm.ci_low_adj, renorm.ci_high_adj, "batch normalisation"
        )  # the family's interval: the one verdict the comparison gets (table, abstract and text)
    return m


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
      training mode scores below its inference mode, at the three decimals the cells print
      (:func:`~bnstudy.studies.batch_size.sentences.train_mode_loss_clause`)."""
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
        m["trainModeLossClause"] = train_mode_loss_clause(bn, train)
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


def share_of_gap(share: float) -> str:
    """A share of the gap in percent for running text: ``16\\%``; a remedy that widens the gap
    has a negative share, its minus set as one (``$-$4\\%``; plain ``-4`` sets a hyphen), and a
    nonzero share that rounds to 0 keeps the decimals its sign needs (``$-$0.1\\%``)."""
    text = latex.endpoint(share, 0) + "\\%"  # a nonzero share never prints as 0 (latex.endpoint)
    return f"$-${text[1:]}" if text.startswith("-") else text


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
                share_of_gap((renorm.mean - base.mean) / gap) if gap > 0 else "n/a"
            )
        for mode in REMEDIES:
            r = cell.get(("batchnorm", b, mode))
            if r is not None:
                m[latex.macro_name("gain", mode, end)] = points(r.mean - base.mean)
                m[latex.macro_name("gapClosed", mode, end)] = (
                    share_of_gap((r.mean - base.mean) / gap) if gap > 0 else "n/a"
                )
    return m


def paired_end_macros(pair_summary: pd.DataFrame, sizes: list[int]) -> dict:
    """Paired comparisons at the two ends: mean gain, paired interval (and its family's, ``AdjCi``,
    with its verdict), rows won and lost, McNemar seeds."""
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
                m[latex.macro_name(*stem, "better")] = latex.count(p.seeds_a_better)
                m[latex.macro_name(*stem, "worse")] = latex.count(p.seeds_b_better)
    return m


def keep_macros(pair_summary: pd.DataFrame, pairs) -> dict:
    """Keeping the leftover rows minus dropping them, paired, with the interval of its family
    (``last_batch``: one batch size, so Bonferroni leaves it the unadjusted one); one test row in
    points."""
    m = {}
    for p in pair_summary[pair_summary.comparison.str.endswith("keep_vs_drop")].itertuples(index=False):
        stem = ("paired", p.comparison)
        m[latex.macro_name(*stem, "gain")] = signed_points(p.gain)
        m[latex.macro_name(*stem, "ci")] = points_interval(p.ci_low_adj, p.ci_high_adj, signed=True)
        m[latex.macro_name(*stem, "won")] = str(p.a_only)
        m[latex.macro_name(*stem, "lost")] = str(p.b_only)
        m["keepBatchSize"] = str(p.batch_size)
    if len(pairs):
        m["rowPoints"] = latex.fmt(1 / int(pairs["rows"].iloc[0]) * 100, 2)
    return m


def ema_macros(runs, updates, momentum: float) -> dict:
    """The initial value's weight after the fewest updates of any batch-norm network, and the
    largest change of accuracy from debiasing.

    The weight ``(1 - momentum) ** fewest`` is taken in decimal arithmetic (30 digits, in software: the
    same on every machine): a double underflows to zero below about 1e-308, which the Fashion MLP's
    8,580 updates reach (0.9 ** 8580 is about 2.5e-393), and the paper printed "0.0 x 10^0"."""
    from decimal import Decimal, localcontext

    m = {}
    if len(updates):
        fewest = int(updates["updates"].min())
        with localcontext() as context:
            context.prec = 30
            weight = Decimal(1.0 - momentum) ** fewest
        mantissa, exponent = f"{weight:.1e}".split("e")
        m["emaFewestUpdates"] = latex.fmt(fewest)
        m["emaInitialWeightFewest"] = f"\\ensuremath{{{mantissa}\\times 10^{{{int(exponent)}}}}}"
        debiased = runs[runs["mode"] == "debiased_ema"].set_index(["batch_size", "seed"])["accuracy"]
        trained = runs[(runs["mode"] == "inference") & (runs["normaliser"] == "batchnorm")].set_index(
            ["batch_size", "seed"]
        )["accuracy"]
        largest = float((debiased - trained.reindex(debiased.index)).abs().max())
        m["debiasedLargestChange"] = points(largest)
        m |= debiased_words(largest)
    return m


def debiased_words(largest: float) -> dict:
    """The section's lead on debiasing (``debiasedLead``) and its closing clause
    (``debiasedChangeClause``): where no network's accuracy moves (``largest`` 0), said in words,
    not as a change of 0.0 points; else the largest change, with no claim that nothing changed."""
    if largest == 0:
        return {"debiasedLead": "Debiasing the EMA changes nothing here",
                "debiasedChangeClause": "debiasing leaves every network's test accuracy as it was"}  # fmt: skip
    change = f"the largest change of accuracy from debiasing over all networks is {points(largest)} points"
    return {"debiasedLead": "Debiasing the EMA changes some networks' accuracy", "debiasedChangeClause": change}


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


# the gains table's comparisons by family, in its order: how its caption names each
GAIN_FAMILIES = (
    ("normalisers", "batch normalisation minus none"),
    ("renorm", "batch renormalisation minus batch normalisation"),
    ("remedies", "each remedy minus the trained EMA"),
)


def gain_families_clause(pair_summary: pd.DataFrame, families: dict) -> str:
    """The gains table's caption on the level of its intervals: the comparisons whose families are
    adjusted alike named together, each adjustment said once (``batch normalisation minus none,
    batch renormalisation minus batch normalisation and each remedy minus the trained EMA, each
    Bonferroni-adjusted over the 6 batch sizes``; groups of another adjustment after a semicolon)."""
    m = members(pair_summary)
    groups: dict[str, list[str]] = {}
    for name, words in GAIN_FAMILIES:
        if name in m:
            groups.setdefault(declared_family(families, name).phrase(m[name]), []).append(words)
    parts = [f"{latex.words(names)}{', each' if len(names) > 1 else ''} {phrase}" for phrase, names in groups.items()]
    return "; ".join(parts)


def macros(
    runs, summary, updates, distance_summary, pairs, pair_summary, published, momentum, confidence, families
) -> dict:
    """Every number the section quotes, as ``{name: text}`` (``families``: the config's declared
    families of comparisons, whose tags name the intervals in the sentences)."""
    cell = {(r.normaliser, int(r.batch_size), r.mode): r for r in summary.itertuples(index=False)}
    sizes = sorted(runs["batch_size"].unique().tolist())
    m = setting_macros(runs, pairs, published, sizes, confidence)
    m |= cell_macros(cell, sizes)
    m |= gap_closed_macros(cell, sizes)
    m |= paired_end_macros(pair_summary, sizes)
    m |= interval_sign_macros(pair_summary, families)
    m["gainFamiliesClause"] = gain_families_clause(pair_summary, families)
    m["remedySignSentence"] = remedy_sign_sentence(pair_summary)
    m |= keep_macros(pair_summary, pairs)
    m |= ema_macros(runs, updates, momentum)
    m |= distance_macros(distance_summary, sizes)
    m |= published_gain_macros(summary, cell, published, pair_summary)
    m |= published_gap_macros(cell, published, int(runs["seed"].nunique()), sizes)
    m |= claim_macros(cell, pair_summary, sizes, families)
    m |= discussion_macros(cell, sizes)
    return m
