"""Training-mode serving with live running statistics (issue 17, item 3).

Study 1 probes a trained batch-norm network in training mode with its running
statistics frozen. A network deployed in training mode moves them with every
batch it serves. Here a stream of test batches goes through each trained network
in training mode, and after every batch each batch-norm layer updates its running
statistics exactly as in training (:func:`bnstudy.gradients.norm_forward`, the
arithmetic of the training step: the batch's biased statistics normalise it, then
``running = (1 - m) * running + m * batch`` with the unbiased batch variance and
the momentum ``m`` the network was trained with, ``1 / t`` for momentum None).
No weight changes: only the running statistics move.

Streams (:func:`stream_rows`), seeded by ``(seed, STREAM_SERVING, stream, pass)``
(PCG64, integer draws only):

- ``random``: the test rows in a random permutation;
- ``sorted``: the rows sorted by class (classes in ascending order), the order
  within a class that of a random permutation;

each pass over the ``n`` test rows is cut into ``n // b`` consecutive batches of
``b`` rows (the last ``n mod b`` rows of each pass are not served), passes one
after another.

Measured per network (:func:`serve_stack`): the training-mode label of every
served row (so the accuracy of every batch along the stream); the inference-mode
accuracy on the whole test half before and after the stream; and how far the
running statistics moved (:func:`movement`). Accuracies are integer counts over
row counts; the movement's sums are ``math.fsum``. Everything network-valued runs
through the fixed-order float32 kernels (:mod:`bnstudy.kernels`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from . import kernels
from .designs import SERVING_STREAMS
from .fixedmath import JIT
from .gradients import norm_forward
from .kernels import argmax_rows, linear_t
from .runtime import derive_seed

STREAM_SERVING = 17  # the random stream of this study (issue 17, item 3)
STREAMS = SERVING_STREAMS
LAYERS = ("1", "4")


def stream_rows(y, stream: str, seed: int, passes: int = 1) -> np.ndarray:
    """The order in which the test rows are served: ``passes * n`` row indices (int64)."""
    y = np.asarray(y)
    if stream not in STREAMS:
        raise ValueError(f"unknown stream {stream!r}; expected one of {STREAMS}")
    out = []
    for p in range(int(passes)):
        rng = np.random.default_rng(derive_seed(seed, STREAM_SERVING, STREAMS.index(stream), p))
        perm = rng.permutation(len(y)).astype(np.int64)
        if stream == "sorted":
            perm = perm[np.argsort(y[perm], kind="stable")]
        out.append(perm)
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def stream_batches(order: np.ndarray, n: int, batch_size: int) -> np.ndarray:
    """``(K, b)`` row indices: each pass of ``n`` rows of ``order`` cut into ``n // b`` batches."""
    if not 2 <= batch_size <= n:
        raise ValueError(f"serving needs 2 <= batch_size <= n rows; got {batch_size} for {n}")
    passes = np.asarray(order, np.int64).reshape(-1, n)
    full = n // batch_size
    return np.ascontiguousarray(passes[:, : full * batch_size].reshape(-1, batch_size))


@numba.njit(**JIT)
def _serve(
    kind,
    w1t,
    b1,
    g1,
    be1,
    rm1,
    rv1,
    w2t,
    b2,
    g2,
    be2,
    rm2,
    rv2,
    w3t,
    b3,
    x,
    batches,
    eps,
    momentum,
    tracked,
    rmax,
    dmax,
    out,
):
    """Serve ``x[batches[k]]`` for ``k = 0, 1, ...`` in training mode, updating ``rm*``/``rv*``
    after each batch; ``out[k]`` receives the batch's labels. One model."""
    k_, b = batches.shape
    h1, h2, c_ = w1t.shape[1], w2t.shape[1], w3t.shape[1]
    xb = np.empty((b, x.shape[1]), np.float32)
    pre1, out1 = np.empty((b, h1), np.float32), np.empty((b, h1), np.float32)
    pre2, out2 = np.empty((b, h2), np.float32), np.empty((b, h2), np.float32)
    z = np.empty((b, c_), np.float32)
    s1 = np.empty((5, h1), np.float32)
    s2 = np.empty((5, h2), np.float32)
    none1, none2 = np.empty((0, h1), np.float32), np.empty((0, h2), np.float32)
    for k in range(k_):
        for j in range(b):
            for i in range(x.shape[1]):
                xb[j, i] = x[batches[k, j], i]
        tracked += 1
        linear_t(xb, w1t, b1, pre1)
        norm_forward(
            kind, pre1, b, g1, be1, rm1, rv1, eps, 1, momentum, tracked, rmax, dmax, s1[0], s1[1], s1[2], s1[3], s1[4],
            out1, none1, none1,
        )  # fmt: skip
        linear_t(out1, w2t, b2, pre2)
        norm_forward(
            kind, pre2, b, g2, be2, rm2, rv2, eps, 1, momentum, tracked, rmax, dmax, s2[0], s2[1], s2[2], s2[3], s2[4],
            out2, none2, none2,
        )  # fmt: skip
        linear_t(out2, w3t, b3, z)
        argmax_rows(z, out[k])


def serve_stack(stacked: dict, spec, x: np.ndarray, batches: np.ndarray, limits=(1.0, 0.0)) -> tuple[np.ndarray, dict]:
    """Serve ``batches`` (``(K, b)`` row indices of ``x``) through every model of a batch-norm stack.

    Returns ``(labels, after)``: the training-mode labels ``(M, K, b)`` of the rows
    as served, and a copy of ``stacked`` holding the running statistics (and batch
    counts) after the stream. ``stacked`` is not modified.
    """
    kind = kernels.KIND[spec.normaliser]
    if kind not in (kernels.BATCH, kernels.RENORM):
        raise ValueError(f"serving moves running statistics: {spec.normaliser} has none")
    after = {k: np.array(v, copy=True) for k, v in stacked.items()}
    arrays = kernels.stack_arrays(after)
    x = np.ascontiguousarray(x, dtype=np.float32)
    batches = np.ascontiguousarray(batches, dtype=np.int64)
    m = arrays[0].shape[0]
    labels = np.empty((m, *batches.shape), np.int64)
    momentum = np.float32(-1.0 if spec.momentum is None else spec.momentum)
    tracked = after.get("1.num_batches_tracked", np.zeros(m, np.int64))
    for i in range(m):
        _serve(
            kind,
            *(a[i] for a in arrays),
            x,
            batches,
            np.float32(spec.eps),
            momentum,
            int(tracked[i]),
            np.float32(limits[0]),
            np.float32(limits[1]),
            labels[i],
        )
    for layer, (rm, rv) in zip(LAYERS, ((arrays[4], arrays[5]), (arrays[10], arrays[11]))):
        after[f"{layer}.running_mean"], after[f"{layer}.running_var"] = rm, rv
        key = f"{layer}.num_batches_tracked"
        if key in after:
            after[key] = after[key] + np.int64(len(batches))
    return labels, after


def movement(before: dict, after: dict, eps: float) -> dict[str, np.ndarray]:
    """How far the running statistics moved, per model (``(M,)`` float64), over both layers' features:

    - ``mean_shift``: mean of ``|mean_after - mean_before| / sqrt(var_before + eps)``
      (the shift in units of the trained standard deviation);
    - ``var_change``: mean of ``|var_after - var_before| / var_before`` (relative change).

    Element-wise in float64; each mean a ``math.fsum`` over layer 1's features then layer 2's.
    """
    shift, change = [], []
    for layer in LAYERS:
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


def serve_cell(cell, batch_size: int, seed: int, passes: int = 1) -> tuple[list[dict], list[dict]]:
    """Both streams through one trained cell (:class:`bnstudy.evaluation.TrainedCell`).

    Returns ``(networks, along)``: per seed and stream, the training-mode accuracy
    over every served row, the inference-mode accuracy before and after the stream
    and the movement of the running statistics; and per seed, stream and served
    batch (``position`` 0, 1, ...) that batch's training-mode accuracy.
    """
    from .evaluation import inference_accuracy

    seeds = [int(meta["seed"]) for meta in cell.metas]
    train_b = int(cell.metas[0]["batch_size"])
    before = inference_accuracy(cell.stacked, cell.spec, cell.x, cell.y)
    networks, along = [], []
    for stream in STREAMS:
        batches = stream_batches(stream_rows(cell.y, stream, seed, passes), len(cell.y), batch_size)
        labels, after = serve_stack(cell.stacked, cell.spec, cell.x, batches, cell.limits)
        per_batch = batch_accuracy(labels, cell.y, batches)
        hits = np.count_nonzero(labels == cell.y[batches][None], axis=(1, 2)).astype(np.int64)
        acc_after = inference_accuracy(after, cell.spec, cell.x, cell.y)
        moved = movement(cell.stacked, after, cell.spec.eps)
        head = {"train_batch_size": train_b, "stream": stream}
        for i, s in enumerate(seeds):
            networks.append(
                head
                | {
                    "seed": s,
                    "test_rows": len(cell.y),
                    "served": int(batches.size),
                    "stream_accuracy": float(hits[i] / np.float64(batches.size)),
                    "inference_before": float(before[i]),
                    "inference_after": float(acc_after[i]),
                    "mean_shift": float(moved["mean_shift"][i]),
                    "var_change": float(moved["var_change"][i]),
                }
            )
            along += [head | {"seed": s, "position": k, "accuracy": float(a)} for k, a in enumerate(per_batch[i])]
    return networks, along


# ---- summary over seeds ---------------------------------------------------------------

MEASURES = ("stream_accuracy", "inference_before", "inference_after", "mean_shift", "var_change")


def _interval(values, confidence: float) -> dict:
    from .stats import seed_interval

    mean, sd, lo, hi = seed_interval(list(values), confidence)
    return {"mean": mean, "sd": sd, "ci": [lo, hi], "seeds": len(values)}


def summarise(networks, confidence: float) -> dict:
    """``{train_batch_size: {stream: {measure: interval}, "sorted_minus_random": ...}}`` over seeds.

    Each measure's mean over seeds with a Student-t interval; ``inference_change``
    is the paired after - before difference per seed; ``sorted_minus_random`` the
    paired (same seed, same network) sorted - random difference of the stream
    accuracy and of the inference accuracy after the stream.
    """
    import pandas as pd

    df = pd.DataFrame(networks).sort_values(["train_batch_size", "stream", "seed"])
    out: dict = {}
    for b, cell in df.groupby("train_batch_size", sort=True):
        entry: dict = {}
        by = {s: g.set_index("seed").sort_index() for s, g in cell.groupby("stream")}
        for stream in STREAMS:
            g = by[stream]
            entry[stream] = {m: _interval(g[m], confidence) for m in MEASURES}
            entry[stream]["inference_change"] = _interval(g["inference_after"] - g["inference_before"], confidence)
        diff = {m: by["sorted"][m] - by["random"][m] for m in ("stream_accuracy", "inference_after")}
        entry["sorted_minus_random"] = {m: _interval(v, confidence) for m, v in diff.items()}
        out[str(int(b))] = entry
    return out


def along_means(along) -> list[dict]:
    """Mean over seeds of each served batch's accuracy: rows ``train_batch_size, stream, position, accuracy``.

    The seeds' accuracies (multiples of ``1 / b``) summed with ``math.fsum``.
    """
    groups: dict = {}
    for r in along:
        groups.setdefault((int(r["train_batch_size"]), r["stream"], int(r["position"])), []).append(r["accuracy"])
    return [
        {"train_batch_size": b, "stream": s, "position": p, "accuracy": math.fsum(v) / len(v)}
        for (b, s, p), v in sorted(groups.items(), key=lambda kv: (kv[0][0], STREAMS.index(kv[0][1]), kv[0][2]))
    ]
