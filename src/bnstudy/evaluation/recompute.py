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

Either network (a :class:`bnstudy.nets.spec.Network`): the MLP (a :class:`bnstudy.nets.model.NetSpec`,
layers ``model.NORMS``) or the convolutional network (a :class:`bnstudy.nets.conv_train.ConvSpec`,
layers ``conv_train.norm_keys``, ``x`` its images). The forward passes layer by layer are the
spec's own (its ``training_layer_inputs`` and ``exact_statistics``); nothing here tells the
networks apart. A convolutional layer's input rows ``h`` are its normaliser's input,
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
compiled loop :func:`bnstudy.compiled.reductions.pooled_moments`, each feature an independent
sum: pooled moments (c) and (d):
``mean = (sum over all rows in pass order) / N`` (the pass order is batch by batch, rows
in batch order; for (d) rows 0, 1, ...), ``var = (sum over the same rows, same order, of
(h - mean)**2) / N``.

The statistics are rounded to float32, the dtype of the running statistics they
replace.
"""

from __future__ import annotations

import numpy as np

from bnstudy.base.runtime import STREAM_EVAL_BATCHES, derive_seed
from bnstudy.compiled.reductions import pooled_moments
from bnstudy.nets import model as mlp
from bnstudy.nets.batching import epoch_batches
from bnstudy.nets.spec import Network

Spec = Network


# ---- the network's normaliser layers ------------------------------------------------------


def norm_layers(spec: Spec | None = None) -> tuple[str, ...]:
    """The state-dict prefixes of the network's normalisers, in layer order: the spec's
    ``norm_layers`` (the MLP's ``model.NORMS`` for ``None``)."""
    return mlp.NORMS if spec is None else tuple(spec.norm_layers())


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


def training_mode_layer_inputs(stacked, spec: Spec, x, batches) -> tuple[dict[str, np.ndarray], dict]:
    """Pre-norm inputs of each batch-norm layer over a training-mode pass over ``batches``.

    Returns ``({layer: (M, N, F) float32}, {layer: starts})``: the rows of the batches
    concatenated in pass order, batch ``j`` at rows ``starts[j] .. starts[j + 1] - 1``.
    Each layer's input is computed from the layer below normalised with each batch's own
    statistics (``kernels.norm_train``), layer after layer of the network's hidden layers
    (:class:`bnstudy.compiled.kernels.Net`); running statistics are neither read nor written.

    The convolutional network (a :class:`bnstudy.nets.conv_train.ConvSpec`; ``x`` its images, one row of pixels each):
    a layer's rows are one per example x output position as :mod:`bnstudy.compiled.conv` lays them
    out (``N * P_l`` rows, ``F`` its channels), batch by batch, within a batch example by example,
    each batch of images through :func:`bnstudy.compiled.conv.layer_input` and
    :func:`~bnstudy.compiled.conv.layer_output` in training mode (batch statistics over the
    batch's examples x positions, residual connections and strides as ``forward_model``);
    batch ``j`` of layer ``l`` is at rows ``P_l * s[j] .. P_l * s[j + 1] - 1`` (``s`` the batches'
    first images).
    """
    _require_batchnorm(spec)
    return spec.training_layer_inputs(stacked, x, batches)


# ---- pooled statistics ----------------------------------------------------------------


def _pooled(inputs) -> dict:
    out = {}
    for layer, h in inputs.items():
        mean = np.empty(h.shape[::2], np.float64)
        var = np.empty(h.shape[::2], np.float64)
        for i in range(h.shape[0]):
            pooled_moments(h[i], mean[i], var[i])
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

    The convolutional network (:class:`bnstudy.nets.conv_train.ConvSpec`, ``x`` its images): the same, per channel over
    the ``N * P_l`` rows of layer ``l`` (examples in order, within an example the positions),
    each convolution through :func:`bnstudy.compiled.conv.layer_input` and ``layer_output`` in
    inference mode with the exact statistics of its layer, residual connections and strides as
    :func:`bnstudy.compiled.conv.forward_model`.
    """
    _require_batchnorm(spec)
    return spec.exact_statistics(stacked, x)
