"""The training curves' summary: per grid cell (normaliser, batch size), the validation accuracy after
every epoch (mean over seeds), the gain over the last ``k`` epochs, the cells named as not finished,
the grid's test accuracies beside the data set's published baselines; JSON, macros and a table.

A network's gain is its validation accuracy after the last epoch minus after epoch ``E - k``; a
cell's gain is the mean of its networks' gains, and a cell whose gain is above ``threshold`` has
not reached its validation plateau. Means are correctly rounded (:func:`bnstudy.base.stats.mean_sd`),
so nothing here depends on the CPU or the order of the files.
"""

from __future__ import annotations

import math

import pandas as pd

from bnstudy.base.normalisers import get as normaliser
from bnstudy.base.stats import mean_sd
from bnstudy.evaluation.paired import nil_if_rounding
from bnstudy.paper import latex
from bnstudy.paper.latex import points, signed_points, words
from bnstudy.paper.network_prose import number_word

EPOCH_COLUMNS = ("seed", "epoch", "loss", "train_accuracy", "validation_accuracy")


def mean_of(values) -> float:
    """The correctly rounded mean of ``values``: the same bits in any order and on any CPU."""
    return mean_sd([float(v) for v in values])[0]


def epochs_table(
    files: list[tuple[str, int, pd.DataFrame]], columns=EPOCH_COLUMNS, hint: str = " (no validation split?)"
) -> pd.DataFrame:
    """The grid's epochs files as one table: ``(normaliser, batch_size, table)`` for each job, its rows
    one per seed and epoch, the ``columns`` only. A file without one of them is an error (``hint``
    after the message; by default the validation accuracy's: this path needs a validation split)."""
    parts = []
    for name, b, table in files:
        missing = [c for c in columns if c not in table.columns]
        if missing:
            raise ValueError(f"{name} at batch {b}: the epochs file lacks {missing}{hint}")
        parts.append(table[list(columns)].assign(normaliser=name, batch_size=int(b)))
    out = pd.concat(parts, ignore_index=True)
    return out[["normaliser", "batch_size", *columns]]


def order(names) -> list[str]:
    """Normalisers in the order of ``names`` (the config's), each once."""
    return list(dict.fromkeys(names))


def by_epoch(epochs: pd.DataFrame, names) -> pd.DataFrame:
    """Per cell and epoch, means over seeds of the training loss, the training-mode accuracy and the
    validation accuracy, and the number of seeds."""
    out = []
    for name in order(names):
        for b in sorted(set(epochs.loc[epochs["normaliser"] == name, "batch_size"])):
            cell = epochs[(epochs["normaliser"] == name) & (epochs["batch_size"] == b)]
            for e, g in cell.groupby("epoch", sort=True):
                g = g.sort_values("seed")
                out.append(
                    {"normaliser": name, "batch_size": int(b), "epoch": int(e), "seeds": len(g),
                     "loss": mean_of(g["loss"]), "train_accuracy": mean_of(g["train_accuracy"]),
                     "validation_accuracy": mean_of(g["validation_accuracy"])}
                )  # fmt: skip
    return pd.DataFrame(out)


def cells(epochs: pd.DataFrame, names, last: int, threshold: float) -> pd.DataFrame:
    """Per cell: the last epoch, the mean validation accuracy after it, the mean gain over the last
    ``last`` epochs with the smallest and largest network's gain, and ``finished`` (the mean gain at
    most ``threshold``)."""
    out = []
    for name in order(names):
        for b in sorted(set(epochs.loc[epochs["normaliser"] == name, "batch_size"])):
            cell = epochs[(epochs["normaliser"] == name) & (epochs["batch_size"] == b)]
            final = int(cell["epoch"].max())
            if final <= last:
                raise ValueError(f"{name} at batch {b}: {final} epochs, not more than last_epochs {last}")
            gains = []
            for seed, g in cell.groupby("seed", sort=True):
                at = g.set_index("epoch")["validation_accuracy"]
                gains.append(float(at[final]) - float(at[final - last]))
            accuracy = mean_of(cell.loc[cell["epoch"] == final, "validation_accuracy"])
            gain = nil_if_rounding(mean_of(gains), gains)  # gains that cancel: zero, not a residue
            out.append(
                {"normaliser": name, "batch_size": int(b), "epochs": final, "seeds": len(gains),
                 "validation_accuracy": accuracy, "gain": gain, "gain_min": min(gains), "gain_max": max(gains),
                 "finished": bool(gain <= threshold)}
            )  # fmt: skip
    return pd.DataFrame(out)


def test_accuracy(accuracy: pd.DataFrame, names) -> pd.DataFrame:
    """Per cell, the mean over seeds of the inference-mode test accuracy (the grid's accuracy files)."""
    inference = accuracy[accuracy["mode"] == "inference"]
    out = []
    for name in order(names):
        for b in sorted(set(inference.loc[inference["normaliser"] == name, "batch_size"])):
            g = inference[(inference["normaliser"] == name) & (inference["batch_size"] == b)].sort_values("seed")
            out.append({"normaliser": name, "batch_size": int(b), "test_accuracy": mean_of(g["accuracy"])})
    return pd.DataFrame(out)


def _cell_name(name: str, b: int) -> str:
    """A cell in prose: ``batch norm at $b = 2$``; ``no normaliser at $b = 8$`` (never "none at")."""
    label = "no normaliser" if name == "none" else normaliser(name).label
    return f"{label} at $b = {b}$"


def last_span(last: int) -> str:
    """``the last epoch``, ``the last three epochs``."""
    return "the last epoch" if last == 1 else f"the last {number_word(last)} epochs"


def count_of(count: int, total: int) -> str:
    """``All 12 cells``, ``One of the 12 cells``, ``Three of the 12 cells``."""
    return f"All {total} cells" if count == total else f"{number_word(count).capitalize()} of the {total} cells"


def largest_gain(table: pd.DataFrame) -> str:
    """The cell of ``table`` that gained most, as the sentences name it: ``$+0.94$ points, batch norm at b = 2``."""
    top = table.loc[table["gain"].idxmax()]
    return f"${signed_points(top['gain'])}$ points, {_cell_name(top['normaliser'], int(top['batch_size']))}"


def named_gains(late: pd.DataFrame) -> list[str]:
    """Each cell of ``late`` with its gain, the largest first: ``batch norm at b = 2 ($+0.94$)``."""
    return [
        f"{_cell_name(r['normaliser'], int(r['batch_size']))} (${signed_points(r['gain'])}$)"
        for _, r in late.sort_values(["gain"], ascending=False, kind="stable").iterrows()
    ]


def unfinished_sentence(table: pd.DataFrame, last: int, threshold: float) -> str:
    """Which cells gained more than ``threshold`` over their last ``last`` epochs, with their gains;
    or that none did, with the largest gain."""
    late = table[~table["finished"]]
    span = f"over {last_span(last)}"
    limit = f"${points(threshold, 1)}$ points"
    if late.empty:
        return (
            f"Every cell gained at most {limit} of validation accuracy {span} (mean over seeds; the largest "
            f"gain, {largest_gain(table)}), so every cell had reached its validation plateau."
        )
    return (
        f"{count_of(len(late), len(table))} gained more than {limit} of "
        f"validation accuracy {span} (mean over seeds, points in brackets) and are not finished: "
        f"{words(named_gains(late))}. Their accuracies are those of networks still improving when training stopped."
    )


def epochs_words(table: pd.DataFrame, unit: str = "") -> str:
    """The cells' epochs: ``20``, or where batch sizes train for different numbers of epochs the most
    common with the others in brackets, ``20 (10 at batch 2)`` (the table's caption: "after the last
    of 20 (10 at batch 2) epochs"); ``unit`` follows the first number (``" epochs"``: ``20 epochs (10
    at batch 2)``)."""
    per_batch = table.groupby("batch_size")["epochs"].max().astype(int)
    counts = per_batch.value_counts()
    common = int(max(counts.index, key=lambda e: (counts[e], e)))
    others = [f"{e} at batch {b}" for b, e in per_batch.items() if e != common]
    return f"{common}{unit} ({words(others)})" if others else f"{common}{unit}"


def baselines_sentence(tests: pd.DataFrame, baselines: list[dict], train_rows: int, epochs: str) -> str:
    """Our best and worst cell's test accuracy (each cell of a tie named) beside the published baselines
    of the data set (``epochs``: how long the networks trained, in words, :func:`epochs_words`)."""

    def tied(value) -> str:  # every cell at that mean, so that a tie names each
        at = tests[tests["test_accuracy"] == value]
        return words([_cell_name(r.normaliser, int(r.batch_size)) for r in at.itertuples()])

    high, low = tests["test_accuracy"].max(), tests["test_accuracy"].min()
    several = (tests["test_accuracy"] == high).sum() > 1
    ours = (
        f"Our best cell{'s' if several else ''}, {tied(high)}, score{'' if several else 's'} "
        f"{points(high, 1)}\\% on the test set in inference mode (mean over seeds) and our "
        f"worst, {tied(low)}, {points(low, 1)}\\%."
    )
    if not baselines:
        return ours
    published = []
    for b in baselines:
        value = (
            f"{points(b['low'], 1)}\\%"
            if b["low"] == b["high"]
            else f"{points(b['low'], 0)}--{points(b['high'], 0)}\\%"
        )
        published.append(f"{value} for {latex.escape(b['what'])}~\\cite{{{b['cite']}}}")
    return (
        f"{ours} Published results on this data set are {words(published)}; our networks are trained for "
        f"{epochs} on {latex.fmt(int(train_rows))} images without augmentation and their recipe "
        "was chosen for this study's comparisons, not to match these."
    )


def noise_sentence(table: pd.DataFrame, validation_rows: int, threshold: float) -> str:
    """The sampling noise of one validation accuracy at the cells' mean accuracy (binomial standard
    error over ``validation_rows`` images) beside the threshold."""
    p = mean_of(table["validation_accuracy"])
    se = math.sqrt(p * (1.0 - p) / validation_rows)
    relation = "larger than" if se > threshold else "smaller than" if se < threshold else "equal to"
    return (
        f"One network's validation accuracy near the cells' mean of {points(p, 1)}\\% has a binomial "
        f"standard error of {points(se, 2)} points over the {latex.fmt(int(validation_rows))} validation "
        f"images, {relation} the threshold, so a cell's gain is measured with noise of its own; the "
        "threshold is the criterion the study fixed before the build, not a test."
    )


def macros(table: pd.DataFrame, tests: pd.DataFrame, settings: dict) -> dict[str, str]:
    """Every number and generated sentence of the section."""
    last, threshold = settings["last_epochs"], settings["threshold"]
    return {
        "curvesNoise": noise_sentence(table, settings["validation_rows"], threshold),
        "curvesLast": number_word(last),
        "curvesLastSpan": last_span(last),
        "curvesLastBefore": f"{number_word(last)} epoch{'s' if last > 1 else ''}",
        "curvesThreshold": points(threshold, 1),
        "curvesEpochs": epochs_words(table),
        "curvesUnfinishedCount": str(int((~table["finished"]).sum())),
        "curvesCells": str(len(table)),
        "curvesUnfinished": unfinished_sentence(table, last, threshold),
        "curvesBaselines": baselines_sentence(
            tests, settings.get("baselines", []), settings["train_rows"], epochs_words(table, " epochs")
        ),
    }


def latex_table(table: pd.DataFrame, tests: pd.DataFrame) -> tuple[list[str], list[list[str]], str, str]:
    """Rows: normalisers; columns: batch sizes; each cell its validation accuracy after the last epoch,
    its gain over the last epochs (a dagger where it is above the threshold) and its test accuracy."""
    sizes = sorted(set(int(b) for b in table["batch_size"]))
    header = ["", *(f"$b = {b}$" for b in sizes)]
    rows = []
    for name in order(table["normaliser"]):
        row = [normaliser(name).label]
        for b in sizes:
            r = table[(table["normaliser"] == name) & (table["batch_size"] == b)]
            t = tests[(tests["normaliser"] == name) & (tests["batch_size"] == b)]
            if r.empty:
                row.append("--")
                continue
            r = r.iloc[0]
            mark = "" if r["finished"] else "$^\\dagger$"
            test = f"{points(t['test_accuracy'].iloc[0], 1)}" if not t.empty else "--"
            row.append(f"{points(r['validation_accuracy'], 1)} (${signed_points(r['gain'])}${mark}) {test}")
        rows.append(row)
    return header, rows, "l" + "r" * len(sizes), "validation accuracy, its gain over the last epochs, test accuracy"


def summary_json(table: pd.DataFrame, tests: pd.DataFrame, settings: dict) -> dict:
    """``results/summary/curves.json``: the settings, every cell and its test accuracy."""
    return {
        "last_epochs": int(settings["last_epochs"]),
        "threshold": float(settings["threshold"]),
        "baselines": list(settings.get("baselines", [])),
        "cells": table.to_dict("records"),
        "test": tests.to_dict("records"),
    }
