"""Fine-tuning in small batches (issue 17, item 5).

Batch-norm networks trained at one batch size are fine-tuned for a few hundred
Adam steps in batches of ``b`` rows of the training half (:func:`finetune_runs`),
by the compiled training loop (:func:`bnstudy.compiled.backprop.train_run`) started from
the trained weights and running statistics with a fresh Adam state, in two modes:

- ``live``: training mode as in training (each batch normalised with its own
  statistics, the running statistics moved after every step with the momentum the
  network was trained with);
- ``frozen``: the normalisation layers kept in inference mode (the common remedy):
  the running statistics normalise and never move; the weights, gamma and beta learn
  (:data:`bnstudy.compiled.gradients.FROZEN`).

Batch streams (:func:`stream_rows`), one per network seed, seeded by
``(seed, STREAM_FINETUNE, network seed, stream)`` (PCG64, integer draws only), cut
as training epochs are (:func:`bnstudy.nets.batching.epoch_batches`, leftover rows
dropped), epoch after epoch until the steps are covered:

- ``shuffle``: random batches;
- ``class_sorted``: the rows sorted by class (the order within a class random),
  cut into batches, the batches in a random order: with ``b`` = 2 nearly every
  batch holds two rows of one class (a batch straddles two classes only where a
  class ends), the classes in a random order.

The same stream feeds both modes. Measured per network (:func:`finetune_cell`), on
the test half: the inference-mode accuracy before and after, the training-mode
accuracy in seeded random batches of ``b`` (:func:`bnstudy.evaluation.accuracy.train_mode_accuracy`),
the inference-mode accuracy after with the exact statistics of the training half
recomputed for the fine-tuned weights (:func:`bnstudy.evaluation.recompute.exact_statistics`);
and how far the running statistics are from the trained ones and from the exact
statistics of the training half (:func:`bnstudy.evaluation.distance.distances`, the mean
over the two layers, ``math.fsum``). Along the run, every ``every`` steps, the
inference-mode accuracy and the distance to the exact statistics: the state after
``k`` steps is a run of the first ``k`` steps (the same arithmetic in the same
order, so the same bits as the first ``k`` steps of the whole run).
"""

from __future__ import annotations

import math

import numpy as np

from bnstudy.base.designs import FINETUNE_MODES, FINETUNE_STREAMS
from bnstudy.base.runtime import derive_seed
from bnstudy.compiled import backprop
from bnstudy.evaluation import recompute
from bnstudy.evaluation.accuracy import inference_accuracy, train_mode_accuracy
from bnstudy.evaluation.distance import distances
from bnstudy.nets import train
from bnstudy.nets.batching import epoch_rows
from bnstudy.nets.model import stack, unstack

STREAM_FINETUNE = 18  # the batch streams of this study (issue 17, item 5)
STREAMS = FINETUNE_STREAMS  # every order of bnstudy.nets.batching.ORDERS
MODES = FINETUNE_MODES
# The design of issue 29, item 10 (:func:`arms_cell`): fine-tuning arms, input conditions, controls.
CONTROLS = ("none", "layernorm")  # grid networks without batch statistics, fine-tuned as they trained
ARMS = ("live", "frozen", "momentum0", "none", "layernorm")
CONDITIONS = ("same", "shifted")


def stream_rows(y, stream: str, seed: int, network_seed: int, steps: int, batch_size: int) -> np.ndarray:
    """The rows of ``steps`` consecutive batches of ``batch_size`` (int64, ``steps * batch_size``)."""
    if stream not in STREAMS:
        raise ValueError(f"unknown stream {stream!r}; expected one of {STREAMS}")
    y = np.asarray(y)
    if not 2 <= batch_size <= len(y):
        raise ValueError(f"fine-tuning needs 2 <= batch_size <= {len(y)} rows; got {batch_size}")
    rng = np.random.default_rng(derive_seed(seed, STREAM_FINETUNE, network_seed, STREAMS.index(stream)))
    parts, total = [], 0
    while total < steps * batch_size:
        part = epoch_rows(rng, y, batch_size, stream, "drop").astype(np.int64)
        parts.append(part)
        total += len(part)
    return np.concatenate(parts)[: steps * batch_size] if parts else np.zeros(0, np.int64)


def run(state: dict, spec, x, y, rows, batch_size: int, lr: float, frozen: bool, momentum=None) -> dict:
    """One network (a state dict) fine-tuned with Adam on ``rows`` in batches of ``batch_size``.

    Starts from ``state``'s weights and running statistics and a fresh Adam state
    (PyTorch's defaults, :mod:`bnstudy.nets.train`); returns the new state dict (``state``
    is not modified). Frozen: the running statistics and batch count are kept.
    ``momentum`` (batch norm): the running statistics' momentum of the run, the
    network's own when None; 0 normalises each batch with its own statistics (and
    back-propagates through them) while the running statistics stay as they are.
    Networks without a normaliser or with layer norm (the controls) train as they did.
    """
    if spec.normaliser not in CONTROLS + ("batchnorm",):
        raise ValueError(f"fine-tuning is studied on batch norm and {CONTROLS}, not {spec.normaliser}")
    if frozen and spec.normaliser != "batchnorm":
        raise ValueError(f"{spec.normaliser} has no running statistics to freeze")
    steps = len(rows) // batch_size
    start = int(state["1.num_batches_tracked"]) if "1.num_batches_tracked" in state else 0
    plan = backprop.schedule(np.reshape(rows, (1, -1)), np.full(steps, batch_size, np.int64))
    ns = spec.norm_settings(momentum=spec.momentum if momentum is None else momentum)
    opt = backprop.optimiser(backprop.ADAM, lr, train.ADAM_BETAS, train.ADAM_EPS, 0.0)
    tuned, _, updates = train.run(spec, state, x, y, plan, ns, opt, start, bool(frozen))
    if frozen:  # the statistics and their count kept
        for key in tuned:
            if key.endswith("num_batches_tracked"):
                tuned[key] = np.array(start, np.int64)
    return tuned


def _layer_mean(rows: list[dict], models: int) -> dict[str, np.ndarray]:
    """``distances`` rows to ``{mean_distance, var_distance}``: per model, the mean over layers."""
    out = {}
    for key in ("mean_distance", "var_distance"):
        values = [[r[key] for r in rows if r["model"] == m] for m in range(models)]
        out[key] = np.array([math.fsum(v) / len(v) for v in values])
    return out


def statistics_distances(stacked, spec, x_train) -> dict[str, dict[str, np.ndarray]]:
    """Per model, the running statistics' distance to the exact ones of ``x_train`` (``exact``),
    with the exact statistics themselves under ``"statistics"``."""
    exact = recompute.exact_statistics(stacked, spec, x_train)
    m = next(iter(stacked.values())).shape[0]
    return {
        "exact": _layer_mean(distances(recompute.running_statistics(stacked), exact, spec.eps), m),
        "statistics": exact,
    }


def marks(steps: int, every: int) -> list[int]:
    """The steps after which a run is measured: ``0, every, 2 every, ...`` and ``steps``."""
    return sorted(set(range(0, steps, every)) | {steps})


def finetune_runs(start: dict, spec, x, y, rows, batch_size: int, lr: float, frozen: bool, every: int) -> list[dict]:
    """The states after each of :func:`marks` (each a run of that many first steps), one model."""
    steps = len(rows) // batch_size
    return [
        start if k == 0 else run(start, spec, x, y, rows[: k * batch_size], batch_size, lr, frozen)
        for k in marks(steps, every)
    ]


def _one(start: dict, spec, x_train, y_train, rows, frozen: bool, settings: dict, x, y) -> tuple[dict, list[dict]]:
    """One fine-tuning of one network: its measures after the run, and the measures along it."""
    b, every = int(settings["batch_size"]), int(settings["every"])
    path = stack(finetune_runs(start, spec, x_train, y_train, rows, b, settings["lr"], frozen, every))
    accuracy = inference_accuracy(path, spec, x, y)
    dist = statistics_distances(path, spec, x_train)
    end = {k: v[-1:] for k, v in path.items()}
    exact_end = {layer: (mean[-1:], var[-1:]) for layer, (mean, var) in dist["statistics"].items()}
    first = {k: v[:1] for k, v in path.items()}
    moved = _layer_mean(distances(recompute.running_statistics(end), recompute.running_statistics(first), spec.eps), 1)
    after = {
        "inference_after": float(accuracy[-1]),
        "train_mode_after": float(train_mode_accuracy(end, spec, x, y, b, settings["seed"])[0]),
        "recomputed_after": float(inference_accuracy(recompute.with_statistics(end, exact_end), spec, x, y)[0]),
        "mean_to_exact": float(dist["exact"]["mean_distance"][-1]),
        "var_to_exact": float(dist["exact"]["var_distance"][-1]),
        "mean_to_start": float(moved["mean_distance"][0]),
        "var_to_start": float(moved["var_distance"][0]),
    }
    along = [
        {
            "step": k,
            "inference_accuracy": float(accuracy[j]),
            "mean_to_exact": float(dist["exact"]["mean_distance"][j]),
            "var_to_exact": float(dist["exact"]["var_distance"][j]),
        }
        for j, k in enumerate(marks(len(rows) // b, every))
    ]
    return after, along


def finetune_cell(cell, x_train, y_train, settings: dict) -> tuple[list[dict], list[dict]]:
    """Every seed of a trained cell (:class:`bnstudy.evaluation.accuracy.TrainedCell`) fine-tuned at each
    learning rate on each stream in each mode.

    ``settings``: ``batch_size``, ``steps``, ``lrs``, ``every``, ``seed`` (the streams'
    and the training-mode test batches'). Returns ``(networks, along)`` rows: per seed,
    rate, stream and mode, the measures before and after (see the module's docstring);
    and the same along the run at each of :func:`marks`.
    """
    b, steps, spec = int(settings["batch_size"]), int(settings["steps"]), cell.spec
    seeds = [int(meta["seed"]) for meta in cell.metas]
    before = inference_accuracy(cell.stacked, spec, cell.x, cell.y)
    before_train = train_mode_accuracy(cell.stacked, spec, cell.x, cell.y, b, settings["seed"])
    start_exact = statistics_distances(cell.stacked, spec, x_train)["exact"]
    networks, along = [], []
    for i, (s, start) in enumerate(zip(seeds, unstack(cell.stacked))):
        start_row = {
            "steps": steps,
            "inference_before": float(before[i]),
            "train_mode_before": float(before_train[i]),
            "start_mean_to_exact": float(start_exact["mean_distance"][i]),
            "start_var_to_exact": float(start_exact["var_distance"][i]),
        }
        for lr in settings["lrs"]:
            for stream in STREAMS:
                rows = stream_rows(y_train, stream, settings["seed"], s, steps, b)
                for mode in MODES:
                    one = settings | {"lr": lr}
                    after, path = _one(start, spec, x_train, y_train, rows, mode == "frozen", one, cell.x, cell.y)
                    head = {"seed": s, "lr": float(lr), "stream": stream, "mode": mode}
                    networks.append(head | start_row | after)
                    along += [head | r for r in path]
    return networks, along


# ---- arms, conditions and controls (issue 29, item 10) -----------------------------------


def shift_inputs(x, scale: float, offset: float) -> np.ndarray:
    """The shifted condition's inputs: every standardised feature times ``scale`` plus ``offset``
    (float32, one rounding per operation, element by element)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    return np.ascontiguousarray(x * np.float32(scale) + np.float32(offset), dtype=np.float32)


def arm_settings(arm: str) -> tuple[str, bool, object]:
    """``(normaliser, frozen, momentum)`` of an arm: batch norm live (its own momentum), frozen,
    or with momentum 0 (batch statistics in the forward and backward pass, running statistics
    fixed); the controls (no normaliser, layer norm) as they trained."""
    if arm not in ARMS:
        raise ValueError(f"unknown fine-tuning arm {arm!r}; expected one of {ARMS}")
    if arm in CONTROLS:
        return arm, False, None
    return "batchnorm", arm == "frozen", (0.0 if arm == "momentum0" else None)


def arms_cell(cells: dict, x_train, y_train, settings: dict) -> list[dict]:
    """Every arm (:data:`ARMS`) of every seed fine-tuned on each input condition, stream and rate.

    ``cells``: ``{normaliser: TrainedCell}`` for ``batchnorm`` and :data:`CONTROLS` (the same
    seeds, trained at the same batch size). ``settings``: ``batch_size``, ``steps``, ``lrs``,
    ``seed``, ``shift`` (``{"scale", "offset"}``). A condition's fine-tuning rows and test
    rows are both shifted (``shifted``) or neither (``same``); the batch stream of a seed is
    the one :func:`finetune_cell` uses, the same for every arm and condition. One row per
    seed, rate, condition, stream and arm: the inference-mode accuracy on the condition's
    test rows before and after, and for batch norm after with the exact statistics of the
    condition's training rows recomputed for the fine-tuned weights (NaN for the controls).
    """
    b, steps = int(settings["batch_size"]), int(settings["steps"])
    shift = settings["shift"]
    data = {
        "same": (np.ascontiguousarray(x_train, np.float32), None),
        "shifted": (shift_inputs(x_train, shift["scale"], shift["offset"]), shift),
    }
    seeds = {n: [int(meta["seed"]) for meta in c.metas] for n, c in cells.items()}
    if len({tuple(v) for v in seeds.values()}) != 1:
        raise ValueError(f"fine-tuning arms: the networks' seeds differ between normalisers: {seeds}")
    rows = []
    for condition in CONDITIONS:
        xt, sh = data[condition]
        x_test = {n: (c.x if sh is None else shift_inputs(c.x, sh["scale"], sh["offset"])) for n, c in cells.items()}
        before = {n: inference_accuracy(c.stacked, c.spec, x_test[n], c.y) for n, c in cells.items()}
        starts = {n: unstack(c.stacked) for n, c in cells.items()}
        for i, s in enumerate(seeds["batchnorm"]):
            for lr in settings["lrs"]:
                for stream in STREAMS:
                    order = stream_rows(y_train, stream, settings["seed"], s, steps, b)
                    for arm in [a for a in ARMS if arm_settings(a)[0] in cells]:  # controls the grid trained
                        normaliser, frozen, momentum = arm_settings(arm)
                        cell = cells[normaliser]
                        end = run(starts[normaliser][i], cell.spec, xt, y_train, order, b, lr, frozen, momentum)
                        one = stack([end])
                        recomputed = float("nan")
                        if normaliser == "batchnorm":
                            exact = recompute.exact_statistics(one, cell.spec, xt)
                            fixed = recompute.with_statistics(one, exact)
                            recomputed = float(inference_accuracy(fixed, cell.spec, x_test[normaliser], cell.y)[0])
                        rows.append(
                            {
                                "seed": s,
                                "lr": float(lr),
                                "condition": condition,
                                "stream": stream,
                                "arm": arm,
                                "inference_before": float(before[normaliser][i]),
                                "inference_after": float(
                                    inference_accuracy(one, cell.spec, x_test[normaliser], cell.y)[0]
                                ),
                                "recomputed_after": recomputed,
                            }
                        )
    return rows
