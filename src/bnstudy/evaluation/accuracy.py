"""Trained networks scored: accuracy in inference and in training mode, as every study scores them.

Also the class-sorted controls' train/inference divergence (:func:`trained_divergence`)
and the loading of a trained cell (:func:`load_trained`). Everything here runs on
NumPy stacks (see :mod:`bnstudy.nets.model`) through :mod:`bnstudy.compiled.kernels`' fixed-order
float32 arithmetic, and gives the same bits on every CPU; PyTorch is not imported.

Arithmetic beyond the kernels:

- accuracies and shares are integer counts of rows divided by the number of rows
  ``n`` (one correctly rounded division, in float64);
- labels are each row's first largest logit (``kernels.argmax_rows``);
- the train/inference RMSE sums, per model, ``(train - inference)**2`` in float64
  over the test rows in index order ``i = 0, 1, ...`` and, within a row, the
  classes in order, divides by ``n * C`` and takes the square root.

Random numbers: NumPy's PCG64 generator seeded by :func:`bnstudy.base.runtime.derive_seed`,
integer draws only (``permutation``), the same on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.base.runtime import STREAM_EVAL_BATCHES, derive_seed
from bnstudy.nets.spec import Network, labels_of


@numba.njit(**JIT)
def _sum_squared_differences(a, b, out):
    """``out[m] = sum over rows i, then classes c (C order) of (a - b)**2`` in float64."""
    m_, n, c_ = a.shape
    for m in range(m_):
        s = 0.0
        for i in range(n):
            for c in range(c_):
                d = np.float64(a[m, i, c]) - np.float64(b[m, i, c])
                s += d * d
        out[m] = s


labels = labels_of  # each row's first largest logit: (M, N, C) logits to (M, N) labels


def share(hits: np.ndarray) -> np.ndarray:
    """``(M, N)`` booleans to the share of true ones per model: integer count / ``N``."""
    return np.count_nonzero(hits, axis=1).astype(np.int64) / np.float64(hits.shape[1])


def inference_correct(stacked, spec: Network, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Whether each row is labelled correctly in inference mode, per model: ``(M, N)`` booleans.

    Either network (the spec's ``predict``; the convolutional network's rows are its
    images), the running statistics read from the stack (so a stack of
    :func:`bnstudy.evaluation.recompute.with_statistics` is scored with its replacement)."""
    return spec.predict(stacked, x) == np.asarray(y)[None, :]


def inference_accuracy(stacked, spec: Network, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Share of rows labelled correctly in inference mode, per model: shape ``(M,)``, float64."""
    return share(inference_correct(stacked, spec, x, y))


def correct_rows(correct: np.ndarray, seeds: list[int], mode: str) -> list[dict]:
    """Tidy rows ``seed, mode, row, correct`` (0/1) of an ``(M, N)`` correctness array, the
    paired unit of :mod:`bnstudy.evaluation.paired` (test row ``row`` of model ``M`` = seed ``seeds[M]``)."""
    return [
        {"seed": int(s), "mode": mode, "row": i, "correct": int(c)}
        for m, s in enumerate(seeds)
        for i, c in enumerate(correct[m])
    ]


def test_batches(n: int, batch_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random batches that score every one of ``n`` rows exactly once.

    Returns ``(batches, scored)``, both ``(K, batch_size)``: row indices (int64) and
    a mask of the rows scored in each batch. The rows are permuted (PCG64 seeded
    from ``(seed, STREAM_EVAL_BATCHES, batch_size)``) and cut into batches in
    permutation order; a last partial batch of ``r`` rows is completed with the
    first ``batch_size - r`` rows of a second permutation of the other rows, which
    shape its statistics but are not scored again.
    """
    if not 2 <= batch_size <= n:
        raise ValueError(f"test batches need 2 <= batch_size <= n rows; got {batch_size} for {n}")
    rng = np.random.default_rng(derive_seed(seed, STREAM_EVAL_BATCHES, batch_size))
    perm = rng.permutation(n).astype(np.int64)
    full, rest = divmod(n, batch_size)
    batches = [perm[: full * batch_size].reshape(full, batch_size)]
    scored = [np.ones((full, batch_size), dtype=bool)]
    if rest:
        tail = perm[full * batch_size :]
        others = perm[: full * batch_size]
        fill = others[rng.permutation(len(others))[: batch_size - rest]]
        batches.append(np.concatenate([tail, fill]).reshape(1, batch_size))
        scored.append((np.arange(batch_size) < rest).reshape(1, batch_size))
    return np.concatenate(batches), np.concatenate(scored)


def train_mode_logits(
    stacked, spec: Network, x: np.ndarray, batch_size: int, seed: int, limits=(1.0, 0.0)
) -> np.ndarray:
    """Training-mode logits ``(M, n, C)`` of every test row, in the batch that scores it.

    The batches are :func:`test_batches`; the spec's ``logits(train=True)`` on them
    (running statistics read by batch renorm with ``limits``, never written); row
    ``i`` of the result is row ``i`` of ``x``.
    """
    x = np.asarray(x)
    batches, scored = test_batches(len(x), batch_size, seed)
    flat, keep = batches.reshape(-1), scored.reshape(-1)
    z = spec.logits(stacked, x[flat], train=True, batch=batch_size, limits=limits)
    out = np.empty((z.shape[0], len(x), z.shape[2]), np.float32)
    out[:, flat[keep]] = z[:, keep]
    return out


def train_mode_accuracy(stacked, spec: Network, x, y, batch_size: int, seed: int, limits=(1.0, 0.0)) -> np.ndarray:
    """Training-mode accuracy per model on seeded test batches of ``batch_size``.

    Every row is scored once (see :func:`test_batches`); running statistics are
    read (batch renorm, with ``limits``), never written.
    """
    z = train_mode_logits(stacked, spec, x, batch_size, seed, limits)
    return share(labels(z) == np.asarray(y)[None, :])


def trained_divergence(
    stacked, spec: Network, x, y, batch_size: int, seed: int, limits=(1.0, 0.0)
) -> dict[str, np.ndarray]:
    """Per model of a stack, on the test rows ``x`` (each ``(M,)``, float64):

    - ``inference_accuracy``: share of rows labelled correctly in inference mode;
    - ``train_mode_accuracy``: the same in training mode, on the seeded random test
      batches of ``batch_size`` of :func:`test_batches` (every row scored once;
      running statistics read, never written);
    - ``label_disagreement``: share of rows whose training-mode label differs from
      the inference-mode label;
    - ``train_eval_rmse``: RMSE between training-mode and inference-mode logits over
      every row and class: ``sqrt(S / (n * C))``, ``S`` the float64 sum of squared
      differences over rows ``i = 0, 1, ...`` and, within a row, classes in order.
    """
    y = np.asarray(y)
    train_z = train_mode_logits(stacked, spec, x, batch_size, seed, limits)
    eval_z = spec.logits(stacked, x)
    train_label, eval_label = labels(train_z), labels(eval_z)
    sums = np.empty(train_z.shape[0], np.float64)
    _sum_squared_differences(train_z, eval_z, sums)
    return {
        "inference_accuracy": share(eval_label == y[None, :]),
        "train_mode_accuracy": share(train_label == y[None, :]),
        "label_disagreement": share(train_label != eval_label),
        "train_eval_rmse": np.sqrt(sums / np.float64(train_z.shape[1] * train_z.shape[2])),
    }


# ---- trained cells ----------------------------------------------------------------


@dataclass
class TrainedCell:
    """The trained networks of one weights list, stacked, with the test data to evaluate them on."""

    stacked: dict
    spec: Network
    metas: list
    x: np.ndarray
    y: np.ndarray
    limits: tuple[float, float]  # batch renorm's (rmax, dmax) at the end of training


def load_trained(weights, x_test, y_test, y_train) -> TrainedCell:
    """Stack the weights files ``weights`` and read the test half (paths as the rules give them).

    ``y_train`` is read for its length only: the renorm schedule is a function of
    the number of training steps (:func:`bnstudy.nets.recipe.final_limits`).
    """
    from bnstudy.base.io import read_array
    from bnstudy.nets import weights as weights_files
    from bnstudy.nets.recipe import final_limits

    stacked, spec, metas = weights_files.read(weights)
    return TrainedCell(
        stacked, spec, metas, read_array(x_test), read_array(y_test), final_limits(metas[0], len(read_array(y_train)))
    )
