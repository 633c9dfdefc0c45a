"""A second, independent implementation of ``torch.nn.BatchNorm1d`` in NumPy.

Written from the definition, not from PyTorch's code, so that a conformance test
can compare the two. For a batch ``x`` of ``n`` rows and ``F`` features:

- training forward: ``mean = x.mean(0)``, ``var = ((x - mean)**2).mean(0)`` (the
  *biased* batch variance), ``y = gamma * (x - mean) / sqrt(var + eps) + beta``;
  a batch of one row has no variance and is an error;
- running update (training mode only), with the *unbiased* batch variance
  ``var * n / (n - 1)``: ``running = (1 - factor) * running + factor * batch``,
  where ``factor = momentum`` (PyTorch's ``momentum`` is ``1 - keep``), or, for
  ``momentum=None``, ``factor = 1 / t`` after the ``t``-th update, which makes the
  running values the plain (cumulative) average of the batch statistics;
- inference forward: ``y = gamma * (x - running_mean) / sqrt(running_var + eps) + beta``.

Initial state: ``running_mean = 0``, ``running_var = 1``, ``t = 0``.

This is a test-time second implementation and stays plain NumPy (its reductions are
NumPy's, whose last bits may depend on the CPU). The one part that feeds a pipeline
output is :func:`normalise_with` (the differential check of
:mod:`bnstudy.studies.running_stats.selfchecks`), which is elementwise ``-``, ``*``, ``/``, ``+`` and ``sqrt``
only, correctly rounded on every CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class BatchOfOneError(ValueError):
    """Training-mode batch statistics of a single row are undefined."""


def batch_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and biased (ddof 0) variance of the rows of ``x``."""
    mean = x.mean(axis=0)
    var = ((x - mean) ** 2).mean(axis=0)
    return mean, var


def unbiased(var: np.ndarray, n: int) -> np.ndarray:
    """The unbiased variance ``var * n / (n - 1)`` from the biased one of ``n`` rows."""
    return var * (n / (n - 1))


@dataclass
class BatchNorm1dReference:
    """NumPy ``BatchNorm1d`` with PyTorch's semantics (see the module docstring)."""

    features: int
    eps: float = 1e-5
    momentum: float | None = 0.1
    gamma: np.ndarray | None = None
    beta: np.ndarray | None = None
    running_mean: np.ndarray = field(init=False)
    running_var: np.ndarray = field(init=False)
    num_batches_tracked: int = field(init=False, default=0)

    def __post_init__(self):
        self.gamma = np.ones(self.features) if self.gamma is None else np.asarray(self.gamma, float)
        self.beta = np.zeros(self.features) if self.beta is None else np.asarray(self.beta, float)
        self.running_mean = np.zeros(self.features)
        self.running_var = np.ones(self.features)

    def update_factor(self) -> float:
        """Weight of the new batch statistic in the running update about to happen."""
        if self.momentum is None:
            return 1.0 / (self.num_batches_tracked + 1)
        return self.momentum

    def running_update(self, mean: np.ndarray, var: np.ndarray, n: int) -> None:
        """Move the running statistics towards one batch's mean and biased variance."""
        factor = self.update_factor()
        self.running_mean = (1 - factor) * self.running_mean + factor * mean
        self.running_var = (1 - factor) * self.running_var + factor * unbiased(var, n)
        self.num_batches_tracked += 1

    def train_forward(self, x: np.ndarray, update: bool = True) -> np.ndarray:
        """Training mode: normalise by the batch's own statistics (and update)."""
        x = np.asarray(x, dtype=np.float64)
        n = x.shape[0]
        if n < 2:
            raise BatchOfOneError(f"batch statistics need more than 1 value per feature, got {n} row")
        mean, var = batch_moments(x)
        y = self.gamma * (x - mean) / np.sqrt(var + self.eps) + self.beta
        if update:
            self.running_update(mean, var, n)
        return y

    def eval_forward(self, x: np.ndarray) -> np.ndarray:
        """Inference mode: normalise by the running statistics."""
        x = np.asarray(x, dtype=np.float64)
        return self.gamma * (x - self.running_mean) / np.sqrt(self.running_var + self.eps) + self.beta


def normalise_with(
    x: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    eps: float = 1e-5,
    gamma: float | np.ndarray = 1.0,
    beta: float | np.ndarray = 0.0,
) -> np.ndarray:
    """``gamma * (x - mean) / sqrt(var + eps) + beta`` with given statistics."""
    return gamma * (np.asarray(x, float) - mean) / np.sqrt(var + eps) + beta


# ---- conformance: PyTorch's BatchNorm1d against an implementation of the above ----
SEMANTICS = (
    "training_forward",
    "inference_forward",
    "running_update_unbiased",
    "eps",
    "momentum_none",
    "batch_of_one_error",
)


def _torch_layer(features, eps, momentum, gamma, beta):
    import torch

    layer = torch.nn.BatchNorm1d(features, eps=eps, momentum=momentum).double()
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(np.asarray(gamma, float)))
        layer.bias.copy_(torch.from_numpy(np.asarray(beta, float)))
    return layer


def _pair(impl, features, eps=1e-5, momentum=0.1, seed=0):
    rng = np.random.default_rng(seed)
    gamma, beta = rng.uniform(0.5, 2.0, features), rng.uniform(-1.0, 1.0, features)
    return (
        _torch_layer(features, eps, momentum, gamma, beta),
        impl(features, eps=eps, momentum=momentum, gamma=gamma, beta=beta),
    )


def _batches(seed, features, sizes, scale=3.0, shift=2.0):
    rng = np.random.default_rng(seed)
    return [shift + scale * rng.standard_normal((n, features)) for n in sizes]


def conformance(impl=BatchNorm1dReference, features: int = 5, atol: float = 1e-9) -> dict[str, bool]:
    """Run ``torch.nn.BatchNorm1d`` (float64) and ``impl`` side by side, one scenario per
    semantic of :data:`SEMANTICS`; ``True`` where they agree (max abs difference <= atol,
    or, for the batch of one, both refuse it with a ``ValueError``).

    Only that refusal counts as an answer: any exception raised in another scenario,
    or any other exception in the batch-of-one scenario, propagates to the caller.
    A test-time tool: it imports PyTorch, and no pipeline output depends on it."""
    import torch

    def agree(a, b):
        return bool(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))) <= atol)

    def train_step(layer, ref, x):
        layer.train()
        with torch.no_grad():
            y = layer(torch.from_numpy(x)).numpy()
        return y, ref.train_forward(x)

    def training_forward():  # batch statistics, gamma and beta
        layer, ref = _pair(impl, features)
        return agree(*train_step(layer, ref, _batches(1, features, [10])[0]))

    def trained_pair():  # three updates from batches of different sizes
        layer, ref = _pair(impl, features)
        for x in _batches(2, features, [4, 7, 2]):
            train_step(layer, ref, x)
        return layer, ref

    def running_update_unbiased():
        layer, ref = trained_pair()
        return agree(layer.running_mean.numpy(), ref.running_mean) and agree(layer.running_var.numpy(), ref.running_var)

    def inference_forward():  # with the running statistics of trained_pair
        layer, ref = trained_pair()
        x = _batches(3, features, [6])[0]
        with torch.no_grad():
            return agree(layer.eval()(torch.from_numpy(x)).numpy(), ref.eval_forward(x))

    def eps():  # eps inside the square root: a batch whose variance is comparable to eps
        layer, ref = _pair(impl, features, eps=1e-3)
        x = _batches(4, features, [5], scale=0.03)[0]
        ok = agree(*train_step(layer, ref, x))
        with torch.no_grad():
            return ok and agree(layer.eval()(torch.from_numpy(x)).numpy(), ref.eval_forward(x))

    def momentum_none():  # running values are the cumulative average of batch statistics
        layer, ref = _pair(impl, features, momentum=None)
        for x in _batches(5, features, [3, 8, 5, 2]):
            train_step(layer, ref, x)
        return agree(layer.running_mean.numpy(), ref.running_mean) and agree(layer.running_var.numpy(), ref.running_var)

    def batch_of_one_error():  # both refuse a single row in training mode
        layer, ref = _pair(impl, features)
        x = _batches(6, features, [1])[0]
        refused = []
        for call in (lambda: layer.train()(torch.from_numpy(x)), lambda: ref.train_forward(x)):
            try:
                call()
                refused.append(False)
            except ValueError:  # the refusal; any other exception is a crash and propagates
                refused.append(True)
        return all(refused)

    scenarios = dict(
        training_forward=training_forward,
        inference_forward=inference_forward,
        running_update_unbiased=running_update_unbiased,
        eps=eps,
        momentum_none=momentum_none,
        batch_of_one_error=batch_of_one_error,
    )
    # No exception is turned into a verdict: an implementation that crashes is broken
    # in a way no scenario measures, and a crash must not read as "detected" either.
    return {name: bool(scenarios[name]()) for name in SEMANTICS}
