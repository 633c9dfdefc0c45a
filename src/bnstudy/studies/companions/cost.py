"""Study 1's rules in the cost model (bnstudy.pipeline.plan): the companion probes, counted in probe rows,
and the third kept-batch network's training run (its rules file's own ``train_dependence_keep_more``)."""

from __future__ import annotations

from bnstudy.pipeline.plan import (
    CLASSES,
    PER_JOB,
    Work,
    block_seeds,
    network_family,
    row_multiply_adds,
    test_rows,
    training,
)


def _probe_statistics(rule):
    def variant(p, wc, config):
        # a normaliser with batch statistics goes through every row of every probe batch; one
        # normalised row by row needs the probed row alone (bnstudy.compiled.probes.Prober)
        from bnstudy.base.normalisers import BATCH_NAMES

        name = wc.get("normaliser") if rule == "probe_companions_grid" else config["dependence"]["normaliser"]
        statistics = "batch-statistics" if name in BATCH_NAMES else "row-wise"
        return f"{network_family(p, wc, config)}/{statistics}"

    return variant


def _companion_models(rule, wc, config) -> int:
    if rule == "probe_companions_dependence":
        return len(config["dependence"]["seeds"])
    if rule == "probe_companions_dependence_keep":
        return 1
    if rule == "probe_companions_dependence_keep_more":
        return len(config["dependence"]["seeds"]) - 1
    return block_seeds(config, wc["block"]) * len(config["grid"]["batch_sizes"])


def _companions(rule):
    def work(p, wc, config):
        # probe rows of one example (bnstudy.studies.companions.science.example_plans): random companions at
        # each size, every pair when 2 is among them, three one-class designs (the grid's: the first
        # batches_used of each sampled design, where the config sets companions.grid_batches_per_example)
        k, b1 = p.get("batches_used", p["batches_per_example"]), p["one_class_batch_size"]
        rows = k * sum(p["batch_sizes"]) + 3 * k * b1
        if 2 in p["batch_sizes"]:
            rows += 2 * (test_rows(config) - 1)
        examples = CLASSES * config["companions"]["examples_per_class"]
        return _companion_models(rule, wc, config) * examples * rows * row_multiply_adds(config)

    return work


def _probe_rows(rule, model_keys) -> Work:
    """The work of a companion-probe rule: probe rows, one fit for the three rules (one script),
    apart with and without batch statistics; grows with the design's keys and ``model_keys``."""
    return Work(
        "probe rows x M multiply-adds per row (models x examples x rows of every probe batch x network)",
        _companions(rule),
        ("companions.batches_per_example", "companions.examples_per_class", "companions.batch_sizes", *model_keys),
        group="companions_probe.py",
        variant=_probe_statistics(rule),
    )


WORK = {
    "companion_examples": PER_JOB,
    "train_dependence_keep_more": training(("dependence.epochs", "dependence.seeds")),
    "probe_companions_grid": _probe_rows(
        "probe_companions_grid",
        ("grid.seed_block", "grid.seeds", "grid.batch_sizes", "normalisers", "companions.grid_batches_per_example"),
    ),
    "probe_companions_dependence": _probe_rows("probe_companions_dependence", ("dependence.seeds",)),
    "probe_companions_dependence_keep": _probe_rows("probe_companions_dependence_keep", ()),
    "probe_companions_dependence_keep_more": _probe_rows(
        "probe_companions_dependence_keep_more", ("dependence.seeds",)
    ),
}
