"""The training curves of a data set without a validation split (the digits' halves): per grid cell,
the training loss and the training accuracy after every epoch (mean over seeds), their change over
the last ``k`` epochs, the cells named as still gaining on their training images; JSON, macros and
a table. :mod:`bnstudy.studies.curves.report` is the same study on a validation split.

What the grid records (``bnstudy.nets.train``, the compiled loop ``bnstudy.compiled.backprop``): an
epoch's ``loss`` is the mean over its optimiser steps of each batch's mean cross-entropy, and its
``train_accuracy`` the share of the rows seen in the epoch whose largest logit is the label, both
from the training-mode forward pass that computed each step's gradient, before that step's update
(batch statistics for the batch normalisers; the parameters change from batch to batch; the rows of
a dropped leftover batch are not counted). Neither is the inference-mode score of the network the
epoch ended with.

The criterion: a network's gain is its training accuracy in the last epoch minus in epoch ``E - k``;
a cell's gain is the mean over its seeds, and a cell whose gain is above ``threshold`` was still
gaining on its training images. The loss is reported, not judged: on a training set a network can
fit (every row right), and then the cross-entropy keeps falling as the logits grow while no
prediction changes, so a loss criterion would call every fitted cell unfinished. A cell's loss
change is relative, the mean loss over seeds in the last epoch over that of epoch ``E - k``, minus
one. Means are correctly rounded (:func:`bnstudy.studies.curves.report.mean_of`); the gains are
exact, each accuracy read as its count of rows (:func:`share`) and their mean rounded once, so
nothing depends on the CPU or the order of the files.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pandas as pd

from bnstudy.base.normalisers import get as normaliser
from bnstudy.paper.latex import endpoint, points, signed_points, words
from bnstudy.paper.network_prose import number_word
from bnstudy.studies.curves.report import (
    _cell_name,
    baselines_sentence,
    count_of,
    epochs_words,
    largest_gain,
    last_span,
    mean_of,
    named_gains,
    order,
)
from bnstudy.studies.curves.report import epochs_table as report_epochs_table

EPOCH_COLUMNS = ("seed", "epoch", "loss", "train_accuracy")
# The most rows an epoch's accuracy can count (its denominator): fractions with denominators up to
# this lie at least 1e-14 apart, far wider than a float's rounding near 1, so the count is recovered
# exactly from the recorded quotient (:func:`share`).
MAX_ROWS = 10**7


def epochs_table(files: list[tuple[str, int, pd.DataFrame]]) -> pd.DataFrame:
    """The grid's epochs files as one table (``(normaliser, batch_size, table)`` for each job), the
    training columns only (:func:`bnstudy.studies.curves.report.epochs_table`)."""
    return report_epochs_table(files, EPOCH_COLUMNS, "")


def share(value: float) -> Fraction:
    """A recorded accuracy as the exact fraction it is, right rows over the epoch's rows (at most
    :data:`MAX_ROWS`), so that gains and their means are exact: a row gained in one seed cancels a row
    lost in another to exactly 0, not to float residue such as -2e-17."""
    exact = Fraction(value).limit_denominator(MAX_ROWS)
    if float(exact) != value:
        raise ValueError(f"training accuracy {value!r} is not a count over at most {MAX_ROWS} rows")
    return exact


def _cells_of(epochs: pd.DataFrame, names):
    for name in order(names):
        for b in sorted(set(epochs.loc[epochs["normaliser"] == name, "batch_size"])):
            yield name, int(b), epochs[(epochs["normaliser"] == name) & (epochs["batch_size"] == b)]


def by_epoch(epochs: pd.DataFrame, names) -> pd.DataFrame:
    """Per cell and epoch, the means over seeds of the training loss and the training accuracy, and
    the number of seeds."""
    out = []
    for name, b, cell in _cells_of(epochs, names):
        for e, g in cell.groupby("epoch", sort=True):
            g = g.sort_values("seed")
            out.append({"normaliser": name, "batch_size": b, "epoch": int(e), "seeds": len(g),
                        "loss": mean_of(g["loss"]), "train_accuracy": mean_of(g["train_accuracy"])})  # fmt: skip
    return pd.DataFrame(out)


def relative_change(after: float, before: float) -> float:
    """``after / before - 1``; 0 where both are 0 (a loss cannot fall below 0)."""
    if before == 0.0:
        if after == 0.0:
            return 0.0
        raise ValueError("a loss of 0 cannot rise by a share of itself")
    return after / before - 1.0


def cells(epochs: pd.DataFrame, names, last: int, threshold: float) -> pd.DataFrame:
    """Per cell: the last epoch, the mean training loss and accuracy in it and in epoch ``E - last``,
    the relative change of the mean loss, the mean gain in training accuracy with the smallest and
    largest network's gain (exact: :func:`share`), the seeds whose every training row was right in the last epoch
    (``fitted``) and ``plateau`` (the mean gain at most ``threshold``)."""
    out = []
    for name, b, cell in _cells_of(epochs, names):
        final = int(cell["epoch"].max())
        if final <= last:
            raise ValueError(f"{name} at batch {b}: {final} epochs, not more than last_epochs {last}")
        gains = []
        for _, g in cell.groupby("seed", sort=True):
            at = g.set_index("epoch")["train_accuracy"]
            gains.append(share(float(at[final])) - share(float(at[final - last])))
        end, start = cell[cell["epoch"] == final], cell[cell["epoch"] == final - last]
        loss, loss_before = mean_of(end["loss"]), mean_of(start["loss"])
        gain = float(sum(gains) / len(gains))  # exact, then rounded once
        out.append(
            {"normaliser": name, "batch_size": b, "epochs": final, "seeds": len(gains),
             "loss": loss, "loss_before": loss_before, "loss_change": relative_change(loss, loss_before),
             "train_accuracy": mean_of(end["train_accuracy"]), "gain": gain, "gain_min": float(min(gains)),
             "gain_max": float(max(gains)), "fitted": int((end["train_accuracy"] == 1.0).sum()),
             "plateau": bool(gain <= threshold)}
        )  # fmt: skip
    return pd.DataFrame(out)


def gaining_sentence(table: pd.DataFrame, last: int, threshold: float) -> str:
    """Which cells gained more than ``threshold`` of training accuracy over their last ``last``
    epochs, with their gains; or that none did, with the largest gain."""
    late = table[~table["plateau"]]
    span, limit = f"over {last_span(last)}", f"${points(threshold, 1)}$ points"
    if late.empty:
        return (
            f"Every cell gained at most {limit} of training accuracy {span} (mean over seeds; the largest "
            f"gain, {largest_gain(table)}), so no cell was still gaining on its training images when training stopped."
        )
    verb = "was" if len(late) == 1 else "were"
    return (
        f"{count_of(len(late), len(table))} gained more than {limit} of training accuracy {span} (mean "
        f"over seeds, points in brackets) and {verb} still gaining on {'its' if len(late) == 1 else 'their'} "
        f"training images when training stopped: {words(named_gains(late))}."
    )


def abstract_sentence(table: pd.DataFrame, last: int, threshold: float) -> str:
    """The abstract's sentence on the training curves: how many grid cells were still gaining training
    accuracy when training stopped, and the one that gained most."""
    late = table[~table["plateau"]]
    span, limit = f"over {last_span(last)}", f"${points(threshold, 1)}$ points"
    if late.empty:
        return f"By the end of training every grid cell had stopped gaining training accuracy (at most {limit} {span})"
    top = late.loc[late["gain"].idxmax()]
    most = f"{_cell_name(top['normaliser'], int(top['batch_size']))} (${signed_points(top['gain'])}$)"
    count = count_of(len(late), len(table)).replace(" cells", " grid cells")
    verb = "was" if len(late) == 1 else "were"
    where = f": {most}" if len(late) == 1 else f", most of all {most}"
    return f"{count} {verb} still gaining more than {limit} of training accuracy {span} when training stopped{where}"


def percent(change: float) -> str:
    """A relative change in percent, signed, never a nonzero change printed as zero: ``$-29\\%$``."""
    return f"${endpoint(change, 0, signed=True)}\\%$"


def loss_sentence(table: pd.DataFrame, last: int) -> str:
    """In how many cells the mean training loss fell over the last ``last`` epochs, by how much at
    most, and the cells where it did not fall."""
    span = f"over {last_span(last)}"
    fell = table[table["loss_change"] < 0]
    other = table[table["loss_change"] >= 0]
    if fell.empty:
        return f"The training loss (mean over seeds) fell {span} in no cell."
    top = fell.loc[fell["loss_change"].idxmin()]
    text = (
        f"The training loss (mean over seeds) fell {span} in "
        f"{'every cell' if other.empty else f'{number_word(len(fell))} of the {len(table)} cells'}, "
        f"by up to {endpoint(-top['loss_change'], 0)}\\% of its value {number_word(last)} "
        f"epoch{'s' if last > 1 else ''} before ({_cell_name(top['normaliser'], int(top['batch_size']))})"
    )
    if other.empty:
        return text + "."
    named = [
        f"{_cell_name(r['normaliser'], int(r['batch_size']))} ({percent(r['loss_change'])})"
        for _, r in other.sort_values(["loss_change"], ascending=False, kind="stable").iterrows()
    ]
    return text + f"; it did not fall in {words(named)}."


def limits_sentence(table: pd.DataFrame) -> str:
    """What the criterion cannot say without a validation split, with the count of cells whose every
    network was right on every training row in the last epoch."""
    fitted = table[table["fitted"] == table["seeds"]]
    if fitted.empty:
        where = "In no cell was every network right on every training row in the last epoch."
    else:
        verb = "was" if len(fitted) == 1 else "were"
        where = (
            f"{count_of(len(fitted), len(table))} {verb} right on every training row in the last epoch in "
            "every seed: their training accuracy can gain no more, and their loss falls only as the logits "
            "grow."
        )
    return (
        f"{where} With no validation split these curves speak of the training images only: a plateau "
        "of the training accuracy does not show that the test accuracy has reached one, nor a gain "
        "that the test accuracy still rises, since the training accuracy can keep rising while the "
        "test accuracy does not."
    )


def macros(table: pd.DataFrame, tests: pd.DataFrame, settings: dict) -> dict[str, str]:
    """Every number and generated sentence of the section (``curvesTraining``: the section's
    training-curves text, where the data set has no validation split)."""
    last, threshold = settings["last_epochs"], settings["threshold"]
    return {
        "curvesTraining": "1",
        "curvesLast": number_word(last),
        "curvesLastSpan": last_span(last),
        "curvesLastBefore": f"{number_word(last)} epoch{'s' if last > 1 else ''}",
        "curvesThreshold": points(threshold, 1),
        "curvesEpochs": epochs_words(table),
        "curvesUnfinishedCount": str(int((~table["plateau"]).sum())),
        "curvesCells": str(len(table)),
        "curvesUnfinished": gaining_sentence(table, last, threshold),
        "curvesAbstractSentence": abstract_sentence(table, last, threshold),
        "curvesLoss": loss_sentence(table, last),
        "curvesLimits": limits_sentence(table),
        "curvesBaselines": baselines_sentence(
            tests, settings.get("baselines", []), settings["train_rows"], epochs_words(table, " epochs")
        ),
    }


def thousandths(value: float) -> str:
    """A loss in thousandths (the table's ``$10^3 \\times$ loss``) to two significant digits or more,
    without a power of ten for the losses the grid reaches: ``0.0000369`` -> ``0.037``, ``1.2`` ->
    ``1200``; below ``1e-5`` with one (``$1.2 \\cdot 10^{-3}$``)."""
    v = 1000.0 * value
    if v == 0.0:
        return "0"
    if v >= 0.01:
        return f"{v:.{max(0, 1 - math.floor(math.log10(v)))}f}"
    mantissa, exponent = f"{v:.1e}".split("e")
    return f"${mantissa} \\cdot 10^{{{int(exponent)}}}$"


def latex_table(table: pd.DataFrame) -> tuple[list[str], list[list[str]], str, str]:
    """Two rows per normaliser, columns the batch sizes: the training accuracy in the last epoch (%)
    with its gain over the last epochs (points; a dagger where above the threshold), then the training
    loss in thousandths with its relative change (%, the sign without the percent sign, so that six
    batch sizes fit the page)."""
    sizes = sorted(set(int(b) for b in table["batch_size"]))
    header = ["", "", *(f"$b = {b}$" for b in sizes)]
    rows = []
    for name in order(table["normaliser"]):
        accuracy, loss = [normaliser(name).label, "accuracy"], ["", "$10^3 \\times$ loss"]
        for b in sizes:
            r = table[(table["normaliser"] == name) & (table["batch_size"] == b)]
            if r.empty:
                accuracy.append("--")
                loss.append("--")
                continue
            r = r.iloc[0]
            mark = "" if r["plateau"] else "$^\\dagger$"
            accuracy.append(f"{points(r['train_accuracy'], 1)} (${signed_points(r['gain'])}${mark})")
            loss.append(f"{thousandths(r['loss'])} (${endpoint(r['loss_change'], 0, signed=True)}$)")
        rows += [accuracy, loss]
    return header, rows, "ll" + "r" * len(sizes), "training accuracy and its gain, training loss and its change"


def summary_json(table: pd.DataFrame, tests: pd.DataFrame, settings: dict) -> dict:
    """``results/summary/curves.json``: the settings, the criterion, every cell and its test accuracy."""
    return {
        "on": "training",
        "last_epochs": int(settings["last_epochs"]),
        "threshold": float(settings["threshold"]),
        "baselines": list(settings.get("baselines", [])),
        "cells": table.to_dict("records"),
        "test": tests.to_dict("records"),
    }
