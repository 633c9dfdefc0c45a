"""The work of one job of each rule, in the units the cost table prices: what the config's network
costs a row (:func:`row_multiply_adds`, :func:`row_activations`), each rule's :class:`Work`
(:data:`BASE_WORK` for the rules no study owns, each study's in its ``bnstudy/studies/<name>/cost.py``,
gathered by :func:`work_table`), and a job's units of work and its row of the table
(:func:`work_of`, :func:`cost_key`; the rows fitted together, :func:`group_of`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

# One optimiser step costs as much as this many rows of it, by network family: the MLP's compiled
# training loop's per-step and per-row costs (docs/performance.md: per epoch at b = 2 and b = 64);
# the convolutional network's, where each row's convolutions dominate (docs/speed.md, network C:
# 1.32 ms a step at b = 2, 74.7 ms at b = 128, so about 0.58 ms a row and 0.16 ms a step).
ROWS_PER_STEP = 25
ROWS_PER_STEP_BY_FAMILY = {"mlp": ROWS_PER_STEP, "conv": 0.25}
CLASSES = 10


def train_rows(config) -> int:
    from bnstudy.base.config import parts

    return parts(config).train_rows


def test_rows(config) -> int:
    from bnstudy.base.config import parts

    return parts(config).test_rows


def epoch_steps(rows: int, batch_size: int, last_batch: str = "drop", rows_per_step: float = ROWS_PER_STEP) -> float:
    """Step-equivalents of one epoch of one model: its optimiser steps plus its rows / ``rows_per_step``."""
    steps = rows // batch_size
    if last_batch == "keep" and rows % batch_size >= 2:
        steps += 1
    return steps + rows / rows_per_step


def row_multiply_adds(config) -> float:
    """Millions of multiply-adds of one row's forward pass through the config's network: the MLP's
    linear maps, or the convolutional network's 3x3 convolutions (each output position of each
    output channel: 9 x input channels) and its linear classifier. A training step's cost per row
    grows with it; the table's rates for training rules are per million of them
    (:func:`network_family`: the two families are fitted apart)."""
    from bnstudy.base.datasets import shape

    data = shape(config)
    n = config["network"]
    if n.get("kind", "mlp") != "conv":
        widths = [data.features, *n["hidden"], data.classes]
        return sum(a * b for a, b in zip(widths, widths[1:])) / 1e6
    blocks = _conv_blocks(config)
    total = sum(b.positions * b.channels * b.in_channels * 9 for b in blocks)
    return (total + blocks[-1].channels * data.classes) / 1e6


def _conv_blocks(config):
    """The convolutions of the config's network (:func:`bnstudy.base.convlayers.parse`) placed on the
    data set's images: each its output positions and its input and output channels."""
    from bnstudy.base.convlayers import parse
    from bnstudy.base.datasets import shape

    return parse(config["network"], shape(config).side)


def row_activations(config) -> int:
    """Floats of one row's hidden activations in the config's network (the MLP's hidden widths, or each
    convolution's output positions x channels): what a job holds per training row when it computes
    the exact statistics of every row at once (:func:`exact_statistics_mb`)."""
    n = config["network"]
    if n.get("kind", "mlp") != "conv":
        return int(sum(n["hidden"]))
    return sum(b.positions * b.channels for b in _conv_blocks(config))


def network_family(p, wc, config) -> str:
    """The training rules' variant: the network family the job trains (fitted apart)."""
    return config["network"].get("kind", "mlp")


def rows_per_step(p, wc, config) -> float:
    """Rows a step costs as much as, in the job's network family (:data:`ROWS_PER_STEP_BY_FAMILY`)."""
    return ROWS_PER_STEP_BY_FAMILY[network_family(p, wc, config)]


def train_work(p, wc, config):
    """Step-equivalents x M multiply-adds per row of a job of ``train.py``: its seeds x epochs x
    (steps + rows / r) x the network (:func:`epoch_steps`, :func:`row_multiply_adds`)."""
    r, per_step = p["recipe"], rows_per_step(p, wc, config)
    steps = epoch_steps(train_rows(config), r["batch_size"], r["last_batch"], per_step)
    return len(p["seeds"]) * r["epochs"] * steps * row_multiply_adds(config)


def block_seeds(config, block: str) -> int:
    """How many of grid.seeds the seed block labelled ``block`` (``"0-4"``: bnstudy.nets.weights.blocks) holds."""
    first, last = (int(v) for v in block.split("-"))
    return sum(first <= int(s) <= last for s in config["grid"]["seeds"])


def one_unit(p, wc, config) -> int:
    """The work of a job of a rule priced per job: one unit, its rule's median job."""
    return 1


@dataclass(frozen=True)
class Work:
    unit: str  # what one unit of work is (the table's unit column)
    function: object  # (params, wildcards, config) -> units of work of one job
    keys: tuple  # the config keys the rule's cost grows with (its work per job or its job count)
    group: str = ""  # rules of one group (one script) are fitted together, their jobs pooled
    variant: object = None  # (params, wildcards, config) -> a kind of job fitted apart ("" for none)


JOB_UNIT = "job"
# A rule priced per job: each job costs its rule's median job in the table (a job of seconds whose
# work no config key changes much: a data split, a population, a self-check).
PER_JOB = Work(JOB_UNIT, one_unit, ())
# r: rows a step costs as much as, by network family (ROWS_PER_STEP_BY_FAMILY)
# Every rule that trains networks (train.py's, the learning-rate sweep's, gradient accumulation's)
# is fitted to their jobs pooled, per network family: a training step costs the same in each, and
# a family's large networks are then priced from whichever of its training jobs were measured.
TRAINING = "training"
TRAIN_UNIT = "step-equivalents x M multiply-adds per row (seeds x epochs x (steps + rows/r) x network)"


def training(keys: tuple) -> Work:
    """The work of a rule of ``train.py`` (:func:`train_work`) whose cost grows with ``keys``."""
    return Work(TRAIN_UNIT, train_work, keys, group=TRAINING, variant=network_family)


# The work of the rules no study owns: the data split (workflow/rules/data.smk) and the training
# runs of workflow/rules/train.smk, which several studies read. Each study's own rules have their
# work in its folder, ``bnstudy/studies/<name>/cost.py`` (``WORK = {rule: Work(...)}``), looked up
# by name from the catalogue (:func:`work_table`); the rules of paper.smk and manifest.smk are
# local rules of seconds.
BASE_WORK = {
    "split": PER_JOB,
    "train_grid": training(
        ("grid.epochs", "grid.seed_block", "grid.seeds", "grid.batch_sizes", "normalisers", "split.test_size")
    ),
    "train_sorted": training(("grid.epochs", "grid.seed_block", "grid.seeds", "sorted_training.batch_sizes")),
    "train_keep": training(("grid.epochs", "grid.seed_block", "grid.seeds", "last_batch_keep.normalisers")),
    "train_dependence": training(("dependence.epochs", "dependence.seeds")),
    "train_dependence_keep": training(("dependence.epochs",)),
}


@functools.cache
def work_table() -> dict[str, Work]:
    """Every rule's :class:`Work`: :data:`BASE_WORK` and each catalogue study's own
    (:meth:`bnstudy.base.catalogue.Study.work`; every study's, not only a config's: a rule that a config
    does not run is never asked about). A rule with two owners is an error. ``plan.WORK`` is this table."""
    from bnstudy.base import catalogue

    table = dict(BASE_WORK)
    for study in catalogue.STUDIES:
        for rule, spec in study.work().items():
            if rule in table:
                raise ValueError(f"rule {rule!r}: a cost entry in bnstudy.studies.{study.name}.cost and elsewhere")
            table[rule] = spec
    return table


def work_of(rule: str, params: dict, wildcards: dict, config: dict) -> float:
    """Units of work of one job of ``rule`` (1 for a rule priced per job)."""
    spec = work_table().get(rule)
    return float(spec.function(params, wildcards, config)) if spec else 1.0


def cost_key(rule: str, params: dict, wildcards: dict, config: dict) -> str:
    """The table's row for a job: its rule, or ``rule:variant`` for a rule whose jobs are of kinds
    fitted apart (:attr:`Work.variant`: companion probes with and without batch statistics)."""
    spec = work_table().get(rule)
    variant = spec.variant(params, wildcards, config) if spec and spec.variant else ""
    return f"{rule}:{variant}" if variant else rule


def _split(key: str) -> tuple[str, str]:
    rule, _, variant = key.partition(":")
    return rule, variant


def group_of(key: str) -> str:
    """The table rows fitted together with ``key`` (one script's jobs of one variant): its rule's
    group, else the rule itself, with the variant."""
    rule, variant = _split(key)
    work = work_table()
    group = (work[rule].group if rule in work else "") or rule
    return f"{group}:{variant}" if variant else group


def unit_of(key: str) -> str:
    rule, _ = _split(key)
    work = work_table()
    return work[rule].unit if rule in work else JOB_UNIT
