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

Every step is one of the kernels' functions (the normalisers' ``batch_stats`` and
``batch_norm_rows`` of :mod:`bnstudy.compiled.batchstats`, ``row_forward`` of :mod:`bnstudy.compiled.normkernels`,
``linear_t``, ``argmax_rows``), called on the same values in the same order as
:func:`bnstudy.compiled.kernels.logits` with ``train=True, batch=b`` calls them on that batch.
So a probe's label is, bit for bit, the label ``kernels.logits`` gives row 0 of that batch
(``tests/compiled/test_probes.py``).
The rows of about ``PROBE_ROWS`` rows' worth of whole batches go through the second
Linear together (:func:`bnstudy.compiled.convgemm.gemm`: tiles of 8 rows x 32 outputs held in
registers, across batch boundaries; every output is still its bias plus its products in ``k``
order, as ``linear_t`` adds them).
Running statistics are read (batch renorm), never written.

Models are the outer loop, so each model's weights stay in cache while all its
batches pass; scratch rows are reused from chunk to chunk.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.base.normalisers import BATCH_NAMES, GHOST, RENORM
from bnstudy.compiled.batchstats import batch_norm_rows, batch_stats, virtual_batch, virtual_batches
from bnstudy.compiled.blocks import linear_t
from bnstudy.compiled.convgemm import BIAS, gemm
from bnstudy.compiled.kernels import KIND, Net, argmax_rows, norm_settings, norm_train, stack_arrays
from bnstudy.compiled.normkernels import Params, batch_statistics, row_forward

BATCH_CODES = {KIND[name] for name in BATCH_NAMES}  # kinds with batch statistics
PROBE_ROWS = 256  # rows per model that go through the second Linear together (whole batches)

# The scratch arrays of one probe_design call, reused from chunk to chunk and model to model.
Work = namedtuple("Work", "gathered act1 hid2 act2 logits top st1 st2")


@numba.njit(**JIT)
def first_layer_into(x, w1t, b1, pre):
    """``pre[m] = x @ W1^T + b1`` for every model ``m`` (``pre`` is ``(M, N, F)``)."""
    for m in range(w1t.shape[0]):
        linear_t(x, w1t[m], b1[m], pre[m])


@numba.njit(**JIT)
def params_at(lp, m):
    """Model ``m``'s normaliser arrays of a stack's :class:`bnstudy.compiled.normkernels.Params`."""
    return Params(lp.gamma[m], lp.beta[m], lp.running_mean[m], lp.running_var[m])


@numba.njit(**JIT)
def probe_rows(ns, b):
    """The rows of a batch of ``b`` that reach row 0: ghost batch norm's first virtual batch, else ``b``."""
    if ns.kind == GHOST:  # row 0's virtual batch: the batch's first s rows
        return virtual_batch(b, ns.setting, virtual_batches(b, ns.setting), 0)[1]
    return b


@numba.njit(**JIT)
def new_work(net, ns, chunk, s):
    """Scratch for ``chunk`` batches of ``s`` rows through ``net`` (a stack's :class:`bnstudy.compiled.kernels.Net`)."""
    h1, h2 = net.hidden[0].wt.shape[2], net.hidden[1].wt.shape[2]
    rows = chunk * s
    gathered = np.empty((rows if batch_statistics(ns.kind) else 0, h1), np.float32)
    act1, hid2, act2 = (
        np.empty((rows, h1), np.float32),
        np.empty((rows, h2), np.float32),
        np.empty((chunk, h2), np.float32),
    )
    logits, top = np.empty((chunk, net.wt.shape[2]), np.float32), np.empty(chunk, np.int64)
    return Work(gathered, act1, hid2, act2, logits, top, np.empty((5, h1), np.float32), np.empty((5, h2), np.float32))


@numba.njit(**JIT)
def first_normalised(ns, lp, src, batches, k0, kn, s, work):
    """Batches ``k0 .. k0 + kn - 1`` after the first normaliser and ReLU, into ``work.act1``;
    returns how many rows go on.

    Batch statistics: the batches' rows (the first ``s`` of each), batch after batch, then the
    first normaliser in training mode (statistics of those rows). Otherwise each row is
    normalised already (``src``), so no companion can reach row 0: row 0 of each batch alone
    goes on, as row ``j`` (the rows are independent up to the output)."""
    h1 = src.shape[1]
    act1 = work.act1
    if not batch_statistics(ns.kind):
        for j in range(kn):
            row = src[batches[k0 + j, 0]]
            for f in range(h1):
                act1[j, f] = row[f]
        return kn
    gathered = work.gathered
    for j in range(kn):
        for i in range(s):
            row = src[batches[k0 + j, i]]
            for f in range(h1):
                gathered[j * s + i, f] = row[f]
    none = np.empty((0, h1), np.float32)
    for j in range(kn):
        batch_stats(ns, lp, gathered, j * s, s, work.st1)
        batch_norm_rows(gathered, j * s, s, work.st1, lp, ns.kind == RENORM, True, act1, j * s, none)
    return kn * s


@numba.njit(**JIT)
def second_normalised(ns, lp, kn, s, work):
    """Row 0 of each batch after the second normaliser and ReLU, into row ``j`` of ``work.act2``:
    batch statistics from all ``s`` rows of ``work.hid2``'s batch ``j``, only row 0 normalised;
    a kind that normalises each row by itself: row ``j`` of ``work.hid2`` alone."""
    hid2, act2 = work.hid2, work.act2
    none = np.empty((0, hid2.shape[1]), np.float32)
    if batch_statistics(ns.kind):
        for j in range(kn):
            batch_stats(ns, lp, hid2, j * s, s, work.st2)
            batch_norm_rows(hid2, j * s, 1, work.st2, lp, ns.kind == RENORM, True, act2, j, none)
    else:
        for j in range(kn):
            row_forward(ns, lp, hid2, j, True, act2, none, none)


@numba.njit(**JIT)
def probe_design(net, ns, first, batches, chunk, labels, row_logits):
    """Training-mode labels of row 0 of every batch, for every model, into ``labels`` ``(M, K)``.

    ``net`` is a stack's :class:`bnstudy.compiled.kernels.Net` (arrays ``(M, ...)``, weights as
    ``W^T``) of two hidden layers; ``ns`` its normaliser's settings. ``first`` ``(M, N, H1)``
    is the first hidden layer of every test row: its pre-normalisation value for the kinds
    with batch statistics, which come from the batch; its output (normaliser and ReLU) for
    the others, which normalise each row by itself. ``batches`` ``(K, b)`` are row indices
    into it. ``row_logits`` ``(M, K, C)`` receives row 0's logits too, unless it has no rows.
    ``chunk`` batches go through together.

    Ghost batch norm normalises row 0 with the statistics of its virtual batch, the
    batch's first ``s`` rows (:func:`bnstudy.compiled.batchstats.virtual_batch`), and no other row
    reaches it: only those ``s`` rows of each batch are computed, as batch norm on a
    batch of ``s`` rows.
    """
    k_all, b = batches.shape
    s = probe_rows(ns, b)
    work = new_work(net, ns, chunk, s)
    layer1, layer2 = net.hidden[0], net.hidden[1]
    logits, top = work.logits, work.top
    for m in range(first.shape[0]):
        lp1, lp2 = params_at(layer1.norm, m), params_at(layer2.norm, m)
        for k0 in range(0, k_all, chunk):
            kn = min(chunk, k_all - k0)
            n = first_normalised(ns, lp1, first[m], batches, k0, kn, s, work)
            # second Linear, every row that matters; then row 0 of each batch on
            gemm(work.act1[:n], None, layer2.wt[m], layer2.bias[m], work.hid2[:n], BIAS)
            second_normalised(ns, lp2, kn, s, work)
            # output layer and label, row 0 of each batch
            linear_t(work.act2[:kn], net.wt[m], net.bias[m], logits[:kn])
            argmax_rows(logits[:kn], top[:kn])
            for j in range(kn):
                labels[m, k0 + j] = top[j]
            if row_logits.shape[0] > 0:
                for j in range(kn):
                    for c in range(logits.shape[1]):
                        row_logits[m, k0 + j, c] = logits[j, c]


def aligned_copy(a: np.ndarray, align: int = 64) -> np.ndarray:
    """A C-contiguous float32 copy of ``a`` whose data start on an ``align``-byte boundary
    (a cache line: the second Linear then loads each 16-output row of ``W^T`` from one line)."""
    a = np.asarray(a, dtype=np.float32)
    buf = np.empty(a.size + align // 4, np.float32)
    start = (-buf.ctypes.data % align) // 4
    out = buf[start : start + a.size].reshape(a.shape)
    out[...] = a
    return out


class Prober:
    """A stack of models ready for probing: the kernel's arrays and the first layer of
    every test row, computed once; :meth:`labels` then probes any batches of rows of ``x``."""

    def __init__(self, stacked: dict, spec, x: np.ndarray, limits=(1.0, 0.0), rows: int = PROBE_ROWS):
        arrays = stack_arrays(stacked)
        layer1, layer2 = arrays.hidden
        self._net = Net((layer1, layer2._replace(wt=aligned_copy(layer2.wt))), arrays.wt, arrays.bias)
        self.models = layer1.wt.shape[0]
        self.rows = len(x)
        self.kind = KIND[spec.normaliser]
        self.settings = norm_settings(spec, limits)
        self.rows_per_chunk = int(rows)
        self.first = np.empty((self.models, self.rows, layer1.wt.shape[2]), np.float32)
        first_layer_into(np.ascontiguousarray(x, dtype=np.float32), layer1.wt, layer1.bias, self.first)
        if self.kind not in BATCH_CODES:  # normalised row by row: once per test row, not per batch
            pre = self.first.copy()
            for m in range(self.models):
                lp = Params(*(a[m] for a in layer1.norm))
                norm_train(self.settings, lp, pre[m], 1, True, self.first[m])

    def labels(self, batches: np.ndarray, logits: bool = False):
        """Training-mode labels ``(M, K)`` of row 0 of each of the ``(K, b)`` batches;
        with ``logits``, also row 0's logits ``(M, K, C)``: ``(labels, logits)``."""
        batches = np.ascontiguousarray(batches, dtype=np.int64)
        if batches.ndim != 2 or (batches.shape[1] < 2 and self.kind in BATCH_CODES):
            raise ValueError(f"batches must be (K, b) with b >= 2 for batch statistics, got {batches.shape}")
        if batches.size and (batches.min() < 0 or batches.max() >= self.rows):
            raise ValueError(f"row indices must lie in [0, {self.rows})")
        if self.kind not in BATCH_CODES and len(batches):
            # normalised row by row: row 0 alone decides its label, so each distinct row 0 is
            # computed once (every output is summed in one fixed order wherever its row sits in
            # the chunk: gemm), and its label and logits serve each of its batches
            firsts, where = np.unique(batches[:, 0], return_inverse=True)
            once = self._probe(np.ascontiguousarray(firsts[:, None]), logits)
            return (once[0][:, where], once[1][:, where]) if logits else once[0][:, where]
        out, z = self._probe(batches, logits)
        return (out, z) if logits else out

    def _probe(self, batches: np.ndarray, logits: bool):
        out = np.empty((self.models, len(batches)), np.int64)
        classes = self._net.wt.shape[2]
        z = np.empty((self.models, len(batches), classes) if logits else (0, 0, classes), np.float32)
        if len(batches):
            chunk = max(1, min(len(batches), self.rows_per_chunk // batches.shape[1]))
            probe_design(self._net, self.settings, self.first, batches, chunk, out, z)
        return out, z


__all__ = ["PROBE_ROWS", "Prober", "first_layer_into", "probe_design"]
