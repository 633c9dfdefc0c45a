"""The accumulation study's summary: accuracy of every configuration with intervals over seeds,
paired differences, how close accumulation and ghost batch norm come, JSON, macros and a table.

Configurations, per micro-batch ``m`` (``B`` the step's batch):

- ``large``: the grid's batch-norm networks at batch ``B`` (same initial weights and batch order);
- ``accumulate``: batch norm in micro-batches of ``m``, ``B / m`` of them accumulated per step;
- ``ghost``: ghost batch norm with virtual batch ``m`` at batch ``B``;
- ``small``: the grid's batch-norm networks at batch ``m`` (same initial weights);
- ``scaled``: batch norm at batch ``m`` with the rate scaled by ``m / B`` (the second arm: the
  rate times the number of steps of accumulation; same initial weights and batch order as ``small``).

Modes: ``inference`` (the running statistics), ``recomputed`` (inference mode with the exact
population statistics of the training half: for the grid's networks the ``exact`` rows of
``evaluate_remedies``, given among the grid rows with mode ``recomputed``), ``training``.
``recompute``: per configuration, recomputed minus inference, paired by seed (how much of a
configuration's inference accuracy its running statistics cost or give).

Means over seeds of an accuracy and its Student-t interval on the logit scale (bounded by 0 and 1,
as the Methods state for every share) are :func:`bnstudy.base.stats.share_interval`, paired
differences (by seed) :func:`bnstudy.evaluation.paired.paired_interval`, each at the level of its declared
family (:mod:`bnstudy.studies.accumulation.family`); accuracies are shares of test rows.
Nothing here depends on the CPU. The sentences are :mod:`bnstudy.studies.accumulation.sentences`'.
"""

from __future__ import annotations

import math

import pandas as pd

from bnstudy.base.designs import ACCUMULATION_CONFIGS
from bnstudy.base.stats import share_interval
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import points, points_interval, power_of_ten, signed_points, verdict, words
from bnstudy.studies.accumulation import family as families_of
from bnstudy.studies.accumulation.family import HEADLINE, OTHER, family_of
from bnstudy.studies.accumulation.sentences import abstract_sentence, check_sentence, resolved_sentence
from bnstudy.studies.accumulation.table import MODES, latex_table

CONFIGS = ACCUMULATION_CONFIGS
MODE_WORDS = {
    "inference": "inference mode",
    "recomputed": "inference mode with recomputed statistics",
    "training": "training mode",
}
# (name, A, B): A - B, paired by seed
COMPARISONS = (
    ("accumulate_vs_large", "accumulate", "large"),
    ("accumulate_vs_small", "accumulate", "small"),
    ("ghost_vs_accumulate", "ghost", "accumulate"),
    ("accumulate_vs_scaled", "accumulate", "scaled"),
    ("scaled_vs_small", "scaled", "small"),
)


def long_table(runs: pd.DataFrame, grid: pd.DataFrame, batch_size: int, micro_batches) -> pd.DataFrame:
    """One row per micro-batch, configuration, mode and seed: the study's ``runs`` (variant,
    micro_batch, seed, mode, accuracy) with the grid's accuracy rows (normaliser, batch_size,
    seed, mode, accuracy) at ``batch_size`` (``large``) and at each micro-batch (``small``).
    Every configuration must have every mode of :data:`MODES`; other modes are left out."""
    norms = sorted(set(grid["normaliser"]))
    if len(norms) > 1:  # two normalisers' networks of one seed would be taken for two seeds' networks
        raise ValueError(f"grid rows of more than one normaliser: {norms}")
    rows = [runs[["variant", "micro_batch", "seed", "mode", "accuracy"]].rename(columns={"variant": "config"})]
    for m in micro_batches:
        for config, b in (("large", batch_size), ("small", m)):
            g = grid[grid.batch_size == int(b)]
            if g.empty:
                raise ValueError(f"no grid networks at batch {b}")
            rows.append(
                g.assign(config=config, micro_batch=int(m))[["config", "micro_batch", "seed", "mode", "accuracy"]]
            )
    out = pd.concat(rows, ignore_index=True)
    out = out[out["mode"].isin(MODES)].reset_index(drop=True)
    for config in CONFIGS:
        have = set(out.loc[out.config == config, "mode"])
        if have != set(MODES):
            raise ValueError(f"no {config!r} rows in mode(s) {sorted(set(MODES) - have)}")
    out["micro_batch"] = out.micro_batch.astype(int)
    out["seed"] = out.seed.astype(int)
    order = {c: i for i, c in enumerate(CONFIGS)}
    out = out.assign(_c=out.config.map(order), _m=out["mode"].map({m: i for i, m in enumerate(MODES)}))
    return out.sort_values(["micro_batch", "_c", "_m", "seed"]).drop(columns=["_c", "_m"]).reset_index(drop=True)


def cell_table(table: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Per micro-batch, configuration and mode: seeds, mean, sd and the Student-t interval of the
    accuracy on the logit scale (seeds ascending)."""
    out = []
    for (m, config, mode), g in table.groupby(["micro_batch", "config", "mode"], sort=False):
        mean, sd, lo, hi = share_interval(g.sort_values("seed").accuracy.tolist(), confidence)
        out.append({"micro_batch": int(m), "config": config, "mode": mode, "seeds": len(g)} | _stats(mean, sd, lo, hi))
    return pd.DataFrame(out)


def _stats(mean, sd, lo, hi) -> dict:
    return {"mean": mean, "sd": sd, "ci_low": lo, "ci_high": hi}


def paired_table(table: pd.DataFrame, levels: dict[str, float]) -> pd.DataFrame:
    """Per micro-batch, comparison and mode: ``A - B`` paired by seed (the seeds both sides have), its
    interval at the level of its family (``levels``: ``{family: level}``; :func:`family_of`), named with
    the family and the level in columns ``family`` and ``level``."""
    out = []
    for m in sorted(table.micro_batch.unique()):
        for name, a, b in COMPARISONS:
            for mode in MODES:
                sides = [
                    table[(table.micro_batch == m) & (table.config == c) & (table["mode"] == mode)].set_index("seed")
                    for c in (a, b)
                ]
                seeds = sorted(set(sides[0].index) & set(sides[1].index))
                if not seeds:
                    raise ValueError(f"no common seeds for {name} at micro-batch {m}")
                family = family_of(name, mode)
                row = paired_interval(
                    [sides[0].accuracy[s] for s in seeds], [sides[1].accuracy[s] for s in seeds], levels[family]
                )
                out.append(
                    {"micro_batch": int(m), "comparison": name, "mode": mode}
                    | row
                    | {"family": family, "level": levels[family]}
                )
    return pd.DataFrame(out)


def recompute_table(table: pd.DataFrame, levels: dict[str, float]) -> pd.DataFrame:
    """Per micro-batch and configuration: recomputed minus running statistics in inference mode,
    paired by seed (the seeds both modes have), at the level of the family :data:`OTHER`
    (``levels``: ``{family: level}``)."""
    out = []
    for m in sorted(table.micro_batch.unique()):
        for config in CONFIGS:
            sides = [
                table[(table.micro_batch == m) & (table.config == config) & (table["mode"] == mode)].set_index("seed")
                for mode in ("recomputed", "inference")
            ]
            seeds = sorted(set(sides[0].index) & set(sides[1].index))
            row = paired_interval(
                [sides[0].accuracy[s] for s in seeds], [sides[1].accuracy[s] for s in seeds], levels[OTHER]
            )
            out.append({"micro_batch": int(m), "config": config} | row | {"family": OTHER, "level": levels[OTHER]})
    return pd.DataFrame(out)


def rate(value: float) -> str:
    """A learning rate in math mode, up to four significant digits: ``3.125e-5`` ->
    ``$3.125 \\times 10^{-5}$``, ``1e-3`` -> ``$10^{-3}$``."""
    mantissa, exponent = f"{value:.3e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    power = f"10^{{{int(exponent)}}}"
    return f"${power}$" if mantissa == "1" else f"${mantissa} \\times {power}$"


def closeness(differences: pd.DataFrame) -> pd.DataFrame:
    """Per micro-batch: the first step's largest gradient difference relative to the largest
    gradient (max over seeds), its largest running-statistics difference, and after the run the
    largest parameter difference (pre-normaliser biases apart, and those), running-statistics
    difference (max over seeds) and the mean share of test rows labelled differently."""
    out = []
    for m, g in differences.groupby("micro_batch", sort=True):
        first, run = g[g.after == "first_step"], g[g.after == "run"]
        out.append(
            {
                "micro_batch": int(m),
                "first_relative": float(max(first.parameters / first.scale)),
                "first_bias": float(first.pre_norm_biases.max()),
                "first_running": float(first.running.max()),
                "run_parameters": float(run.parameters.max()),
                "run_biases": float(run.pre_norm_biases.max()),
                "run_running": float(run.running.max()),
                "run_scale": float(run.scale.max()),
                "run_disagreement": math.fsum(run.label_disagreement) / len(run),
                "run_disagreement_max": float(run.label_disagreement.max()),
            }
        )
    return pd.DataFrame(out)


def setting_macros(micro: list[int], seeds: list[int], batch_size: int, epochs: int, train_rows: int, lr) -> dict:
    """The study's design: batch, micro-batches, seeds, epochs, steps, networks, rate; and
    ``accumOneMicro`` where one micro-batch is configured (the section then names it alone: it
    tests ``\\ifdefined\\accumOneMicro``)."""
    return {
        **({"accumOneMicro": "one"} if len(micro) == 1 else {}),
        "accumBatch": str(batch_size),
        "accumMicroBatches": words([str(m) for m in micro]),
        "accumMicroMin": str(micro[0]),
        "accumMicroMax": str(micro[-1]),
        "accumSeeds": str(len(seeds)),
        "accumEpochs": str(epochs),
        "accumStepsLarge": latex.fmt(train_rows // batch_size),
        "accumNetworks": str(3 * len(micro) * len(seeds)),
        "accumLr": rate(lr),
    }


def end_macros(where: str, m: int, frames: dict, batch_size: int, train_rows: int, lr: float, margin) -> dict:
    """One end's (``min``/``max``) micro-batch ``m``: its steps and scaled rate, the recomputed
    statistics' gains, every cell's accuracy, every paired comparison with its verdict (a member of
    the headline family's against its smallest effect ``margin`` too, :func:`family.verdict`), and how
    close accumulation and ghost batch norm stay along the run. ``frames``: the cell, pair,
    closeness and recompute tables indexed as :func:`report` indexes them."""
    cell, pair, near, gain = frames["cell"], frames["pair"], frames["near"], frames["gain"]
    m_ = {
        latex.macro_name("accum parts", where): str(batch_size // m),
        latex.macro_name("accum scaled lr", where): rate(lr * m / batch_size),
    }
    for config in CONFIGS:
        r = gain.loc[(m, config)]
        m_[latex.macro_name("accum recompute", config, where)] = signed_points(r.gain)
        m_[latex.macro_name("accum recompute", config, where, "ci")] = points_interval(r.ci_low, r.ci_high, signed=True)
        m_[latex.macro_name("accum recompute", config, where, "verdict")] = verdict(r.ci_low, r.ci_high)
    m_[latex.macro_name("accum steps small", where)] = latex.fmt(train_rows // m)
    for config in CONFIGS:
        for mode in MODES:
            r = cell.loc[(m, config, mode)]
            m_[latex.macro_name("accum", config, mode, where)] = points(r["mean"])  # the section adds "\\%"
            m_[latex.macro_name("accum ci", config, mode, where)] = percent_interval(r.ci_low, r.ci_high)
    for name, _, _ in COMPARISONS:
        for mode in MODES:
            r = pair.loc[(m, name, mode)]
            stem = name.replace("_vs_", " minus ")
            m_[latex.macro_name("accum", stem, mode, where)] = signed_points(r.gain)
            m_[latex.macro_name("accum", stem, mode, where, "ci")] = points_interval(r.ci_low, r.ci_high, signed=True)
            said = (
                families_of.verdict(r.ci_low, r.ci_high, margin)
                if r.family == HEADLINE
                else verdict(r.ci_low, r.ci_high)
            )
            m_[latex.macro_name("accum", stem, mode, where, "verdict")] = said
            if (where, name, mode) == ("min", "accumulate_vs_large", "inference"):
                m_["accumDiscussionSentence"] = families_of.discussion_sentence(r.ci_low, r.ci_high)
    c = near.loc[m]
    m_[latex.macro_name("accum first relative", where)] = power_of_ten(c.first_relative)
    m_[latex.macro_name("accum run parameters", where)] = latex.fmt(c.run_parameters, 2)
    m_[latex.macro_name("accum run running", where)] = latex.fmt(c.run_running, 2)
    # shares of the test rows, with their unit: "10.9\\%", never a bare "10.9 of the test rows"
    m_[latex.macro_name("accum run disagreement", where)] = points(c.run_disagreement) + "\\%"
    m_[latex.macro_name("accum run disagreement worst", where)] = points(c.run_disagreement_max) + "\\%"
    return m_


def ghost_macros(close: pd.DataFrame, pair: pd.DataFrame, micro: list[int]) -> dict:
    """Accumulation against ghost batch norm: the check's closeness and the paired intervals
    (ghost minus accumulation) that exclude zero, in words."""
    m_ = {"accumFirstRelative": power_of_ten(float(close.first_relative.max()))}
    first_running = float(close.first_running.max())
    m_["accumFirstRunning"] = (
        "identical, bit for bit" if first_running == 0 else f"within {power_of_ten(first_running)}"
    )
    resolved = [
        (MODE_WORDS[mode], int(m))
        for (m, name, mode), r in pair.iterrows()
        if name == "ghost_vs_accumulate" and (r.ci_low > 0 or r.ci_high < 0)
    ]
    m_["accumGhostResolved"] = words([f"{w} at micro-batch {m}" for w, m in resolved]) if resolved else "none"
    m_["accumGhostComparisons"] = str(len(MODES) * len(micro))
    m_["accumGhostResolvedSentence"] = resolved_sentence(resolved)
    m_["accumCheck"] = check_sentence(float(close.first_relative.max()), first_running)
    return m_


def summary_json(frames: dict, close: pd.DataFrame, batch_size: int, micro, seeds, confidence: float, records) -> dict:
    """The JSON summary: accuracies, paired comparisons and recomputed gains per micro-batch (each
    naming its family), the closeness of accumulation and ghost batch norm, and what each declared
    family applied (``records``: :func:`bnstudy.studies.accumulation.family.records`)."""
    cell, pair, gain = frames["cell"], frames["pair"], frames["gain"]
    return {
        "batch_size": batch_size,
        "micro_batches": micro,
        "seeds": seeds,
        "confidence": confidence,
        "accuracy": {
            str(m): {c: {mode: _cell_json(cell.loc[(m, c, mode)]) for mode in MODES} for c in CONFIGS} for m in micro
        },
        "paired": {
            str(m): {
                name: {mode: _pair_json(pair.loc[(m, name, mode)]) for mode in MODES} for name, _, _ in COMPARISONS
            }
            for m in micro
        },
        "recompute": {str(m): {c: _pair_json(gain.loc[(m, c)]) for c in CONFIGS} for m in micro},
        "accumulate_vs_ghost": {
            str(int(r.micro_batch)): {k: float(getattr(r, k)) for k in close.columns if k != "micro_batch"}
            for r in close.itertuples()
        },
        "families": records,
    }


def report(
    runs,
    grid,
    differences,
    batch_size: int,
    micro_batches,
    confidence: float,
    epochs: int,
    train_rows: int,
    lr: float,
    declared: dict,
):
    """Everything the summary rule writes: the long, paired and recompute tables, the JSON summary,
    macros and a LaTeX table. ``epochs`` and ``train_rows`` (the training half) give the steps,
    ``lr`` is the grid's rate (the second arm's is ``lr * m / batch_size``); ``declared``: the config's
    ``families`` section, whose two families of the study (:mod:`bnstudy.studies.accumulation.family`)
    set each paired interval's level."""
    micro = sorted(int(m) for m in micro_batches)
    families = families_of.declare(declared)
    counts = families_of.members(len(micro), len(COMPARISONS), len(MODES), len(CONFIGS))
    levels = {name: families[name].level(confidence, counts[name]) for name in families}
    table = long_table(runs, grid, batch_size, micro)
    cells = cell_table(table, confidence)
    paired = paired_table(table, levels)
    recompute = recompute_table(table, levels)
    close = closeness(differences)
    seeds = sorted(int(s) for s in table.seed.unique())
    frames = {
        "cell": cells.set_index(["micro_batch", "config", "mode"]),
        "pair": paired.set_index(["micro_batch", "comparison", "mode"]),
        "near": close.set_index("micro_batch"),
        "gain": recompute.set_index(["micro_batch", "config"]),
    }
    m_ = setting_macros(micro, seeds, batch_size, epochs, train_rows, lr)
    for where, m in (("min", micro[0]), ("max", micro[-1])):
        m_ |= end_macros(where, m, frames, batch_size, train_rows, lr, families[HEADLINE].smallest_effect)
    m_ |= ghost_macros(close, frames["pair"], micro)
    printed = latex.fmt(float(confidence), 0, percent=True)
    m_["accumFamilySentence"] = families_of.family_sentence(families, counts, printed)
    m_["accumAbstractSentence"] = abstract_sentence(
        frames["pair"], micro[0], batch_size, families[HEADLINE], counts[HEADLINE]
    )
    records = families_of.records(families, confidence, counts)
    return {
        "table": table,
        "cells": cells,
        "paired": paired,
        "recompute": recompute,
        "closeness": close,
        "summary": summary_json(frames, close, batch_size, micro, seeds, confidence, records),
        "macros": m_,
        "latex_table": latex_table(cells, paired, batch_size, micro),
    }


def _cell_json(r) -> dict:
    return {
        "seeds": int(r.seeds),
        "mean": float(r["mean"]),
        "sd": float(r.sd),
        "ci": [float(r.ci_low), float(r.ci_high)],
    }


def _pair_json(r) -> dict:
    """A paired row: seeds, mean, sd, its interval and the family it is a member of (at whose level)."""
    ci = [float(r.ci_low), float(r.ci_high)]
    return {"seeds": int(r.seeds), "gain": float(r.gain), "sd": float(r.sd), "ci": ci, "family": str(r.family)}


def percent_interval(lo: float, hi: float) -> str:
    """An accuracy's interval as the text prints it beside its mean, each end in percent with its unit:
    ``[82.3\\%, 86.1\\%]`` (the section's accuracies are percentages, its differences points);
    :func:`bnstudy.paper.latex.points_interval`'s words for a degenerate interval."""
    if latex.degenerate(lo, hi):
        return points_interval(lo, hi)
    return f"[{points(lo)}\\%, {points(hi)}\\%]"
