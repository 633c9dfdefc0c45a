"""Remedies for batch normalisation's running statistics, applied to frozen networks.

Every function here takes a trained stack (see :mod:`bnstudy.model`) and returns
*replacement* running statistics as ``{layer: (mean, var)}``, ``layer`` one of
``model.NORMS`` and ``mean``/``var`` of shape ``(M, F)``. The stack itself is never
written: :func:`with_statistics` builds a copy carrying the replacement, so the
network evaluated with its own running statistics stays exactly as trained.

The four replacements, for a batch-norm layer with input rows ``h`` (pre-norm
activations) and keep-factor ``keep = 1 - momentum``:

(a) :func:`debiased_ema` -- the running averages with the initial value's weight
    removed. After ``u`` updates PyTorch's running value is
    ``r_u = keep**u * r_0 + (1 - keep) * sum_k keep**(u - k) * s_k`` with
    ``r_0 = 0`` (mean) or ``1`` (variance); the debiased value is
    ``(r_u - keep**u * r_0) / (1 - keep**u)``, a weighted mean of the batch
    statistics ``s_k`` alone (Adam's bias correction). ``u`` is the layer's
    ``num_batches_tracked``.
(b) :func:`cumulative_average` -- one pass over the training half in batches of
    the training size, weights frozen, training-mode forward passes, running
    statistics reset and updated with PyTorch's ``momentum=None`` rule: the result
    is the plain mean of the per-batch means and of the per-batch *unbiased*
    variances. Layer 2 sees layer 1 normalised with batch statistics, as in
    training.
(c) :func:`precise_statistics` -- PreciseBN-style population statistics pooled
    over the same pass: the mean and the variance of *all* input rows of the
    layer over the training half, layer 2's rows computed in training mode as in
    (b). We pool the rows rather than average per-batch variances (fvcore's
    ``update_bn_stats`` averages per-batch variances) because the average of
    per-batch variances omits the spread of the batch means,
    ``var(all rows) = mean(per-batch biased var) + var(batch means)`` for equal
    batches, and so underestimates the population variance by a factor near
    ``(B - 1) / B``: half of it at batch 2. The variance is that of a finite
    population, divisor ``N`` (numpy's ``var``), as in (d).
(d) :func:`exact_statistics` -- the exact statistics of the training half layer
    by layer: layer 1's mean and variance (divisor ``N``) of all rows, then layer
    2's input computed in inference mode *with layer 1's exact statistics*, and
    its mean and variance. (c) and (d) agree exactly at layer 1; at layer 2 they
    differ only through the batch noise in layer 1's normalisation.

:func:`distances` measures each replacement against (d), per layer.
"""

from __future__ import annotations

import math

import torch

from . import model as mlp
from .model import NetSpec
from .runtime import STREAM_EVAL_BATCHES, derive_seed
from .train import epoch_batches

REMEDIES = ("debiased_ema", "cumulative", "precise_bn", "exact")


def running_statistics(stacked) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The stack's own running statistics, ``{layer: (running_mean, running_var)}`` (copies)."""
    return {layer: (stacked[f"{layer}.running_mean"].clone(), stacked[f"{layer}.running_var"].clone())
            for layer in mlp.NORMS}


def with_statistics(stacked, statistics) -> dict[str, torch.Tensor]:
    """A copy of the stack whose running statistics are replaced by ``statistics``."""
    out = {k: v.clone() for k, v in stacked.items()}
    for layer, (mean, var) in statistics.items():
        out[f"{layer}.running_mean"] = mean.to(out[f"{layer}.running_mean"].dtype).clone()
        out[f"{layer}.running_var"] = var.to(out[f"{layer}.running_var"].dtype).clone()
    return out


def debiased_ema(stacked, spec: NetSpec) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """(a) Running averages with the initial value's weight ``keep**u`` removed.

    Initial values: mean 0, variance 1 (PyTorch's). A layer that was never updated
    (``u = 0``) has no batch statistic to average and raises.
    """
    if spec.momentum is None:
        raise ValueError("the cumulative average (momentum=None) carries no initial-value bias")
    keep = 1.0 - spec.momentum
    out = {}
    for layer in mlp.NORMS:
        u = stacked[f"{layer}.num_batches_tracked"].to(torch.float64).reshape(-1, 1)
        if bool((u < 1).any()):
            raise ValueError("debiasing needs at least one update")
        w0 = keep ** u  # weight still carried by the initial value
        mean = stacked[f"{layer}.running_mean"].double()
        var = stacked[f"{layer}.running_var"].double()
        out[layer] = ((mean - w0 * 0.0) / (1 - w0), (var - w0 * 1.0) / (1 - w0))
    return {k: (m.float(), v.float()) for k, (m, v) in out.items()}


def pass_batches(labels: torch.Tensor, batch_size: int, seed: int, last_batch: str = "drop") -> list[torch.Tensor]:
    """Row indices of one seeded shuffled pass over the training half in training-size batches.

    Cut as in training (:func:`bnstudy.train.epoch_batches`, same ``last_batch``
    policy): leftover rows are dropped, or with ``"keep"`` form a final batch if
    there are two or more. The order comes from the evaluation seed, so every
    model of a stack sees the same batches.
    """
    g = torch.Generator().manual_seed(derive_seed(seed, STREAM_EVAL_BATCHES, batch_size, 1))
    return epoch_batches(g, labels, batch_size, "shuffle", last_batch)


def _training_mode_layer_inputs(stacked, spec: NetSpec, x, batches, limits=(1.0, 0.0)):
    """Pre-norm inputs of each batch-norm layer over the pass, training-mode forward.

    Returns ``{layer: [ (M, B_k, F) per batch ]}``; nothing is written.
    """
    m = next(iter(stacked.values())).shape[0]
    inputs = {layer: [] for layer in mlp.NORMS}
    with torch.no_grad():
        for idx in batches:
            a = x[idx].expand(m, -1, -1)
            for i, (lin, nrm) in enumerate(zip(mlp.LINEARS, mlp.NORMS)):
                h = mlp.linear(a, stacked[lin + ".weight"], stacked[lin + ".bias"])
                inputs[nrm].append(h)
                a = mlp.hidden(stacked, spec, a, i, train=True, update=False, limits=limits)
    return inputs


def cumulative_average(stacked, spec: NetSpec, x: torch.Tensor, batches) -> dict:
    """(b) Mean of per-batch means and of per-batch unbiased variances over ``batches``.

    Equivalent to resetting the buffers and running the network in training mode
    with ``momentum=None`` over the batches (see the test); computed here from the
    layer inputs directly, on a frozen stack.
    """
    return _cumulative(_training_mode_layer_inputs(stacked, spec, x, batches))


def _cumulative(inputs) -> dict:
    out = {}
    for layer, hs in inputs.items():
        means = torch.stack([h.double().mean(-2) for h in hs])
        variances = torch.stack([h.double().var(-2, unbiased=True) for h in hs])
        out[layer] = (means.mean(0).float(), variances.mean(0).float())
    return out


def precise_statistics(stacked, spec: NetSpec, x: torch.Tensor, batches) -> dict:
    """(c) Mean and variance (divisor ``N``) of all input rows pooled over ``batches``."""
    return _pooled(_training_mode_layer_inputs(stacked, spec, x, batches))


def _pooled(inputs) -> dict:
    out = {}
    for layer, hs in inputs.items():
        rows = torch.cat([h.double() for h in hs], dim=-2)
        out[layer] = (rows.mean(-2).float(), rows.var(-2, unbiased=False).float())
    return out


def exact_statistics(stacked, spec: NetSpec, x: torch.Tensor) -> dict:
    """(d) Exact training-half statistics, layer 2's input under layer 1's exact statistics."""
    m = next(iter(stacked.values())).shape[0]
    out = {}
    with torch.no_grad():
        a = x.expand(m, -1, -1)
        current = {k: v.clone() for k, v in stacked.items()}
        for i, (lin, nrm) in enumerate(zip(mlp.LINEARS, mlp.NORMS)):
            h = mlp.linear(a, current[lin + ".weight"], current[lin + ".bias"]).double()
            out[nrm] = (h.mean(-2).float(), h.var(-2, unbiased=False).float())
            current = with_statistics(current, {nrm: out[nrm]})
            a = mlp.hidden(current, spec, a, i, train=False)
    return out


def distances(statistics, exact, eps: float = 1e-5) -> list[dict]:
    """Per model and layer, how far ``statistics`` are from the ``exact`` ones.

    ``mean_distance`` = sqrt(mean over features of (mean - exact_mean)**2 / (exact_var + eps)):
    the RMS shift of a normalised activation, in exact standard deviations.
    ``var_distance`` = sqrt(mean over features of log((var + eps) / (exact_var + eps))**2):
    the RMS log-ratio of the variances (0.1 is about a 10% error).
    """
    rows = []
    for number, layer in enumerate(mlp.NORMS, start=1):
        mean, var = (t.double() for t in statistics[layer])
        emean, evar = (t.double() for t in exact[layer])
        md = (((mean - emean) ** 2) / (evar + eps)).mean(-1).sqrt()
        vd = (torch.log((var + eps) / (evar + eps)) ** 2).mean(-1).sqrt()
        for i in range(mean.shape[0]):
            rows.append({"model": i, "layer": number, "mean_distance": float(md[i]),
                         "var_distance": float(vd[i])})
    return rows


def all_statistics(stacked, spec: NetSpec, x_train: torch.Tensor, y_train: torch.Tensor,
                   batch_size: int, seed: int, last_batch: str = "drop") -> dict[str, dict]:
    """Every set of statistics of a batch-norm stack, by name: the trained ``ema`` and (a)-(d).

    The training-mode pass is cut like the networks' training epochs (``last_batch``).
    """
    if spec.normaliser != "batchnorm":
        raise ValueError("the remedies replace batch norm's running statistics")
    inputs = _training_mode_layer_inputs(stacked, spec, x_train, pass_batches(y_train, batch_size, seed, last_batch))
    return {
        "ema": running_statistics(stacked),
        "debiased_ema": debiased_ema(stacked, spec),
        "cumulative": _cumulative(inputs),
        "precise_bn": _pooled(inputs),
        "exact": exact_statistics(stacked, spec, x_train),
    }


def initial_weight(spec: NetSpec, updates: int) -> float:
    """Weight ``keep**updates`` the initial running value still carries."""
    return math.pow(1.0 - spec.momentum, updates)
