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
from bnstudy.evaluation.families import declared
from bnstudy.evaluation.means import mean_in_order
from bnstudy.paper import latex
from bnstudy.paper.latex import signed_points
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


def math(number: str) -> str:
    """A signed number of a table cell in math mode, so that its minus is a minus (in text mode
    ``-0.62`` sets a hyphen)."""
    return f"${number}$"


def math_interval(lo, hi) -> str:
    """A signed interval in points (:func:`bnstudy.paper.latex.points_interval`), each end in math
    mode; :data:`bnstudy.paper.latex.ALIKE` for a degenerate one."""
    if latex.degenerate(lo, hi):
        return latex.ALIKE
    return f"[{math(signed_points(lo))}, {math(signed_points(hi))}]"


def _tags(pair_summary: pd.DataFrame, families: dict) -> dict[str, str]:
    """``{comparison: tag}``: how each comparison's family names its intervals."""
    return {name: paired.family(families, name).tag for name in dict.fromkeys(pair_summary.comparison)}


def gain_table(pair_summary: pd.DataFrame, published: dict, confidence: float, families: dict) -> tuple:
    """Every paired difference: gain, its paired interval at its family's level (the interval every
    verdict about the comparison reads; its members: the comparison's batch sizes), the standardised
    effect d_z, the seeds on each side, rows won and lost, McNemar seeds, and the published
    difference (batch norm minus none only). The header names the intervals by the families' tag
    (``adjusted 95\\% interval``) where every family of the table shares it; otherwise each
    comparison's label carries its family's (``BN $-$ none (unadjusted)``)."""
    tags = _tags(pair_summary, families)
    common = set(tags.values())
    rows = []
    order = {name: i for i, (name, _, _) in enumerate(paired.COMPARISONS)}
    ordered = pair_summary.assign(_o=pair_summary.comparison.map(order)).sort_values(["_o", "batch_size"])
    previous = None
    for p in ordered.itertuples(index=False):
        pub = "--"
        if p.comparison == "batchnorm_vs_none":
            a, b = published["batchnorm"].get(p.batch_size), published["none"].get(p.batch_size)
            pub = "--" if a is None or b is None else math(signed_points(a - b, 1))
        rows.append(
            [
                _label(p.comparison, tags, len(common) > 1) if p.comparison != previous else "",
                str(p.batch_size),
                math(signed_points(p.gain)),
                math_interval(p.ci_low_adj, p.ci_high_adj),
                dz_text(p.effect_dz),
                f"{p.seeds_ahead} / {p.seeds_behind} of {p.seeds}",
                f"{p.a_only} / {p.b_only}",
                f"{p.seeds_a_better} / {p.seeds_b_better}",
                pub,
            ]
        )
        previous = p.comparison
    conf = f"{100 * confidence:g}\\%"
    tag = f"{next(iter(common))} " if len(common) == 1 else ""
    described = {
        "adjusted": "Bonferroni-adjusted intervals",
        "unadjusted": "unadjusted intervals (exploratory)",
        "": "intervals adjusted or not as each family is declared",
    }[tag.strip()]
    return (
        [
            "comparison",
            "batch",
            "gain",
            f"{tag}{conf} interval",
            "$d_z$",
            "seeds $+$ / $-$",
            "won / lost",
            "McNemar",
            "publ.",
        ],
        rows,
        "lrrlrllll",
        f"Paired differences in inference-mode accuracy, points, with {described}; "
        "effect d_z; seeds ahead / behind; rows; McNemar seeds",
    )


def _label(comparison: str, tags: dict[str, str], mixed: bool) -> str:
    """A comparison's label in the gains table, with its family's tag where the table's families differ in it."""
    return f"{paired.LABELS[comparison]} ({tags[comparison]})" if mixed else paired.LABELS[comparison]


def tables(runs, summary, distance_summary, pair_summary, published, confidence, families) -> dict[str, tuple]:
    """``{name: (header, rows, align, comment)}`` for :func:`bnstudy.paper.latex.write_table`."""
    cell = {(r.normaliser, int(r.batch_size), r.mode): r for r in summary.itertuples(index=False)}
    sizes = sorted(runs["batch_size"].unique().tolist())
    return {
        "table": published_table(cell, sizes, published),
        "remedies_table": remedies_table(cell, sizes),
        "distance_table": distance_table(distance_summary, sizes),
        "gain_table": gain_table(pair_summary, published, confidence, families),
    }


def small_effect_macros(pair_summary: pd.DataFrame, families: dict) -> dict[str, str]:
    """``paired<Comparison>SmallEffect`` for each normaliser comparison: :func:`small_effect_sentence`,
    against its declared family's smallest effect."""
    return {
        latex.macro_name("paired", name, "small effect"): small_effect_sentence(name, g, paired.family(families, name))
        for name, g in pair_summary.groupby("comparison", sort=True)
        if name in COMPARED
    }


def family_records(pair_summary: pd.DataFrame, tost: pd.DataFrame, confidence: float, families: dict) -> dict:
    """The summary's ``families``: ``{family: record}`` (:meth:`bnstudy.evaluation.families.Family.record`)
    of every family the paired comparisons form, each with its number of members, the batch sizes of
    each of its comparisons (:func:`bnstudy.studies.batch_size.paired.members`); the controls'
    equivalence tests are members of ``normalisers`` too, one per batch size of each control, and
    must agree with it in number."""
    m = paired.members(pair_summary)
    for control, g in tost.groupby("normaliser", sort=True):
        k = int(g.batch_size.nunique())
        if m.setdefault("normalisers", k) != k:
            raise ValueError(
                f"family normalisers: batch norm minus none has {m['normalisers']} batch sizes, "
                f"{control}'s equivalence tests {k} (one family, one m)"
            )
    return {name: declared(families, name).record(confidence, k) for name, k in m.items()}


def summarise(cells, remedy_runs, distances, correct, published, momentum, confidence, families) -> dict:
    """Everything the rule writes: tidy tables, JSON summary, macros and LaTeX tables; ``families``:
    the config's declared families of comparisons (:mod:`bnstudy.evaluation.families`), which give
    each comparison's interval its level and words, and the controls' equivalence tests (:mod:`.equivalence`)
    their level and margin (the family ``normalisers``'s smallest effect)."""
    runs, updates = tidy_runs(cells, remedy_runs)
    summary = stats.summarise_over_seeds(
        runs, ["normaliser", "batch_size", "mode"], "accuracy", confidence, bounded=True
    )
    distance_summary = summarise_distances(distances)
    pairs = paired.per_seed(runs, correct)
    pair_summary = paired.summarise(pairs, confidence, families)
    normalisers = declared(families, "normalisers")
    tost = equivalence.equivalence_rows(runs, confidence, normalisers)
    return {
        "runs": runs,
        "summary_table": summary,
        "summary": estimates.summary_json(summary)
        | {"families": family_records(pair_summary, tost, confidence, families)},
        "distances": distances.sort_values(DISTANCE_KEYS + ["seed"], kind="stable"),
        "distance_summary": distance_summary,
        "paired": pairs,
        "gains": pair_summary,
        "equivalence": tost,
        "macros": macros(
            runs, summary, updates, distance_summary, pairs, pair_summary, published, momentum, confidence, families
        )
        | equivalence.macros(tost, confidence, normalisers)
        | small_effect_macros(pair_summary, families),
        "tables": tables(runs, summary, distance_summary, pair_summary, published, confidence, families),
    }
