"""The convolutional network's summary beside the MLP's: cells, paired differences, flip rates,
the JSON summary, macros, the LaTeX table and the side-by-side table the figure draws.

Study 2: per normaliser and batch size the mean over seeds of the inference-mode and the
training-mode test accuracy with Student-t intervals (:func:`bnstudy.base.stats.seed_interval`), and
each normaliser minus none paired by seed (:func:`bnstudy.studies.batch_size.paired.paired_interval`; the same seed
gives both networks the same batch order). Study 1: per training batch size and design the flip
rate of each batch-norm network, then its mean over seeds with a Student-t interval. The MLP's
numbers are read from its own summaries (study 2's JSON, study 1's per-seed table of the grid).
Sums are correctly rounded; nothing here depends on the CPU.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base.stats import adjusted_confidence, seed_interval, share_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import points, points_interval, signed_points, verdict, words
from bnstudy.paper.network_prose import layer_list, layer_sides, layers, number_word
from bnstudy.studies.batch_size.paired import paired_interval

MEASURES = ("inference_accuracy", "train_mode_accuracy")
FLIP_DESIGNS = ("random", "own_class", "other_class", "exact")


def cells(runs: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Per normaliser, batch size and measure (both accuracies and the last epoch's mean batch
    loss): seeds, mean, sd and interval over seeds (seeds in ascending order): Student t for
    the loss, for the accuracies on the logit scale (:func:`bnstudy.base.stats.share_interval`)."""
    out = []
    for (norm, b), g in runs.groupby(["normaliser", "batch_size"], sort=True):
        g = g.sort_values("seed")
        for measure in (*MEASURES, "final_loss"):
            interval = seed_interval if measure == "final_loss" else share_interval
            mean, sd, lo, hi = interval(g[measure].tolist(), confidence)
            out.append(
                {"model": "cnn", "normaliser": norm, "batch_size": int(b), "measure": measure}
                | _stat(len(g), mean, sd, lo, hi)
            )  # noqa: E501
    return pd.DataFrame(out)


def _stat(seeds, mean, sd, lo, hi) -> dict:
    return {"seeds": int(seeds), "mean": float(mean), "sd": float(sd), "ci_low": float(lo), "ci_high": float(hi)}


def against_none(runs: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Per normaliser (not none), batch size and mode: its test accuracy minus none's (inference
    mode), paired by seed; mean, sd and Student-t interval of the differences, and the
    Bonferroni-adjusted interval (``ci_low_adj``, ``ci_high_adj``) with one normaliser's and
    mode's batch sizes as the family (``family``)."""
    none = runs[runs.normaliser == "none"].set_index(["batch_size", "seed"])["inference_accuracy"]
    family = int(runs.batch_size.nunique())
    out = []
    for (norm, b), g in runs[runs.normaliser != "none"].groupby(["normaliser", "batch_size"], sort=True):
        g = g.sort_values("seed")
        base = [none[(int(b), int(s))] for s in g.seed]
        for measure in MEASURES:
            row = paired_interval(g[measure].tolist(), base, confidence)
            adj = paired_interval(g[measure].tolist(), base, adjusted_confidence(confidence, family))
            row |= {"family": family, "ci_low_adj": adj["ci_low"], "ci_high_adj": adj["ci_high"]}
            out.append({"normaliser": norm, "batch_size": int(b), "measure": measure} | row)
    return pd.DataFrame(out)


def flip_cells(rates: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Per training batch size, design and measure (flip rate, training-mode accuracy, share of
    examples ever flipped): mean over the networks (seeds) with a Student-t interval on the logit
    scale (:func:`bnstudy.base.stats.share_interval`)."""
    out = []
    for (b, design), g in rates.groupby(["batch_size", "design"], sort=True):
        g = g.sort_values("seed")
        for measure in ("flip_rate", "train_mode_accuracy", "ever_flipped"):
            mean, sd, lo, hi = share_interval(g[measure].tolist(), confidence)
            out.append(
                {"model": "cnn", "normaliser": "batchnorm", "batch_size": int(b), "measure": f"{design}_{measure}"}
                | _stat(len(g), mean, sd, lo, hi)
            )  # noqa: E501
    return pd.DataFrame(out)


def mlp_rows(batch_size_json: dict, companions_grid: pd.DataFrame, normalisers, batch_sizes) -> pd.DataFrame:
    """The MLP's cells in the same long form: both accuracies per normaliser and batch size (study
    2's summary) and batch norm's flip rates at batches of two, ``random`` and ``exact`` (study 1)."""
    out = []
    for norm in normalisers:
        for b in batch_sizes:
            cell = batch_size_json[norm][str(b)]
            for measure, key in (("inference_accuracy", "inference"), ("train_mode_accuracy", "train_mode")):
                lo, hi = cell[f"{key}_ci"]
                out.append(
                    {"model": "mlp", "normaliser": norm, "batch_size": int(b), "measure": measure}
                    | _stat(cell["seeds"], cell[f"{key}_accuracy"], cell[f"{key}_sd"], lo, hi)
                )  # noqa: E501
    g = companions_grid
    for design in ("random", "exact"):
        for measure in ("flip_rate", "train_mode_accuracy", "ever_flipped"):
            for b in batch_sizes:
                hit = g[(g.normaliser == "batchnorm") & (g.train_batch_size == b) & (g.design == design)]
                hit = hit[(hit.batch_size == 2) & (hit.measure == measure)]
                for r in hit.itertuples():
                    out.append(
                        {
                            "model": "mlp",
                            "normaliser": "batchnorm",
                            "batch_size": int(b),
                            "measure": f"{design}_{measure}",
                        }
                        | _stat(r.seeds, r.mean, r.sd, r.ci_low, r.ci_high)
                    )  # noqa: E501
    return pd.DataFrame(out)


def compare(a: pd.Series, b: pd.Series) -> str:
    """How interval ``a`` (ci_low, ci_high) lies against interval ``b``, in words."""
    if a.ci_high < b.ci_low:
        return "below"
    if a.ci_low > b.ci_high:
        return "above"
    return "overlapping"


# How a companion of the example's own class flips it against one of another class, by how the
# two flip rates' intervals lie (:func:`compare`): words for the paper, no claim the intervals lack.
OWN_AGAINST_OTHER = {
    "above": "more often than",
    "below": "less often than",
    "overlapping": "neither clearly more nor clearly less often than",
}


def trend(first: float, last: float) -> str:
    """The verb for a quantity going from ``first`` to ``last`` as the paper prints them (points)."""
    a, b = points(first), points(last)
    if a == b:
        return "goes"
    return "falls" if last < first else "rises"


def trend_macros(cell: pd.DataFrame, sizes) -> dict:
    """Generated words of the sentences that compare the two ends: how no normaliser's inference
    accuracy moves from the smallest to the largest batch (``convNoneInfTrend``), and how an own-
    class companion flips against another class's at the smallest batch (``convOwnOtherMin``)."""
    m = {}
    ends = [("cnn", "none", b, "inference_accuracy") for b in (sizes[0], sizes[-1])]
    if all(k in cell.index for k in ends):
        m["convNoneInfTrend"] = trend(*(float(cell.loc[k]["mean"]) for k in ends))
    own, other = (("cnn", "batchnorm", sizes[0], f"{d}_flip_rate") for d in ("own_class", "other_class"))
    if own in cell.index and other in cell.index:
        m["convOwnOtherMin"] = OWN_AGAINST_OTHER[compare(cell.loc[own], cell.loc[other])]
    return m


def setting_macros(runs: pd.DataFrame, rates: pd.DataFrame, design: dict, side: int) -> dict:
    """The convolutional study's design: channels, groups, epochs, seeds, batch sizes, draws, the
    images' side (``side``, read from the data) and the positions of the first and the last
    convolution's output. A network given as ``conv.layers`` is named by its layers in prose
    (``convLayerList``, ``convDepth``, ``convPositionValuesLast``), one given as ``conv.channels`` (two
    convolutions, stride 1) by its two channel counts; an exact design over a pool of companions
    by the pool's size (``convExactPool``)."""
    sizes = sorted(int(b) for b in runs.batch_size.unique())
    spec = layers(design)
    sides = layer_sides(side, [x["stride"] for x in spec])
    m = {}
    if "layers" not in design:
        m |= {"convChannelsOne": str(spec[0]["channels"]), "convChannelsTwo": str(spec[1]["channels"])}
    m |= {
        "convGroups": str(design["groups"]),
        "convEpochs": str(design["epochs"]),
        "convSeeds": str(runs.seed.nunique()),
        "convMlpSeeds": str(design["mlp_seeds"]),
        "convBatchSizes": words([str(b) for b in sizes]),
        "convBatchMin": str(sizes[0]),
        "convBatchMax": str(sizes[-1]),
        "convNetworks": latex.fmt(len(runs)),
        "convProbedNetworks": latex.fmt(int(rates[["batch_size", "seed"]].drop_duplicates().shape[0])),
        "convExamples": latex.fmt(int(design["examples"])),
        "convDraws": latex.fmt(int(design["draws"])),
        "convExactExamples": latex.fmt(int(design["exact_examples"])),
        "convExactPerClass": latex.fmt(int(design["exact_per_class"])),
        "convPairs": latex.fmt(int(design["pairs"])),
        "convPositionValues": latex.fmt(2 * sides[0] * sides[0]),
        "convPositions": str(sides[-1] * sides[-1]),
        "convImageSide": str(side),
        "convKernel": "3",
    }
    if "layers" in design:
        m |= {
            "convLayerList": layer_list(design, side),
            "convDepth": number_word(len(spec)),
            "convPositionValuesLast": latex.fmt(2 * sides[-1] * sides[-1]),
        }
    if design.get("exact_companions") is not None:
        m["convExactPool"] = latex.fmt(int(design["exact_companions"]))
    return m


def cell_macros(cell: pd.DataFrame, norms, where: str, b: int) -> dict:
    """One end's (``where``) batch size ``b``: both networks' accuracies in both modes, flip rates
    and training-mode accuracy with exact statistics, each with its interval."""
    m = {}
    for model in ("cnn", "mlp"):
        for norm in norms:
            for measure, short in (("inference_accuracy", "inf"), ("train_mode_accuracy", "train")):
                key = (model, norm, b, measure)
                if key in cell.index:
                    r = cell.loc[key]
                    m[latex.macro_name("conv", model, norm, short, where)] = points(r["mean"])
                    m[latex.macro_name("conv", model, norm, short, where, "ci")] = points_interval(r.ci_low, r.ci_high)
        for design_name in FLIP_DESIGNS:
            key = (model, "batchnorm", b, f"{design_name}_flip_rate")
            if key in cell.index:
                r = cell.loc[key]
                m[latex.macro_name("conv", model, "flip", design_name, where)] = points(r["mean"])
                m[latex.macro_name("conv", model, "flip", design_name, where, "ci")] = points_interval(
                    r.ci_low, r.ci_high
                )
        key = (model, "batchnorm", b, "exact_train_mode_accuracy")
        if key in cell.index:
            m[latex.macro_name("conv", model, "exact acc", where)] = points(cell.loc[key]["mean"])
    return m


def gain_macros(pair: pd.DataFrame, norms, where: str, b: int) -> dict:
    """One end's paired differences of each normaliser minus none, in both modes: gain, interval
    and verdict, unadjusted and Bonferroni-adjusted."""
    m = {}
    for norm in norms:
        if norm == "none":
            continue
        for measure, short in (("inference_accuracy", "inf"), ("train_mode_accuracy", "train")):
            r = pair.loc[(norm, b, measure)]
            stem = ("conv gain", norm, short, where)
            m[latex.macro_name(*stem)] = signed_points(r.gain, 1)
            m[latex.macro_name(*stem, "ci")] = points_interval(r.ci_low, r.ci_high, signed=True, digits=1)
            m[latex.macro_name(*stem, "verdict")] = verdict(r.ci_low, r.ci_high)
            m[latex.macro_name(*stem, "adj ci")] = points_interval(r.ci_low_adj, r.ci_high_adj, signed=True, digits=1)
            m[latex.macro_name(*stem, "adj verdict")] = verdict(r.ci_low_adj, r.ci_high_adj)
    return m


def end_macros(cell: pd.DataFrame, norms, where: str, b: int) -> dict:
    """One end's final losses, batch norm's gap between the modes and the two networks' exact
    flip rates compared."""
    m = {}
    for norm in norms:
        m[latex.macro_name("conv loss", norm, where)] = latex.fmt(
            float(cell.loc[("cnn", norm, b, "final_loss")]["mean"]), 2
        )
    for model in ("cnn", "mlp"):  # inference minus training mode, batch norm (points)
        inf, train = (cell.loc[(model, "batchnorm", b, k)]["mean"] for k in MEASURES)
        m[latex.macro_name("conv gap", model, where)] = points(inf - train)
    exact = ("cnn", "batchnorm", b, "exact_flip_rate"), ("mlp", "batchnorm", b, "exact_flip_rate")
    if all(k in cell.index for k in exact):
        m[latex.macro_name("conv flip compare", where)] = compare(cell.loc[exact[0]], cell.loc[exact[1]])
    return m


def summary_json(side: pd.DataFrame, paired: pd.DataFrame, runs: pd.DataFrame, confidence: float, design) -> dict:
    """The JSON summary: both networks' cells and the paired differences to none."""
    return {
        "confidence": confidence,
        "seeds": sorted(int(s) for s in runs.seed.unique()),
        "batch_sizes": sorted(int(b) for b in runs.batch_size.unique()),
        "design": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in design.items()},
        "cells": _nested(side),
        "minus_none": {
            n: {
                str(b): {
                    r.measure: {"gain": r.gain, "sd": r.sd, "ci": [r.ci_low, r.ci_high], "seeds": int(r.seeds)}
                    | {"family": int(r.family), "ci_adjusted": [r.ci_low_adj, r.ci_high_adj]}
                    for r in g.itertuples()
                }
                for b, g in gn.groupby("batch_size")
            }
            for n, gn in paired.groupby("normaliser")
        },
    }


def report(runs, rates, mlp, confidence: float, labels: dict[str, str], design: dict, image_side: int) -> dict:
    """Everything the summary rule writes: ``side`` (the long table of both networks' cells, which
    the figure draws), ``paired``, the JSON ``summary``, ``macros`` and the ``table``. ``mlp``:
    :func:`mlp_rows`; ``design``: settings named in the paper (channels or layers, groups, epochs, lr,
    draws, exact examples and their pool of companions, probed examples, pairs per network, MLP
    seeds); ``image_side``: the images' side, read from the data (:func:`square_side`)."""
    runs = runs.sort_values(["normaliser", "batch_size", "seed"], kind="stable").reset_index(drop=True)
    side = pd.concat([cells(runs, confidence), flip_cells(rates, confidence), mlp], ignore_index=True)
    side = side.sort_values(["model", "normaliser", "batch_size", "measure"], kind="stable").reset_index(drop=True)
    paired = against_none(runs, confidence)
    sizes = sorted(int(b) for b in runs.batch_size.unique())
    norms = sorted(runs.normaliser.unique())
    cell = side.set_index(["model", "normaliser", "batch_size", "measure"])
    pair = paired.set_index(["normaliser", "batch_size", "measure"])
    m = setting_macros(runs, rates, design, image_side)
    for where, b in (("min", sizes[0]), ("max", sizes[-1])):
        m |= cell_macros(cell, norms, where, b) | gain_macros(pair, norms, where, b)
        m["convFamily"] = str(len(sizes))
        m |= end_macros(cell, norms, where, b)
    m |= trend_macros(cell, sizes)
    below = [str(b) for b in sizes if pair.loc[("batchnorm", b, "train_mode_accuracy")].ci_high < 0]
    m["convBatchnormTrainBelowNone"] = words(below) if below else "none"
    summary = summary_json(side, paired, runs, confidence, design)
    return {"side": side, "paired": paired, "summary": summary, "macros": m, "table": table(side, sizes, norms, labels)}


def _nested(side: pd.DataFrame) -> dict:
    out: dict = {}
    for r in side.itertuples():
        out.setdefault(r.model, {}).setdefault(r.normaliser, {}).setdefault(str(r.batch_size), {})[r.measure] = {
            "mean": r.mean, "sd": r.sd, "ci": [r.ci_low, r.ci_high], "seeds": int(r.seeds)
        }  # fmt: skip
    return out


def table(side: pd.DataFrame, sizes, norms, labels: dict[str, str]):
    """``(header, rows, align, comment)``: per batch size a CNN and an MLP row: each normaliser's
    inference-mode accuracy, batch norm's training-mode accuracy (points, mean over seeds) and
    batch norm's flip rate at batches of two over every companion (percent)."""
    cell = side.set_index(["model", "normaliser", "batch_size", "measure"])["mean"]
    order = [n for n in ("none", "batchnorm", "groupnorm", "layernorm") if n in norms]
    rows = []
    for b in sizes:
        for model, name in (("cnn", "CNN"), ("mlp", "MLP")):
            row = [str(b), name]
            for norm in order:
                key = (model, norm, b, "inference_accuracy")
                row.append(points(cell[key]) if key in cell.index else "--")
            for key in ((model, "batchnorm", b, "train_mode_accuracy"), (model, "batchnorm", b, "exact_flip_rate")):
                row.append(points(cell[key]) if key in cell.index else "--")
            rows.append(row)
    header = ["batch", "network"] + [labels[n] for n in order] + ["BN, training mode", "BN flips, $b = 2$"]
    return header, rows, "rl" + "r" * (len(order) + 2), "CNN beside the MLP: accuracy (points) and flip rate (%)"
