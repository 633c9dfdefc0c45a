"""Batch normalisation's statistics recomputed for a frozen network from its training rows.

Every function here takes a trained stack (see :mod:`bnstudy.nets.model`: a dict of
NumPy arrays with a leading model axis) and returns *replacement* running
statistics as ``{layer: (mean, var)}``, ``layer`` one of :func:`norm_layers` and
``mean``/``var`` float32 arrays of shape ``(M, F)``. The stack itself is never
written: :func:`with_statistics` builds a copy carrying the replacement, so the
network evaluated with its own running statistics stays exactly as trained. Study 2's
remedies (:mod:`bnstudy.studies.batch_size.remedies`) are (a)-(d); the later studies
recompute (c) and (d) from here, and :mod:`bnstudy.evaluation.distance` measures any of
them against (d).

Either network: the MLP (a :class:`bnstudy.nets.model.NetSpec`, layers ``model.NORMS``)
or the convolutional network (a :class:`bnstudy.nets.conv_train.ConvSpec`, layers
``conv_train.norm_keys``, ``x`` its images); :func:`is_conv` is the one place the two
are told apart. A convolutional layer's input rows ``h`` are its normaliser's input,
one row per example x output position in :mod:`bnstudy.compiled.conv`'s order (examples
in order, within one the positions row-major), ``F`` its channels: batch norm 2d's
statistics per channel over examples x positions, the same reductions below over
those rows.

For a batch-norm layer with input rows ``h`` (pre-norm activations):

- :func:`training_mode_layer_inputs` -- one pass over the training half in batches
  of the training size (:func:`pass_batches`), weights frozen, training-mode forward
  passes: layer 2 sees layer 1 normalised with batch statistics, as in training.
(c) :func:`precise_statistics` -- PreciseBN-style population statistics pooled
    over that pass: the mean and the variance of *all* input rows of the
    layer over the training half, layer 2's rows computed in training mode.
    fvcore's ``update_bn_stats`` averages per-batch *unbiased*
    variances, which for random batches is itself an unbiased estimate of the
    population variance; only an average of *biased* per-batch variances falls
    short, by ``(B - 1) / B`` in expectation (``var(all rows) = mean(per-batch
    biased var) + var(batch means)`` for equal batches). We pool the rows because
    pooling gives the variance of the rows seen exactly, not an estimate of it.
    The variance is that of a finite population, divisor ``N``, as in (d).
(d) :func:`exact_statistics` -- the exact statistics of the training half layer
    by layer: layer 1's mean and variance (divisor ``N``) of all rows, then layer
    2's input computed in inference mode *with layer 1's exact statistics* (as
    float32 running statistics), and its mean and variance. At layer 1, (c) and
    (d) differ only in the rows pooled: the pass is cut like a training epoch, so
    with ``last_batch="drop"`` it leaves out the ``N mod B`` leftover rows (896 of
    898 rows at batch 64); at layer 2 they also differ through the batch noise
    in layer 1's normalisation.

Arithmetic (the rules of :mod:`bnstudy.base.fixedmath`: the same bits on every CPU).
The network's layers are :mod:`bnstudy.compiled.kernels`' canonical float32 operations:
``kernels.linear_t`` gives a layer's pre-norm input, ``kernels.norm_train`` (one
call per batch) or ``kernels.norm_inference`` the normalised, rectified output. The
convolutional network's are those of :func:`bnstudy.compiled.conv.forward_model`:
``conv.layer_input`` (``im2col``, ``linear_t``) the pre-norm rows, ``conv.layer_output``
(the normaliser, the residual connection's ``add_relu``) the output, one call per batch
of images in training mode or one for all images in inference mode.
Every statistic is then reduced in float64 (float32 inputs widen exactly) by the
compiled loop below, each feature an independent sum: pooled moments (c) and (d):
``mean = (sum over all rows in pass order) / N`` (the pass order is batch by batch, rows
in batch order; for (d) rows 0, 1, ...), ``var = (sum over the same rows, same order, of
(h - mean)**2) / N``.

The statistics are rounded to float32, the dtype of the running statistics they
replace.
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.base.runtime import STREAM_EVAL_BATCHES, derive_seed
from bnstudy.compiled import conv, kernels, normkernels
from bnstudy.nets import conv_train, network
from bnstudy.nets import model as mlp
from bnstudy.nets.batching import epoch_batches
from bnstudy.nets.conv_train import ConvSpec
from bnstudy.nets.model import NetSpec

Spec = NetSpec | ConvSpec


# ---- compiled reductions (float64, fixed order) --------------------------------


@numba.njit(**JIT)
def _pooled_moments(h, mean, var):
    """``h`` is ``(N, F)``: mean and biased variance per feature, rows in order 0, 1, ..."""
    n, f_ = h.shape
    for f in range(f_):
        mean[f] = 0.0
    for r in range(n):
        for f in range(f_):
            mean[f] += h[r, f]
    for f in range(f_):
        mean[f] = mean[f] / n
        var[f] = 0.0
    for r in range(n):
        for f in range(f_):
            d = h[r, f] - mean[f]
            var[f] += d * d
    for f in range(f_):
        var[f] = var[f] / n


# The compiled function of this module calls no compiled function of another module
# (calls into :mod:`bnstudy.compiled.kernels` and :mod:`bnstudy.base.fixedmath` are made from
# Python): Numba's cache checks only the caller's own source file. The package
# also names its cache directory by a digest of every Numba module (see
# ``bnstudy/__init__.py``); this keeps the module right without relying on it.


# ---- the two networks ------------------------------------------------------------


def is_conv(spec: Spec | None) -> bool:
    """Whether ``spec`` is the convolutional network's (:class:`ConvSpec`) rather than the MLP's
    (:class:`NetSpec`; ``None``: the MLP): the one place the remedies tell the networks apart."""
    return spec is not None and network.kind(spec) == "conv"


def norm_layers(spec: Spec | None = None) -> tuple[str, ...]:
    """The state-dict prefixes of the network's normalisers, in layer order: the MLP's
    ``model.NORMS`` (also for ``None``), the convolutional network's ``conv_train.norm_keys``."""
    return mlp.NORMS if spec is None else tuple(network.norm_layers(spec))


def _require_batchnorm(spec: Spec) -> None:
    if spec.normaliser != "batchnorm":
        raise ValueError("the remedies replace batch norm's running statistics")


# ---- statistics ----------------------------------------------------------------


def running_statistics(stacked, spec: Spec | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The stack's own running statistics, ``{layer: (running_mean, running_var)}`` (copies), for
    each of :func:`norm_layers` of ``spec`` (the MLP's without one)."""
    return {
        layer: (
            np.array(stacked[f"{layer}.running_mean"], copy=True),
            np.array(stacked[f"{layer}.running_var"], copy=True),
        )
        for layer in norm_layers(spec)
    }


def with_statistics(stacked, statistics) -> dict[str, np.ndarray]:
    """A copy of the stack whose running statistics are replaced by ``statistics``."""
    out = {k: np.array(v, copy=True) for k, v in stacked.items()}
    for layer, (mean, var) in statistics.items():
        for name, value in (("running_mean", mean), ("running_var", var)):
            key = f"{layer}.{name}"
            out[key] = np.array(value, dtype=out[key].dtype, copy=True).reshape(out[key].shape)
    return out


def pass_generator(batch_size: int, seed: int) -> np.random.Generator:
    """The generator of the remedies' pass: PCG64 seeded from ``(seed, STREAM_EVAL_BATCHES, b, 1)``."""
    return np.random.default_rng(derive_seed(seed, STREAM_EVAL_BATCHES, batch_size, 1))


def pass_batches(labels, batch_size: int, seed: int, last_batch: str = "drop") -> list[np.ndarray]:
    """Row indices of one seeded shuffled pass over the training half in training-size batches.

    Cut as in training (:func:`bnstudy.nets.batching.epoch_batches`, same ``last_batch``
    policy): leftover rows are dropped, or with ``"keep"`` form a final batch if
    there are two or more. The order comes from the evaluation seed, so every
    model of a stack sees the same batches.
    """
    return epoch_batches(pass_generator(batch_size, seed), np.asarray(labels), batch_size, "shuffle", last_batch)


def _starts(batches) -> np.ndarray:
    sizes = [len(b) for b in batches]
    if not sizes or min(sizes) < 2:
        raise ValueError("a training-mode pass needs batches of at least 2 rows")
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def training_mode_layer_inputs(stacked, spec: Spec, x, batches) -> tuple[dict[str, np.ndarray], np.ndarray | dict]:
    """Pre-norm inputs of each batch-norm layer over a training-mode pass over ``batches``.

    Returns ``({layer: (M, N, F) float32}, starts)``: the rows of the batches
    concatenated in pass order, batch ``j`` at rows ``starts[j] .. starts[j + 1] - 1``.
    Each layer's input is computed from the layer below normalised with each batch's own
    statistics (``kernels.norm_train``), layer after layer of the network's hidden layers
    (:class:`bnstudy.compiled.kernels.Net`); running statistics are neither read nor written.

    The convolutional network (a :class:`ConvSpec`; ``x`` its images, one row of pixels each):
    a layer's rows are one per example x output position as :mod:`bnstudy.compiled.conv` lays them
    out (``N * P_l`` rows, ``F`` its channels), batch by batch, within a batch example by example,
    each batch of images through :func:`bnstudy.compiled.conv.layer_input` and
    :func:`~bnstudy.compiled.conv.layer_output` in training mode (batch statistics over the
    batch's examples x positions, residual connections and strides as ``forward_model``);
    ``starts`` is then ``{layer: row starts}``, batch ``j`` of layer ``l`` at rows
    ``P_l * s[j] .. P_l * s[j + 1] - 1`` (``s`` the batches' first images).
    """
    _require_batchnorm(spec)
    if is_conv(spec):
        return _conv_training_inputs(stacked, spec, x, batches)
    starts = _starts(batches)
    rows = np.concatenate([np.asarray(b, np.int64) for b in batches])
    xp = np.ascontiguousarray(np.asarray(x)[rows], dtype=np.float32)
    hidden = kernels.stack_arrays(stacked).hidden
    m, n = hidden[0].wt.shape[0], len(rows)
    pres = [np.empty((m, n, layer.wt.shape[2]), np.float32) for layer in hidden]
    ns = normkernels.settings(kernels.BATCH, spec.eps)
    for i in range(m):
        a = xp
        for layer, pre in zip(hidden, pres):
            kernels.linear_t(a, layer.wt[i], layer.bias[i], pre[i])  # row by row: the same bits as batch by batch
            if pre is pres[-1]:
                break
            lp = normkernels.Params(*(v[i] for v in layer.norm))
            a = np.empty(pre.shape[1:], np.float32)
            for s, e in zip(starts[:-1].tolist(), starts[1:].tolist()):
                kernels.norm_train(ns, lp, pre[i, s:e], e - s, True, a[s:e])
    return dict(zip(mlp.NORMS, pres)), starts


# ---- the convolutional network's layer inputs ---------------------------------------


def _conv_net(stacked, spec: ConvSpec, x):
    """``(models, geometry, settings, images)`` of a convolutional stack on the images ``x``: the
    number of models, :class:`bnstudy.compiled.conv.Geometry`, normaliser settings, and ``x`` as
    ``(N, side * side)`` float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    geo = spec.arch(conv_train.image_side(x)).geometry
    m = np.asarray(stacked[f"{norm_layers(spec)[0]}.running_mean"]).shape[0]
    return m, geo, conv_train.norm_settings(spec), x


def _conv_layers(net, geo, ns, x, n_ex, train, pres, exact=None) -> None:
    """``n_ex`` images ``x`` (``(n_ex * P, 1)``) through model ``net``'s convolutions as
    :func:`bnstudy.compiled.conv.forward_model` (training mode: one batch of the ``n_ex`` images),
    each layer's normaliser input into ``pres[l]``. With ``exact`` (float64 ``(mean, var)`` per
    layer) each layer's pooled moments (:func:`_pooled_moments`) go there first, and the layer is
    normalised with them, rounded to float32, as its running statistics (inference mode)."""
    a, acts = x, []
    for layer, (hid, pre) in enumerate(zip(net.hidden, pres)):
        conv.layer_input(hid, geo, layer, a, n_ex, pre)
        lp = hid.norm
        if exact is not None:
            mean, var = exact[layer]
            _pooled_moments(pre, mean, var)
            lp = normkernels.Params(lp.gamma, lp.beta, mean.astype(np.float32), var.astype(np.float32))
        if layer == len(pres) - 1:
            break
        out = np.empty_like(pre)
        skip = int(geo.layers[layer, conv.SKIP])
        conv.layer_output(ns, lp, geo, layer, pre, acts[skip] if skip >= 0 else out, n_ex, n_ex, train, out)
        acts.append(out)
        a = out


def _conv_training_inputs(stacked, spec: ConvSpec, x, batches) -> tuple[dict[str, np.ndarray], dict]:
    """:func:`training_mode_layer_inputs` of a convolutional stack (its docstring)."""
    starts = _starts(batches)
    m, geo, ns, x = _conv_net(stacked, spec, x)
    rows = np.concatenate([np.asarray(b, np.int64) for b in batches])
    positions = [int(p) for p in geo.layers[:, conv.P_OUT]]
    pres = [np.empty((m, len(rows) * p, int(c)), np.float32) for p, c in zip(positions, spec.channels)]
    for i in range(m):
        net = conv_train.model_arrays(stacked, spec, i)
        for s, e in zip(starts[:-1].tolist(), starts[1:].tolist()):
            images = np.ascontiguousarray(x[rows[s:e]].reshape(-1, 1))
            views = [pre[i, p * s : p * e] for pre, p in zip(pres, positions)]
            _conv_layers(net, geo, ns, images, e - s, True, views)
    layers = norm_layers(spec)
    return dict(zip(layers, pres)), {layer: starts * p for layer, p in zip(layers, positions)}


def _conv_exact(stacked, spec: ConvSpec, x) -> dict:
    """:func:`exact_statistics` of a convolutional stack: every image in one inference-mode pass,
    layer ``l``'s moments pooled over its ``N * P_l`` rows (examples in order, within one the
    positions), then used as its running statistics for the layers above."""
    m, geo, ns, x = _conv_net(stacked, spec, x)
    n = x.shape[0]
    images = x.reshape(-1, 1)
    positions = [int(p) for p in geo.layers[:, conv.P_OUT]]
    stats = {
        layer: (np.empty((m, int(c)), np.float64), np.empty((m, int(c)), np.float64))
        for layer, c in zip(norm_layers(spec), spec.channels)
    }
    for i in range(m):
        pres = [np.empty((n * p, int(c)), np.float32) for p, c in zip(positions, spec.channels)]
        exact = [(mean[i], var[i]) for mean, var in stats.values()]
        _conv_layers(conv_train.model_arrays(stacked, spec, i), geo, ns, images, n, False, pres, exact)
    return {layer: (mean.astype(np.float32), var.astype(np.float32)) for layer, (mean, var) in stats.items()}


# ---- pooled statistics ----------------------------------------------------------------


def _pooled(inputs) -> dict:
    out = {}
    for layer, h in inputs.items():
        mean = np.empty(h.shape[::2], np.float64)
        var = np.empty(h.shape[::2], np.float64)
        for i in range(h.shape[0]):
            _pooled_moments(h[i], mean[i], var[i])
        out[layer] = (mean.astype(np.float32), var.astype(np.float32))
    return out


def precise_statistics(stacked, spec: Spec, x, batches) -> dict:
    """(c) Mean and variance (divisor ``N``) of all input rows pooled over ``batches``.

    Float64, two passes over the rows in pass order (batch by batch, rows in batch
    order): ``mean = sum(h) / N``, then ``var = sum((h - mean)**2) / N``.
    """
    inputs, _ = training_mode_layer_inputs(stacked, spec, x, batches)
    return _pooled(inputs)


def exact_statistics(stacked, spec: Spec, x) -> dict:
    """(d) Exact statistics of the rows ``x``, layer 2's input under layer 1's exact statistics.

    Layer 1's input ``x W1^T + b1`` (``kernels.linear_t``), its mean and variance
    (divisor ``N``; float64, rows in order 0, 1, ...; two passes) rounded to
    float32; layer 1 in inference mode with those statistics
    (``kernels.norm_inference``, then ReLU), layer 2's input, its mean and variance
    the same way (and so on up the network's hidden layers).

    The convolutional network (:class:`ConvSpec`, ``x`` its images): the same, per channel over
    the ``N * P_l`` rows of layer ``l`` (examples in order, within an example the positions),
    each convolution through :func:`bnstudy.compiled.conv.layer_input` and ``layer_output`` in
    inference mode with the exact statistics of its layer, residual connections and strides as
    :func:`bnstudy.compiled.conv.forward_model`.
    """
    _require_batchnorm(spec)
    if is_conv(spec):
        return _conv_exact(stacked, spec, x)
    hidden = kernels.stack_arrays(stacked).hidden
    x = np.ascontiguousarray(x, dtype=np.float32)
    m, n = hidden[0].wt.shape[0], x.shape[0]
    stats = {}
    for name, layer in zip(mlp.NORMS, hidden):
        f = layer.wt.shape[2]
        stats[name] = (np.empty((m, f), np.float64), np.empty((m, f), np.float64))
    ns = normkernels.settings(kernels.BATCH, spec.eps)
    for i in range(m):
        a = x
        for (mean, var), layer in zip(stats.values(), hidden):
            pre = np.empty((n, layer.wt.shape[2]), np.float32)
            kernels.linear_t(a, layer.wt[i], layer.bias[i], pre)
            _pooled_moments(pre, mean[i], var[i])
            if layer is hidden[-1]:
                break
            lp = normkernels.Params(
                layer.norm.gamma[i], layer.norm.beta[i], mean[i].astype(np.float32), var[i].astype(np.float32)
            )
            a = np.empty_like(pre)
            kernels.norm_inference(ns, lp, pre, True, a)
    return {layer: (mean.astype(np.float32), var.astype(np.float32)) for layer, (mean, var) in stats.items()}
