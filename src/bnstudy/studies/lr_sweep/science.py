"""Study 2 with the learning rate tuned: Adam's rate swept at every grid batch size.

The grid trains every network with one learning rate; here each (normaliser, batch
size) cell is trained at every rate of a list, on the training half minus a
validation split, and the cell's rate is the one with the best mean validation
accuracy over seeds. With ``lr_sweep.folds`` K the training half is cut into K
stratified folds instead, each (rate, seed) trained K times (on the other K - 1 folds,
scored on the held-out one), and the rate is the best mean over folds x seeds.
The test half is read only to score the chosen rate.

- :func:`validation_split`: a stratified, seeded split of the training half's rows
  (scikit-learn's ``train_test_split``, integer work, as :func:`bnstudy.nets.data.split_digits`);
- :func:`fold_split`: K stratified, seeded folds of them (scikit-learn's ``StratifiedKFold``);
- :func:`sweep`: the networks of one normaliser (every batch size x rate x seed) through
  :func:`bnstudy.nets.train.train_models`, scored in inference mode on both splits;
  :func:`fold_sweep` the same once per fold;
- the summary (chosen rates, paired differences, macros, tables) is :mod:`bnstudy.studies.lr_sweep.report`.

Accuracies are integer counts of rows divided by the number of rows.

Nothing here depends on the CPU.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SUBSETS = ("fit", "validation")
RUN_COLUMNS = ["normaliser", "batch_size", "lr", "seed", "validation_accuracy", "test_accuracy", "final_loss"]


def validation_split(y: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(fit, validation)``: sorted row indices of ``y`` (the training half), the validation rows
    a stratified ``fraction`` of them (scikit-learn's ``train_test_split`` with ``stratify=y``,
    ``random_state=seed``, as the halves of :func:`bnstudy.nets.data.split_digits`)."""
    from sklearn.model_selection import train_test_split  # only the split needs it

    index = np.arange(len(y))
    fit, validation = train_test_split(index, test_size=fraction, stratify=y, random_state=seed, shuffle=True)
    return np.sort(fit).astype(np.int64), np.sort(validation).astype(np.int64)


def split_table(fit: np.ndarray, validation: np.ndarray) -> pd.DataFrame:
    """One row per training-half row: ``row`` (its index in the training half) and ``subset``."""
    rows = [(int(i), "fit") for i in fit] + [(int(i), "validation") for i in validation]
    return pd.DataFrame(sorted(rows), columns=["row", "subset"])


def read_split(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`split_table`."""
    pick = lambda s: np.sort(table.loc[table["subset"] == s, "row"].to_numpy(np.int64))  # noqa: E731
    return pick("fit"), pick("validation")


def fold_split(y: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """The fold (0 to ``folds - 1``) of each row of ``y`` (the training half): scikit-learn's
    ``StratifiedKFold(folds, shuffle=True, random_state=seed)``, each fold's rows its held-out
    (test) indices; integer work, so the same bytes on every machine."""
    from sklearn.model_selection import StratifiedKFold  # only the split needs it

    fold = np.full(len(y), -1, dtype=np.int64)
    splitter = StratifiedKFold(n_splits=int(folds), shuffle=True, random_state=int(seed))
    for k, (_, held_out) in enumerate(splitter.split(np.zeros((len(y), 1)), y)):
        fold[held_out] = k
    return fold


def fold_table(fold: np.ndarray) -> pd.DataFrame:
    """One row per training-half row: ``row`` (its index in the training half) and its ``fold``."""
    return pd.DataFrame({"row": np.arange(len(fold), dtype=np.int64), "fold": fold.astype(np.int64)})


def read_folds(table: pd.DataFrame) -> list[tuple[np.ndarray, np.ndarray]]:
    """Inverse of :func:`fold_table` as ``(fit, held_out)`` sorted row indices of each fold in turn:
    the held-out rows are the fold's, the fit rows every other fold's."""
    table = table.sort_values("row")
    rows, fold = table["row"].to_numpy(np.int64), table["fold"].to_numpy(np.int64)
    return [(rows[fold != k], rows[fold == k]) for k in sorted(int(v) for v in np.unique(fold))]


def fold_sweep(spec, recipe, batch_sizes, lrs, seeds, x, y, folds, x_test, y_test, threads: int = 1):
    """:func:`sweep` once per fold of ``folds`` (:func:`read_folds`' ``(fit, held_out)`` pairs), the
    held-out rows as validation; ``runs`` gains a ``fold`` column after ``seed``, ``epochs`` a
    ``fold`` column. The networks of one fold and seed share their data and initial weights at
    every rate."""
    runs, epochs = [], []
    for k, (fit, held_out) in enumerate(folds):
        r, e = sweep(spec, recipe, batch_sizes, lrs, seeds, x, y, fit, held_out, x_test, y_test, threads=threads)
        runs.append(r.assign(fold=k))
        epochs.append(e.assign(fold=k))
    columns = RUN_COLUMNS[:4] + ["fold"] + RUN_COLUMNS[4:]
    return pd.concat(runs, ignore_index=True)[columns], pd.concat(epochs, ignore_index=True)


def sweep(spec, recipe, batch_sizes, lrs, seeds, x, y, fit, validation, x_test, y_test, threads: int = 1):
    """Train ``spec`` at every batch size x rate on rows ``fit`` of ``(x, y)``, one network per seed,
    the recipe otherwise ``recipe``; returns ``(runs, epochs)`` rows. ``runs``: per network its
    inference-mode accuracy on rows ``validation`` and on the test half, and its last epoch's mean
    batch loss; ``epochs``: :func:`bnstudy.nets.train.train_models`' log with batch size and rate."""
    from dataclasses import replace

    from bnstudy.evaluation.accuracy import inference_accuracy

    x_fit, y_fit = x[fit], y[fit]
    x_val, y_val = x[validation], y[validation]
    runs, epochs = [], []
    for b in batch_sizes:
        for lr in lrs:
            r = replace(recipe, batch_size=int(b), lr=float(lr))
            stacked, log = spec.train_models(r, seeds, x_fit, y_fit, threads=threads)
            val = inference_accuracy(stacked, spec, x_val, y_val)
            test = inference_accuracy(stacked, spec, x_test, y_test)
            last = {row["seed"]: row["loss"] for row in log if row["epoch"] == r.epochs}
            head = {"normaliser": spec.normaliser, "batch_size": int(b), "lr": float(lr)}
            runs += [
                head
                | {"seed": int(s), "validation_accuracy": float(val[i]), "test_accuracy": float(test[i])}
                | {"final_loss": float(last[int(s)])}
                for i, s in enumerate(seeds)
            ]
            epochs += [head | row for row in log]
    return pd.DataFrame(runs, columns=RUN_COLUMNS), pd.DataFrame(epochs)
