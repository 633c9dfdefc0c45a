"""Training either network (the MLP or the convolutional one, any :class:`bnstudy.nets.spec.Network`):
one run of a recipe for each seed, by the compiled loop. :func:`train_models` is the one training
entry of every network kind (its spec's ``train_models`` calls it); it reads the network only through
the spec's methods (``layout``, ``norm_widths``, ``arch``, ``norm_settings``, ``initial_state``,
``predict``), so this module imports no network kind.

Each seed's network starts from the spec's ``initial_state`` and sees the
batches :func:`bnstudy.nets.batching.epoch_batches` draws from its own order
generator; :func:`bnstudy.compiled.backprop.train_run` then runs every epoch in one
compiled call (:func:`run`, which fine-tuning and the other studies that continue a trained
network call too). Seeds are independent: a seed's network is the same bytes
whichever other seeds are trained beside it, in whatever order, on however many
threads (``threads`` trains that many seeds at once). The PyTorch loop of
:mod:`bnstudy.nets.plain` trains the same networks with autograd and
``torch.optim``, the independent reference the tests hold this one to.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bnstudy.compiled import backprop
from bnstudy.nets.batching import epoch_rows, order_generator
from bnstudy.nets.recipe import Recipe, batch_sizes_per_epoch, lr_scales, renorm_schedule
from bnstudy.nets.stacks import stack

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


def step_limits(spec, recipe: Recipe, n: int) -> np.ndarray:
    """Batch renorm's ``(rmax, dmax)`` at every step of the run, float32 ``(steps, 2)``."""
    schedule = renorm_schedule(spec.normaliser, recipe, n)
    steps = recipe.epochs * len(batch_sizes_per_epoch(n, recipe.batch_size, recipe.last_batch))
    if schedule is None:
        return np.tile(np.array([1.0, 0.0], np.float32), (steps, 1))
    return np.array([schedule.limits(s) for s in range(steps)], np.float32).reshape(steps, 2)


def _optimiser(recipe: Recipe):
    """The recipe's optimiser as the training loop takes it (Adam with PyTorch's defaults)."""
    code = backprop.ADAM if recipe.optimizer == "adam" else backprop.SGD
    return backprop.optimiser(code, recipe.lr, ADAM_BETAS, ADAM_EPS, recipe.sgd_momentum)


def buffers(spec, state: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The compiled loop's buffers of ``state``: the flat parameter vector (the spec's ``layout``;
    without a normaliser gamma 1 and beta 0, never moved) and the running statistics, one row per
    normaliser layer's mean then variance, as wide as the widest layer (0 and 1 where ``state`` has none)."""
    parts = []
    for key, shape in spec.layout():
        if key in state:
            parts.append(np.asarray(state[key], np.float32).reshape(-1))
        else:
            parts.append(np.full(int(np.prod(shape)), 1.0 if key.endswith("weight") else 0.0, np.float32))
    flat = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
    layers = spec.norm_widths()
    running = np.zeros((2 * len(layers), max(f for _, f in layers)), np.float32)
    for i, (layer, f) in enumerate(layers):
        running[2 * i + 1] = 1.0
        if f"{layer}.running_mean" in state:
            running[2 * i, :f] = state[f"{layer}.running_mean"]
            running[2 * i + 1, :f] = state[f"{layer}.running_var"]
    return flat, running


def parts(spec, flat: np.ndarray) -> dict[str, np.ndarray]:
    """The flat parameter vector (or a gradient laid out as it) cut into the state-dict's tensors
    (views, in the spec's ``layout`` order)."""
    out, offset = {}, 0
    for key, shape in spec.layout():
        size = int(np.prod(shape))
        out[key] = flat[offset : offset + size].reshape(shape)
        offset += size
    return out


def state_from(spec, flat: np.ndarray, running: np.ndarray, updates: int, like: dict) -> dict:
    """The state dict of the buffers (:func:`buffers`), ``updates`` as each layer's
    ``num_batches_tracked``, with the keys of ``like`` in its order."""
    state = {key: v.copy() for key, v in parts(spec, flat).items()}
    for i, (layer, f) in enumerate(spec.norm_widths()):
        state[f"{layer}.running_mean"] = running[2 * i, :f].copy()
        state[f"{layer}.running_var"] = running[2 * i + 1, :f].copy()
        state[f"{layer}.num_batches_tracked"] = np.array(updates, np.int64)
    return {k: state[k] for k in like}  # the module's keys, in its order


def run(
    spec,
    state: dict,
    x: np.ndarray,
    y: np.ndarray,
    plan,
    ns,
    opt,
    updates: int = 0,
    frozen: bool = False,
    first_grad=None,
    snapshots: bool = False,
):
    """Train ``state`` (not modified) by the compiled loop on either network: ``plan`` (a
    :class:`bnstudy.compiled.backprop.Schedule`: the rows of each epoch, the batch sizes, batch renorm's
    limits, the micro-batches), the normaliser's settings ``ns``, the optimiser ``opt``, the running
    statistics' update count so far ``updates``; ``frozen`` as :func:`bnstudy.compiled.backprop.train_run`.
    Returns ``(state, log, updates)``: the new state (``num_batches_tracked`` the count returned),
    the loop's :class:`bnstudy.compiled.backprop.Log` and the count; with ``snapshots`` the log holds
    the parameters and running statistics at the end of every epoch (:func:`epoch_states`)."""
    flat, running = buffers(spec, state)
    trained = backprop.State(flat, running)
    log = backprop.new_log(int(np.asarray(plan.rows).shape[0]), first_grad, trained if snapshots else None)
    data = backprop.Data(np.ascontiguousarray(x, dtype=np.float32), np.ascontiguousarray(y, dtype=np.int64))
    arch = spec.arch(data.x.shape[1])
    # frozen passed, not defaulted: one compiled specialisation for every caller
    count = backprop.train_run(arch, trained, data, plan, ns, opt, updates, log, bool(frozen))
    return state_from(spec, flat, running, count, state), log, count


def epoch_states(spec, log, like: dict) -> list[dict]:
    """The state at the end of each epoch of a run with snapshots (:func:`run`), keys as ``like``
    (``num_batches_tracked`` 0: inference reads only the running statistics)."""
    return [state_from(spec, log.params_at[e], log.running_at[e], 0, like) for e in range(log.params_at.shape[0])]


def validation_accuracy(spec, states: list[dict], x: np.ndarray, y: np.ndarray) -> list[float]:
    """Inference-mode accuracy of each state on the rows ``x`` (labels ``y``): the compiled
    fixed-order forward pass of every other evaluation (the spec's ``predict``)."""
    labels = spec.predict(stack(states), np.ascontiguousarray(x, dtype=np.float32))
    return [int(np.sum(row == y)) / len(y) for row in labels]


def train_one(spec, recipe: Recipe, seed: int, x: np.ndarray, y: np.ndarray, first_grad=None, validation=None):
    """Train the network of ``seed`` (either network); returns its state dict and one log row per
    epoch (``first_grad``: an array of the flat vector's size that receives the first step's gradient;
    ``validation``: ``(x, y)`` rows on which each epoch's network is scored in inference mode, the
    row's ``validation_accuracy``; the network trained is the same bytes with or without it)."""
    if recipe.optimizer not in ("adam", "sgd"):
        raise ValueError(f"unknown optimizer {recipe.optimizer!r}")
    y = np.ascontiguousarray(y, dtype=np.int64)
    rng = order_generator(seed)
    rows = np.stack(
        [epoch_rows(rng, y, recipe.batch_size, recipe.order, recipe.last_batch) for _ in range(recipe.epochs)]
    )
    sizes = np.array(batch_sizes_per_epoch(len(y), recipe.batch_size, recipe.last_batch), np.int64)
    if recipe.accumulate < 1 or np.any(sizes % recipe.accumulate) or np.any(sizes < 2 * recipe.accumulate):
        raise ValueError(
            f"batches of {sorted(set(sizes.tolist()))} rows do not split into "
            f"{recipe.accumulate} micro-batches of 2 or more rows"
        )
    plan = backprop.schedule(rows, sizes, step_limits(spec, recipe, len(y)), recipe.accumulate, lr_scales(recipe))
    ns = spec.norm_settings()
    start = spec.initial_state(seed)
    snapshots = validation is not None
    state, log, _ = run(spec, start, x, y, plan, ns, _optimiser(recipe), 0, False, first_grad, snapshots)
    seen = int(sizes.sum())
    rows = [
        {"seed": seed, "epoch": e + 1, "loss": float(log.loss[e]), "train_accuracy": int(log.correct[e]) / seen}
        for e in range(recipe.epochs)
    ]
    if snapshots:
        accuracy = validation_accuracy(spec, epoch_states(spec, log, start), *validation)
        for row, a in zip(rows, accuracy, strict=True):
            row["validation_accuracy"] = a
    return state, rows


def train_models(spec, recipe: Recipe, seeds, x: np.ndarray, y: np.ndarray, threads: int = 1, validation=None):
    """Train one network per seed: ``(stack, log)``, the stack's model axis in the order of
    ``seeds``, the log one row per (seed, epoch): mean batch loss, training-mode accuracy
    over the rows seen in that epoch (and, given ``validation`` ``(x, y)``, the epoch's
    network's inference-mode accuracy on it)."""
    seeds = [int(s) for s in seeds]
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(lambda s: train_one(spec, recipe, s, x, y, validation=validation), seeds))
    log = sorted((row for _, rows in results for row in rows), key=lambda r: (r["epoch"], seeds.index(r["seed"])))
    return stack([state for state, _ in results]), log
