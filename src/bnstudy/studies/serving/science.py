"""Training-mode serving with live running statistics (issue 17, item 3).

Study 1 probes a trained batch-norm network in training mode with its running
statistics frozen. A network deployed in training mode moves them with every
batch it serves. Here a stream of test batches goes through each trained network
in training mode, and after every batch each batch-norm layer updates its running
statistics exactly as in training (:func:`bnstudy.compiled.gradients.norm_forward`, the
arithmetic of the training step: the batch's biased statistics normalise it, then
``running = (1 - m) * running + m * batch`` with the unbiased batch variance and
the momentum ``m`` the network was trained with, ``1 / t`` for momentum None).
No weight changes: only the running statistics move.

The test half is first split (:func:`held_out_split`, seeded by ``(seed,
STREAM_SERVING, HELD_OUT_KEY)``, stratified by class) into the rows served and the
held-out rows, which the stream never sees: the inference-mode accuracy before and
after the stream is scored on the held-out rows, so "after" measures the model left
behind on new traffic, not how well the statistics adapted to the rows they were
computed from (issue 29, item 9).

Streams (:func:`stream_rows`) over the served rows, ``replicates`` of each kind, the
same for every network; replicate ``r`` of pass ``p`` seeded by ``(seed,
STREAM_SERVING, stream, p)`` for ``r = 0`` and ``(seed, STREAM_SERVING, stream, p, r)``
otherwise (PCG64, integer draws only):

- ``random``: the rows in a random permutation;
- ``sorted``: the rows sorted by class, the order within a class that of a random
  permutation; the classes in ascending order in replicate 0, in a seeded random
  order (:func:`class_order`) in every other replicate;

each pass over the ``n`` rows is cut into ``n // b`` consecutive batches of ``b``
rows (the last ``n mod b`` rows of each pass are not served), passes one after
another.

The control of the random stream (:func:`serve_training_rows`, issue 29, item 11; where
``serving.training_rows`` is set): the same serving with training rows in place of the test
rows, so that each served row's batch companions carry no information about the test
distribution. Replicate ``r`` of pass ``p`` serves the first ``n`` rows (``n``: the served test
rows) of a permutation of the training half seeded by ``(seed, STREAM_SERVING,
TRAINING_ROWS_KEY, p, r)``, in batches of ``b`` as a random stream is cut; scored on the same
held-out test rows, it is paired with random replicate ``r`` by network and replicate. What the
random stream gains over it needs the test rows (adaptation to them); what it gains over the
start without them comes from re-estimating the running statistics in served batches.

Measured per network and stream (:func:`serve_stack`): the training-mode label of
every served row (so the accuracy of every batch along the stream); the
inference-mode accuracy on the held-out rows before and after the stream; and how
far the running statistics moved (:func:`movement`). Accuracies are integer counts
over row counts; the movement's sums are ``math.fsum``. Everything network-valued
runs through the fixed-order float32 kernels (:mod:`bnstudy.compiled.kernels`).

The summary (:func:`summarise`) crosses networks with stream replicates: each
interval is :func:`crossed_interval`'s, over both.
"""

from __future__ import annotations

import math

import numpy as np

from bnstudy.base.designs import SERVING_STREAMS
from bnstudy.base.runtime import derive_seed
from bnstudy.compiled import backprop, kernels
from bnstudy.nets import train
from bnstudy.nets.model import stack, unstack
from bnstudy.studies.serving.estimates import (  # noqa: F401 (re-exported: the study's names)
    MEASURES,
    _table,
    along_means,
    crossed_interval,
    summarise,
)

STREAM_SERVING = 17  # the random stream of this study (issue 17, item 3)
STREAMS = SERVING_STREAMS
HELD_OUT_KEY = 2  # the held-out split's key after the two streams' indices 0 and 1
CLASS_ORDER_KEY = 3  # the class orders' key
TRAINING_ROWS_KEY = 4  # the control's draws of training rows
CONTROL = "training_rows"  # the control's stream name in the networks' rows


def held_out_split(y, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(served, held_out)`` row indices (int64, ascending) of the test half ``y``.

    Per class in ascending order, ``floor(share * count)`` of its rows are held out: the
    first of a seeded permutation of the class's rows (PCG64 from ``(seed, STREAM_SERVING,
    HELD_OUT_KEY, class)``). Refused if no row, or every row, would be held out.
    """
    y = np.asarray(y)
    if not 0.0 < share < 1.0:
        raise ValueError(f"serving.held_out must lie strictly between 0 and 1; got {share}")
    held = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c).astype(np.int64)
        rng = np.random.default_rng(derive_seed(seed, STREAM_SERVING, HELD_OUT_KEY, int(c)))
        held.append(rows[rng.permutation(len(rows))[: int(math.floor(share * len(rows)))]])
    held_out = np.sort(np.concatenate(held)) if held else np.zeros(0, np.int64)
    served = np.setdiff1d(np.arange(len(y), dtype=np.int64), held_out)
    if len(held_out) == 0 or len(served) == 0:
        raise ValueError(f"serving.held_out {share} holds out {len(held_out)} of {len(y)} test rows")
    return served.astype(np.int64), held_out.astype(np.int64)


def class_order(classes, seed: int, replicate: int) -> list:
    """The order of the classes in the sorted stream of ``replicate``: ascending for replicate 0,
    else a seeded permutation of the ascending classes (PCG64 from ``(seed, STREAM_SERVING,
    CLASS_ORDER_KEY, replicate)``)."""
    classes = sorted(int(c) for c in set(np.asarray(classes).tolist()))
    if replicate == 0:
        return classes
    rng = np.random.default_rng(derive_seed(seed, STREAM_SERVING, CLASS_ORDER_KEY, int(replicate)))
    return [classes[i] for i in rng.permutation(len(classes))]


def stream_rows(y, stream: str, seed: int, passes: int = 1, replicate: int = 0) -> np.ndarray:
    """The order in which the rows of ``y`` are served: ``passes * n`` row indices (int64)."""
    y = np.asarray(y)
    if stream not in STREAMS:
        raise ValueError(f"unknown stream {stream!r}; expected one of {STREAMS}")
    if stream == "sorted":
        rank = {c: i for i, c in enumerate(class_order(y, seed, replicate))}
    out = []
    for p in range(int(passes)):
        keys = (seed, STREAM_SERVING, STREAMS.index(stream), p) + ((int(replicate),) if replicate else ())
        rng = np.random.default_rng(derive_seed(*keys))
        perm = rng.permutation(len(y)).astype(np.int64)
        if stream == "sorted":
            ranks = np.array([rank[int(c)] for c in y[perm]], np.int64)
            perm = perm[np.argsort(ranks, kind="stable")]
        out.append(perm)
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def stream_batches(order: np.ndarray, n: int, batch_size: int) -> np.ndarray:
    """``(K, b)`` row indices: each pass of ``n`` rows of ``order`` cut into ``n // b`` batches."""
    if not 2 <= batch_size <= n:
        raise ValueError(f"serving needs 2 <= batch_size <= n rows; got {batch_size} for {n}")
    passes = np.asarray(order, np.int64).reshape(-1, n)
    full = n // batch_size
    return np.ascontiguousarray(passes[:, : full * batch_size].reshape(-1, batch_size))


def serve_stack(stacked: dict, spec, x: np.ndarray, batches: np.ndarray, limits=(1.0, 0.0)) -> tuple[np.ndarray, dict]:
    """Serve ``batches`` (``(K, b)`` row indices of ``x``) through every model of a batch-norm stack
    of either network (:func:`bnstudy.compiled.backprop.serve_run`: the training step's forward pass,
    every layer's running statistics updated after each batch).

    Returns ``(labels, after)``: the training-mode labels ``(M, K, b)`` of the rows
    as served, and a copy of ``stacked`` holding the running statistics (and batch
    counts) after the stream. ``stacked`` is not modified.
    """
    kind = kernels.KIND[spec.normaliser]
    if kind not in (kernels.BATCH, kernels.RENORM):
        raise ValueError(f"serving moves running statistics: {spec.normaliser} has none")
    x = np.ascontiguousarray(x, dtype=np.float32)
    batches = np.ascontiguousarray(batches, dtype=np.int64)
    data = backprop.Data(x, np.zeros(len(x), np.int64))
    arch, ns = spec.arch(x.shape[1]), spec.norm_settings(limits)
    counted = f"{spec.norm_layers()[0]}.num_batches_tracked"
    states = unstack(stacked)
    labels = np.empty((len(states), *batches.shape), np.int64)
    after = []
    for i, state in enumerate(states):
        flat, running = train.buffers(spec, state)
        tracked = int(state[counted]) if counted in state else 0
        count = backprop.serve_run(arch, backprop.State(flat, running), data, batches, ns, tracked, labels[i])
        after.append(train.state_from(spec, flat, running, count, state))
    return labels, stack(after)


def movement(before: dict, after: dict, eps: float) -> dict[str, np.ndarray]:
    """How far the running statistics moved, per model (``(M,)`` float64), over both layers' features:

    - ``mean_shift``: mean of ``|mean_after - mean_before| / sqrt(var_before + eps)``
      (the shift in units of the trained standard deviation);
    - ``var_change``: mean of ``|var_after - var_before| / var_before`` (relative change).

    Element-wise in float64; each mean a ``math.fsum`` over layer 1's features then layer 2's.
    """
    shift, change = [], []
    for layer in sorted({k.split(".")[0] for k in before if k.endswith(".running_mean")}, key=int):
        m0, m1 = (np.asarray(s[f"{layer}.running_mean"], np.float64) for s in (before, after))
        v0, v1 = (np.asarray(s[f"{layer}.running_var"], np.float64) for s in (before, after))
        shift.append(np.abs(m1 - m0) / np.sqrt(v0 + eps))
        change.append(np.abs(v1 - v0) / v0)
    shift, change = np.concatenate(shift, axis=1), np.concatenate(change, axis=1)
    f = shift.shape[1]
    return {
        "mean_shift": np.array([math.fsum(r) / f for r in shift]),
        "var_change": np.array([math.fsum(r) / f for r in change]),
    }


def batch_accuracy(labels: np.ndarray, y: np.ndarray, batches: np.ndarray) -> np.ndarray:
    """``(M, K)`` share of each served batch's rows labelled correctly (integer count / b)."""
    hits = labels == np.asarray(y)[batches][None]
    return np.count_nonzero(hits, axis=2).astype(np.int64) / np.float64(batches.shape[1])


def serve_cell(
    cell, batch_size: int, seed: int, passes: int = 1, held_out: float = 0.5, replicates: int = 1
) -> tuple[list[dict], list[dict]]:
    """Every stream replicate of both kinds through one trained cell
    (:class:`bnstudy.evaluation.accuracy.TrainedCell`).

    Returns ``(networks, along)``: per seed, stream and replicate, the training-mode
    accuracy over every served row, the inference-mode accuracy on the held-out rows
    (:func:`held_out_split`) before and after the stream and the movement of the running
    statistics; and, for replicate 0, per seed, stream and served batch (``position`` 0,
    1, ...) that batch's training-mode accuracy.
    """
    from bnstudy.evaluation.accuracy import inference_accuracy

    seeds = [int(meta["seed"]) for meta in cell.metas]
    train_b = int(cell.metas[0]["batch_size"])
    served, held = held_out_split(cell.y, held_out, seed)
    x_served, y_served = cell.x[served], cell.y[served]
    x_held, y_held = cell.x[held], cell.y[held]
    before = inference_accuracy(cell.stacked, cell.spec, x_held, y_held)
    networks, along = [], []
    for stream in STREAMS:
        for r in range(int(replicates)):
            order = stream_rows(y_served, stream, seed, passes, r)
            batches = stream_batches(order, len(y_served), batch_size)
            labels, after = serve_stack(cell.stacked, cell.spec, x_served, batches, cell.limits)
            hits = np.count_nonzero(labels == y_served[batches][None], axis=(1, 2)).astype(np.int64)
            acc_after = inference_accuracy(after, cell.spec, x_held, y_held)
            moved = movement(cell.stacked, after, cell.spec.eps)
            head = {"train_batch_size": train_b, "stream": stream}
            for i, s in enumerate(seeds):
                networks.append(
                    head
                    | {
                        "replicate": r,
                        "seed": s,
                        "test_rows": len(cell.y),
                        "stream_rows": len(y_served),
                        "held_out_rows": len(y_held),
                        "served": int(batches.size),
                        "stream_accuracy": float(hits[i] / np.float64(batches.size)),
                        "inference_before": float(before[i]),
                        "inference_after": float(acc_after[i]),
                        "mean_shift": float(moved["mean_shift"][i]),
                        "var_change": float(moved["var_change"][i]),
                    }
                )
            if r == 0:
                per_batch = batch_accuracy(labels, y_served, batches)
                along += [
                    head | {"seed": s, "position": k, "accuracy": float(a)}
                    for i, s in enumerate(seeds)
                    for k, a in enumerate(per_batch[i])
                ]
    return networks, along


def training_rows(n_train: int, n: int, seed: int, passes: int = 1, replicate: int = 0) -> np.ndarray:
    """The control's order: per pass, the first ``n`` of a permutation of the ``n_train`` training rows
    (PCG64 from ``(seed, STREAM_SERVING, TRAINING_ROWS_KEY, pass, replicate)``); ``passes * n`` row
    indices (int64)."""
    if not 0 < n <= n_train:
        raise ValueError(f"the serving control draws {n} of {n_train} training rows per pass")
    out = []
    for p in range(int(passes)):
        rng = np.random.default_rng(derive_seed(seed, STREAM_SERVING, TRAINING_ROWS_KEY, p, int(replicate)))
        out.append(rng.permutation(int(n_train)).astype(np.int64)[:n])
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def serve_training_rows(
    cell, x_train, y_train, batch_size: int, seed: int, passes: int = 1, held_out: float = 0.5, replicates: int = 1
) -> list[dict]:
    """The random stream's control through one trained cell: every replicate serves as many training rows
    as the random stream serves test rows (:func:`training_rows`), cut and served as
    :func:`serve_cell` cuts and serves its streams, and the model left behind is scored on the same
    held-out test rows. Rows as :func:`serve_cell`'s, ``stream`` :data:`CONTROL`; the stream accuracy is
    the training-mode accuracy over the served training rows."""
    from bnstudy.evaluation.accuracy import inference_accuracy

    seeds = [int(meta["seed"]) for meta in cell.metas]
    train_b = int(cell.metas[0]["batch_size"])
    served, held = held_out_split(cell.y, held_out, seed)
    x_held, y_held = cell.x[held], cell.y[held]
    x_train = np.ascontiguousarray(x_train, dtype=np.float32)
    y_train = np.asarray(y_train)
    before = inference_accuracy(cell.stacked, cell.spec, x_held, y_held)
    rows = []
    for r in range(int(replicates)):
        order = training_rows(len(y_train), len(served), seed, passes, r)
        batches = stream_batches(order, len(served), batch_size)
        labels, after = serve_stack(cell.stacked, cell.spec, x_train, batches, cell.limits)
        hits = np.count_nonzero(labels == y_train[batches][None], axis=(1, 2)).astype(np.int64)
        acc_after = inference_accuracy(after, cell.spec, x_held, y_held)
        moved = movement(cell.stacked, after, cell.spec.eps)
        for i, s in enumerate(seeds):
            rows.append(
                {
                    "train_batch_size": train_b,
                    "stream": CONTROL,
                    "replicate": r,
                    "seed": s,
                    "test_rows": len(cell.y),
                    "stream_rows": len(served),
                    "held_out_rows": len(y_held),
                    "served": int(batches.size),
                    "stream_accuracy": float(hits[i] / np.float64(batches.size)),
                    "inference_before": float(before[i]),
                    "inference_after": float(acc_after[i]),
                    "mean_shift": float(moved["mean_shift"][i]),
                    "var_change": float(moved["var_change"][i]),
                }
            )
    return rows


# ---- summary over seeds ---------------------------------------------------------------
