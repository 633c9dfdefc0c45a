"""The learning-rate sweep's summary: each cell's rate chosen on validation, its test accuracy,
batch norm minus none paired by seed, the JSON summary, macros and LaTeX tables.

For each (normaliser, batch size) the rate is the one with the highest mean validation accuracy
over seeds (of equals, the lowest rate); the test half is read only at that rate. With folds
(the runs have a ``fold`` column) every mean and pairing is over the (fold, seed) replicates,
and :mod:`bnstudy.studies.lr_sweep.stability` adds the choice's stability and the bound no
choice of rate can change. Its families of comparisons are the config's (``families``:
:mod:`bnstudy.evaluation.families`): ``lr_gap``, batch norm minus none over the batch sizes, and
with folds ``lr_choice`` and ``lr_margin``; each interval of one is at the family's level, named by
its tag and phrase, and the summary records them. Means over seeds and their Student-t intervals are
:func:`bnstudy.base.stats.seed_interval` (sums correctly rounded), paired differences
:func:`bnstudy.evaluation.paired.paired_interval`. Nothing here depends on the CPU.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bnstudy.base.stats import seed_interval, share_interval
from bnstudy.evaluation.families import Family, declared
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import at_batches, points, points_interval, power_of_ten, signed_points, verdict, words
from bnstudy.studies.lr_sweep import stability as folds
from bnstudy.studies.lr_sweep.grid_rate import at_rate
from bnstudy.studies.lr_sweep.sentences import deficit_answer, edge_sentence, gap_noun, lift_rows


def replicate(runs: pd.DataFrame) -> list[str]:
    """The columns naming one network of a (normaliser, batch size, rate): ``seed``, or with
    folds ``fold`` and ``seed`` (the pairs of every paired difference)."""
    return ["fold", "seed"] if "fold" in runs.columns else ["seed"]


def rate_table(runs: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Per normaliser, batch size and rate: ``seeds`` (the networks: seeds, or folds x seeds),
    mean validation accuracy, and the test accuracy's mean, sd and Student-t interval over them on
    the logit scale (:func:`bnstudy.base.stats.share_interval`; in ascending (fold,) seed order)."""
    out = []
    for (norm, b, lr), g in runs.groupby(["normaliser", "batch_size", "lr"], sort=True):
        g = g.sort_values(replicate(runs))
        val, val_sd, _, _ = seed_interval(g.validation_accuracy.tolist(), confidence)
        mean, sd, lo, hi = share_interval(g.test_accuracy.tolist(), confidence)
        out.append(
            {"normaliser": norm, "batch_size": int(b), "lr": float(lr), "seeds": len(g)}
            | {"validation_mean": val, "validation_sd": val_sd}
            | {"test_mean": mean, "test_sd": sd, "test_ci_low": lo, "test_ci_high": hi}
        )
    return pd.DataFrame(out)


def best_rates(rates: pd.DataFrame) -> pd.DataFrame:
    """Per normaliser and batch size the rate with the highest mean validation accuracy (of equals,
    the lowest rate), where it lies in the swept list (``lowest``, ``highest`` or ``inside``), and
    its ``margin``: its mean validation accuracy minus the next best rate's."""
    out = []
    for (norm, b), g in rates.groupby(["normaliser", "batch_size"], sort=True):
        g = g.sort_values("lr")
        top = g.validation_mean.max()
        best = g[g.validation_mean == top].iloc[0]
        lr = float(best.lr)
        edge = "lowest" if lr == g.lr.min() else "highest" if lr == g.lr.max() else "inside"
        margin = float(top - g.validation_mean.drop(best.name).max()) if len(g) > 1 else float("nan")
        out.append({"normaliser": norm, "batch_size": int(b), "lr": lr, "edge": edge, "margin": margin} | _test(best))
    return pd.DataFrame(out)


def _test(row) -> dict:
    keys = ("validation_mean", "test_mean", "test_sd", "test_ci_low", "test_ci_high", "seeds")
    return {k: row[k] for k in keys}


def grid_rate_words(lr) -> str:
    """The grid's rate as the text names it: ``$1 \\times 10^{-3}$``, or, where the grid sets a rate per
    batch size, ``the grid's rate of each batch size``."""
    return "the grid's rate of each batch size" if isinstance(lr, dict) else power_of_ten(lr)


def paired_at(runs: pd.DataFrame, chosen: pd.DataFrame, a: str, b: str, confidence: float, family: Family):
    """Per batch size, ``a - b`` in test accuracy paired by seed (with folds, by fold and seed), each
    normaliser at its rate in ``chosen`` (rows with normaliser, batch_size, lr): mean, sd and
    Student-t interval, and the interval at ``family``'s level with the batch sizes as its members
    (``ci_low_adj``, ``ci_high_adj``: Bonferroni-adjusted over them, or unadjusted, as declared;
    ``family``: the members)."""
    lr = chosen.set_index(["normaliser", "batch_size"])["lr"]
    out = []
    members = int(chosen.batch_size.nunique())
    for size in sorted(int(v) for v in chosen.batch_size.unique()):
        sides = []
        for norm in (a, b):
            g = runs[(runs.normaliser == norm) & (runs.batch_size == size) & (runs.lr == lr[(norm, size)])]
            sides.append(g.set_index(replicate(runs))["test_accuracy"])
        seeds = sorted(set(sides[0].index) & set(sides[1].index))
        row = paired_interval([sides[0][s] for s in seeds], [sides[1][s] for s in seeds], confidence)
        adj = paired_interval(
            [sides[0][s] for s in seeds], [sides[1][s] for s in seeds], family.level(confidence, members)
        )
        row |= {"family": members, "ci_low_adj": adj["ci_low"], "ci_high_adj": adj["ci_high"]}
        out.append({"batch_size": size, "lr_a": float(lr[(a, size)]), "lr_b": float(lr[(b, size)])} | row)
    return pd.DataFrame(out)


def setting_macros(runs: pd.DataFrame, grid_lr: float, design: dict) -> dict:
    """The sweep's design: rates, seeds, networks, rows, epochs, batch sizes."""
    sizes = sorted(int(b) for b in runs.batch_size.unique())
    lrs = sorted(float(v) for v in runs.lr.unique())
    return (
        {
            "lrSweepRates": words([power_of_ten(v) for v in lrs]),
            "lrSweepRateCount": str(len(lrs)),
            "lrSweepSeeds": str(runs.seed.nunique()),
            "lrSweepNetworks": latex.fmt(len(runs)),
            "lrGridRate": grid_rate_words(grid_lr),
            "lrRateLowest": power_of_ten(lrs[0]),
            "lrRateSecond": power_of_ten(lrs[1]),
        }
        | _row_macros(design)
        | {
            "lrSweepEpochs": str(int(design["epochs"])),
            "lrGridSeeds": str(int(design["grid_seeds"])),
            "lrBatchMin": str(sizes[0]),
            "lrBatchMax": str(sizes[-1]),
            "lrBatchCount": str(len(sizes)),
        }
    )


def _row_macros(design: dict) -> dict:
    """The rows the sweep trains and validates on: one split's (``lrFitRows``, ``lrValidationRows``),
    or with folds the training half's rows (``lrValidationRows``: every row is held out once per
    seed) and the range of a fold's held-out rows (``lrFoldRows``)."""
    if "folds" not in design:
        return {
            "lrFitRows": latex.fmt(int(design["fit_rows"])),
            "lrValidationRows": latex.fmt(int(design["validation_rows"])),
        }
    lo, hi = int(design["fold_rows_min"]), int(design["fold_rows_max"])
    return {
        "lrValidationRows": latex.fmt(int(design["validation_rows"])),
        "lrFoldRows": latex.fmt(lo) if lo == hi else f"{latex.fmt(lo)} to {latex.fmt(hi)}",
    }


def cell_macros(best: pd.DataFrame, grid: pd.DataFrame, sizes: list[int]) -> dict:
    """Each cell's chosen rate, test accuracy (pinned: the section prints its %) and interval (with its %)."""
    m = {}
    for row in best.itertuples(index=False):
        stem = (row.normaliser, "b", row.batch_size)
        m[latex.macro_name("lr best", *stem)] = power_of_ten(row.lr)
        m[latex.macro_name("lr acc", *stem)] = points(row.test_mean)
        m[latex.macro_name("lr ci", *stem)] = latex.percent_interval(row.test_ci_low, row.test_ci_high)
    for norm in ("none", "batchnorm"):  # at the smallest and the largest batch size, whatever the grid
        for where, size in (("min", sizes[0]), ("max", sizes[-1])):
            for name, table in (("", best), ("grid", grid)):
                r = table[(table.normaliser == norm) & (table.batch_size == size)].iloc[0]
                m[latex.macro_name("lr acc", name, norm, where)] = points(r.test_mean)
                m[latex.macro_name("lr ci", name, norm, where)] = latex.percent_interval(r.test_ci_low, r.test_ci_high)
            m[latex.macro_name("lr best", norm, where)] = power_of_ten(best_lr(best, norm, size))
    return m


def paired_macros(paired_best: pd.DataFrame, paired_grid: pd.DataFrame, family: Family) -> dict:
    """Batch norm minus none at the chosen and at the grid's rates: the smallest batch's gain,
    interval at ``family``'s level (``lr_gap``) and verdict, where those intervals exclude zero
    (named by the family's tag: ``adjusted`` or ``unadjusted``), the gap's noun and answer."""
    m = {
        "lrGapNoun": gap_noun(paired_grid.iloc[0]),
        "lrDeficitAnswer": deficit_answer(paired_best.iloc[0], paired_grid.iloc[0]),
    }
    m["lrFamily"] = str(int(paired_best.family.iloc[0]))
    for name, table in (("best", paired_best), ("grid", paired_grid)):
        first = table.iloc[0]
        m[latex.macro_name("lr paired", name, "min gain")] = signed_points(first.gain)
        m[latex.macro_name("lr paired", name, "min ci")] = points_interval(
            first.ci_low_adj, first.ci_high_adj, signed=True
        )
        m[latex.macro_name("lr paired", name, "min verdict")] = verdict(first.ci_low_adj, first.ci_high_adj)
        below = [str(int(r.batch_size)) for r in table.itertuples() if r.ci_high_adj < 0]
        above = [str(int(r.batch_size)) for r in table.itertuples() if r.ci_low_adj > 0]
        m[latex.macro_name("lr paired", name, "below sizes")] = at_batches(below)
        m[latex.macro_name("lr paired", name, "above sizes")] = at_batches(above)
        m[latex.macro_name("lr paired", name, "sign sentence")] = latex.zero_sentence(
            f"the {family.tag} paired intervals", above, below, len(table)
        )
    best, grid = paired_best.iloc[0], paired_grid.iloc[0]
    phrase = f"${m['lrPairedBestMinGain']}$ points ${m['lrPairedBestMinCi']}$ at the chosen rates"
    same = (best.gain, best.ci_low_adj, best.ci_high_adj) == (grid.gain, grid.ci_low_adj, grid.ci_high_adj)
    # the same pairs of networks (the chosen rates are the grid's there): one number, said once
    m["lrPairedMinBoth"] = (
        f"{phrase}, which at this batch size are the grid's"
        if same
        else f"{phrase} and ${m['lrPairedGridMinGain']}$ points ${m['lrPairedGridMinCi']}$ at \\lrGridRate{{}}"
    )
    best_sentence, grid_sentence = m["lrPairedBestSignSentence"], m["lrPairedGridSignSentence"]
    m["lrSignSentences"] = (
        f"At the chosen rates and at \\lrGridRate{{}} alike, {best_sentence}"
        if best_sentence == grid_sentence
        else f"At the chosen rates {best_sentence}; at \\lrGridRate{{}} {grid_sentence}"
    )
    return m


def choice_macros(best: pd.DataFrame, grid: pd.DataFrame, labels: dict[str, str], design: dict) -> dict:
    """What the choice of rate did: chosen rates at an end of the sweep, validation lift, cells
    where the chosen rate scores below the grid's, the range of the means."""

    def prose(norm):  # "none at batch 4" would read as no cell: the normaliser by its prose name
        return "no normaliser" if norm == "none" else labels[norm]

    edges = [
        f"{prose(r.normaliser)} at batch {r.batch_size} ({r.edge})" for r in best.itertuples() if r.edge != "inside"
    ]
    m = {"lrEdgeCells": words(edges) if edges else "no cell"}
    margins = best[best.edge != "inside"].margin
    m["lrEdgeMargin"] = points(float(margins.max()), 2) if len(margins) else "n/a"
    m["lrEdgeCount"] = str(len(edges))
    m["lrEdgeSentence"] = edge_sentence(edges, float(margins.max()) if len(margins) else 0.0, design["validation_rows"])
    m["lrValidationRowPoints"] = points(1 / int(design["validation_rows"]), 2)
    for norm in ("none", "batchnorm"):
        chosen, fixed = (t[t.normaliser == norm].validation_mean.to_numpy() for t in (best, grid))
        lift = float(np.max(chosen - fixed))
        m[latex.macro_name("lr validation lift", norm)] = points(lift, 2)
        m[latex.macro_name("lr validation lift", norm, "rows")] = lift_rows(lift, int(design["validation_rows"]))
        chosen, fixed = (t[t.normaliser == norm].test_mean.to_numpy() for t in (best, grid))
        m[latex.macro_name("lr below grid", norm)] = latex.count(np.count_nonzero(chosen < fixed))
        for name, table in (("best", best), ("grid", grid)):
            means = table[table.normaliser == norm].test_mean
            m[latex.macro_name("lr range", norm, name)] = points(means.max() - means.min())
    return m


def summary_json(runs, rates, best, grid, paired_best, paired_grid, grid_lr, confidence, design) -> dict:
    """The JSON summary: every cell at its chosen and at the grid's rate, the paired differences,
    the validation accuracy of every rate."""
    return {
        "grid_lr": grid_lr,
        "lrs": sorted(float(v) for v in runs.lr.unique()),
        "seeds": sorted(int(s) for s in runs.seed.unique()),
        "confidence": confidence,
        "design": {k: int(v) for k, v in design.items()},
        "best": {
            n: {str(r.batch_size): _cell(r) | {"edge": r.edge} for r in best[best.normaliser == n].itertuples()}
            for n in sorted(best.normaliser.unique())
        },
        "at_grid_lr": {
            n: {str(r.batch_size): _cell(r) for r in grid[grid.normaliser == n].itertuples()}
            for n in sorted(grid.normaliser.unique())
        },
        "batchnorm_minus_none": {
            name: {
                str(r.batch_size): {"lr_batchnorm": r.lr_a, "lr_none": r.lr_b, "seeds": int(r.seeds)}
                | {"gain": r.gain, "sd": r.sd, "ci": [r.ci_low, r.ci_high]}
                | {"family": int(r.family), "ci_adjusted": [r.ci_low_adj, r.ci_high_adj]}
                for r in table.itertuples()
            }
            for name, table in (("at_best_rates", paired_best), ("at_grid_lr", paired_grid))
        },
        "validation_accuracy": {
            n: {str(b): {repr(r.lr): r.validation_mean for r in g.itertuples()} for b, g in gn.groupby("batch_size")}
            for n, gn in rates.groupby("normaliser")
        },
    }


def report(runs: pd.DataFrame, grid_lr, confidence: float, labels: dict[str, str], design: dict, families: dict):
    """Everything the summary rule writes: tables (rates, best, paired), the JSON summary, macros
    and two LaTeX tables. ``labels``: each normaliser's name in prose; ``design``: rows and config
    values named in the paper (``fit_rows``, ``validation_rows``, ``epochs``, ``grid_seeds``);
    ``families``: the config's declared families (module docstring)."""
    runs = runs.sort_values(["normaliser", "batch_size", "lr"] + replicate(runs), kind="stable").reset_index(drop=True)
    rates = rate_table(runs, confidence)
    best = best_rates(rates)
    grid = at_rate(rates, grid_lr)
    gap = declared(families, "lr_gap")
    paired_best = paired_at(runs, best, "batchnorm", "none", confidence, gap)
    paired_grid = paired_at(runs, grid, "batchnorm", "none", confidence, gap)
    sizes = sorted(int(b) for b in runs.batch_size.unique())
    m = setting_macros(runs, grid_lr, design)
    m |= cell_macros(best, grid, sizes)
    m |= paired_macros(paired_best, paired_grid, gap)
    m |= choice_macros(best, grid, labels, design)
    tables = {
        "table": best_table(best, paired_best, paired_grid),
        "validation_table": validation_table(rates, best, labels),
    }
    summary = summary_json(runs, rates, best, grid, paired_best, paired_grid, grid_lr, confidence, design)
    summary["families"] = {"lr_gap": gap.record(confidence, len(sizes))}
    if "fold" in runs.columns:
        choice, margin = declared(families, "lr_choice"), declared(families, "lr_margin")
        stab = folds.stability(runs, rates, best, confidence, margin)
        m |= folds.stability_macros(stab, labels, sizes[0], int(runs.seed.nunique()), margin)
        diff = folds.chosen_minus_grid(runs, best, grid, confidence, choice)
        m["lrChosenGridSentence"] = folds.chosen_grid_sentence(diff, len(best), choice)
        m |= folds.bound_macros(runs, rates, sizes[0], m["lrGapNoun"] == "deficit", confidence)
        tables["validation_table"] = folds.stability_columns(tables["validation_table"], stab, labels)
        summary |= {"folds": int(runs.fold.nunique()), "stability": folds.stability_json(stab)}
        summary["families"] |= {
            "lr_choice": folds.choice_record(choice, confidence, len(diff)),
            "lr_margin": margin.record(confidence, len(stab)),
        }
    return {
        "rates": rates,
        "best": best,
        "paired": pd.concat([paired_best.assign(rates="best"), paired_grid.assign(rates="grid")], ignore_index=True),
        "summary": summary,
        "macros": m,
        "tables": tables,
    }


def best_lr(best: pd.DataFrame, normaliser: str, batch_size: int) -> float:
    return float(best[(best.normaliser == normaliser) & (best.batch_size == batch_size)].lr.iloc[0])


def _cell(r) -> dict:
    return {"lr": float(r.lr), "seeds": int(r.seeds), "validation_accuracy": float(r.validation_mean)} | {
        "test_accuracy": float(r.test_mean),
        "test_sd": float(r.test_sd),
        "test_ci": [float(r.test_ci_low), float(r.test_ci_high)],
    }


def best_table(best: pd.DataFrame, paired_best: pd.DataFrame, paired_grid: pd.DataFrame):
    """``(header, rows, align, comment)``: per batch size each normaliser's rate and test accuracy
    (mean +- sd, points), batch norm minus none at the chosen rates and at the grid's rate, each with
    its interval at the level of the family ``lr_gap`` (``ci_low_adj``, ``ci_high_adj``: the one every
    quote of the comparison has)."""
    cell = best.set_index(["normaliser", "batch_size"])
    pb, pg = paired_best.set_index("batch_size"), paired_grid.set_index("batch_size")
    rows = []
    for b in sorted(int(v) for v in best.batch_size.unique()):
        row = [str(b)]
        for norm in ("none", "batchnorm"):
            r = cell.loc[(norm, b)]
            row += [power_of_ten(r.lr), f"{points(r.test_mean)} $\\pm$ {points(r.test_sd)}"]
        for t in (pb, pg):
            p = t.loc[b]
            row.append(f"${signed_points(p.gain)}$ ${points_interval(p.ci_low_adj, p.ci_high_adj, signed=True)}$")
        rows.append(row)
    header = ["batch", "none: rate", "accuracy", "BN: rate", "accuracy", "BN $-$ none", "at the grid's rate"]
    return header, rows, "r" + "ll" * 2 + "ll", "learning rate chosen on the validation split, per cell"


def validation_table(rates: pd.DataFrame, best: pd.DataFrame, labels: dict[str, str]):
    """``(header, rows, align, comment)``: mean validation accuracy (points) of every normaliser,
    batch size and rate, the chosen rate's in bold."""
    lrs = sorted(float(v) for v in rates.lr.unique())
    chosen = best.set_index(["normaliser", "batch_size"])["lr"]
    rows = []
    for (norm, b), g in rates.groupby(["normaliser", "batch_size"], sort=True):
        by = g.set_index("lr")["validation_mean"]
        cells = []
        for lr in lrs:
            text = points(by[lr]) if lr in by.index else "--"
            cells.append(f"\\textbf{{{text}}}" if lr == chosen[(norm, b)] else text)
        rows.append([labels[norm], str(int(b))] + cells)
    order = {"none": 0, "batchnorm": 1}
    rows.sort(key=lambda r: (order.get(next(k for k, v in labels.items() if v == r[0]), 2), int(r[1])))
    header = ["normaliser", "batch"] + [power_of_ten(v) for v in lrs]
    return header, rows, "lr" + "r" * len(lrs), "mean validation accuracy by learning rate"
