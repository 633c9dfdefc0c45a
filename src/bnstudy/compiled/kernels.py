"""The network's arithmetic, compiled, in one fixed order: the same bits on every CPU.

Every forward pass whose result reaches an output (training, inference-mode and
training-mode evaluation, the remedies' passes, the companion probes) runs
through the functions here, compiled by Numba (``cache=True``: later processes
load the machine code from ``__pycache__``). The rules (see
:mod:`bnstudy.base.fixedmath`): no fast-math and no fused multiply-add; every
reduction in the order written below, vectorised only across independent
outputs, so a CPU with wider vectors computes more outputs at once, each the
same way; ``exp``/``log`` from :mod:`bnstudy.base.fixedmath`. All network arithmetic
is float32.

One model's parameters are 2-D arrays in PyTorch's layout (``weight`` is
``(out, in)``). The canonical operations, per output element:

- Linear: ``h[i, o] = bias[o] + sum_k a[i, k] * W[o, k]``, the sum from ``k = 0``
  upwards, starting from the bias (:func:`bnstudy.compiled.blocks.linear_t`, given ``W^T``).
- Batch statistics of a batch of ``n`` rows, per feature: ``mean = (sum over rows
  in row order) / n``; ``var = (sum of (h - mean)**2 in row order) / n`` (biased);
  ``invstd = 1 / sqrt(var + eps)``.
- Batch norm, training mode: ``xhat = (h - mean) * invstd``; ``y = xhat * gamma + beta``.
- Batch renorm, training mode: ``sigma = sqrt(running_var + eps)``,
  ``r = clip(sqrt(var + eps) / sigma, 1/rmax, rmax)``,
  ``d = clip((mean - running_mean) / sigma, -dmax, dmax)``,
  ``y = (xhat * r + d) * gamma + beta``.
- Ghost batch norm (Hoffer, Hubara & Soudry 2017), training mode: a batch of ``n``
  rows is cut into ``max(1, n // g)`` consecutive virtual batches of ``g`` rows (the
  kind's setting), the last running to the batch's end (so it takes the
  remainder, and a batch of at most ``2g - 1`` rows is one virtual batch: batch
  norm); each is normalised as batch norm with its own statistics, in order.
- Batch norm, renorm and ghost batch norm, inference mode:
  ``invstd = 1 / sqrt(running_var + eps)``, ``y = ((h - running_mean) * invstd) * gamma + beta``.
- Layer and group norm (per row, per group of ``F / groups`` consecutive
  features, in feature order): the same mean, biased variance and ``invstd``;
  ``y = xhat * gamma + beta``.
- ReLU: ``max(y, 0)`` (``y`` if ``y > 0``, else 0).

Besides its code (:data:`KIND`), a kind hands the kernels one integer, its
``setting`` (:func:`setting`): group norm's groups (layer norm: 1), ghost batch
norm's rows per virtual batch, else 1.

A *stack* holds ``M`` models of one network: arrays with a leading model axis and
the keys of the module's ``state_dict`` (see :mod:`bnstudy.nets.model`).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from bnstudy.base import normalisers
from bnstudy.base.fixedmath import JIT
from bnstudy.base.normalisers import BATCH as BATCH
from bnstudy.base.normalisers import GHOST as GHOST
from bnstudy.base.normalisers import GROUP as GROUP
from bnstudy.base.normalisers import LAYER as LAYER
from bnstudy.base.normalisers import NONE as NONE
from bnstudy.base.normalisers import RENORM as RENORM
from bnstudy.base.normalisers import kernel_codes
from bnstudy.compiled.blocks import linear_t
from bnstudy.compiled.normkernels import Params, settings
from bnstudy.compiled.normkernels import inference as norm_inference
from bnstudy.compiled.normkernels import train as norm_train

# Normaliser kinds as the kernels know them: {name: code}, from the registry.
KIND = kernel_codes()

# ---- the network as data ----------------------------------------------------------
#
# A network is a list of layers: hidden layers (a linear map, given as ``W^T`` ``(in, out)``
# and its bias, then a normaliser with its arrays, :class:`bnstudy.compiled.normkernels.Params`, then
# ReLU) and an output layer. The kernels loop over ``hidden``, so the depth is data (a tuple's
# length), not a signature.

Hidden = namedtuple("Hidden", "wt bias norm")
Hidden.__doc__ = """A hidden layer: ``W^T`` ``(in, out)``, bias ``(out,)``, its normaliser's
:class:`bnstudy.compiled.normkernels.Params`; all float32, contiguous."""

Net = namedtuple("Net", "hidden wt bias")
Net.__doc__ = """One model: ``hidden``, a tuple of :class:`Hidden` (input side first), and the output
layer's ``W^T`` ``(in, classes)`` and bias."""


def model_net(arrays: Net, i: int) -> Net:
    """Model ``i`` of a stack's :class:`Net` (every array with a leading model axis)."""
    hidden = tuple(Hidden(h.wt[i], h.bias[i], Params(*(a[i] for a in h.norm))) for h in arrays.hidden)
    return Net(hidden, arrays.wt[i], arrays.bias[i])


# ---- the network (one model) ------------------------------------------------------
#
# norm_inference and norm_train: every kind's inference- and training-mode forward
# (bnstudy.compiled.normkernels.inference and .train, dispatched on the kind's code).


@numba.njit(**JIT)
def forward_model(net, ns, x, batch, train, scratch, logits):
    """One model's logits for rows ``x`` (consecutive batches of ``batch`` rows in training mode).

    ``scratch[l]`` is ``(pre, out)``: hidden layer ``l``'s input to the normaliser and its
    post-ReLU output (``(N, F)`` arrays), which it receives.
    """
    a = x
    for layer in range(len(net.hidden)):
        hid = net.hidden[layer]
        pre, out = scratch[layer]
        linear_t(a, hid.wt, hid.bias, pre)
        if train:
            norm_train(ns, hid.norm, pre, batch, True, out)
        else:
            norm_inference(ns, hid.norm, pre, True, out)
        a = out
    linear_t(a, net.wt, net.bias, logits)


@numba.njit(**JIT)
def argmax_rows(logits, out):
    """Index of the first largest logit of every row."""
    for i in range(logits.shape[0]):
        best = 0
        for c in range(1, logits.shape[1]):
            if logits[i, c] > logits[i, best]:
                best = c
        out[i] = best


# ---- stacks ------------------------------------------------------------------------


def setting(spec) -> int:
    """The integer the kernels receive with ``spec``'s kind: its registered ``setting``
    field of ``spec`` (group norm's groups, ghost batch norm's virtual batch), else 1."""
    field = normalisers.get(spec.normaliser).setting
    value = int(getattr(spec, field)) if field else 1
    if KIND[spec.normaliser] == GHOST and value < 2:
        raise ValueError(f"ghost batch norm needs virtual batches of at least 2 rows, got {value}")
    return value


def norm_settings(spec, limits=(1.0, 0.0)):
    """``spec``'s normaliser as the kernels take it (:class:`bnstudy.compiled.normkernels.Settings`)."""
    momentum = getattr(spec, "momentum", None)
    return settings(KIND[spec.normaliser], spec.eps, setting(spec), -1.0 if momentum is None else momentum, *limits)


def transposed(stacked: dict, key: str) -> np.ndarray:
    """``W^T`` of every model, ``(M, in, out)``, contiguous."""
    w = np.asarray(stacked[key], dtype=np.float32)
    return np.ascontiguousarray(w.transpose(0, 2, 1))


def _layer_arrays(stacked: dict, layer: str, features: int, m: int) -> Params:
    """A normaliser's (gamma, beta, running mean, running var), ``(M, F)``; defaults where absent."""

    def get(name, fill):
        key = f"{layer}.{name}"
        if key in stacked:
            return np.ascontiguousarray(stacked[key], dtype=np.float32)
        return np.full((m, features), fill, np.float32)

    return Params(get("weight", 1.0), get("bias", 0.0), get("running_mean", 0.0), get("running_var", 1.0))


def stack_arrays(stacked: dict) -> Net:
    """The kernel's view of a stack: a :class:`Net` of ``W^T`` and vectors per layer, float32,
    contiguous, each with a leading model axis (:func:`model_net` takes one model's)."""
    w1t, w2t, w3t = (transposed(stacked, k) for k in ("0.weight", "3.weight", "6.weight"))
    m, h1, h2 = w1t.shape[0], w1t.shape[2], w2t.shape[2]
    vec = lambda k: np.ascontiguousarray(stacked[k], dtype=np.float32)  # noqa: E731
    hidden = (
        Hidden(w1t, vec("0.bias"), _layer_arrays(stacked, "1", h1, m)),
        Hidden(w2t, vec("3.bias"), _layer_arrays(stacked, "4", h2, m)),
    )
    return Net(hidden, w3t, vec("6.bias"))


def logits(stacked: dict, spec, x: np.ndarray, *, train: bool = False, batch: int = 0, limits=(1.0, 0.0)) -> np.ndarray:
    """Logits ``(M, N, C)`` of every model of ``stacked`` for the rows ``x`` ``(N, in)``.

    Inference mode by default; with ``train``, training mode on consecutive batches
    of ``batch`` rows of ``x`` (``N`` a multiple of ``batch``), running statistics
    read (batch renorm) and never written.
    """
    arrays = stack_arrays(stacked)
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = x.shape[0]
    if train and (batch < 2 or n % batch):
        raise ValueError(f"training mode needs batches of >= 2 rows that tile the {n} rows; got {batch}")
    m, c = arrays.wt.shape[0], arrays.wt.shape[2]
    ns = norm_settings(spec, limits)
    out = np.empty((m, n, c), np.float32)
    scratch = tuple(
        (np.empty((n, h.wt.shape[2]), np.float32), np.empty((n, h.wt.shape[2]), np.float32)) for h in arrays.hidden
    )
    for i in range(m):
        forward_model(model_net(arrays, i), ns, x, batch if train else 1, train, scratch, out[i])
    return out


def predict(stacked: dict, spec, x: np.ndarray) -> np.ndarray:
    """Inference-mode labels ``(M, N)`` of every model for the rows ``x``."""
    z = logits(stacked, spec, x)
    labels = np.empty(z.shape[:2], np.int64)
    for i in range(z.shape[0]):
        argmax_rows(z[i], labels[i])
    return labels
