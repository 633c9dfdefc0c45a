"""Training: one run of a recipe for each seed, by the compiled loop.

Each seed's network starts from :func:`bnstudy.nets.model.initial_state` and sees the
batches :func:`bnstudy.nets.batching.epoch_batches` draws from its own order
generator; :func:`bnstudy.compiled.backprop.train_run` then runs every epoch in one
compiled call. Seeds are independent: a seed's network is the same bytes
whichever other seeds are trained beside it, in whatever order, on however many
threads (``threads`` trains that many seeds at once). The PyTorch loop of
:mod:`bnstudy.nets.plain` trains the same networks with autograd and
``torch.optim``, the independent reference the tests hold this one to.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bnstudy.compiled import backprop, optimisers
from bnstudy.compiled.kernels import norm_settings
from bnstudy.nets.batching import epoch_rows, order_generator
from bnstudy.nets.model import BATCH_KINDS, NORMS, NetSpec, initial_state, stack
from bnstudy.nets.recipe import Recipe, batch_sizes_per_epoch, renorm_schedule

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


def step_limits(spec: NetSpec, recipe: Recipe, n: int) -> np.ndarray:
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


def _flat(spec: NetSpec, state: dict[str, np.ndarray]) -> np.ndarray:
    parts = []
    for key, shape in optimisers.layout(spec.widths):
        if key in state:
            parts.append(state[key].reshape(-1))
        else:  # no normaliser: gamma 1 and beta 0, never moved
            parts.append(np.full(int(np.prod(shape)), 1.0 if key.endswith("weight") else 0.0, np.float32))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def _unflat(spec: NetSpec, flat: np.ndarray, running: np.ndarray, updates: int, like: dict) -> dict:
    state, offset = {}, 0
    for key, shape in optimisers.layout(spec.widths):
        size = int(np.prod(shape))
        state[key] = flat[offset : offset + size].reshape(shape).copy()
        offset += size
    widths = spec.widths
    for i, layer in enumerate(NORMS):
        f = widths[i + 1]
        state[f"{layer}.running_mean"] = running[2 * i, :f].copy()
        state[f"{layer}.running_var"] = running[2 * i + 1, :f].copy()
        state[f"{layer}.num_batches_tracked"] = np.array(updates, np.int64)
    return {k: state[k] for k in like}  # the module's keys, in its order


def train_one(spec: NetSpec, recipe: Recipe, seed: int, x: np.ndarray, y: np.ndarray):
    """Train the network of ``seed``; returns its state dict and one log row per epoch."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.int64)
    if recipe.optimizer not in ("adam", "sgd"):
        raise ValueError(f"unknown optimizer {recipe.optimizer!r}")
    initial = initial_state(spec, seed)
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
    flat = _flat(spec, initial)
    width = max(spec.widths[1], spec.widths[2])
    running = np.zeros((4, width), np.float32)
    running[1] = running[3] = 1.0
    log = backprop.new_log(recipe.epochs)
    updates = backprop.train_run(
        backprop.mlp_arch(spec.widths),
        backprop.State(flat, running),
        backprop.Data(x, y),
        backprop.schedule(rows, sizes, step_limits(spec, recipe, len(y)), recipe.accumulate),
        norm_settings(spec),
        _optimiser(recipe),
        0,
        log,
        False,  # passed, not defaulted: one compiled specialisation for every caller
    )
    loss, correct = log.loss, log.correct
    state = _unflat(spec, flat, running, updates if spec.normaliser in BATCH_KINDS else 0, initial)
    seen = int(sizes.sum())
    log = [
        {"seed": seed, "epoch": e + 1, "loss": float(loss[e]), "train_accuracy": int(correct[e]) / seen}
        for e in range(recipe.epochs)
    ]
    return state, log


def train_models(spec: NetSpec, recipe: Recipe, seeds, x: np.ndarray, y: np.ndarray, threads: int = 1):
    """Train one network per seed: ``(stack, log)``, the stack's model axis in the order of
    ``seeds``, the log one row per (seed, epoch): mean batch loss, training-mode accuracy
    over the rows seen in that epoch."""
    seeds = [int(s) for s in seeds]
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(lambda s: train_one(spec, recipe, s, x, y), seeds))
    log = sorted((row for _, rows in results for row in rows), key=lambda r: (r["epoch"], seeds.index(r["seed"])))
    return stack([state for state, _ in results]), log
