"""The companion probes' compiled loop nest: many training-mode batches, row 0's label each.

A probe batch is ``b`` test rows whose row 0 is the probed example; its result is
the label training mode gives row 0 in that batch (see :mod:`bnstudy.studies.companions.science`).
One call of :func:`probe_design` takes every batch of one example's design (``K``
batches of ``b`` rows, as test-row indices) through every model of a stack:

1. the first layer depends on the row alone, so it is computed once per test row
   and model before any probe (:func:`first_layer_into`, with
   :func:`bnstudy.compiled.blocks.linear_t`) and gathered into each batch; so is the first
   normaliser when it normalises each row by itself (layer and group norm, and the
   ReLU of ``none``: ``kernels.norm_train`` of every test row);
2. batch norm and renorm: the first normaliser in training mode over each batch,
   with the statistics of its ``b`` rows (ghost batch norm: of row 0's virtual
   batch, the batch's first ``s`` rows, and only those rows go on); ReLU;
3. the second Linear for every row of every batch (with layer or group norm, or
   none, only row 0's: each row is normalised by itself, so no companion can change
   row 0's label, and the other rows are not computed);
4. the second normaliser: batch statistics from all ``b`` rows (ghost: ``s``), but only row 0 is
   normalised (no other row's value is needed); a kind that normalises each row by itself:
   row 0 alone (:func:`bnstudy.compiled.normkernels.row_forward`); ReLU;
5. the output layer for row 0, and its label: the index of the first largest logit.

Every step is one of the kernels' functions (the normalisers' ``batch_stats``,
``batch_norm_rows`` and ``row_forward`` of :mod:`bnstudy.compiled.normkernels`,
``linear_t``, ``argmax_rows``), called on the same values in the same order as
:func:`bnstudy.compiled.kernels.logits` with ``train=True, batch=b`` calls them on that batch.
So a probe's label is, bit for bit, the label ``kernels.logits`` gives row 0 of that batch (``tests/test_probes.py``).
The rows of about ``PROBE_ROWS`` rows' worth of whole batches go through the second
Linear together (:func:`bnstudy.compiled.tiled.linear_t_tiled`: tiles of four rows, across batch
boundaries; every output is still its bias plus its products in ``k`` order).
Running statistics are read (batch renorm), never written.

Models are the outer loop, so each model's weights stay in cache while all its
batches pass; scratch rows are reused from chunk to chunk.
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.base.normalisers import BATCH_NAMES, GHOST, RENORM
from bnstudy.compiled.blocks import linear_t
from bnstudy.compiled.kernels import KIND, argmax_rows, norm_train, setting, stack_arrays
from bnstudy.compiled.normkernels import (
    batch_norm_rows,
    batch_statistics,
    batch_stats,
    row_forward,
    virtual_batch,
    virtual_batches,
)
from bnstudy.compiled.tiled import aligned_copy, linear_t_tiled

BATCH_CODES = {KIND[name] for name in BATCH_NAMES}  # kinds with batch statistics
PROBE_ROWS = 256  # rows per model that go through the second Linear together (whole batches)


@numba.njit(**JIT)
def first_layer_into(x, w1t, b1, pre):
    """``pre[m] = x @ W1^T + b1`` for every model ``m`` (``pre`` is ``(M, N, F)``)."""
    for m in range(w1t.shape[0]):
        linear_t(x, w1t[m], b1[m], pre[m])


@numba.njit(**JIT)
def probe_design(
    kind,
    first,
    batches,
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
    eps,
    setting,
    rmax,
    dmax,
    chunk,
    labels,
    row_logits,
):
    """Training-mode labels of row 0 of every batch, for every model, into ``labels`` ``(M, K)``.

    ``first`` ``(M, N, H1)`` is the first hidden layer of every test row: its
    pre-normalisation value for the kinds with batch statistics, which come from the
    batch; its output (normaliser and ReLU) for the others, which normalise each row
    by itself. ``batches`` ``(K, b)`` are row indices into it; the parameters are a
    stack's (``(M, ...)``, weights as ``W^T``); ``setting`` is the kind's integer
    (:func:`bnstudy.compiled.kernels.setting`). ``row_logits`` ``(M, K, C)`` receives row 0's
    logits too, unless it has no rows. ``chunk`` batches go through together.

    Ghost batch norm normalises row 0 with the statistics of its virtual batch, the
    batch's first ``s`` rows (:func:`bnstudy.compiled.normkernels.virtual_batch`), and no other row
    reaches it: only those ``s`` rows of each batch are computed, as batch norm on a
    batch of ``s`` rows.
    """
    n_models = first.shape[0]
    h1, h2 = first.shape[2], w2t.shape[2]
    k_all, b = batches.shape
    if kind == GHOST:  # row 0's virtual batch: the batch's first s rows
        s = virtual_batch(b, setting, virtual_batches(b, setting), 0)[1]
    else:
        s = b
    rows = chunk * s
    batch_kind = batch_statistics(kind)
    renorm = kind == RENORM
    gathered = np.empty((rows if batch_kind else 0, h1), np.float32)
    act1 = np.empty((rows, h1), np.float32)
    hid2 = np.empty((rows, h2), np.float32)
    act2 = np.empty((chunk, h2), np.float32)
    logits = np.empty((chunk, w3t.shape[2]), np.float32)
    top = np.empty(chunk, np.int64)
    f_ = max(h1, h2)
    mean, var, invstd = np.empty(f_, np.float32), np.empty(f_, np.float32), np.empty(f_, np.float32)
    r, d = np.empty(f_, np.float32), np.empty(f_, np.float32)
    none1, none2 = np.empty((0, h1), np.float32), np.empty((0, h2), np.float32)
    keep = row_logits.shape[0] > 0
    for m in range(n_models):
        src = first[m]
        for k0 in range(0, k_all, chunk):
            kn = min(chunk, k_all - k0)
            n = kn * s
            if batch_kind:
                # the batches' rows (the first s of each), batch after batch, then the first
                # normaliser in training mode (statistics of those rows) and ReLU
                for j in range(kn):
                    for i in range(s):
                        row = src[batches[k0 + j, i]]
                        for f in range(h1):
                            gathered[j * s + i, f] = row[f]
                for j in range(kn):
                    batch_stats(kind, gathered, j * s, s, rm1[m], rv1[m], eps, rmax, dmax, mean, var, invstd, r, d)
                    batch_norm_rows(
                        gathered, j * s, s, mean, invstd, g1[m], be1[m], r, d, renorm, True, act1, j * s, none1
                    )
            else:
                # normalised per row already, so no companion can reach row 0: row 0 of each
                # batch alone goes on, as row j (the rows are independent up to the output)
                n = kn
                for j in range(kn):
                    row = src[batches[k0 + j, 0]]
                    for f in range(h1):
                        act1[j, f] = row[f]
            # second Linear, every row that matters
            linear_t_tiled(act1[:n], w2t[m], b2[m], hid2[:n])
            # second normaliser: statistics from all s rows, row 0 normalised
            if batch_kind:
                for j in range(kn):
                    batch_stats(kind, hid2, j * s, s, rm2[m], rv2[m], eps, rmax, dmax, mean, var, invstd, r, d)
                    batch_norm_rows(hid2, j * s, 1, mean, invstd, g2[m], be2[m], r, d, renorm, True, act2, j, none2)
            else:  # each row by itself: row 0 of batch j is row j of hid2, into row j of act2
                for j in range(kn):
                    row_forward(kind, hid2, j, setting, eps, g2[m], be2[m], True, act2, none2, none2)
            # output layer and label, row 0 of each batch
            linear_t(act2[:kn], w3t[m], b3[m], logits[:kn])
            argmax_rows(logits[:kn], top[:kn])
            for j in range(kn):
                labels[m, k0 + j] = top[j]
            if keep:
                for j in range(kn):
                    for c in range(logits.shape[1]):
                        row_logits[m, k0 + j, c] = logits[j, c]


class Prober:
    """A stack of models ready for probing: the kernel's arrays and the first layer of
    every test row, computed once; :meth:`labels` then probes any batches of rows of ``x``."""

    def __init__(self, stacked: dict, spec, x: np.ndarray, limits=(1.0, 0.0), rows: int = PROBE_ROWS):
        arrays = stack_arrays(stacked)
        (w1t, b1, *self._norm1, self._w2t, self._b2), rest = arrays[:8], arrays[8:]
        self._norm2, (self._w3t, self._b3) = rest[:4], rest[4:]
        self._w2t = aligned_copy(self._w2t)
        self.models = w1t.shape[0]
        self.rows = len(x)
        self.kind = KIND[spec.normaliser]
        self.setting = setting(spec)
        self.eps = np.float32(spec.eps)
        self.rmax, self.dmax = np.float32(limits[0]), np.float32(limits[1])
        self.rows_per_chunk = int(rows)
        self.first = np.empty((self.models, self.rows, w1t.shape[2]), np.float32)
        first_layer_into(np.ascontiguousarray(x, dtype=np.float32), w1t, b1, self.first)
        if self.kind not in BATCH_CODES:  # normalised row by row: once per test row, not per batch
            pre, (g1, be1, rm1, rv1) = self.first.copy(), self._norm1
            for m in range(self.models):
                norm_train(
                    self.kind,
                    pre[m],
                    1,
                    g1[m],
                    be1[m],
                    rm1[m],
                    rv1[m],
                    self.eps,
                    self.setting,
                    self.rmax,
                    self.dmax,
                    True,
                    self.first[m],
                )

    def labels(self, batches: np.ndarray, logits: bool = False):
        """Training-mode labels ``(M, K)`` of row 0 of each of the ``(K, b)`` batches;
        with ``logits``, also row 0's logits ``(M, K, C)``: ``(labels, logits)``."""
        batches = np.ascontiguousarray(batches, dtype=np.int64)
        if batches.ndim != 2 or (batches.shape[1] < 2 and self.kind in BATCH_CODES):
            raise ValueError(f"batches must be (K, b) with b >= 2 for batch statistics, got {batches.shape}")
        if batches.size and (batches.min() < 0 or batches.max() >= self.rows):
            raise ValueError(f"row indices must lie in [0, {self.rows})")
        out = np.empty((self.models, len(batches)), np.int64)
        classes = self._w3t.shape[2]
        z = np.empty((self.models, len(batches), classes) if logits else (0, 0, classes), np.float32)
        if len(batches):
            probe_design(
                self.kind,
                self.first,
                batches,
                *self._norm1,
                self._w2t,
                self._b2,
                *self._norm2,
                self._w3t,
                self._b3,
                self.eps,
                self.setting,
                self.rmax,
                self.dmax,
                max(1, min(len(batches), self.rows_per_chunk // batches.shape[1])),
                out,
                z,
            )
        return (out, z) if logits else out


__all__ = ["PROBE_ROWS", "Prober", "first_layer_into", "probe_design"]
