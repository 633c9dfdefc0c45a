"""Studies 2 and 1 on the small convolutional network (:mod:`bnstudy.nets.conv_train`).

- :func:`train_normaliser`: one normaliser's networks at every batch size x seed, each scored
  on the test half in inference mode and in training mode on seeded test batches of its
  training size (:func:`bnstudy.studies.batch_size.evaluation.test_batches`, every row scored once);
- :func:`companion_pairs` and :func:`probe`: study 1 at batches of two, labelled by the companion
  study's shared probes (:func:`bnstudy.studies.companions.science.labeller`). Every probed test
  example is labelled in inference mode once and in training mode beside one companion:
  ``random`` companions (drawn uniformly, with replacement across draws, from the other test
  rows), ``own_class`` and ``other_class`` companions (from the rows of its class, or of the
  other classes), and ``exact``: every other test row once, for a seeded subset of the examples.
  The companions are drawn once per example (PCG64 seeded from ``(seed, STREAM_PROBE,
  example)``, integer draws) and shared by every network, so networks are compared on the
  same batches.

Accuracies and flip rates are integer counts divided by counts. Nothing here depends on the CPU.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from bnstudy.base.runtime import STREAM_PROBE, derive_seed
from bnstudy.nets import conv_train
from bnstudy.studies.batch_size import evaluation
from bnstudy.studies.companions.science import exact_pool, labeller  # noqa: F401 (exact_pool: the probe script's)

RUN_COLUMNS = ["normaliser", "batch_size", "seed", "inference_accuracy", "train_mode_accuracy", "final_loss"]
DESIGNS = ("random", "own_class", "other_class", "exact")


def weight_key(batch_size: int, seed: int, key: str) -> str:
    """A network's tensor in the weights file of its normaliser: ``b{batch}/seed{seed}/{key}``."""
    return f"b{int(batch_size)}/seed{int(seed)}/{key}"


def networks(weights: dict, batch_size: int, seeds) -> dict:
    """The stack (model axis in the order of ``seeds``) of the networks trained at ``batch_size``."""
    keys = sorted({k.split("/", 2)[2] for k in weights if k.startswith(f"b{int(batch_size)}/")})
    return {k: np.stack([weights[weight_key(batch_size, s, k)] for s in seeds]) for k in keys}


def train_mode_accuracy(stacked, spec, x, y, batch_size: int, seed: int, limits=(1.0, 0.0)) -> np.ndarray:
    """Per model, the share of test rows labelled right in training mode, each row scored once in
    the seeded test batches of ``batch_size`` (:func:`bnstudy.studies.batch_size.evaluation.test_batches`;
    batch renorm with ``limits``, its run's final ones)."""
    batches, scored = evaluation.test_batches(len(x), batch_size, seed)
    flat, keep = batches.reshape(-1), scored.reshape(-1)
    z = conv_train.logits(stacked, spec, np.asarray(x)[flat], train=True, batch=batch_size, limits=limits)
    hits = evaluation.labels(z)[:, keep] == np.asarray(y)[flat[keep]][None, :]
    return evaluation.share(hits)


def train_normaliser(spec, recipe, batch_sizes, seeds, x, y, x_test, y_test, eval_seed: int, threads: int = 1):
    """Train ``spec`` at every batch size (``recipe`` otherwise) x seed; returns ``(weights, runs,
    epochs)``: every network's tensors (:func:`weight_key`), one run row per network, the epoch log."""
    weights, runs, epochs = {}, [], []
    for b in batch_sizes:
        run = replace(recipe, batch_size=int(b))
        stacked, log = conv_train.train_models(spec, run, seeds, x, y, threads)
        inference = evaluation.share(evaluation.labels(conv_train.logits(stacked, spec, x_test)) == y_test[None, :])
        limits = conv_train.final_limits(spec, run, len(y))
        training = train_mode_accuracy(stacked, spec, x_test, y_test, int(b), eval_seed, limits)
        last = {row["seed"]: row["loss"] for row in log if row["epoch"] == recipe.epochs}
        for i, s in enumerate(seeds):
            for k, v in stacked.items():
                weights[weight_key(b, s, k)] = v[i]
            runs.append(
                {"normaliser": spec.normaliser, "batch_size": int(b), "seed": int(s)}
                | {"inference_accuracy": float(inference[i]), "train_mode_accuracy": float(training[i])}
                | {"final_loss": float(last[int(s)])}
            )
        epochs += [{"normaliser": spec.normaliser, "batch_size": int(b)} | row for row in log]
    return weights, pd.DataFrame(runs, columns=RUN_COLUMNS), pd.DataFrame(epochs)


def exact_subset(examples: np.ndarray, labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """``per_class`` of the probed examples of each class (classes in order), drawn without
    replacement by PCG64 seeded from ``(seed, STREAM_PROBE)``; sorted."""
    rng = np.random.default_rng(derive_seed(seed, STREAM_PROBE))
    chosen = []
    for c in np.unique(labels):
        pool = np.sort(np.asarray(examples)[np.asarray(labels) == c])
        chosen += list(pool[rng.permutation(len(pool))[:per_class]])
    return np.sort(np.array(chosen, np.int64))


def companion_pairs(examples, y_test, draws: int, exact: np.ndarray, seed: int, companions=None) -> pd.DataFrame:
    """Every probe batch: ``example``, ``companion`` and ``design`` (:data:`DESIGNS`), per example
    in order ``random``, ``own_class``, ``other_class`` (``draws`` each), then ``exact``: each
    example of ``exact`` beside every other test row, or every other row of ``companions``
    (:func:`exact_pool`) when given, in ascending order."""
    y_test = np.asarray(y_test)
    n = len(y_test)
    rows = []
    for e in (int(v) for v in examples):
        rng = np.random.default_rng(derive_seed(seed, STREAM_PROBE, e))
        others = np.delete(np.arange(n), e)
        own = others[y_test[others] == y_test[e]]
        other = others[y_test[others] != y_test[e]]
        for design, pool in (("random", others), ("own_class", own), ("other_class", other)):
            rows += [(e, int(c), design) for c in pool[rng.integers(0, len(pool), size=draws)]]
    companions = range(n) if companions is None else [int(c) for c in companions]
    for e in (int(v) for v in exact):
        rows += [(e, c, "exact") for c in companions if c != e]
    return pd.DataFrame(rows, columns=["example", "companion", "design"])


def probe(weights: dict, spec, batch_sizes, seeds, x_test, y_test, pairs: pd.DataFrame) -> pd.DataFrame:
    """Per network (training batch size, seed), design and example: batches, flips (training-mode
    label differs from the inference-mode one), training-mode correct labels, inference correct.
    The labels are the companion study's (:func:`bnstudy.studies.companions.science.labeller`): each
    pair a training-mode batch of two, the example first."""
    y_test = np.asarray(y_test)
    index = np.ascontiguousarray(pairs[["example", "companion"]].to_numpy(np.int64))
    out = []
    for b in batch_sizes:
        shared = labeller(networks(weights, b, seeds), spec, x_test)
        inference = shared.inference(np.arange(len(y_test)))
        labels = shared.labels(index)
        for i, s in enumerate(seeds):
            got = labels[i]
            table = pairs.assign(
                flip=(got != inference[i][index[:, 0]]).astype(np.int64),
                correct=(got == y_test[index[:, 0]]).astype(np.int64),
            )
            for (design, e), g in table.groupby(["design", "example"], sort=True):
                out.append(
                    {"batch_size": int(b), "seed": int(s), "design": design, "example": int(e), "batches": len(g)}
                    | {"flips": int(g.flip.sum()), "correct": int(g.correct.sum())}
                    | {"inference_correct": int(inference[i][e] == y_test[e])}
                )
    return pd.DataFrame(out)


def flip_rates(probes: pd.DataFrame) -> pd.DataFrame:
    """Per network and design: examples, the flip rate and training-mode accuracy (means over
    examples of each example's share; integer counts summed exactly, one division per example),
    and the share of examples that flipped at least once."""
    rows = []
    for (b, s, design), g in probes.groupby(["batch_size", "seed", "design"], sort=True):
        flips = g.flips.to_numpy() / g.batches.to_numpy()
        correct = g.correct.to_numpy() / g.batches.to_numpy()
        rows.append(
            {"batch_size": int(b), "seed": int(s), "design": design, "examples": len(g)}
            | {"flip_rate": _mean(flips), "train_mode_accuracy": _mean(correct)}
            | {"ever_flipped": int((g.flips > 0).sum()) / len(g)}
        )
    return pd.DataFrame(rows)


def _mean(v) -> float:
    import math

    return math.fsum(float(a) for a in v) / len(v)
