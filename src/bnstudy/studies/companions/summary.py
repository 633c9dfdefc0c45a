"""Study 1's summary: the dependence networks and the grid, as tidy tables, macros and LaTeX tables.

The rule script ``companions_summarise.py`` reads the probe counts and writes what
:func:`summarise_all` returns. Per network, design and size the estimates and their
bootstrap intervals over examples come from :func:`bnstudy.studies.companions.estimates.summarise`;
over networks (the dependence networks, one per seed; the grid's seeds) each
estimate's mean and Student-t interval are :func:`bnstudy.base.stats.summarise_over_seeds`
(sums correctly rounded). Nothing here depends on the CPU.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base import stats
from bnstudy.paper import latex
from bnstudy.studies.companions import estimates as companions
from bnstudy.studies.companions import protocol_families as pf
from bnstudy.studies.companions.estimates import MEASURES
from bnstudy.studies.companions.formats import pct_text, with_interval
from bnstudy.studies.companions.macros import (
    components_macros,
    driven_macros,
    end_macros,
    exact_label,
    keep_macros,
    macros,
    network_accuracy_macros,
)
from bnstudy.studies.companions.protocol_tables import per_network, published_members

NETWORK_KEYS = ["normaliser", "train_batch_size", "design", "batch_size"]
ONE_CLASS = (("own_class", "own class"), ("other_class", "another class"), ("any_class", "any class"))


def over_networks(summary: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Mean, sd and interval over networks of every measure, per normaliser, training batch, design, b.

    Every measure is a share, so the interval is the Student-t interval on the logit scale
    (:func:`bnstudy.base.stats.share_interval`), which stays within [0, 1]."""
    parts = [
        stats.summarise_over_seeds(summary, NETWORK_KEYS, value, confidence, bounded=True).assign(measure=value)
        for value in MEASURES
    ]
    return pd.concat(parts, ignore_index=True)


def dependence_table(dep0, published, exact: str = "every companion") -> tuple:
    """The first dependence network beside the published values, every estimate with its interval
    (``exact``: the exact design's row label, :func:`exact_label`)."""

    def theirs(key, b, percent):
        v = published.get(key, {}).get(b)
        return "--" if v is None else (pct_text(v) if percent else latex.fmt(v))

    def ours(r):
        return [
            with_interval(r["flip_rate"], r["flip_rate_ci_low"], r["flip_rate_ci_high"]),
            with_interval(
                r["train_mode_accuracy"],
                r["train_mode_accuracy_ci_low"],
                r["train_mode_accuracy_ci_high"],
                percent=False,
            ),
            with_interval(r["ever_flipped"], r["ever_flipped_ci_low"], r["ever_flipped_ci_high"]),
        ]

    rows = []
    for r in dep0[dep0["design"] == "random"].sort_values("batch_size").to_dict("records"):
        b = int(r["batch_size"])
        f, a, e = ours(r)
        rows.append(
            [
                f"random, $b={b}$",
                f,
                theirs("flip_rate", b, True),
                a,
                theirs("train_mode_accuracy", b, False),
                e,
                theirs("ever_flipped", b, True),
            ]
        )
    for r in dep0[dep0["design"] == "exact"].to_dict("records"):
        rows.append(
            [
                f"{exact}, $b=2$",
                pct_text(r["flip_rate"]),
                "--",
                latex.fmt(r["train_mode_accuracy"]),
                "--",
                pct_text(r["ever_flipped"]),
                "--",
            ]
        )
    published_one_class = pct_text(1 - published["one_class_same_label_b16"])
    for design, label in ONE_CLASS:
        for r in dep0[dep0["design"] == design].to_dict("records"):
            b = int(r["batch_size"])
            f, a, e = ours(r)
            pub = published_one_class if design == "any_class" and b == 16 else "--"
            rows.append([f"{label}, $b={b}$", f, pub, a, "--", e, "--"])
    return (
        ["companions", "flip rate [CI]", "publ.", "train-mode acc. [CI]", "publ.", "ever flipped [CI]", "publ."],
        rows,
        "lllllll",
        "Study 1: first dependence network, ours beside the published values",
    )


def networks_table(dep_networks, exact: str = "every companion") -> tuple:
    """Mean over the dependence networks with a t interval over networks, per design and size."""
    rows = []
    order = {d: i for i, d in enumerate(companions.DESIGNS)}
    keys = dep_networks[["design", "batch_size"]].drop_duplicates()
    keys = keys.assign(_o=keys["design"].map(order)).sort_values(["_o", "batch_size"])
    labels = {"random": "random", "exact": exact} | dict(ONE_CLASS)
    for k in keys.itertuples(index=False):
        cells = []
        for measure in MEASURES:
            r = dep_networks[
                (dep_networks["design"] == k.design)
                & (dep_networks["batch_size"] == k.batch_size)
                & (dep_networks["measure"] == measure)
            ].iloc[0]
            cells.append(with_interval(r["mean"], r["ci_low"], r["ci_high"], measure != "train_mode_accuracy"))
        rows.append([f"{labels[k.design]}, $b={int(k.batch_size)}$", *cells])
    return (
        ["companions", "flip rate [CI]", "train-mode acc. [CI]", "ever flipped [CI]"],
        rows,
        "llll",
        "Study 1: mean over the dependence networks, t interval over networks",
    )


def summarise_all(probes: pd.DataFrame, published: dict, params: dict, against=None) -> dict:
    """Everything the rule writes. ``params``: seed, resamples, confidence, examples_per_class,
    batches_per_example, one_class_batch_size; ``against``: ``(family, members)``, the family of
    published comparisons (``protocol_published``) and its members as the protocols' summary counts
    them, where the config forms it (:func:`published_against`); ``None`` where it does not."""
    summary = pd.DataFrame(companions.summarise(probes, params["resamples"], params["confidence"], params["seed"]))
    over_seeds = over_networks(summary[summary["network"] == "grid"], params["confidence"])
    dep = summary[summary["network"] == "dependence"]
    dep0 = dep[dep["seed"] == dep["seed"].min()]
    dep_networks = over_networks(dep, params["confidence"])
    keep = summary[summary["network"] == "dependence_keep"]
    result = companions.dependence_json(dep0)
    result["networks"] = {
        f"{r.design}_b{int(r.batch_size)}_{r.measure}": {
            "mean": r.mean,
            "ci": [r.ci_low, r.ci_high],
            "networks": int(r.seeds),
        }
        for r in dep_networks.itertuples(index=False)
    }
    all_macros = macros(probes, dep0, dep_networks, over_seeds, published, params, against) | keep_macros(keep)
    sizes = sorted(int(b) for b in dep0.loc[dep0["design"] == "random", "batch_size"])
    all_macros |= components_macros(probes, sizes, params["confidence"])
    all_macros |= driven_macros(dep, sizes)
    all_macros |= network_accuracy_macros(dep, params["confidence"])
    all_macros |= end_macros(all_macros, dep0, over_seeds, int(params["one_class_batch_size"]))
    return {
        "summary_table": summary,
        "grid_table": over_seeds,
        "networks_table": dep_networks,
        "summary": result,
        "macros": all_macros,
        "tables": {
            "table": dependence_table(dep0, published, exact_label(params)),
            "networks_latex": networks_table(dep_networks, exact_label(params)),
        },
    }


def published_against(families: dict, protocol_probes: pd.DataFrame, published: dict):
    """The family of published comparisons as the protocols' summary forms it: ``(family, members)``
    from the declared ``families`` the config forms (``{name: Family}``) and its members counted
    as there (:func:`bnstudy.studies.companions.protocol_tables.published_members`) over
    ``protocol_probes``, the probes of both protocols' dependence networks (the protocols rule's);
    ``None`` where the config forms no such family."""
    family = families.get(pf.PUBLISHED)
    if family is None:
        return None
    return family, published_members(per_network(protocol_probes), protocol_probes, published)
