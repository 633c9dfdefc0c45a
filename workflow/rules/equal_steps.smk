# Batch size at equal steps: batch norm and no normaliser at the grid's smallest and largest batch sizes,
# each trained for the other's number of optimiser steps, paired by seed with the grid's networks of the
# same seeds (bnstudy.studies.equal_steps).
from bnstudy.studies.equal_steps.design import NORMALISERS as EQUAL_NORMALISERS
from bnstudy.studies.equal_steps.design import arm_batches

EQUAL = config["equal_steps"]
EQUAL_CAPTION = study_category("equal_steps", "Batch size at equal steps")
# each arm's batch size -> the batch size whose grid steps it takes
EQUAL_OTHER = dict(arm_batches(arm, GRID_BATCH_SIZES) for arm in EQUAL["arms"])
EQUAL_JOBS = [dict(normaliser=n, batch_size=b) for n in EQUAL_NORMALISERS for b in EQUAL_OTHER]
# the grid's side of the pairs: both normalisers at both ends of the grid, every block holding a seed of the study
EQUAL_GRID = [
    dict(normaliser=n, batch_size=b, block=block)
    for n in EQUAL_NORMALISERS
    for b in sorted({min(GRID_BATCH_SIZES), max(GRID_BATCH_SIZES)})
    for block, seeds in SEED_BLOCKS.items()
    if set(seeds) & set(EQUAL["seeds"])
]


rule train_equal_steps:
    message:
        "Training {wildcards.normaliser} at batch size {wildcards.batch_size} for the grid's steps at the "
        "other end of the grid, seeds %s" % ", ".join(map(str, EQUAL["seeds"]))
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        accuracy="results/equal_steps/{normaliser}_b{batch_size}.csv",
    params:
        seeds=EQUAL["seeds"],
        net=lambda wc: net_params(wc.normaliser),
        recipe=lambda wc: recipe_params(config["grid"], wc.batch_size, wc.normaliser),
        other=lambda wc: recipe_params(config["grid"], EQUAL_OTHER[int(wc.batch_size)], wc.normaliser),
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1000, 30),
    script:
        "../scripts/equal_steps_train.py"


rule summarise_equal_steps:
    message:
        "Summarising the equal-steps arms against the grid's networks, paired by seed"
    input:
        arms=expand_cells(rules.train_equal_steps.output.accuracy, EQUAL_JOBS),
        grid=expand_cells(rules.train_grid.output.accuracy, EQUAL_GRID),
    output:
        cells="results/equal_steps/comparisons.csv",
        summary=report(
            "results/summary/equal_steps.json",
            category=EQUAL_CAPTION,
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/equal_steps.tex",
        table=report(
            "results/paper/tables/equal_steps.tex",
            category=EQUAL_CAPTION,
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "batch norm against no normaliser at equal steps, paired by seed"},
        ),
    params:
        seeds=EQUAL["seeds"],
        arms=EQUAL["arms"],
        batch_sizes=GRID_BATCH_SIZES,
        confidence=config["batch_size_eval"]["confidence"],
        families=declared_families("equal_steps"),
    script:
        "../scripts/equal_steps_summarise.py"


register(rules.train_equal_steps, EQUAL_JOBS)
