"""Networks trained at one batch size for another batch size's number of steps (:mod:`.design`).

A network of seed ``s`` starts from the grid's initial weights of ``s``
(the spec's ``initial_state``) and takes its batches from the grid's seeded batch order
of ``s`` at its own batch size (:func:`run_rows`: the epochs of
:func:`bnstudy.nets.batching.epoch_rows` one after another), so it is paired by seed with the grid's
networks. The steps are cut into the other batch size's epochs, each with the grid schedule's
learning-rate scale of that epoch (:func:`schedule_of`), and run by the compiled training loop
(:func:`bnstudy.nets.train.run`), the grid's own: run for its own grid's steps, an arm is its grid
network, bit for bit (``tests/studies/test_equal_steps.py``). Scored as the grid is, in inference mode
(:func:`bnstudy.evaluation.accuracy.inference_correct`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bnstudy.compiled import backprop
from bnstudy.evaluation.accuracy import inference_correct, share
from bnstudy.nets import train
from bnstudy.nets.batching import epoch_rows, order_generator
from bnstudy.nets.model import stack
from bnstudy.nets.recipe import Recipe, lr_scales, steps_per_epoch
from bnstudy.studies.equal_steps.design import NORMALISERS


def run_rows(y, seed: int, batch_size: int, steps: int) -> np.ndarray:
    """The rows (int64, ``steps * batch_size``) of the first ``steps`` batches of ``batch_size`` in the
    grid's batch order of ``seed``: shuffled epochs, leftover rows dropped, one after another."""
    if steps < 1 or not 2 <= batch_size <= len(y):
        raise ValueError(f"{steps} steps of batches of {batch_size} from {len(y)} rows")
    rng = order_generator(int(seed))
    parts, total = [], 0
    while total < steps * batch_size:
        part = epoch_rows(rng, y, batch_size, "shuffle", "drop").astype(np.int64)
        parts.append(part)
        total += len(part)
    return np.concatenate(parts)[: steps * batch_size]


def schedule_of(rows, batch_size: int, epochs: int, steps_per_span: int, lr_schedule: str):
    """``rows`` cut into ``epochs`` spans of ``steps_per_span`` batches of ``batch_size`` (the other
    batch size's epochs), each span at the learning-rate scale of that epoch of the grid's schedule
    (:func:`bnstudy.nets.recipe.lr_scales` over ``epochs``)."""
    rows = np.reshape(np.asarray(rows, np.int64), (int(epochs), int(steps_per_span) * int(batch_size)))
    scale = lr_scales(Recipe(epochs=int(epochs), lr_schedule=lr_schedule))
    return backprop.schedule(rows, np.full(int(steps_per_span), int(batch_size), np.int64), None, 1, scale)


def train_arm(spec, recipe: Recipe, other: Recipe, seeds, x, y, threads: int = 1) -> dict:
    """One network per seed (the stack's model axis in the order of ``seeds``) trained at ``recipe``'s
    batch size, in its grid's batch order, for the steps of ``other``'s grid networks (its epochs of
    ``rows // other.batch_size`` steps) with ``other``'s optimiser and learning rate in each step: the
    run of ``other``'s grid network with only the batch size changed."""
    if spec.normaliser not in NORMALISERS:
        raise ValueError(f"the equal-steps arms train {NORMALISERS}, not {spec.normaliser}")
    if recipe.last_batch != "drop" or other.last_batch != "drop" or recipe.accumulate != 1:
        raise ValueError("the equal-steps arms take the grid's recipe with its leftover rows dropped, no accumulation")
    y = np.ascontiguousarray(y, dtype=np.int64)
    per_span = steps_per_epoch(len(y), other.batch_size, "drop")
    code = backprop.ADAM if other.optimizer == "adam" else backprop.SGD
    opt = backprop.optimiser(code, other.lr, train.ADAM_BETAS, train.ADAM_EPS, other.sgd_momentum)

    def one(seed):
        rows = run_rows(y, seed, recipe.batch_size, other.epochs * per_span)
        plan = schedule_of(rows, recipe.batch_size, other.epochs, per_span, other.lr_schedule)
        state, _, _ = train.run(spec, spec.initial_state(int(seed)), x, y, plan, spec.norm_settings(), opt)
        return state

    with ThreadPoolExecutor(max_workers=max(1, int(threads))) as pool:
        return stack(list(pool.map(one, [int(s) for s in seeds])))


def accuracy_rows(stacked, spec, seeds, x_test, y_test) -> list[dict]:
    """Inference-mode test accuracy of each seed's network, as the grid's cells score theirs."""
    acc = share(inference_correct(stacked, spec, x_test, y_test))
    return [{"seed": int(s), "accuracy": float(acc[i])} for i, s in enumerate(seeds)]
