"""Batch-renorm networks trained with each schedule variant of the study (:mod:`.design`), through the
grid's own training entry (``spec.train_models``: :func:`bnstudy.nets.train.train_models`) with the
grid's recipe but for the limits' schedule, so that a variant of seed ``s`` starts from the grid's
initial weights of ``s`` and takes its batch order; scored as the grid's cells are, in inference mode
on the test half (:func:`bnstudy.evaluation.accuracy.inference_correct`)."""

from __future__ import annotations

from bnstudy.evaluation.accuracy import inference_correct, share
from bnstudy.nets.recipe import Recipe, renorm_schedule, steps_per_epoch
from bnstudy.studies.renorm_ramp import design


def train_variants(spec, params: dict, schedules, grid: dict, seeds, x, y, x_test, y_test, threads: int = 1):
    """One row per variant of ``schedules`` and seed: the inference-mode test accuracy of the network
    trained with ``params`` (a grid recipe's params) and the variant's schedule, the run's steps and
    the limits in force at its last step. ``grid``: the config's ``batchrenorm``."""
    if spec.normaliser != "batchrenorm":
        raise ValueError(f"the ramp study trains batch renorm, not {spec.normaliser}")
    seeds = [int(s) for s in seeds]
    out = []
    for variant in schedules:
        recipe = Recipe.from_params(design.recipe_params(params, variant, grid))
        stacked, _ = spec.train_models(recipe, seeds, x, y, threads=threads)
        acc = share(inference_correct(stacked, spec, x_test, y_test))
        rmax, dmax = renorm_schedule(spec.normaliser, recipe, len(y)).last
        steps = recipe.epochs * steps_per_epoch(len(y), recipe.batch_size, recipe.last_batch)
        head = {"schedule": variant["name"], "batch_size": recipe.batch_size, "steps": steps,
                "last_rmax": float(rmax), "last_dmax": float(dmax)}  # fmt: skip
        out += [head | {"seed": s, "accuracy": float(acc[i])} for i, s in enumerate(seeds)]
    return out
