"""One batch-normalisation layer in fixed-order arithmetic (float32 or float64), without PyTorch.

The layer of the running-statistics study (:mod:`bnstudy.studies.running_stats.science`, float64)
and the layer under test of the self-checks (:mod:`bnstudy.studies.running_stats.selfchecks`, float32).
Its semantics are those of ``torch.nn.BatchNorm1d`` on ``(N, F)`` input, written
from the definition (see :mod:`bnstudy.nets.reference`); the arithmetic is that of the
probes' kernel (:mod:`bnstudy.compiled.kernels`), in the dtype of the layer throughout
(Numba compiles one version of each loop per dtype):

training mode, one batch of ``n`` rows (in the order the batch lists them)::

    mean[f]   = (sum over the batch's rows, in order, of x[r, f]) / n
    ssd[f]    =  sum over the batch's rows, in order, of (x[r, f] - mean[f])**2
    scale[f]  = weight[f] / sqrt(ssd[f] / n + eps)            # biased variance
    y[r, f]   = (x[r, f] - mean[f]) * scale[f] + bias[f]

then the running update, PyTorch's rule, with the *unbiased* variance::

    factor          = momentum, or 1 / t at the t-th update when momentum is None
    running_mean[f] = (1 - factor) * running_mean[f] + factor * mean[f]
    running_var[f]  = (1 - factor) * running_var[f]  + factor * (ssd[f] / (n - 1))

inference mode::

    scale[f] = weight[f] / sqrt(running_var[f] + eps)
    y[i, f]  = (x[i, f] - running_mean[f]) * scale[f] + bias[f]

No fast-math, so nothing is reordered or fused (no FMA); the features of a row are
independent outputs that the compiler may spread over vector lanes, which changes
no bit. ``tests/compiled/test_layer.py`` checks the kernels bit for bit against the same
steps in NumPy, and against ``torch.nn.BatchNorm1d`` within rounding.
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.batchstats import running_update

DTYPES = (np.float32, np.float64)


@numba.njit(**JIT)
def _train_batch(x, rows, count, weight, bias, eps, out, mean, ssd, scale):
    """Training-mode forward of the rows ``x[rows]`` into ``out[rows]``; ``mean`` and
    ``ssd`` (sum of squared deviations) of the batch are left in their arrays."""
    features = x.shape[1]
    b = rows.shape[0]
    mean[:] = 0
    for r in range(b):
        row = x[rows[r]]
        for f in range(features):
            mean[f] += row[f]
    for f in range(features):
        mean[f] = mean[f] / count
    ssd[:] = 0
    for r in range(b):
        row = x[rows[r]]
        for f in range(features):
            d = row[f] - mean[f]
            ssd[f] += d * d
    for f in range(features):
        scale[f] = weight[f] / np.sqrt(ssd[f] / count + eps)
    for r in range(b):
        i = rows[r]
        row = x[i]
        y = out[i]
        for f in range(features):
            y[f] = (row[f] - mean[f]) * scale[f] + bias[f]


@numba.njit(**JIT)
def _update(running_mean, running_var, mean, ssd, count, one, factor, unbiased):
    """PyTorch's running update (:func:`bnstudy.compiled.batchstats.running_update`) with the unbiased
    variance ``ssd / (count - 1)``, computed into the scratch ``unbiased``."""
    for f in range(mean.shape[0]):
        unbiased[f] = ssd[f] / (count - one)
    running_update(running_mean, running_var, mean, unbiased, factor, one)


@numba.njit(**JIT)
def _train_pass(x, batches, params, rule, tracked, outputs, work):
    """Batch ``j`` is ``x[order[starts[j]:starts[j + 1]]]``, ``counts[j]`` rows (``batches`` is
    ``(order, starts, counts)``); batches in order. ``params``: ``(weight, bias, running_mean,
    running_var)``; ``rule``: ``(one, eps, momentum, cumulative)``; ``tracked``: updates before
    this pass (the ``t`` of ``momentum=None``); ``outputs``: ``(out, batch_means, batch_vars)``;
    ``work``: scratch ``(mean, ssd, scale)``."""
    order, starts, counts = batches
    weight, bias, running_mean, running_var = params
    one, eps, momentum, cumulative = rule
    out, batch_means, batch_vars = outputs
    mean, ssd, scale = work
    features = x.shape[1]
    for j in range(starts.shape[0] - 1):
        rows = order[starts[j] : starts[j + 1]]
        count = counts[j]
        _train_batch(x, rows, count, weight, bias, eps, out, mean, ssd, scale)
        tracked = tracked + one
        factor = one / tracked if cumulative else momentum
        _update(running_mean, running_var, mean, ssd, count, one, factor, scale)
        for f in range(features):
            batch_means[j, f] = mean[f]
            batch_vars[j, f] = ssd[f] / count


@numba.njit(**JIT)
def _inference(x, running_mean, running_var, weight, bias, eps, scale, out):
    n, features = x.shape
    for f in range(features):
        scale[f] = weight[f] / np.sqrt(running_var[f] + eps)
    for i in range(n):
        row = x[i]
        y = out[i]
        for f in range(features):
            y[f] = (row[f] - running_mean[f]) * scale[f] + bias[f]


class BatchNorm1d:
    """A batch-norm layer over ``(N, features)`` arrays, in ``dtype`` (float32 or float64).

    The interface follows ``torch.nn.BatchNorm1d`` where it can: ``weight`` (gamma,
    default 1), ``bias`` (beta, default 0), ``eps``, ``momentum`` (``None``: cumulative
    average), ``running_mean`` (starts at 0), ``running_var`` (starts at 1),
    ``num_batches_tracked``, ``train()``/``eval()``, and calling the layer runs the
    forward pass of its mode (training mode updates the running statistics). Arrays in,
    arrays out; inputs are converted to the layer's dtype.
    """

    def __init__(
        self, features: int, eps: float = 1e-5, momentum: float | None = 0.1, dtype=np.float64, weight=None, bias=None
    ):
        self.dtype = np.dtype(dtype)
        if self.dtype.type not in DTYPES:
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")
        c = self.dtype.type
        self.features = int(features)
        self.eps = float(eps)
        self.momentum = None if momentum is None else float(momentum)
        self.weight = np.ones(features, self.dtype) if weight is None else np.array(weight, self.dtype)
        self.bias = np.zeros(features, self.dtype) if bias is None else np.array(bias, self.dtype)
        self.running_mean = np.zeros(features, self.dtype)
        self.running_var = np.ones(features, self.dtype)
        self.num_batches_tracked = 0
        self.training = True
        self._one, self._eps = c(1), c(self.eps)
        self._work = tuple(np.empty(features, self.dtype) for _ in range(3))  # mean, ssd, scale

    def train(self, mode: bool = True) -> BatchNorm1d:
        self.training = bool(mode)
        return self

    def eval(self) -> BatchNorm1d:
        return self.train(False)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.forward(x)

    def _input(self, x) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=self.dtype)
        if x.ndim != 2 or x.shape[1] != self.features:
            raise ValueError(f"expected input of shape (N, {self.features}), got {x.shape}")
        return x

    def _factor(self):
        """The weight of the update about to be made (``num_batches_tracked`` already counts it)."""
        c = self.dtype.type
        return self._one / c(self.num_batches_tracked) if self.momentum is None else c(self.momentum)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Training mode: normalise with the batch's statistics and update; inference: running ones."""
        x = self._input(x)
        out = np.empty_like(x)
        mean, ssd, scale = self._work
        if not self.training:
            _inference(x, self.running_mean, self.running_var, self.weight, self.bias, self._eps, scale, out)
            return out
        n = len(x)
        if n < 2:
            raise ValueError(f"batch statistics need more than 1 value per feature, got {n} row")
        count = self.dtype.type(n)
        _train_batch(x, np.arange(n), count, self.weight, self.bias, self._eps, out, mean, ssd, scale)
        self.num_batches_tracked += 1
        _update(self.running_mean, self.running_var, mean, ssd, count, self._one, self._factor(), scale)
        return out

    def train_pass(self, x: np.ndarray, batches: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Training mode over ``batches`` (row indices of ``x``) in order, in one compiled call.

        The same arithmetic as calling the layer on ``x[rows]`` batch by batch.
        Returns ``(out, batch_means, batch_vars)``: ``out`` has ``x``'s shape, each
        batch's rows normalised with their batch's statistics (rows in no batch are
        0); ``batch_means`` and the biased ``batch_vars`` are ``(len(batches), F)``.
        """
        x = self._input(x)
        sizes = np.array([len(rows) for rows in batches], dtype=np.int64)
        if np.any(sizes < 2):
            raise ValueError("batch statistics need more than 1 row in every batch")
        order = np.concatenate([np.asarray(rows, np.int64) for rows in batches]) if batches else np.zeros(0, np.int64)
        if order.size and (order.min() < 0 or order.max() >= len(x)):
            raise ValueError("batch row index out of range")
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        out = np.zeros_like(x)
        batch_means = np.empty((len(batches), self.features), self.dtype)
        batch_vars = np.empty((len(batches), self.features), self.dtype)
        c = self.dtype.type
        cumulative = self.momentum is None
        momentum = c(0.0) if cumulative else c(self.momentum)
        _train_pass(
            x,
            (order, starts, sizes.astype(self.dtype)),
            (self.weight, self.bias, self.running_mean, self.running_var),
            (self._one, self._eps, momentum, cumulative),
            c(self.num_batches_tracked),
            (out, batch_means, batch_vars),
            self._work,
        )
        self.num_batches_tracked += len(batches)
        return out, batch_means, batch_vars
