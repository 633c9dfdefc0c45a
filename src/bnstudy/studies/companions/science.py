"""Study 1: how a training-mode prediction depends on its batch companions.

A *probe* of test example ``e`` at batch size ``b`` is one training-mode forward
pass of a batch of ``b`` test rows whose first row is ``e`` and whose other ``b - 1``
rows (its *companions*) are drawn without replacement from the rest of the test
half; the probe's result is the label the network gives ``e`` in that batch. It
*flips* when that label differs from the label ``e`` gets in inference mode.

Companion designs, per example and size (each from its own generator, seeded from
``(seed, STREAM_PROBE, test index of e, b, design)``, so every network sees the
same batches):

- ``random``: ``K`` batches, companions uniform over the other test rows;
- ``exact`` (``b = 2``): every one of the ``n - 1`` other test rows once as the
  single companion -- the flip rate is then exact for that example, not an estimate;
- ``own_class`` / ``other_class`` / ``any_class``: ``K`` batches whose ``b - 1``
  companions all come from one class: the example's own; or for each batch a class
  drawn uniformly from the other classes; or for each batch a class drawn uniformly
  from all classes, the example's own included (never the example itself). With
  ``C`` classes, ``any_class`` is the mixture ``1/C`` own + ``(C - 1)/C`` other.

The draws (:mod:`bnstudy.studies.companions.draws`) are the same on every machine: NumPy's
PCG64 generator (an integer algorithm), integer draws and ``Generator.random()`` uniforms only. ``K`` uniform
``m``-subsets of a pool of ``p`` rows are ``K x p`` uniform keys (row by row); each
subset is the pool rows of the ``m`` smallest keys of its row, in key order, ties
(which 53-bit keys make very unlikely) broken by pool position: the first ``m``
of a stable argsort (:func:`bnstudy.studies.companions.draws.smallest_in_order`). Other-class batches first draw
their classes (``Generator.integers``, one per batch), then the companions class
by class in class order, all batches of one class in one draw.

Estimators, per network, design and size, over the ``E`` chosen examples, each with
the same number of probes ``K``:

- flip rate ``= (1/E) sum_e flips_e / K`` (the mean of per-example flip shares);
- training-mode accuracy ``= (1/E) sum_e correct_e / K``;
- ever flipped ``= (1/E) sum_e [flips_e > 0]``;

each with a percentile interval from a bootstrap that resamples *examples* (the
probes of one example share that example and are not independent), within each
class (the examples are drawn a fixed number per class). Means over examples add
the per-example values correctly rounded (``math.fsum``).

The probes take either network (:func:`labeller`: the spec's own ``labeller``, nothing here tells the
networks apart). For the MLP (:class:`bnstudy.nets.mlp_probes.MlpLabeller`) they run in the compiled
kernel of :mod:`bnstudy.compiled.probes` (fixed float32 order, the arithmetic of
:mod:`bnstudy.compiled.kernels`) and inference-mode labels come from
:func:`bnstudy.compiled.kernels.predict`. For the convolutional network
(:class:`bnstudy.nets.conv_probes.ConvLabeller`) each batch goes through
:func:`bnstudy.compiled.conv.batch_labels` (row 0's label in training mode, bit for bit
``conv_train.logits(..., train=True, batch=b)``'s on that batch) and inference-mode labels are
the first largest of :func:`bnstudy.nets.conv_train.logits`. Both read running statistics and
never write them. Nothing here imports PyTorch except the reference loop
:func:`batch_logits_loop` (the MLP's), used by the tests and the benchmark.
"""

from __future__ import annotations

import numpy as np

from bnstudy.nets import mlp_probes  # noqa: F401 (NetSpec.labeller loads it by name: the probes' code input)
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec
from bnstudy.nets.spec import Network
from bnstudy.studies.companions.draws import exact_pairs, exact_pool, one_class_batches, random_batches
from bnstudy.studies.companions.estimates import (  # noqa: F401 (re-exported: the study's names)
    DESIGNS,
    dependence_json,
    mixture_flip_rate,
    summarise,
)

# ---- evaluating probes -----------------------------------------------------------


def labeller(stacked: dict, spec: Network, x: np.ndarray, limits=(1.0, 0.0)):
    """The stack ``stacked`` of ``spec``'s network ready to label rows of ``x``: the spec's
    ``labeller`` (:class:`bnstudy.nets.spec.Labeller`: ``models``, ``labels(batches)``, the
    training-mode labels ``(M, K)`` of row 0 of each of the ``(K, b)`` batches of row indices, and
    ``inference(rows)``, the inference-mode labels ``(M, R)`` of the rows ``rows``; ``limits``: batch
    renorm's ``(rmax, dmax)``)."""
    return spec.labeller(stacked, x, limits)


def batch_predictions(
    stacked: dict, spec: Network, x: np.ndarray, batches: np.ndarray, limits=(1.0, 0.0)
) -> np.ndarray:
    """Training-mode labels ``(M, K)`` of row 0 of each batch (``(K, b)`` row indices of ``x``),
    every model of ``stacked`` (a NumPy stack), by the compiled probes of either network."""
    return labeller(stacked, spec, x, limits).labels(batches)


def batch_logits_loop(
    stacked: dict, spec: NetSpec, x: np.ndarray, batches: np.ndarray, limits=(1.0, 0.0)
) -> np.ndarray:
    """The independent reference: PyTorch, one batch at a time; row 0's logits ``(M, K, C)``.

    For each model, a plain ``nn.Sequential`` (:func:`bnstudy.nets.model.build_module`)
    loaded with its weights and put in training mode; before every batch its
    buffers are restored from the saved state, so the updates PyTorch makes in
    training mode neither leak into later batches (batch renorm reads them) nor
    reach the caller's arrays (the module holds copies).
    """
    import torch

    x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    batches = torch.from_numpy(np.ascontiguousarray(batches, dtype=np.int64))
    states = mlp.unstack(stacked)
    out = None
    for i, state in enumerate(states):
        net = mlp.build_module(spec)
        net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        net.train()
        if spec.normaliser == "batchrenorm":
            for layer in mlp.NORMS:
                net[int(layer)].rmax, net[int(layer)].dmax = limits
        saved = {k: v.clone() for k, v in net.named_buffers()}
        live = dict(net.named_buffers())
        with torch.no_grad():
            for j, batch in enumerate(batches):
                for k, v in saved.items():
                    live[k].copy_(v)
                z = net(x[batch])[0]
                if out is None:
                    out = np.empty((len(states), len(batches), z.shape[-1]), np.float32)
                out[i, j] = z.numpy()
    return out


def batch_predictions_loop(
    stacked: dict, spec: NetSpec, x: np.ndarray, batches: np.ndarray, limits=(1.0, 0.0)
) -> np.ndarray:
    """Labels ``(M, K)`` of :func:`batch_logits_loop` (the first largest logit)."""
    return batch_logits_loop(stacked, spec, x, batches, limits).argmax(-1)


# ---- one network: every example, design and size ---------------------------------


def example_plans(
    y: np.ndarray,
    example: int,
    batch_sizes,
    batches_per_example: int,
    one_class_batch_size: int,
    seed: int,
    pool: np.ndarray | None = None,
) -> list[tuple[str, int, np.ndarray]]:
    """Every probe batch of one example, as ``(design, b, batches)``, in probing order.

    Random companions at each size in ``batch_sizes``, every pair when 2 is among
    them (with each row of ``pool`` only, when given: :func:`exact_pairs`), and own-,
    other- and any-class companions at ``one_class_batch_size``.
    """
    n, k, b1 = len(y), batches_per_example, one_class_batch_size
    plans = [("random", b, random_batches(n, example, b, k, seed)) for b in batch_sizes]
    if 2 in batch_sizes:
        plans.append(("exact", 2, exact_pairs(n, example, pool)))
    plans.append(("own_class", b1, one_class_batches(y, example, b1, k, seed, own=True)))
    plans.append(("other_class", b1, one_class_batches(y, example, b1, k, seed, own=False)))
    plans.append(("any_class", b1, one_class_batches(y, example, b1, k, seed, own="any")))
    return plans


def first_batches(plans, n: int | None):
    """``plans`` (:func:`example_plans`) with each sampled design cut to its first ``n`` batches (the
    exact design kept whole; ``None``: every batch): a smaller design whose batches are those of the
    full one, so its networks see a prefix of the batches the others see."""
    if n is None:
        return plans
    return [(design, b, batches if design == "exact" else batches[:n]) for design, b, batches in plans]


def probe_network(
    stacked: dict,
    spec: Network,
    x: np.ndarray,
    y: np.ndarray,
    examples,
    *,
    batch_sizes,
    batches_per_example: int,
    one_class_batch_size: int,
    seed: int,
    limits=(1.0, 0.0),
    exact_companions: int | None = None,
    batches_used: int | None = None,
    drawn: dict | None = None,
) -> list[dict]:
    """Per-example probe counts of every model of ``stacked`` (a NumPy stack).

    ``exact_companions``: the exact design pairs each example with the rows of a seeded sample
    of this many test rows (:func:`exact_pool`, the same for every example and network), not with
    every other test row. ``batches_used``: each sampled design probes only the first this many of
    the ``batches_per_example`` batches drawn (:func:`first_batches`; the companion study's
    ``grid_batches_per_example``). ``drawn``: a dict that keeps each example's probe batches
    (:func:`example_plans`) for the next network probed with the same arguments, which draws the
    same batches (they depend on the example, the design and the seed, not on the network).

    One dict per (model, example, design, batch size) with ``batches`` (probes),
    ``flips`` (label differs from inference mode), ``correct`` (label is the true
    one), plus the example's true and inference-mode labels. ``model`` is the index
    into the stack. Either network (:func:`labeller`): ``spec`` a ``NetSpec`` or a ``ConvSpec``
    (whose ``x`` holds square one-channel images, one per row).
    """
    y = np.asarray(y)
    examples = [int(e) for e in examples]
    prober = labeller(stacked, spec, x, limits)
    inference = prober.inference(examples)  # (M, E)
    pool = exact_pool(len(y), exact_companions, seed)
    rows = []
    drawn = {} if drawn is None else drawn
    for j, e in enumerate(examples):
        if e not in drawn:
            plans = example_plans(y, e, batch_sizes, batches_per_example, one_class_batch_size, seed, pool)
            drawn[e] = first_batches(plans, batches_used)
        plans = drawn[e]
        for design, b, batches in plans:
            labels = prober.labels(batches)  # (M, K)
            flips = (labels != inference[:, j : j + 1]).sum(1)
            correct = (labels == y[e]).sum(1)
            for i in range(prober.models):
                rows.append(
                    {
                        "model": i,
                        "example": e,
                        "label": int(y[e]),
                        "inference_label": int(inference[i, j]),
                        "design": design,
                        "batch_size": b,
                        "batches": len(batches),
                        "flips": int(flips[i]),
                        "correct": int(correct[i]),
                    }
                )
    return rows


# ---- summaries -------------------------------------------------------------------


def probe_files(paths, network: str, x, y, train_rows: int, examples, *, seed: int, **design) -> list[dict]:
    """:func:`probe_network` for every network in the weights files ``paths``, file by file: one
    row per model, example and design, led by ``network``, ``normaliser``, ``train_batch_size`` and
    ``seed``. ``train_rows`` fixes batch renorm's final (rmax, dmax); ``design`` is the keyword
    arguments of :func:`probe_network` (``batch_sizes``, ``batches_per_example``, ``one_class_batch_size``).

    The files are :mod:`bnstudy.nets.weights`' (``seed<s>/<tensor>``), of either network: an MLP's
    or a convolutional network's (``kind: conv`` in the metadata), each probed through
    :func:`labeller`."""
    from bnstudy.nets import weights
    from bnstudy.nets.recipe import final_limits

    out, drawn = [], {}  # every file's networks are probed with the same batches: drawn once
    for path in weights.as_paths(paths):
        stacked, spec, metas = weights.read(path)
        limits = final_limits(metas[0], train_rows)
        for row in probe_network(stacked, spec, x, y, examples, seed=seed, limits=limits, drawn=drawn, **design):
            model = row.pop("model")
            head = {"network": network, "normaliser": spec.normaliser, "train_batch_size": int(metas[0]["batch_size"])}
            out.append(head | {"seed": int(metas[model]["seed"])} | row)
    return out
