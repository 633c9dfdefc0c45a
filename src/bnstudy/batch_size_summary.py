"""Study 2's summary: tidy tables over seeds, paired comparisons, macros and LaTeX tables.

The rule script ``summarise_batch_size.py`` only reads the evaluation outputs and
writes what :func:`summarise` returns. Means and standard deviations over seeds are
:func:`bnstudy.stats.summarise_over_seeds` (sums correctly rounded); comparisons
are paired by seed (:mod:`bnstudy.paired`); distances are averaged over seeds in
seed order (:func:`bnstudy.evaluation.mean_in_order`); the EMA weight ``keep**u``
is :func:`bnstudy.fixedmath.powi`. Nothing here depends on the CPU.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import evaluation, latex, paired, stats
from .fixedmath import powi

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


def kept(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of networks trained with the leftover rows kept, their ``mode`` marked ``<mode>_keep``
    so that they pair with the grid's networks of the same normaliser, batch size and seed."""
    return table.assign(mode=table["mode"] + "_keep")


def tidy_runs(cells: list[pd.DataFrame], remedy_runs: list[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per network and evaluation mode, sorted; and each batch-norm network's update count."""
    updates = (
        pd.concat(remedy_runs, ignore_index=True)[["batch_size", "seed", "updates"]].drop_duplicates()
        if remedy_runs
        else pd.DataFrame(columns=["batch_size", "seed", "updates"])
    )
    runs = pd.concat(cells + [r[KEYS + ["accuracy"]] for r in remedy_runs], ignore_index=True)
    return runs.sort_values(KEYS, kind="stable").reset_index(drop=True), updates


def summarise_distances(distances: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds (in seed order) of each distance, per normaliser, batch size, statistics and layer."""
    distances = distances.sort_values(DISTANCE_KEYS + ["seed"], kind="stable")
    return pd.DataFrame(
        [
            dict(zip(DISTANCE_KEYS, key))
            | {c: evaluation.mean_in_order(g[c]) for c in ("mean_distance", "var_distance")}
            for key, g in distances.groupby(DISTANCE_KEYS, sort=True)
        ],
        columns=DISTANCE_KEYS + ["mean_distance", "var_distance"],
    )


def points(v, digits=1):
    return latex.fmt(100 * v, digits) if v is not None and np.isfinite(v) else "n/a"


def signed_points(v, digits=2):
    return f"{100 * v:+.{digits}f}" if v is not None and np.isfinite(v) else "n/a"


def interval(lo, hi, digits=3):
    return f"[{latex.fmt(lo, digits)}, {latex.fmt(hi, digits)}]"


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def standard_error_of_difference(sd_a: float, sd_b: float, seeds: int) -> float:
    """Standard error of a difference of two independent means of ``seeds`` values each,
    from the two cells' own standard deviations: ``sqrt(sd_a^2/n + sd_b^2/n)``."""
    return math.sqrt(math.fsum([sd_a * sd_a / seeds, sd_b * sd_b / seeds]))


def interval_sign_macros(pair_summary: pd.DataFrame) -> dict:
    """Per comparison of the grid (leftover-row comparisons excluded), in words:

    - ``paired<Comparison>AboveSizes``/``BelowSizes``: the batch sizes whose paired interval
      lies wholly above / wholly below zero (``no batch size`` if none);
    - ``paired<Comparison>Least{Gain,Ci,Size,Better,Worse}``: the batch size with the smallest
      mean gain (the first of equals), its gain and interval in signed points, and the seeds whose
      McNemar test favours A / B there."""
    m = {}
    grid = pair_summary[~pair_summary.comparison.str.endswith("keep_vs_drop")]
    for name, g in grid.groupby("comparison", sort=True):
        g = g.sort_values("batch_size", kind="stable")
        above = [str(int(b)) for b, lo in zip(g.batch_size, g.ci_low) if lo > 0]
        below = [str(int(b)) for b, hi in zip(g.batch_size, g.ci_high) if hi < 0]
        m[latex.macro_name("paired", name, "above sizes")] = _words(above) if above else "no batch size"
        m[latex.macro_name("paired", name, "below sizes")] = _words(below) if below else "no batch size"
        least = g.loc[g["gain"].idxmin()]
        stem = ("paired", name, "least")
        m[latex.macro_name(*stem, "gain")] = signed_points(float(least.gain))
        lo, hi = signed_points(float(least.ci_low)), signed_points(float(least.ci_high))
        m[latex.macro_name(*stem, "ci")] = f"[{lo}, {hi}]"
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
    """In words, at which batch sizes the paired interval of each remedy (minus the trained
    EMA) lies wholly above and wholly below zero; remedies alike are named together."""

    def sizes(g, above):
        g = g.sort_values("batch_size", kind="stable")
        out = [str(int(b)) for b, lo, hi in zip(g.batch_size, g.ci_low, g.ci_high) if (lo > 0 if above else hi < 0)]
        return f"at batch {_words(out)}" if out else "at no batch size"

    groups: dict[tuple[str, str], list[str]] = {}
    for name, label in REMEDY_NAMES.items():
        g = pair_summary[pair_summary.comparison == name]
        if len(g):
            groups.setdefault((sizes(g, True), sizes(g, False)), []).append(label)
    clauses = [
        f"{'the paired intervals' if len(labels) > 1 else 'the paired interval'} of {_words(labels)} "
        f"{'lie' if len(labels) > 1 else 'lies'} above zero {above} and below zero {below}"
        for (above, below), labels in groups.items()
    ]
    return "; ".join(clauses) if clauses else "n/a"


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


def macros(runs, summary, updates, distance_summary, pairs, pair_summary, published, momentum, confidence) -> dict:
    """Every number the section quotes, as ``{name: text}``."""
    cell = {(r.normaliser, int(r.batch_size), r.mode): r for r in summary.itertuples(index=False)}
    sizes = sorted(runs["batch_size"].unique().tolist())
    m = {
        "gridSeeds": str(runs["seed"].nunique()),
        "publishedSeeds": str(published["seeds"]),
        "batchMin": str(sizes[0]),
        "batchMax": str(sizes[-1]),
        "gridBatchCount": str(len(sizes)),
        "evalConfidence": f"{100 * confidence:g}\\%",
        "mcnemarAlpha": f"{1 - confidence:.2g}",
        "testRowsEvaluated": latex.fmt(int(pairs["rows"].iloc[0])) if len(pairs) else "n/a",
    }
    for (norm, b, mode), r in cell.items():
        m[latex.macro_name("acc", mode, norm, "b", b)] = latex.fmt(r.mean)
        m[latex.macro_name("sd", mode, norm, "b", b)] = latex.fmt(r.sd)
        for end, size in (("min", sizes[0]), ("max", sizes[-1])):
            if b == size:
                m[latex.macro_name("acc", mode, norm, end)] = latex.fmt(r.mean)
                m[latex.macro_name("ci", mode, norm, end)] = interval(r.ci_low, r.ci_high)
                m[latex.macro_name("sd", mode, norm, end)] = latex.fmt(r.sd)
                m[latex.macro_name("sdPoints", mode, norm, end)] = points(r.sd, 1)

    # how much of batch norm's inference-mode gap to no normaliser each remedy closes
    for end, b in (("min", sizes[0]), ("max", sizes[-1])):
        base, ref = cell.get(("batchnorm", b, "inference")), cell.get(("none", b, "inference"))
        if base is None or ref is None:
            continue
        gap = ref.mean - base.mean
        m[latex.macro_name("gap", end)] = points(gap)
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

    # paired comparisons: mean gain, paired interval, rows won and lost, McNemar seeds
    for p in pair_summary.itertuples(index=False):
        for end, size in (("min", sizes[0]), ("max", sizes[-1])):
            if p.batch_size == size:
                stem = ("paired", p.comparison, end)
                m[latex.macro_name(*stem, "gain")] = signed_points(p.gain)
                m[latex.macro_name(*stem, "ci")] = f"[{signed_points(p.ci_low)}, {signed_points(p.ci_high)}]"
                m[latex.macro_name(*stem, "won")] = str(p.a_only)
                m[latex.macro_name(*stem, "lost")] = str(p.b_only)
                m[latex.macro_name(*stem, "better")] = str(p.seeds_a_better)
                m[latex.macro_name(*stem, "worse")] = str(p.seeds_b_better)
    m |= interval_sign_macros(pair_summary)
    m["remedySignSentence"] = remedy_sign_sentence(pair_summary)
    for p in pair_summary[pair_summary.comparison.str.endswith("keep_vs_drop")].itertuples(index=False):
        stem = ("paired", p.comparison)
        m[latex.macro_name(*stem, "gain")] = signed_points(p.gain)
        m[latex.macro_name(*stem, "ci")] = f"[{signed_points(p.ci_low)}, {signed_points(p.ci_high)}]"
        m[latex.macro_name(*stem, "won")] = str(p.a_only)
        m[latex.macro_name(*stem, "lost")] = str(p.b_only)
        m["keepBatchSize"] = str(p.batch_size)
    if len(pairs):
        m["rowPoints"] = latex.fmt(1 / int(pairs["rows"].iloc[0]) * 100, 2)

    # the initial value's weight after the fewest updates of any batch-norm network
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

    # distances of the trained EMA and PreciseBN to the exact statistics, layer 2, smallest/largest batch
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

    # the seed spread against the published gains, from each cell's own standard deviation
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
    m["publishedGainSizes"] = _words([str(b) for b in sorted(claimed)])
    se = []
    for b in sorted(claimed):
        bn, no = cell.get(("batchnorm", b, "inference")), cell.get(("none", b, "inference"))
        if bn is not None and no is not None:
            s = standard_error_of_difference(bn.sd, no.sd, int(published["seeds"]))
            se.append(
                f"{points(s, 2)} points at batch {b} (seed standard deviations "
                f"{points(bn.sd, 2)} and {points(no.sd, 2)})"
            )
    m["seDiffPublishedSeedsList"] = _words(se) if se else "n/a (none of those batch sizes is in our grid)"
    in_se = []
    for b in sorted(claimed):
        bn, no = cell.get(("batchnorm", b, "inference")), cell.get(("none", b, "inference"))
        if bn is not None and no is not None:
            s = standard_error_of_difference(bn.sd, no.sd, int(published["seeds"]))
            unit = " such standard errors" if not in_se else ""
            in_se.append(f"{latex.fmt(claimed[b] / s, 1) if s > 0 else 'n/a'}{unit} at batch {b}")
    m["publishedGainInSeList"] = _words(in_se) if in_se else "n/a"
    gains = pair_summary[pair_summary.comparison == "batchnorm_vs_none"]
    compared = gains[gains.batch_size.isin(list(claimed))]
    m["gainCompared"] = str(len(compared))
    m["gainComparedExcludingZero"] = str(int(((compared.ci_low > 0) | (compared.ci_high < 0)).sum()))
    m["gainComparedSizes"] = ", ".join(str(int(b)) for b in sorted(compared.batch_size)) or "none"
    m["gainsExcludingZero"] = str(int(((gains.ci_low > 0) | (gains.ci_high < 0)).sum()))
    m["gainsCompared"] = str(len(gains))

    # how far our cells lie from the published table, in points and in seed standard deviations
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
        seeds = int(runs["seed"].nunique())
        # their mean of published["seeds"] seeds minus ours of `seeds`, both with our seed sd
        se = float(worst.sd) * math.sqrt(math.fsum([1 / int(published["seeds"]), 1 / seeds]))
        m["pubGapLargestInSe"] = latex.fmt(abs(float(worst.gap)) / se, 1) if se > 0 else "n/a"
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
            se_min = float(r.sd) * math.sqrt(math.fsum([1 / int(published["seeds"]), 1 / seeds]))
            m["pubGapBatchnormMinInSe"] = latex.fmt(abs(float(r.gap)) / se_min, 1) if se_min > 0 else "n/a"
    bn = gaps[(gaps.normaliser == "batchnorm") & (gaps["mode"] == "inference")] if len(gaps) else gaps
    for r in bn.itertuples(index=False) if len(bn) else []:
        m[latex.macro_name("pub", "batchnorm", "b", r.batch_size)] = latex.fmt(float(r.published))
    return m


def tables(runs, summary, distance_summary, pair_summary, published, confidence) -> dict[str, tuple]:
    """``{name: (header, rows, align, comment)}`` for :func:`bnstudy.latex.write_table`."""
    cell = {(r.normaliser, int(r.batch_size), r.mode): r for r in summary.itertuples(index=False)}
    sizes = sorted(runs["batch_size"].unique().tolist())

    def ours(norm, b, mode):
        r = cell.get((norm, b, mode))
        return "--" if r is None else f"{r.mean:.3f} $\\pm$ {latex.fmt(r.sd)}"

    def theirs(key, b):
        v = published[key].get(b)
        return "--" if v is None else f"{v:.3f}"

    out = {}
    rows = [
        [
            str(b),
            ours("none", b, "inference"),
            theirs("none", b),
            ours("batchnorm", b, "inference"),
            theirs("batchnorm", b),
            ours("batchnorm", b, "training"),
            theirs("batchnorm_training_mode", b),
        ]
        for b in sizes
    ]
    out["table"] = (
        ["batch", "none", "publ.", "batch norm", "publ.", "BN, training mode", "publ."],
        rows,
        "rllllll",
        "Study 2: ours (mean $\\pm$ sd over seeds) beside the published values",
    )

    rows = [
        [str(b)] + [ours("batchnorm", b, m) for m, _ in REMEDY_COLUMNS] + [ours("none", b, "inference")] for b in sizes
    ]
    out["remedies_table"] = (
        ["batch"] + [h for _, h in REMEDY_COLUMNS] + ["none"],
        rows,
        "r" + "l" * (len(REMEDY_COLUMNS) + 1),
        "Batch norm's inference-mode accuracy under each set of running statistics",
    )

    rows = []
    for b in sizes:
        for layer in (1, 2):
            row = [str(b) if layer == 1 else "", str(layer)]
            for name, _ in DISTANCE_COLUMNS:
                d = distance_summary[
                    (distance_summary.batch_size == b)
                    & (distance_summary.statistics == name)
                    & (distance_summary.layer == layer)
                ]
                row.append(
                    "--"
                    if d.empty
                    else f"{latex.fmt(float(d.mean_distance.iloc[0]))} / {latex.fmt(float(d.var_distance.iloc[0]))}"
                )
            rows.append(row)
    out["distance_table"] = (
        ["batch", "layer"] + [h for _, h in DISTANCE_COLUMNS],
        rows,
        "rr" + "l" * len(DISTANCE_COLUMNS),
        "Distance to the exact training-half statistics: mean shift / variance log-ratio (RMS)",
    )

    rows = []
    order = {name: i for i, (name, _, _) in enumerate(paired.COMPARISONS)}
    ordered = pair_summary.assign(_o=pair_summary.comparison.map(order)).sort_values(["_o", "batch_size"])
    previous = None
    for p in ordered.itertuples(index=False):
        pub = "--"
        if p.comparison == "batchnorm_vs_none":
            a, b = published["batchnorm"].get(p.batch_size), published["none"].get(p.batch_size)
            pub = "--" if a is None or b is None else f"{100 * (a - b):+.1f}"
        rows.append(
            [
                paired.LABELS[p.comparison] if p.comparison != previous else "",
                str(p.batch_size),
                signed_points(p.gain),
                f"[{signed_points(p.ci_low)}, {signed_points(p.ci_high)}]",
                p.net_rows,
                f"{p.a_only} / {p.b_only}",
                f"{p.seeds_a_better} / {p.seeds_b_better}",
                pub,
            ]
        )
        previous = p.comparison
    conf = f"{100 * confidence:g}\\%"
    out["gain_table"] = (
        [
            "comparison",
            "batch",
            "gain",
            f"paired {conf} interval",
            "net rows per seed",
            "won / lost",
            "McNemar",
            "publ.",
        ],
        rows,
        "lrrlllll",
        "Paired differences in inference-mode accuracy, points; rows; McNemar seeds",
    )
    return out


def summarise(cells, remedy_runs, distances, correct, published, momentum, confidence) -> dict:
    """Everything the rule writes: tidy tables, JSON summary, macros and LaTeX tables."""
    runs, updates = tidy_runs(cells, remedy_runs)
    summary = stats.summarise_over_seeds(runs, ["normaliser", "batch_size", "mode"], "accuracy", confidence)
    distance_summary = summarise_distances(distances)
    pairs = paired.per_seed(runs, correct)
    pair_summary = paired.summarise(pairs, confidence)
    return {
        "runs": runs,
        "summary_table": summary,
        "summary": evaluation.summary_json(summary),
        "distances": distances.sort_values(DISTANCE_KEYS + ["seed"], kind="stable"),
        "distance_summary": distance_summary,
        "paired": pairs,
        "gains": pair_summary,
        "macros": macros(
            runs, summary, updates, distance_summary, pairs, pair_summary, published, momentum, confidence
        ),
        "tables": tables(runs, summary, distance_summary, pair_summary, published, confidence),
    }
