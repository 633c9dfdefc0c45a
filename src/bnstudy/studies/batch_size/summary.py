"""Study 2's summary: tidy tables over seeds, paired comparisons and LaTeX tables; the macros
are :mod:`bnstudy.studies.batch_size.macros`'s, with its sentences and its comparison with the
published table (:mod:`~bnstudy.studies.batch_size.sentences`,
:mod:`~bnstudy.studies.batch_size.published`; their names re-exported here).

The rule script ``summarise_batch_size.py`` only reads the evaluation outputs and
writes what :func:`summarise` returns. Means and standard deviations over seeds are
:func:`bnstudy.base.stats.summarise_over_seeds` (sums correctly rounded); comparisons
are paired by seed (:mod:`bnstudy.studies.batch_size.paired`); distances are averaged over seeds in
seed order (:func:`bnstudy.evaluation.means.mean_in_order`); the EMA weight ``keep**u``
is :func:`bnstudy.base.fixedmath.powi`. Nothing here depends on the CPU.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bnstudy.base import stats
from bnstudy.evaluation.means import mean_in_order
from bnstudy.paper import latex
from bnstudy.paper.latex import points_interval, signed_points
from bnstudy.studies.batch_size import equivalence, estimates, paired
from bnstudy.studies.batch_size.macros import (  # noqa: F401 (the summary's names, imported from here by tests and scripts)
    DISTANCE_COLUMNS,
    DISTANCE_KEYS,
    KEYS,
    REMEDIES,
    REMEDY_COLUMNS,
    at_batches,
    interval,
    interval_sign_macros,
    macros,
)
from bnstudy.studies.batch_size.published import (  # noqa: F401 (the summary's names, imported from here by tests and scripts)
    PUBLISHED_COLUMNS,
    published_gaps,
    standard_error_of_difference,
)
from bnstudy.studies.batch_size.sentences import (  # noqa: F401 (the summary's names, imported from here by tests and scripts)
    COMPARED,
    REMEDY_NAMES,
    remedy_sign_sentence,
    small_effect_sentence,
)


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
            dict(zip(DISTANCE_KEYS, key)) | {c: mean_in_order(g[c]) for c in ("mean_distance", "var_distance")}
            for key, g in distances.groupby(DISTANCE_KEYS, sort=True)
        ],
        columns=DISTANCE_KEYS + ["mean_distance", "var_distance"],
    )


def _ours(cell: dict, norm: str, b: int, mode: str) -> str:
    """A cell's mean +- sd over seeds, or ``--`` where the grid has no such cell."""
    r = cell.get((norm, b, mode))
    return "--" if r is None else f"{r.mean:.3f} $\\pm$ {latex.fmt(r.sd)}"


def published_table(cell: dict, sizes: list[int], published: dict) -> tuple:
    """Ours (mean +- sd over seeds) beside the published values, per batch size."""

    def theirs(key, b):
        v = published[key].get(b)
        return "--" if v is None else f"{v:.3f}"

    rows = [
        [
            str(b),
            _ours(cell, "none", b, "inference"),
            theirs("none", b),
            _ours(cell, "batchnorm", b, "inference"),
            theirs("batchnorm", b),
            _ours(cell, "batchnorm", b, "training"),
            theirs("batchnorm_training_mode", b),
        ]
        for b in sizes
    ]
    return (
        ["batch", "none", "publ.", "batch norm", "publ.", "BN, training mode", "publ."],
        rows,
        "rllllll",
        "Study 2: ours (mean $\\pm$ sd over seeds) beside the published values",
    )


def remedies_table(cell: dict, sizes: list[int]) -> tuple:
    """Batch norm's inference-mode accuracy under each set of running statistics, and none's."""
    rows = [
        [str(b)] + [_ours(cell, "batchnorm", b, m) for m, _ in REMEDY_COLUMNS] + [_ours(cell, "none", b, "inference")]
        for b in sizes
    ]
    return (
        ["batch"] + [h for _, h in REMEDY_COLUMNS] + ["none"],
        rows,
        "r" + "l" * (len(REMEDY_COLUMNS) + 1),
        "Batch norm's inference-mode accuracy under each set of running statistics",
    )


def distance_table(distance_summary: pd.DataFrame, sizes: list[int]) -> tuple:
    """Each set of running statistics' distance to the exact ones, per batch size and layer (every
    normalised layer of the network: two in the MLP, one per convolution in the convolutional one)."""
    rows = []
    layers = sorted(int(v) for v in distance_summary.layer.unique())
    for b in sizes:
        for layer in layers:
            row = [str(b) if layer == layers[0] else "", str(layer)]
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
    return (
        ["batch", "layer"] + [h for _, h in DISTANCE_COLUMNS],
        rows,
        "rr" + "l" * len(DISTANCE_COLUMNS),
        "Distance to the exact training-half statistics: mean shift / variance log-ratio (RMS)",
    )


def dz_text(dz: float) -> str:
    """Cohen's d_z with two decimals, signed; ``--`` where it is undefined."""
    if not np.isfinite(dz):
        return "--"
    return f"${dz:+.2f}$"


def gain_table(pair_summary: pd.DataFrame, published: dict, confidence: float) -> tuple:
    """Every paired difference: gain, its Bonferroni-adjusted paired interval (the interval every
    verdict about the comparison reads; family: the comparison's batch sizes), the standardised
    effect d_z, the seeds on each side, rows won and lost, McNemar seeds, and the published
    difference (batch norm minus none only)."""
    rows = []
    order = {name: i for i, (name, _, _) in enumerate(paired.COMPARISONS)}
    ordered = pair_summary.assign(_o=pair_summary.comparison.map(order)).sort_values(["_o", "batch_size"])
    previous = None
    for p in ordered.itertuples(index=False):
        pub = "--"
        if p.comparison == "batchnorm_vs_none":
            a, b = published["batchnorm"].get(p.batch_size), published["none"].get(p.batch_size)
            pub = "--" if a is None or b is None else signed_points(a - b, 1)
        rows.append(
            [
                paired.LABELS[p.comparison] if p.comparison != previous else "",
                str(p.batch_size),
                signed_points(p.gain),
                points_interval(p.ci_low_adj, p.ci_high_adj, signed=True),
                dz_text(p.effect_dz),
                f"{p.seeds_ahead} / {p.seeds_behind} of {p.seeds}",
                f"{p.a_only} / {p.b_only}",
                f"{p.seeds_a_better} / {p.seeds_b_better}",
                pub,
            ]
        )
        previous = p.comparison
    conf = f"{100 * confidence:g}\\%"
    return (
        [
            "comparison",
            "batch",
            "gain",
            f"adjusted {conf} interval",
            "$d_z$",
            "seeds $+$ / $-$",
            "won / lost",
            "McNemar",
            "publ.",
        ],
        rows,
        "lrrlrllll",
        "Paired differences in inference-mode accuracy, points, with Bonferroni-adjusted intervals; "
        "effect d_z; seeds ahead / behind; rows; McNemar seeds",
    )


def tables(runs, summary, distance_summary, pair_summary, published, confidence) -> dict[str, tuple]:
    """``{name: (header, rows, align, comment)}`` for :func:`bnstudy.paper.latex.write_table`."""
    cell = {(r.normaliser, int(r.batch_size), r.mode): r for r in summary.itertuples(index=False)}
    sizes = sorted(runs["batch_size"].unique().tolist())
    return {
        "table": published_table(cell, sizes, published),
        "remedies_table": remedies_table(cell, sizes),
        "distance_table": distance_table(distance_summary, sizes),
        "gain_table": gain_table(pair_summary, published, confidence),
    }


def small_effect_macros(pair_summary: pd.DataFrame, margin: float) -> dict[str, str]:
    """``paired<Comparison>SmallEffect`` for each normaliser comparison: :func:`small_effect_sentence`."""
    return {
        latex.macro_name("paired", name, "small effect"): small_effect_sentence(name, g, margin)
        for name, g in pair_summary.groupby("comparison", sort=True)
        if name in COMPARED
    }


def summarise(cells, remedy_runs, distances, correct, published, momentum, confidence, margin) -> dict:
    """Everything the rule writes: tidy tables, JSON summary, macros and LaTeX tables; ``margin``: the
    declared equivalence margin of the controls against no normaliser (:mod:`.equivalence`)."""
    runs, updates = tidy_runs(cells, remedy_runs)
    summary = stats.summarise_over_seeds(
        runs, ["normaliser", "batch_size", "mode"], "accuracy", confidence, bounded=True
    )
    distance_summary = summarise_distances(distances)
    pairs = paired.per_seed(runs, correct)
    pair_summary = paired.summarise(pairs, confidence)
    tost = equivalence.equivalence_rows(runs, confidence, margin)
    return {
        "runs": runs,
        "summary_table": summary,
        "summary": estimates.summary_json(summary),
        "distances": distances.sort_values(DISTANCE_KEYS + ["seed"], kind="stable"),
        "distance_summary": distance_summary,
        "paired": pairs,
        "gains": pair_summary,
        "equivalence": tost,
        "macros": macros(runs, summary, updates, distance_summary, pairs, pair_summary, published, momentum, confidence)
        | equivalence.macros(tost, confidence)
        | small_effect_macros(pair_summary, margin),
        "tables": tables(runs, summary, distance_summary, pair_summary, published, confidence),
    }
