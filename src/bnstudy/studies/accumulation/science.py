"""Gradient accumulation and ghost batch norm: batch statistics of a micro-batch, steps of a batch.

Batch norm trained at an effective batch of ``B`` rows in micro-batches of ``m``
(``B / m`` of them per optimiser step, gradients averaged: :func:`bnstudy.compiled.backprop.train_run`'s
``accumulate``), and ghost batch norm at batch ``B`` with virtual batch ``m`` (Hoffer, Hubara
& Soudry 2017). Both
normalise the same consecutive groups of ``m`` rows of each batch, move the running
statistics once per group in the same order and step on the gradient of the mean loss
over the ``B`` rows: the same update up to the order of float32 sums. The grid's
networks at batch ``B`` and at batch ``m`` (same seeds, same initial weights; batch
``B`` also the same batch order) are the comparisons the summary adds from the grid.

The second arm, ``scaled``: batch norm at batch ``m`` (no accumulation), the grid's epochs and
batch order at that batch, with the learning rate scaled by ``m / B``. Accumulation takes ``B / m``
times fewer optimiser steps than training at batch ``m`` for the same epochs; scaled so, the
rate times the number of steps, which bounds how far Adam can move a weight (its step is about
the rate in size whatever the gradient's scale), is that of accumulation, as the linear scaling
rule makes it for SGD. Holding the steps themselves equal instead would cost ``B / m`` times the
accumulating runs' compute, or leave the batch-``m`` network a fraction of one epoch.

- :func:`variants`: the network and recipe of each variant;
- :func:`train_block`: train every variant for a block of seeds and evaluate it, in
  inference mode on the test half (with its running statistics, and with the exact
  population statistics of the training half, :func:`bnstudy.evaluation.recompute.exact_statistics`,
  mode ``recomputed``) and in training mode on seeded test batches of ``m``
  (:func:`bnstudy.evaluation.accuracy.train_mode_accuracy`; a ghost network on a batch of ``m``
  rows is one virtual batch, so both variants are scored on the same groups of rows);
- :func:`differences`: how far the two variants of one seed lie apart in the gradient of
  their first step (one SGD step of rate 1 without momentum on the seed's first batch,
  so that the step is the gradient) and after the run (largest absolute difference of
  any parameter or running statistic; the biases of the Linears before a normaliser
  apart, whose gradient is zero up to rounding and which Adam moves by about its rate
  whatever that rounding).

Accuracies are integer counts over the number of rows; maxima of absolute
differences are exact. Nothing here depends on the CPU.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

KINDS = ("accumulate", "ghost", "scaled")
PRE_NORM_BIASES = ("0.bias", "3.bias")  # Linears followed by a normaliser: zero gradient but for rounding
ACCURACY_COLUMNS = ["variant", "micro_batch", "seed", "mode", "accuracy"]
DIFFERENCE_COLUMNS = [
    "micro_batch",
    "seed",
    "after",
    "parameters",
    "pre_norm_biases",
    "running",
    "scale",
    "label_disagreement",
]


def variant_name(kind: str, micro: int) -> str:
    """``accumulate_m2``, ``ghost_m4``, ``scaled_m2``: a variant's name in file paths and tables."""
    if kind not in KINDS:
        raise ValueError(f"unknown variant {kind!r}; expected one of {KINDS}")
    return f"{kind}_m{int(micro)}"


def variants(spec, recipe, micro_batches) -> dict[str, tuple[object, object]]:
    """``{name: (spec, recipe)}``: for each micro-batch ``m``, batch norm accumulating
    ``recipe.batch_size / m`` micro-batches per step, ghost batch norm with virtual
    batch ``m`` at batch ``recipe.batch_size``, and batch norm at batch ``m`` with the
    rate scaled by ``m / recipe.batch_size`` (``scaled``); in order of ``micro_batches``."""
    out = {}
    for m in micro_batches:
        m = int(m)
        if m < 2 or recipe.batch_size % m or m >= recipe.batch_size:
            raise ValueError(f"micro-batch {m} does not divide the batch of {recipe.batch_size} rows into two or more")
        out[variant_name("accumulate", m)] = (spec, replace(recipe, accumulate=recipe.batch_size // m))
        out[variant_name("ghost", m)] = (replace(spec, normaliser="ghostbatchnorm", virtual_batch=m), recipe)
        out[variant_name("scaled", m)] = (
            spec,
            replace(recipe, batch_size=m, lr=scaled_lr(recipe.lr, m, recipe.batch_size)),
        )
    return out


def scaled_lr(lr: float, micro: int, batch_size: int) -> float:
    """The second arm's rate at batch ``micro``: ``lr * micro / batch_size``."""
    return float(lr) * int(micro) / int(batch_size)


def _max_abs(a: dict, b: dict, keys) -> float:
    keys = list(keys)
    if not keys:
        return 0.0
    return float(max(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64))) for k in keys))


def parameter_distance(a: dict, b: dict) -> dict[str, float]:
    """Largest absolute difference between two networks' state dicts (same keys): over the
    parameters but the pre-normaliser biases, over those biases, over the running statistics."""
    if set(a) != set(b):
        raise ValueError(f"state dicts differ in keys: {sorted(set(a) ^ set(b))}")
    floats = [k for k in sorted(a) if np.issubdtype(a[k].dtype, np.floating)]
    running = [k for k in floats if "running" in k]
    biases = [k for k in floats if k in PRE_NORM_BIASES]
    params = [k for k in floats if k not in running and k not in biases]
    return {
        "parameters": _max_abs(a, b, params),
        "pre_norm_biases": _max_abs(a, b, biases),
        "running": _max_abs(a, b, running),
    }


def largest(state: dict) -> float:
    """The largest absolute value of a state dict's float parameters (running statistics apart)."""
    keys = [k for k in state if np.issubdtype(state[k].dtype, np.floating) and "running" not in k]
    return float(max(np.max(np.abs(state[k])) for k in keys))


def differences(trained: dict, first: dict, labels: dict, micro_batches, seeds) -> list[dict]:
    """Per micro-batch ``m`` and seed, accumulation against ghost batch norm: the
    :func:`parameter_distance` of the first step's gradients (``first``) and of the trained
    networks (``trained``), both ``{variant: [state per seed]}``, with ``scale`` the
    accumulating network's largest absolute value there (gradient or parameter); after the
    run also the share of test rows whose inference-mode labels differ (``labels``:
    ``{variant: (seeds, rows) labels}``)."""
    rows = []
    for m in micro_batches:
        acc, ghost = variant_name("accumulate", m), variant_name("ghost", m)
        for i, s in enumerate(seeds):
            for after, states in (("first_step", first), ("run", trained)):
                d = parameter_distance(states[acc][i], states[ghost][i])
                disagree = float("nan")
                if after == "run":
                    disagree = int(np.count_nonzero(labels[acc][i] != labels[ghost][i])) / labels[acc].shape[1]
                head = {"micro_batch": int(m), "seed": int(s), "after": after}
                rows.append(head | d | {"scale": largest(states[acc][i]), "label_disagreement": disagree})
    return rows


def first_gradient(spec, recipe, seed: int, x, y) -> dict:
    """The gradient of the first step of seed ``seed``'s run (its first batch, its initial
    weights), as ``initial - after`` of one SGD step of rate 1 without momentum (exact to
    within the rounding of the parameters); running statistics as moved by that step."""
    from bnstudy.nets import train

    rows = first_batch(y, recipe, seed)
    sgd = replace(recipe, epochs=1, optimizer="sgd", lr=1.0, sgd_momentum=0.0)
    after, _ = train.train_one(spec, sgd, seed, x[rows], y[rows])
    before = spec.initial_state(seed)
    moved = [k for k in after if np.issubdtype(after[k].dtype, np.floating) and "running" not in k]
    return {k: before[k] - v if k in moved else v for k, v in after.items()}


def first_batch(y, recipe, seed: int) -> np.ndarray:
    """The rows of a run's first batch (seed ``seed``'s batch order)."""
    from bnstudy.nets.batching import epoch_rows, order_generator

    return epoch_rows(order_generator(seed), np.asarray(y), recipe.batch_size, recipe.order, recipe.last_batch)[
        : recipe.batch_size
    ]


def train_block(spec, recipe, micro_batches, seeds, x, y, x_test, y_test, eval_seed: int, threads: int = 1):
    """Train and evaluate every variant for ``seeds``: ``(stacks, logs, accuracy, differences)``.

    ``stacks``: ``{variant: (spec, recipe, stacked)}``; ``logs``: the epoch log rows with the
    variant; ``accuracy``: one row per variant, seed and mode (``inference``, ``training``,
    ``recomputed``: inference mode with :func:`recomputed_statistics`); ``differences``:
    :func:`differences` of accumulation and ghost batch norm, the first step's by
    :func:`first_gradient`."""
    from bnstudy.evaluation import accuracy as scores
    from bnstudy.evaluation import recompute
    from bnstudy.nets import train
    from bnstudy.nets.model import unstack

    seeds = [int(s) for s in seeds]
    stacks, logs, accuracy, labels, trained, first = {}, [], [], {}, {}, {}
    for name, (v_spec, v_recipe) in variants(spec, recipe, micro_batches).items():
        m = int(name.rsplit("_m", 1)[1])
        stacked, log = train.train_models(v_spec, v_recipe, seeds, x, y, threads=threads)
        stacks[name] = (v_spec, v_recipe, stacked)
        logs += [{"variant": name} | row for row in log]
        labels[name] = scores.labels(np.asarray(_logits(stacked, v_spec, x_test)))
        recomputed = recompute.with_statistics(stacked, recomputed_statistics(stacked, v_spec, x))
        modes = {
            "inference": scores.share(labels[name] == np.asarray(y_test)[None, :]),
            "training": scores.train_mode_accuracy(stacked, v_spec, x_test, y_test, m, eval_seed),
            "recomputed": scores.inference_accuracy(recomputed, v_spec, x_test, y_test),
        }
        accuracy += [
            {"variant": name.split("_m")[0], "micro_batch": m, "seed": s, "mode": mode, "accuracy": float(acc[i])}
            for mode, acc in modes.items()
            for i, s in enumerate(seeds)
        ]
        if not name.startswith("scaled"):
            trained[name] = unstack(stacked)
            first[name] = [first_gradient(v_spec, v_recipe, s, x, y) for s in seeds]
    return stacks, logs, accuracy, differences(trained, first, labels, micro_batches, seeds)


def recomputed_statistics(stacked, spec, x) -> dict:
    """The exact population statistics of the rows ``x`` (the training half) for a stack of batch
    norm or ghost batch norm (:func:`bnstudy.evaluation.recompute.exact_statistics`; in inference mode ghost
    batch norm is batch norm with its running statistics, so the statistics are those of batch norm)."""
    from bnstudy.evaluation import recompute

    if spec.normaliser not in ("batchnorm", "ghostbatchnorm"):
        raise ValueError(f"no running statistics to recompute for {spec.normaliser!r}")
    return recompute.exact_statistics(stacked, replace(spec, normaliser="batchnorm"), x)


def _logits(stacked, spec, x):
    return spec.logits(stacked, x)
